// Command natsbench is `floe bench` for NATS JetStream: the same load —
// records of RecordSize random bytes from Producers connections, spread
// over Partitions subjects of one file-backed stream, closed loop or on a
// fixed-rate schedule, optionally with one consumer reading the stream from
// the start — driven by the nats.go JetStream client, with the same
// latency definitions (produce: publish ack − scheduled time; end to end:
// delivery − scheduled time, the scheduled time carried in a header) and
// the same JSON report. `make bench` runs it against nats-server to set
// floe's broker CPU per GB beside a durable broker that is not Kafka.
//
// A JetStream publish is acknowledged per message (there are no batches),
// and each producer may have MaxBuffered publishes unacknowledged, the
// counterpart of a Kafka producer's buffered records.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"floe/bench"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "natsbench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cfg := bench.DefaultConfig()
	fs := flag.NewFlagSet("natsbench", flag.ContinueOnError)
	url := fs.String("url", nats.DefaultURL, "the NATS server `URL`")
	fs.StringVar(&cfg.Mode, "mode", bench.ModeE2E, "produce or e2e")
	fs.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "subjects of the stream the records are spread over")
	fs.IntVar(&cfg.RecordSize, "record-size", cfg.RecordSize, "record value size in `bytes` (random, incompressible)")
	fs.Int64Var(&cfg.Records, "records", 0, "stop after this many records (0: --duration alone)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to send")
	fs.Float64Var(&cfg.Rate, "rate", 0, "target `records/s` over all producers (0: as fast as acknowledged)")
	fs.IntVar(&cfg.Producers, "producers", cfg.Producers, "producer connections")
	fs.IntVar(&cfg.MaxBuffered, "max-buffered", cfg.MaxBuffered, "unacknowledged publishes per producer before it blocks")
	fs.DurationVar(&cfg.Drain, "drain", cfg.Drain, "how long the consumer may take to catch up after sending stops")
	fs.StringVar(&cfg.Label, "label", "NATS JetStream", "name of this run in the reports")
	jsonOut := fs.String("json", "", "write the JSON report to `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.Mode != bench.ModeProduce && cfg.Mode != bench.ModeE2E {
		return fmt.Errorf("mode %q: want produce or e2e", cfg.Mode)
	}
	if cfg.Records <= 0 && cfg.Duration <= 0 {
		return errors.New("need --records or --duration")
	}
	if cfg.Partitions <= 0 || cfg.Producers <= 0 || cfg.MaxBuffered <= 0 || cfg.RecordSize < 0 || cfg.Rate < 0 {
		return errors.New("partitions, producers and max-buffered must be positive, record size and rate not negative")
	}
	cfg.Brokers = []string{*url}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := load(ctx, cfg)
	if err != nil {
		return err
	}
	rep := &bench.Report{Title: "natsbench " + cfg.Mode, Generated: time.Now(), Machine: bench.ThisMachine(),
		Command: "natsbench " + strings.Join(args, " "), Results: []*bench.Result{res}}
	if err := rep.WriteText(os.Stdout); err != nil {
		return err
	}
	if *jsonOut == "" {
		return nil
	}
	f, err := os.Create(*jsonOut)
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// counters are one run's shared tallies.
type counters struct {
	sent, acked, ackedBytes atomic.Int64
	consumed, consumedBytes atomic.Int64
	late, errs              atomic.Int64
	lastAck, lastConsume    atomic.Int64 // unix nanos
	errMu                   sync.Mutex
	firstErr                string
	produceLat, e2eLat      *bench.Histogram
}

func (c *counters) fail(err error) {
	c.errs.Add(1)
	c.errMu.Lock()
	if c.firstErr == "" {
		c.firstErr = err.Error()
	}
	c.errMu.Unlock()
}

// dueOf reads the scheduled send time a record carries: Unix nanoseconds
// in decimal, since NATS headers are text (8 raw bytes, as floe bench
// sends them to Kafka, lost about one record in a hundred to a CR or LF).
func dueOf(h nats.Header) (time.Time, bool) {
	ns, err := strconv.ParseInt(h.Get(bench.DueHeader), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// load creates a fresh stream, runs the load against it and deletes it.
func load(ctx context.Context, cfg bench.Config) (*bench.Result, error) {
	c := &counters{produceLat: bench.NewHistogram(), e2eLat: bench.NewHistogram()}
	value := make([]byte, cfg.RecordSize)
	rand.Read(value)
	stream := fmt.Sprintf("floe-bench-%d", time.Now().UnixNano())
	admin, err := nats.Connect(cfg.Brokers[0])
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer admin.Close()
	ajs, err := jetstream.New(admin)
	if err != nil {
		return nil, err
	}
	if _, err := ajs.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{stream + ".>"},
		Storage: jetstream.FileStorage, Replicas: 1}); err != nil {
		return nil, fmt.Errorf("create stream: %w", err)
	}
	defer ajs.DeleteStream(context.WithoutCancel(ctx), stream)

	res := &bench.Result{Label: cfg.Label, Kind: "nats", Mode: cfg.Mode, Config: cfg}
	start := time.Now()
	sched := bench.Schedule{Start: start, Rate: cfg.Rate}
	res.StartedAt = start
	producedAll := make(chan struct{})
	var consumeErr error
	var wg sync.WaitGroup
	if cfg.Mode == bench.ModeE2E {
		wg.Add(1)
		go func() {
			defer wg.Done()
			consumeErr = consume(ctx, cfg, ajs, stream, c, producedAll)
		}()
	}
	produceErr := produce(ctx, cfg, sched, stream, value, c)
	close(producedAll)
	wg.Wait()
	if produceErr != nil {
		return nil, produceErr
	}
	if consumeErr != nil {
		return nil, consumeErr
	}
	res.Sent = c.sent.Load()
	res.Late, res.Errors, res.FirstError = c.late.Load(), c.errs.Load(), c.firstErr
	res.Produced = bench.NewThroughput(c.acked.Load(), c.ackedBytes.Load(), time.Unix(0, c.lastAck.Load()).Sub(start))
	l := c.produceLat.Summary()
	res.ProduceLatency = &l
	if cfg.Mode == bench.ModeE2E {
		t := bench.NewThroughput(c.consumed.Load(), c.consumedBytes.Load(), time.Unix(0, c.lastConsume.Load()).Sub(start))
		res.Consumed = &t
		e := c.e2eLat.Summary()
		res.E2ELatency = &e
	}
	return res, nil
}

// produce sends the schedule from cfg.Producers connections and returns
// once every publish is acknowledged or failed.
func produce(ctx context.Context, cfg bench.Config, sched bench.Schedule, stream string, value []byte, c *counters) error {
	n := int64(cfg.Producers)
	limit := cfg.Records
	if cnt := sched.Count(cfg.Duration); cnt >= 0 && cfg.Duration > 0 && (limit <= 0 || cnt < limit) {
		limit = cnt
	}
	end := sched.Start.Add(cfg.Duration)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = producer(ctx, cfg, sched, stream, value, c, k, n, limit, end)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// producer publishes records k, k+n, k+2n, … on its own connection until
// limit (when > 0), the end of the duration, or ctx ends, then waits for
// its acknowledgements.
func producer(ctx context.Context, cfg bench.Config, sched bench.Schedule, stream string, value []byte, c *counters, k, n, limit int64, end time.Time) error {
	nc, err := nats.Connect(cfg.Brokers[0])
	if err != nil {
		return fmt.Errorf("producer connect: %w", err)
	}
	defer nc.Close()
	onAck := func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
		now := time.Now()
		if due, ok := dueOf(m.Header); ok {
			c.produceLat.Record(now.Sub(due))
		}
		c.acked.Add(1)
		c.ackedBytes.Add(int64(len(m.Data)))
		c.lastAck.Store(now.UnixNano())
	}
	onErr := func(_ jetstream.JetStream, _ *nats.Msg, err error) { c.fail(err) }
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(cfg.MaxBuffered),
		jetstream.WithPublishAsyncAckHandler(onAck), jetstream.WithPublishAsyncErrHandler(onErr),
		jetstream.WithPublishAsyncTimeout(time.Minute))
	if err != nil {
		return err
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := k; limit <= 0 || i < limit; i += n {
		// Unlike floe bench, a fixed-rate run also stops at the end of its
		// duration: a server that falls far behind the rate (JetStream
		// with sync_interval: always) would otherwise take many times
		// the duration to be sent the rest, late.
		if cfg.Duration > 0 && time.Now().After(end) {
			break
		}
		var due time.Time
		if sched.Open() {
			due = sched.At(i)
			if d := time.Until(due); d > 0 {
				timer.Reset(d)
				select {
				case <-ctx.Done():
					return nil
				case <-timer.C:
				}
			} else if d < -time.Millisecond {
				c.late.Add(1)
			}
		} else {
			due = time.Now()
		}
		if ctx.Err() != nil {
			return nil
		}
		m := &nats.Msg{Subject: fmt.Sprintf("%s.%d", stream, i%int64(cfg.Partitions)), Data: value,
			Header: nats.Header{bench.DueHeader: []string{strconv.FormatInt(due.UnixNano(), 10)}}}
		c.sent.Add(1)
		// A full window of unacknowledged publishes blocks here (up to
		// the stall wait), as a Kafka producer's full buffer does.
		if _, err := js.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute)); err != nil {
			c.fail(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
	case <-time.After(time.Minute):
		c.fail(fmt.Errorf("%d publishes unacknowledged a minute after sending stopped", js.PublishAsyncPending()))
	}
	return nil
}

// consume reads the stream from the start with an ordered consumer until
// it has read every acknowledged record (known once producedAll is
// closed), or the drain time after that runs out.
func consume(ctx context.Context, cfg bench.Config, js jetstream.JetStream, stream string, c *counters, producedAll <-chan struct{}) error {
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		now := time.Now()
		if due, ok := dueOf(m.Headers()); ok {
			c.e2eLat.Record(now.Sub(due))
		}
		c.consumed.Add(1)
		c.consumedBytes.Add(int64(len(m.Data())))
		c.lastConsume.Store(now.UnixNano())
	}, jetstream.PullMaxMessages(4096))
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	defer cc.Stop()
	select {
	case <-producedAll:
	case <-ctx.Done():
		return nil
	}
	deadline := time.Now().Add(cfg.Drain)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for c.consumed.Load() < c.acked.Load() {
		if time.Now().After(deadline) {
			c.fail(fmt.Errorf("consumer read %d of %d acknowledged records within the %v drain time",
				c.consumed.Load(), c.acked.Load(), cfg.Drain))
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	return nil
}
