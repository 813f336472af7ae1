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
// bytes from Concurrency workers, back to back, for Duration.
type RawPutConfig struct {
	Bucket      storage.Bucket
	ObjectSize  int
	Concurrency int
	Duration    time.Duration
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
// flush concurrency.
func RawPut(ctx context.Context, cfg RawPutConfig) (*Result, error) {
	if cfg.Bucket == nil || cfg.ObjectSize <= 0 || cfg.Concurrency <= 0 || cfg.Duration <= 0 {
		return nil, fmt.Errorf("raw put: need a bucket, object size, concurrency and duration (got %d, %d, %v)",
			cfg.ObjectSize, cfg.Concurrency, cfg.Duration)
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
	var puts, errs atomic.Int64
	var errMu sync.Mutex
	var firstErr string
	cpuStart := ProcessCPUSeconds()
	start := time.Now()
	end := start.Add(cfg.Duration)
	r := &run{cfg: Config{Duration: cfg.Duration, Progress: cfg.Progress}, produceLat: lat}
	stop := r.progress(ctx)
	var wg sync.WaitGroup
	for w := range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(end) && ctx.Err() == nil; n++ {
				t := time.Now()
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
	raw := &RawPutResult{ObjectSize: cfg.ObjectSize, Concurrency: cfg.Concurrency, Puts: n,
		PutsPerS: tp.RecordsPerS, MBPerS: tp.MBPerS, Latency: lat.Summary(), CPUSeconds: cpu}
	return &Result{Label: cfg.Label, Kind: "raw-put", Mode: "put", StartedAt: start,
		Config:   Config{Duration: cfg.Duration, RecordSize: cfg.ObjectSize, Producers: cfg.Concurrency, Label: cfg.Label},
		Produced: tp, ProduceLatency: &raw.Latency, Errors: errs.Load(), FirstError: firstErr, RawPut: raw}, nil
}
