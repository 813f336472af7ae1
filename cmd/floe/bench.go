package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"floe/bench"
	"floe/storage/faulty"
)

func init() {
	commands["bench"] = runBench
}

const benchSummary = `Drives a Kafka-compatible broker with franz-go producers (and a consumer)
and reports throughput and latency. MODE is produce (acknowledgement
latency), consume (fill a topic, then read it back) or e2e (both at once).

With --rate, records are sent on a fixed schedule and every latency counts
from the record's scheduled send time, so stalls show in the tail (no
coordinated omission). --metrics-url adds the agent's object-store PUT/GET
counts, bytes per PUT and metadata commits. --kfake and --raw-put-bucket run
the baselines under the same load in the same invocation.`

func runBench(args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(os.Stderr, "Usage: floe bench produce|consume|e2e [flags]\n\n%s\n\nRun 'floe bench e2e --help' for the flags.\n", benchSummary)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return nil
		}
		return errors.New("bench: MODE (produce, consume or e2e) is required")
	}
	mode := args[0]
	switch mode {
	case bench.ModeProduce, bench.ModeConsume, bench.ModeE2E:
	default:
		return fmt.Errorf("bench: unknown mode %q: want produce, consume or e2e", mode)
	}
	cfg := bench.DefaultConfig()
	cfg.Mode = mode
	fs := newFlagSet("bench "+mode, benchSummary)
	brokers := fs.String("brokers", strings.Join(cfg.Brokers, ","), "comma-separated seed `host:port` list")
	fs.StringVar(&cfg.Topic, "topic", "", "topic to use, created if missing (default: a fresh floe-bench-<time>)")
	fs.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "partitions of the created topic")
	fs.IntVar(&cfg.RecordSize, "record-size", cfg.RecordSize, "record value size in `bytes` (random, incompressible)")
	fs.Int64Var(&cfg.Records, "records", 0, "stop after this many records (0: --duration alone)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to send (after --warmup)")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "send at the same rate for this long first, left out of the latency figures")
	fs.Float64Var(&cfg.Rate, "rate", 0, "target `records/s` over all producers (0: as fast as acknowledged)")
	fs.IntVar(&cfg.Producers, "producers", cfg.Producers, "producer clients (connections)")
	fs.DurationVar(&cfg.Linger, "linger", cfg.Linger, "producer linger")
	var batch int
	fs.IntVar(&batch, "batch-bytes", int(cfg.BatchBytes), "largest producer batch in `bytes`")
	fs.IntVar(&cfg.MaxBuffered, "max-buffered", cfg.MaxBuffered, "records buffered per producer before it blocks")
	fs.IntVar(&cfg.Inflight, "inflight", cfg.Inflight, "produce requests in flight per broker per producer")
	fs.StringVar(&cfg.Compression, "compression", cfg.Compression, "none, gzip, snappy, lz4 or zstd")
	fs.StringVar(&cfg.MetricsURL, "metrics-url", "", "the agent's metrics `URL` (http://HOST:PORT/metrics) for object-store and commit counts")
	fs.DurationVar(&cfg.SampleInterval, "metrics-sample-interval", cfg.SampleInterval, "how often --metrics-url is read during the run for peak memory and buffered bytes (0: only before and after)")
	fs.StringVar(&cfg.Label, "label", "", "name of this run in the reports (default: the brokers)")
	fs.DurationVar(&cfg.Drain, "drain", cfg.Drain, "how long the consumer may take to catch up after sending stops")
	jsonOut := fs.String("json", "", "write the JSON report to `file` (- for stdout)")
	htmlOut := fs.String("html", "", "write the HTML latency chart to `file`")
	withKfake := fs.Bool("kfake", false, "also run the same load against franz-go's in-memory kfake broker")
	rawBucket := fs.String("raw-put-bucket", "", "also measure raw PUTs to this bucket `URL` (file://, s3://…, mem://)")
	rawSize := fs.Int("raw-put-size", 0, "raw PUT object size in `bytes` (0: the agent's bytes per PUT in this run, else 1 MiB)")
	rawConc := fs.Int("raw-put-concurrency", 4, "concurrent raw PUTs (match the agent's --flush-concurrency)")
	rawDur := fs.Duration("raw-put-duration", 0, "how long to PUT (0: --duration)")
	rawRate := fs.Float64("raw-put-rate", 0, "raw `PUTs/s` over all concurrent PUTs, on a fixed schedule (0: back to back; match the agent's PUT rate under a --rate load)")
	rawLatency := fs.Duration("raw-put-latency", 0, "add this latency to every raw PUT (match the agent's --bucket-latency)")
	quiet := fs.Bool("quiet", false, "no progress line on stderr")
	baselinesOnly := fs.Bool("baselines-only", false, "run only the baselines asked for (--kfake, --raw-put-bucket), not the load on --brokers: for running them once the agent is stopped, so its background work does not slow them")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	cfg.Brokers = strings.Split(*brokers, ",")
	cfg.BatchBytes = int32(batch)
	if !*quiet {
		cfg.Progress = os.Stderr
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep := &bench.Report{Title: "floe bench " + mode, Generated: time.Now(), Machine: bench.ThisMachine(),
		Command: "floe bench " + strings.Join(args, " ")}
	say := func(format string, a ...any) {
		if !*quiet {
			fmt.Fprintf(os.Stderr, format, a...)
		}
	}

	var res *bench.Result
	if !*baselinesOnly {
		say("%s: %s\n", labelOr(cfg), mode)
		var err error
		if res, err = bench.Run(ctx, cfg); err != nil {
			return err
		}
		rep.Results = append(rep.Results, res)
	}
	if *withKfake {
		kcfg := cfg
		kcfg.Label = "kfake"
		say("kfake: %s\n", mode)
		kres, err := bench.Kfake(ctx, kcfg)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, kres)
	}
	if *rawBucket != "" {
		size := *rawSize
		if size <= 0 && res != nil && res.Storage != nil && res.Storage.BytesPerPut > 0 {
			size = int(res.Storage.BytesPerPut)
		}
		if size <= 0 {
			size = 1 << 20
		}
		d := *rawDur
		if d <= 0 {
			d = cfg.Duration
		}
		if d <= 0 {
			d = 10 * time.Second
		}
		b, closeBucket, err := openBucket(ctx, *rawBucket)
		if err != nil {
			return err
		}
		if *rawLatency > 0 {
			b = &faulty.Bucket{Bucket: b, Latency: *rawLatency}
		}
		say("raw PUT: %d bytes × %d concurrent to %s\n", size, *rawConc, *rawBucket)
		rres, err := bench.RawPut(ctx, bench.RawPutConfig{Bucket: b, ObjectSize: size, Concurrency: *rawConc,
			Duration: d, Rate: *rawRate, Label: rawLabel(*rawBucket, *rawLatency), Progress: cfg.Progress})
		closeBucket()
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, rres)
	}

	if *jsonOut != "-" {
		if err := rep.WriteText(os.Stdout); err != nil {
			return err
		}
	}
	if err := writeOut(*jsonOut, rep.WriteJSON); err != nil {
		return err
	}
	return writeOut(*htmlOut, rep.WriteHTML)
}

func labelOr(cfg bench.Config) string {
	if cfg.Label != "" {
		return cfg.Label
	}
	return strings.Join(cfg.Brokers, ",")
}

// rawLabel names a raw PUT baseline by the bucket's scheme and any added
// latency: "raw PUT s3", "raw PUT file +100ms".
func rawLabel(u string, latency time.Duration) string {
	s, _, _ := strings.Cut(u, "://")
	if latency > 0 {
		s += " +" + latency.String()
	}
	return "raw PUT " + s
}

// writeOut writes with fn to path: nothing for "", stdout for "-".
func writeOut(path string, fn func(io.Writer) error) error {
	switch path {
	case "":
		return nil
	case "-":
		return fn(os.Stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
