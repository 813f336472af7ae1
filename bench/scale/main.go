// Command scale is `make bench-scale`: floe with many partitions and many
// clients (issue 19, part 3). Each scenario starts real floe processes
// (floe dev, or floe agent on a throwaway PostgreSQL and MinIO: the
// harnesses the integration tests use), drives them with franz-go clients
// and hand-built kmsg requests, and reads the agent's /metrics, its
// /proc/PID entries and the metadata store's rows:
//
//   - partitions: a 10,000-partition topic: CreateTopics time, a Metadata
//     answer's size and time, one produce touching 1,000 partitions (its
//     PUTs, metadata commits and index rows), the agent's RSS;
//   - connections: 5,000 idle connections and 500 producers on one agent:
//     RSS, open file descriptors, produce latency;
//   - old-reads: a topic of several GB in MinIO, then 200 consumers each
//     reading a different old offset range from a cold agent (GETs per GB,
//     read-cache hits), then one consumer catching up on all of it from a
//     cold agent, beside a raw ranged-GET loop at the agent's range size.
//
// It prints what it measured, with the load average around each run (the
// box is shared: figures move with it), and writes them as JSON with -json.
// It only listens on 127.0.0.1, works in a temporary directory it removes,
// and stops everything it started.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"floe/bench/harness"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// figure is one measured value, in the order it was taken.
type figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// result is one scenario on one store.
type result struct {
	Scenario   string   `json:"scenario"`
	Store      string   `json:"store"`
	Command    string   `json:"agent_command"`
	LoadBefore string   `json:"loadavg_before"`
	LoadAfter  string   `json:"loadavg_after"`
	Figures    []figure `json:"figures"`
	Notes      []string `json:"notes,omitempty"`
}

func (r *result) add(name string, v float64, unit string) {
	r.Figures = append(r.Figures, figure{name, v, unit})
	fmt.Fprintf(os.Stderr, "  %-58s %14.3f %s\n", name, v, unit)
}

func (r *result) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	r.Notes = append(r.Notes, s)
	fmt.Fprintln(os.Stderr, "  note:", s)
}

// env is what every scenario shares: the binary, a temporary directory,
// the PostgreSQL and MinIO servers once one scenario needed them.
type env struct {
	bin  string
	tmp  string
	srv  *harness.Servers
	seq  int
	opts options
}

type options struct {
	partitions    int
	flushParts    int
	idleConns     int
	producers     int
	produceFor    time.Duration
	oldBytes      int64
	readers       int
	readerBytes   int64
	rawGetFor     time.Duration
	minFreeDisk   int64
	fallbackBytes int64
	oldFlags      []string // extra flags of old-reads' agents
}

// spec returns a fresh agent of the given store: a new data directory, or
// a new database and bucket.
func (e *env) spec(ctx context.Context, store string, extra ...string) (agentSpec, error) {
	e.seq++
	s := agentSpec{bin: e.bin, store: store, extra: extra,
		logPath: filepath.Join(e.tmp, fmt.Sprintf("agent-%d.log", e.seq))}
	switch store {
	case "dev":
		s.dataDir = filepath.Join(e.tmp, fmt.Sprintf("dev-%d", e.seq))
	case "pg-minio":
		if e.srv == nil {
			srv, err := harness.StartServers(e.tmp, "floe-scale")
			if err != nil {
				return s, err
			}
			e.srv = srv
			// The raw GET baseline opens the bucket in this process.
			for _, kv := range srv.MinIO.Env() {
				k, v, _ := strings.Cut(kv, "=")
				os.Setenv(k, v)
			}
		}
		var err error
		if s.meta, s.bucket, err = e.srv.Fresh(ctx); err != nil {
			return s, err
		}
		s.env = e.srv.MinIO.Env()
	default:
		return s, fmt.Errorf("unknown store %q (want dev, pg-minio)", store)
	}
	return s, nil
}

func run() error {
	floeBin := flag.String("floe", "", "the floe `binary` (default: built from ./cmd/floe into a temporary directory)")
	scenarios := flag.String("scenario", "partitions,connections,old-reads", "comma-separated `scenarios`: partitions, connections, old-reads")
	stores := flag.String("store", "dev,pg-minio", "comma-separated `stores` for the partitions and connections scenarios: dev, pg-minio (old-reads always runs on pg-minio)")
	jsonOut := flag.String("json", "", "write the results to this `file` as JSON")
	var o options
	flag.IntVar(&o.partitions, "partitions", 10_000, "partitions of the partitions scenario's topic")
	flag.IntVar(&o.flushParts, "flush-partitions", 1_000, "partitions one produce request touches in the partitions scenario")
	flag.IntVar(&o.idleConns, "idle-connections", 5_000, "idle connections of the connections scenario")
	flag.IntVar(&o.producers, "producers", 500, "active producers (one client each) of the connections scenario")
	flag.DurationVar(&o.produceFor, "produce-for", 30*time.Second, "how long the connections scenario's producers send")
	flag.Int64Var(&o.oldBytes, "old-bytes", 10e9, "bytes produced for the old-reads scenario (read back whole by the catch-up consumer)")
	flag.IntVar(&o.readers, "readers", 200, "consumers of the old-reads scenario, each on its own offset range (0: only the catch-up and the raw GETs run)")
	flag.Int64Var(&o.readerBytes, "reader-bytes", 8<<20, "bytes each of those consumers reads")
	flag.DurationVar(&o.rawGetFor, "raw-get-for", 15*time.Second, "how long each raw GET concurrency runs")
	flag.Int64Var(&o.minFreeDisk, "min-free-disk", 20e9, "if producing -old-bytes would leave less free disk than this, produce -fallback-bytes instead")
	flag.Int64Var(&o.fallbackBytes, "fallback-bytes", 4e9, "what old-reads produces when the disk is short")
	oldFlags := flag.String("old-reads-flags", "", "space-separated extra `flags` of the old-reads scenario's agents (e.g. --read-ahead-bytes=0)")
	flag.Parse()
	o.oldFlags = strings.Fields(*oldFlags)
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")

	tmp, err := os.MkdirTemp("", "floe-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	e := &env{tmp: tmp, opts: o}
	defer func() {
		if e.srv != nil {
			e.srv.Stop()
		}
	}()
	if e.bin = *floeBin; e.bin == "" {
		e.bin = filepath.Join(tmp, "floe")
		build := exec.Command("go", "build", "-o", e.bin, "./cmd/floe")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build floe: %w", err)
		}
	} else if e.bin, err = filepath.Abs(e.bin); err != nil {
		return err
	}

	// Interrupted, the scenarios fail on a cancelled context and every
	// process started is stopped on the way out.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var results []*result
	for _, sc := range strings.Split(*scenarios, ",") {
		var storeList []string
		switch sc {
		case "partitions", "connections":
			storeList = strings.Split(*stores, ",")
		case "old-reads":
			storeList = []string{"pg-minio"}
		default:
			return fmt.Errorf("unknown scenario %q", sc)
		}
		for _, st := range storeList {
			r := &result{Scenario: sc, Store: st, LoadBefore: harness.LoadAvg()}
			fmt.Fprintf(os.Stderr, "\n== %s on %s (load %s)\n", sc, st, r.LoadBefore)
			var err error
			switch sc {
			case "partitions":
				err = e.partitions(ctx, st, r)
			case "connections":
				err = e.connections(ctx, st, r)
			case "old-reads":
				err = e.oldReads(ctx, st, r)
			}
			r.LoadAfter = harness.LoadAvg()
			fmt.Fprintf(os.Stderr, "  load after: %s\n", r.LoadAfter)
			results = append(results, r)
			if err != nil {
				return fmt.Errorf("%s on %s: %w", sc, st, err)
			}
		}
	}
	if *jsonOut != "" {
		b, err := json.MarshalIndent(struct {
			Generated time.Time `json:"generated"`
			Results   []*result `json:"results"`
		}{time.Now().UTC(), results}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

const mib = 1 << 20
