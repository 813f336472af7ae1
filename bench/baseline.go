package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"floe/storage"
)

// Kfake runs cfg against franz-go's in-memory kfake broker, started in
// this process for the run and closed after it: the reference a broker
// with no durability at all reaches on the same machine under the same
// load. cfg.Brokers and cfg.MetricsURL are ignored.
func Kfake(ctx context.Context, cfg Config) (*Result, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, fmt.Errorf("kfake: %w", err)
	}
	defer c.Close()
	cfg.Brokers = c.ListenAddrs()
	cfg.MetricsURL = ""
	cfg.Topic = ""
	if cfg.Label == "" {
		cfg.Label = "kfake"
	}
	return Run(ctx, cfg)
}

// RawPutConfig is a raw bucket write baseline: PUTs of ObjectSize random
// bytes from Concurrency workers, back to back (or Rate a second), for
// Duration.
type RawPutConfig struct {
	Bucket      storage.Bucket
	ObjectSize  int
	Concurrency int
	Duration    time.Duration
	// Rate, if positive, paces the PUTs to this many a second over all
	// workers, on a fixed schedule (the Nth is due at start + N/Rate), so
	// the baseline can match an agent's PUT rate under a fixed-rate load
	// rather than the most the bucket takes; Concurrency still bounds the
	// PUTs in flight. A PUT's latency then counts from its due time.
	Rate float64
	// Prefix is where the objects go; they are deleted afterwards.
	Prefix   string
	Label    string
	Progress io.Writer
}

// RawPutResult is the raw PUT baseline's own figures.
type RawPutResult struct {
	ObjectSize  int     `json:"object_size"`
	Concurrency int     `json:"concurrency"`
	Puts        int64   `json:"puts"`
	PutsPerS    float64 `json:"puts_per_s"`
	MBPerS      float64 `json:"mb_per_s"`
	Latency     Latency `json:"put_latency"`
	// CPUSeconds is this process's user+system time over the PUTs
	// (getrusage): the client's cost of storing the bytes, the floor
	// under an agent's CPU per GB, since an agent must at least PUT them.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	// Rate is the PUTs a second asked for; 0 for back to back.
	Rate float64 `json:"rate,omitempty"`
}

// ProcessCPUSeconds is this process's user+system CPU time so far.
func ProcessCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// RawPut measures what the bucket takes when nothing but PUTs are sent to
// it: the ceiling an agent's flushes can approach at that object size and
// flush concurrency, or with cfg.Rate what PUTs at an agent's rate cost.
func RawPut(ctx context.Context, cfg RawPutConfig) (*Result, error) {
	if cfg.Bucket == nil || cfg.ObjectSize <= 0 || cfg.Concurrency <= 0 || cfg.Duration <= 0 || cfg.Rate < 0 {
		return nil, fmt.Errorf("raw put: need a bucket, object size, concurrency and duration, and a rate ≥ 0 (got %d, %d, %v, %g)",
			cfg.ObjectSize, cfg.Concurrency, cfg.Duration, cfg.Rate)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = fmt.Sprintf("floe-bench-raw/%d/", time.Now().UnixNano())
	}
	if cfg.Label == "" {
		cfg.Label = "raw PUT"
	}
	data := make([]byte, cfg.ObjectSize)
	rand.Read(data)
	lat := NewHistogram()
	var puts, errs, tickets atomic.Int64
	var errMu sync.Mutex
	var firstErr string
	cpuStart := ProcessCPUSeconds()
	start := time.Now()
	end := start.Add(cfg.Duration)
	sched := Schedule{Start: start, Rate: cfg.Rate}
	r := &run{cfg: Config{Duration: cfg.Duration, Progress: cfg.Progress}, produceLat: lat}
	stop := r.progress(ctx)
	var wg sync.WaitGroup
	for w := range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(end) && ctx.Err() == nil; n++ {
				t := time.Now()
				if sched.Open() {
					// Workers take the schedule's slots in turn: a slow
					// PUT delays only its own worker, and the slots it
					// missed go to the others.
					t = sched.At(tickets.Add(1) - 1)
					if !t.Before(end) || !sleepUntil(ctx, t) {
						break
					}
				}
				err := cfg.Bucket.Put(ctx, fmt.Sprintf("%s%d-%d", cfg.Prefix, w, n), data)
				if err != nil {
					errs.Add(1)
					errMu.Lock()
					if firstErr == "" {
						firstErr = err.Error()
					}
					errMu.Unlock()
					continue
				}
				lat.Record(time.Since(t))
				puts.Add(1)
				r.acked.Add(1)
				r.ackedBytes.Add(int64(len(data)))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := ProcessCPUSeconds() - cpuStart
	stop()
	if cfg.Progress != nil {
		fmt.Fprintln(cfg.Progress)
	}
	// Leave the bucket as it was; a failed delete only leaves garbage.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var keys []string
	_ = cfg.Bucket.List(cctx, cfg.Prefix, func(o storage.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	})
	for _, k := range keys {
		_ = cfg.Bucket.Delete(cctx, k)
	}

	n := puts.Load()
	tp := NewThroughput(n, n*int64(cfg.ObjectSize), elapsed)
	raw := &RawPutResult{ObjectSize: cfg.ObjectSize, Concurrency: cfg.Concurrency, Rate: cfg.Rate, Puts: n,
		PutsPerS: tp.RecordsPerS, MBPerS: tp.MBPerS, Latency: lat.Summary(), CPUSeconds: cpu}
	return &Result{Label: cfg.Label, Kind: "raw-put", Mode: "put", StartedAt: start,
		Config:   Config{Duration: cfg.Duration, RecordSize: cfg.ObjectSize, Producers: cfg.Concurrency, Label: cfg.Label},
		Produced: tp, ProduceLatency: &raw.Latency, Errors: errs.Load(), FirstError: firstErr, RawPut: raw}, nil
}

// sleepUntil waits for t, or until ctx is done (false).
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
