package bench

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Modes of a run.
const (
	ModeProduce = "produce" // produce only: acknowledgement latency
	ModeConsume = "consume" // fill a topic, then read it back as fast as possible
	ModeE2E     = "e2e"     // produce and consume at once: both latencies
)

// DueHeader carries a record's scheduled send time (Unix nanoseconds, big
// endian) so the consumer measures end-to-end latency from the same
// origin as the producer.
const DueHeader = "floe-bench-due"

// Config is one load run. Zero fields take the defaults of DefaultConfig.
type Config struct {
	Mode    string   `json:"mode"`
	Brokers []string `json:"brokers"`
	// Topic is created with Partitions; empty means a fresh
	// "floe-bench-<time>" so runs never read each other's records.
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	RecordSize int    `json:"record_size"`
	// Records stops the run after this many records (0: Duration alone).
	Records int64 `json:"records"`
	// Duration bounds the sending phase.
	Duration time.Duration `json:"duration_ns"`
	// Rate is the target records/s over all producers (0: unlimited).
	Rate float64 `json:"rate"`
	// Producers is the number of producer clients (connections).
	Producers int `json:"producers"`
	// Linger and BatchBytes are the clients' batching knobs.
	Linger     time.Duration `json:"linger_ns"`
	BatchBytes int32         `json:"batch_bytes"`
	// MaxBuffered bounds records buffered per producer client; a full
	// buffer blocks the producer, and at a fixed rate that wait is counted.
	MaxBuffered int `json:"max_buffered"`
	// Inflight is produce requests in flight per broker per producer
	// (Kafka's max.in.flight.requests.per.connection). With acks waiting
	// for object storage, one at a time would measure the client's
	// round trip, not the broker.
	Inflight int `json:"inflight"`
	// Compression is none, gzip, snappy, lz4 or zstd.
	Compression string `json:"compression"`
	// MetricsURL is the agent's /metrics; empty skips storage figures.
	MetricsURL string `json:"metrics_url,omitempty"`
	// SampleInterval is how often MetricsURL is read during the run for
	// the peaks a delta cannot show (memory, buffered bytes); 0 reads it
	// only before and after, for a broker whose CPU is measured (each
	// scrape costs the agent some CPU, which a broker that is not scraped
	// does not pay).
	SampleInterval time.Duration `json:"sample_interval_ns,omitempty"`
	// Drain bounds the wait for the consumer to catch up after sending.
	Drain time.Duration `json:"drain_ns"`
	// Warmup is sent before Duration, at the same rate, and left out of
	// the latency figures: it covers the clients' start (connections,
	// metadata, and franz-go's one batch per partition in flight until
	// the partition's first acknowledgement), which otherwise fills the
	// tail of a short run. Records and throughput count it.
	Warmup time.Duration `json:"warmup_ns,omitempty"`
	// Label names the run in reports ("floe dev", "kfake").
	Label string `json:"label"`
	// Progress, if set, gets a progress line refreshed in place.
	Progress io.Writer `json:"-"`
}

// DefaultConfig is a 10 s closed-loop e2e run of 1 KiB records on 16
// partitions from 2 producers, each with up to 5 requests in flight.
func DefaultConfig() Config {
	return Config{
		Mode: ModeE2E, Brokers: []string{"127.0.0.1:9092"}, Partitions: 16, RecordSize: 1024,
		Duration: 10 * time.Second, Producers: 2, Linger: 5 * time.Millisecond,
		BatchBytes: 1 << 20, MaxBuffered: 50000, Inflight: 5, Compression: "none", Drain: 30 * time.Second,
		SampleInterval: 500 * time.Millisecond,
	}
}

// Throughput is records and bytes moved over a span.
type Throughput struct {
	Records     int64   `json:"records"`
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	RecordsPerS float64 `json:"records_per_s"`
	MBPerS      float64 `json:"mb_per_s"`
}

// NewThroughput is recs records of bytes bytes moved in d.
func NewThroughput(recs, bytes int64, d time.Duration) Throughput {
	t := Throughput{Records: recs, Bytes: bytes, Seconds: round2(d.Seconds())}
	if s := d.Seconds(); s > 0 {
		t.RecordsPerS = round2(float64(recs) / s)
		t.MBPerS = round2(float64(bytes) / s / 1e6)
	}
	return t
}

// Result is one run's figures, as written to JSON.
type Result struct {
	Label     string    `json:"label"`
	Kind      string    `json:"kind"` // "kafka" or "raw-put"
	Mode      string    `json:"mode"`
	Config    Config    `json:"config"`
	StartedAt time.Time `json:"started_at"`
	// Sent counts records handed to the clients; Produced those
	// acknowledged, Consumed those read back.
	Sent           int64       `json:"sent"`
	Produced       Throughput  `json:"produced"`
	Consumed       *Throughput `json:"consumed,omitempty"`
	ProduceLatency *Latency    `json:"produce_latency,omitempty"`
	E2ELatency     *Latency    `json:"e2e_latency,omitempty"`
	// Late counts records sent after their due time by more than 1 ms:
	// the load generator (or backpressure) could not keep the rate.
	Late       int64    `json:"late"`
	Errors     int64    `json:"errors"`
	FirstError string   `json:"first_error,omitempty"`
	Storage    *Storage `json:"storage,omitempty"`
	// RawPut is set for a raw bucket PUT baseline.
	RawPut *RawPutResult `json:"raw_put,omitempty"`
}

// run is the shared state of one Run.
type run struct {
	cfg   Config
	sched Schedule
	value []byte

	// measureFrom is when the warm-up ends: records due before it are
	// not in the latency histograms.
	measureFrom time.Time

	sent, acked, ackedBytes atomic.Int64
	consumed, consumedBytes atomic.Int64
	late, errs              atomic.Int64
	lastAck, lastConsume    atomic.Int64 // unix nanos
	errMu                   sync.Mutex
	firstErr                string
	produceLat, e2eLat      *Histogram
}

func (r *run) fail(err error) {
	r.errs.Add(1)
	r.errMu.Lock()
	if r.firstErr == "" {
		r.firstErr = err.Error()
	}
	r.errMu.Unlock()
}

func (cfg *Config) fill() error {
	d := DefaultConfig()
	if cfg.Mode == "" {
		cfg.Mode = d.Mode
	}
	switch cfg.Mode {
	case ModeProduce, ModeConsume, ModeE2E:
	default:
		return fmt.Errorf("mode %q: want produce, consume or e2e", cfg.Mode)
	}
	if len(cfg.Brokers) == 0 {
		cfg.Brokers = d.Brokers
	}
	if cfg.Topic == "" {
		cfg.Topic = fmt.Sprintf("floe-bench-%d", time.Now().UnixNano())
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = d.Partitions
	}
	if cfg.RecordSize < 0 {
		return errors.New("negative record size")
	}
	if cfg.Records <= 0 && cfg.Duration <= 0 {
		cfg.Duration = d.Duration
	}
	if cfg.Rate < 0 {
		return errors.New("negative rate")
	}
	if cfg.Producers <= 0 {
		cfg.Producers = d.Producers
	}
	if cfg.BatchBytes <= 0 {
		cfg.BatchBytes = d.BatchBytes
	}
	if cfg.MaxBuffered <= 0 {
		cfg.MaxBuffered = d.MaxBuffered
	}
	if cfg.Inflight <= 0 {
		cfg.Inflight = d.Inflight
	}
	if cfg.Compression == "" {
		cfg.Compression = d.Compression
	}
	if cfg.Drain <= 0 {
		cfg.Drain = d.Drain
	}
	if cfg.Label == "" {
		cfg.Label = strings.Join(cfg.Brokers, ",")
	}
	_, err := codec(cfg.Compression)
	return err
}

func codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// Run drives the brokers with cfg's load and returns the figures. Errors
// of single records are counted in the result; an error return means the
// run could not happen (no broker, topic not creatable, bad config).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, value: make([]byte, cfg.RecordSize), produceLat: NewHistogram(), e2eLat: NewHistogram()}
	// Random values: compression and dedup along the path get no free ride.
	rand.Read(r.value)
	if err := createTopic(ctx, cfg); err != nil {
		return nil, err
	}
	res := &Result{Label: cfg.Label, Kind: "kafka", Mode: cfg.Mode, Config: cfg}

	if cfg.Mode == ModeConsume {
		// Fill the topic first, closed loop, outside the measurement.
		fcfg := cfg
		fcfg.Rate = 0
		fill := &run{cfg: fcfg, value: r.value, produceLat: NewHistogram(), e2eLat: NewHistogram(),
			sched: Schedule{Start: time.Now()}}
		if err := fill.produce(ctx, nil); err != nil {
			return nil, err
		}
		r.sent.Store(fill.sent.Load())
		r.acked.Store(fill.acked.Load())
		r.ackedBytes.Store(fill.ackedBytes.Load())
		if fill.errs.Load() > 0 {
			r.fail(errors.New("fill: " + fill.firstErr))
		}
	}

	var before Sample
	if cfg.MetricsURL != "" {
		var err error
		if before, err = Scrape(ctx, cfg.MetricsURL); err != nil {
			return nil, err
		}
	}
	st := &Storage{}
	stopSampling := r.sample(ctx, st)

	start := time.Now()
	r.sched = Schedule{Start: start, Rate: cfg.Rate}
	r.measureFrom = start.Add(cfg.Warmup)
	res.StartedAt = start
	var consumeErr error
	var wg sync.WaitGroup
	producedAll := make(chan struct{})
	if cfg.Mode != ModeProduce {
		wg.Add(1)
		go func() {
			defer wg.Done()
			consumeErr = r.consume(ctx, producedAll)
		}()
	}
	var produceErr error
	if cfg.Mode == ModeConsume {
		close(producedAll)
	} else {
		produceErr = r.produce(ctx, producedAll)
	}
	wg.Wait()
	stopSampling()
	if produceErr != nil {
		return nil, produceErr
	}
	if consumeErr != nil {
		return nil, consumeErr
	}

	res.Sent = r.sent.Load()
	res.Late, res.Errors, res.FirstError = r.late.Load(), r.errs.Load(), r.firstErr
	if cfg.Mode == ModeConsume {
		res.Produced = NewThroughput(r.acked.Load(), r.ackedBytes.Load(), 0)
	} else {
		res.Produced = NewThroughput(r.acked.Load(), r.ackedBytes.Load(), time.Unix(0, r.lastAck.Load()).Sub(start))
		l := r.produceLat.Summary()
		res.ProduceLatency = &l
	}
	if cfg.Mode != ModeProduce {
		c := NewThroughput(r.consumed.Load(), r.consumedBytes.Load(), time.Unix(0, r.lastConsume.Load()).Sub(start))
		res.Consumed = &c
	}
	if cfg.Mode == ModeE2E {
		l := r.e2eLat.Summary()
		res.E2ELatency = &l
	}
	if cfg.MetricsURL != "" {
		after, err := Scrape(ctx, cfg.MetricsURL)
		if err != nil {
			return nil, err
		}
		putSpan, getSpan := res.Produced.Seconds, 0.0
		if res.Consumed != nil {
			getSpan = res.Consumed.Seconds
		}
		if cfg.Mode == ModeConsume {
			putSpan = getSpan
		}
		s := storageOf(after.Sub(before), putSpan, getSpan)
		s.PeakRSSBytes, s.PeakBufferedBytes = max(st.PeakRSSBytes, after[`process_resident_memory_bytes`]), max(st.PeakBufferedBytes, after[`floe_agent_buffered_bytes`])
		res.Storage = s
	}
	if r.cfg.Progress != nil {
		fmt.Fprintln(r.cfg.Progress)
	}
	return res, nil
}

func createTopic(ctx context.Context, cfg Config) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, int32(cfg.Partitions), -1, nil, cfg.Topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", cfg.Topic, err)
	}
	return nil
}

func (r *run) clientOpts() []kgo.Opt {
	c, _ := codec(r.cfg.Compression)
	return []kgo.Opt{
		kgo.SeedBrokers(r.cfg.Brokers...),
		// floe acknowledges only what is in object storage and committed;
		// idempotence needs InitProducerID, which not every target serves.
		kgo.DisableIdempotentWrite(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(r.cfg.Linger),
		kgo.ProducerBatchMaxBytes(r.cfg.BatchBytes),
		kgo.MaxBufferedRecords(r.cfg.MaxBuffered),
		kgo.MaxProduceRequestsInflightPerBroker(r.cfg.Inflight),
		kgo.ProducerBatchCompression(c),
		kgo.RecordRetries(3),
	}
}

// produce sends the schedule from cfg.Producers clients and returns once
// every record is acknowledged or failed; producedAll is closed then.
func (r *run) produce(ctx context.Context, producedAll chan struct{}) error {
	if producedAll != nil {
		defer close(producedAll)
	}
	n := r.cfg.Producers
	clients := make([]*kgo.Client, n)
	for k := range clients {
		cl, err := kgo.NewClient(r.clientOpts()...)
		if err != nil {
			return fmt.Errorf("producer client: %w", err)
		}
		defer cl.Close()
		clients[k] = cl
	}
	stopProgress := r.progress(ctx)
	defer stopProgress()
	span := r.cfg.Warmup + r.cfg.Duration
	end := r.sched.Start.Add(span)
	limit := r.cfg.Records
	if c := r.sched.Count(span); c >= 0 && r.cfg.Duration > 0 && (limit <= 0 || c < limit) {
		limit = c
	}
	var wg sync.WaitGroup
	for k, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.producer(ctx, cl, int64(k), int64(n), limit, end)
			if err := cl.Flush(ctx); err != nil {
				r.fail(fmt.Errorf("flush: %w", err))
			}
		}()
	}
	wg.Wait()
	return nil
}

// producer sends records k, k+n, k+2n, … until limit (when > 0), the end
// of the duration (closed loop), or ctx ends.
func (r *run) producer(ctx context.Context, cl *kgo.Client, k, n, limit int64, end time.Time) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := k; limit <= 0 || i < limit; i += n {
		var due time.Time
		if r.sched.Open() {
			due = r.sched.At(i)
			if d := time.Until(due); d > 0 {
				timer.Reset(d)
				select {
				case <-ctx.Done():
					return
				case <-timer.C:
				}
			} else if d < -time.Millisecond {
				r.late.Add(1)
			}
		} else {
			due = time.Now()
			if r.cfg.Duration > 0 && due.After(end) {
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		var hdr [8]byte
		binary.BigEndian.PutUint64(hdr[:], uint64(due.UnixNano()))
		rec := &kgo.Record{Topic: r.cfg.Topic, Value: r.value,
			Headers: []kgo.RecordHeader{{Key: DueHeader, Value: hdr[:]}}}
		r.sent.Add(1)
		cl.Produce(ctx, rec, func(rec *kgo.Record, err error) {
			now := time.Now()
			if err != nil {
				r.fail(err)
				return
			}
			if !due.Before(r.measureFrom) {
				r.produceLat.Record(now.Sub(due))
			}
			r.acked.Add(1)
			r.ackedBytes.Add(int64(len(rec.Value)))
			r.lastAck.Store(now.UnixNano())
		})
	}
}

// consume reads the topic from the start until it has read every
// acknowledged record (known once producedAll is closed), or the drain
// time after that runs out.
func (r *run) consume(ctx context.Context, producedAll <-chan struct{}) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.cfg.Brokers...), kgo.ConsumeTopics(r.cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(64<<20),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return fmt.Errorf("consumer client: %w", err)
	}
	defer cl.Close()
	if r.cfg.Mode == ModeConsume {
		stop := r.progress(ctx)
		defer stop()
	}
	var deadline time.Time
	for {
		select {
		case <-producedAll:
			if deadline.IsZero() {
				deadline = time.Now().Add(r.cfg.Drain)
			}
		default:
		}
		if !deadline.IsZero() && r.consumed.Load() >= r.acked.Load() {
			return nil
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			r.fail(fmt.Errorf("consumer read %d of %d acknowledged records within the %v drain time",
				r.consumed.Load(), r.acked.Load(), r.cfg.Drain))
			return nil
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		now := time.Now()
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				r.fail(fmt.Errorf("fetch: %w", err))
			}
		})
		var n, bytes int64
		fs.EachRecord(func(rec *kgo.Record) {
			n++
			bytes += int64(len(rec.Value))
			for _, h := range rec.Headers {
				if h.Key == DueHeader && len(h.Value) == 8 {
					due := time.Unix(0, int64(binary.BigEndian.Uint64(h.Value)))
					if !due.Before(r.measureFrom) {
						r.e2eLat.Record(now.Sub(due))
					}
				}
			}
		})
		if n > 0 {
			r.consumed.Add(n)
			r.consumedBytes.Add(bytes)
			r.lastConsume.Store(now.UnixNano())
		}
	}
}

// sample polls the agent's metrics every SampleInterval for the peaks a
// delta cannot show (memory, buffered bytes), until the returned func is
// called.
func (r *run) sample(ctx context.Context, st *Storage) func() {
	if r.cfg.MetricsURL == "" || r.cfg.SampleInterval <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(r.cfg.SampleInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			s, err := Scrape(ctx, r.cfg.MetricsURL)
			if err != nil {
				continue
			}
			st.PeakRSSBytes = max(st.PeakRSSBytes, s[`process_resident_memory_bytes`])
			st.PeakBufferedBytes = max(st.PeakBufferedBytes, s[`floe_agent_buffered_bytes`])
		}
	}()
	return func() { cancel(); <-done }
}
