// Package compactor runs floe's background jobs: merging the small objects
// agents flush into larger ones (levels), retention (retention.ms,
// retention.bytes), key compaction of cleanup.policy=compact topics, and
// garbage collection of objects nothing references any more and of objects
// PUT by a process that died before committing them.
//
// Every job runs under a lease in the metadata store (one lease name per
// job kind), so any number of compactors can run and no job runs twice at
// once. Every job is safe to kill at any point: a merged object becomes
// visible only through one atomic metadata swap (Store.ReplaceRows), which
// fails if any source row changed meanwhile; an object written by a job
// killed before its swap is an orphan the GC job deletes after the grace
// period. Objects are deleted only after a grace period, so fetches that
// read an index row just before a swap still find its object.
//
// The compactor never changes the object format, nor the bytes of a batch
// that merges, in topics whose compression.type is producer (the default):
// merged objects hold the same batches as their sources, so fetches are
// byte-identical before and after. A topic set to a codec gets its batches
// recompressed into it by merges (recompress.go: records, offsets and
// producer fields kept). Key compaction rewrites batches (offsets kept, see
// encodeBatch), uncompressed or in the topic's codec.
package compactor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"log/slog"
	"sync"
	"time"

	"floe/internal/bufpool"
	"floe/internal/periodic"
	"floe/metadata"
	"floe/storage"
	"floe/topicconfig"
)

// Config configures a Compactor. Zero durations and sizes are invalid;
// start from DefaultConfig.
type Config struct {
	// ID names this compactor as the owner of its leases.
	ID string
	// Interval is the pause between rounds of jobs.
	Interval time.Duration
	// LeaseTTL is how long a job lease lasts without renewal; a job renews
	// it between steps, and a killed compactor's lease expires after it.
	LeaseTTL time.Duration
	// Plan bounds merge jobs.
	Plan PlanConfig
	// Grace is how long an unreferenced object stays in the bucket, and
	// how old an unknown object must be before it counts as an orphan.
	Grace time.Duration
	// TopicDefaults are the broker defaults of retention and key
	// compaction configs, the same the agents report (topicconfig).
	TopicDefaults topicconfig.Defaults
	// MergeBufferBytes bounds the source bytes one merge holds: a window of
	// each source object, their sizes together this much, through which
	// the merged object is streamed into its PUT (writeMerged).
	MergeBufferBytes int64
	// MaxRowBytes bounds the index rows a merge writes: contiguous source
	// rows of a partition collapse into one row up to this size (see
	// mergedRows), since fetches read a row whole.
	MaxRowBytes int64
	// KeyCompactMaxBytes skips key compaction of partitions whose dirty
	// data is larger (it is done in memory).
	KeyCompactMaxBytes int64
	// DeleteBatch bounds the objects GC deletes per round.
	DeleteBatch int
	// Busy, if set, reports whether foreground work shares this process
	// (floe dev's agent producing); while it does, merges pause PaceRatio
	// times the duration of each step after it (see pacer).
	Busy func() bool
	// PaceRatio is the pause per unit of work while Busy; 0 never pauses.
	PaceRatio float64
	// RetentionHold, if set, returns for a topic whose records must wait
	// for something before retention or key compaction removes them (ok
	// true) the offset per partition below which they may go; a partition
	// absent from the map holds everything. floe's Iceberg converter holds
	// what its tables do not have yet.
	RetentionHold func(ctx context.Context, t metadata.Topic) (hold map[int32]int64, ok bool, err error)
}

// DefaultConfig returns production defaults: WarpStream's fan-in of 32, a
// one-hour grace period, Kafka's broker defaults for retention.
func DefaultConfig() Config {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	return Config{
		ID:       "compactor-" + hex.EncodeToString(rnd[:]),
		Interval: 10 * time.Second,
		LeaseTTL: time.Minute,
		Plan: PlanConfig{
			FanIn:    32,
			MaxWait:  10 * time.Minute,
			MaxLevel: 3,
			MaxBytes: 256 << 20,
		},
		Grace:              time.Hour,
		TopicDefaults:      topicconfig.KafkaDefaults(),
		KeyCompactMaxBytes: 256 << 20,
		MergeBufferBytes:   64 << 20,
		MaxRowBytes:        8 << 20,
		DeleteBatch:        1000,
	}
}

// Compactor runs the jobs in a loop between Start and Close.
type Compactor struct {
	cfg     Config
	store   metadata.Store
	bucket  storage.Bucket
	log     *slog.Logger
	metrics *metrics
	// now is the clock of retention and tombstone expiry; tests may set it.
	now func() time.Time
	// gaugeKeys are the per-level gauge series last set (refreshGauges).
	gaugeMu   sync.Mutex
	gaugeKeys map[levelState]float64
	// logged is when each warning logged through logDue last was, so a
	// partition that stays unreadable is logged once an hour rather than
	// every round.
	loggedMu sync.Mutex
	logged   map[any]time.Time
	// lastOrphanScan is when gc last listed the bucket for orphans: it
	// does once per grace period (deleteOrphans), not every round.
	lastOrphanScan time.Time
	// defaults are TopicDefaults with the cluster's dynamic broker
	// configs, read at the start of every round.
	defaults *topicconfig.Live
	// windows recycles merges' source windows, up to MergeBufferBytes
	// (the merges' memory budget) kept between merges.
	windows *bufpool.Pool

	loop *periodic.Loop
}

// New returns a compactor; it does nothing until Start or RunOnce.
func New(cfg Config, store metadata.Store, bucket storage.Bucket, log *slog.Logger) *Compactor {
	return &Compactor{
		cfg:      cfg,
		store:    store,
		bucket:   bucket,
		log:      log.With("component", "compactor", "compactor_id", cfg.ID),
		metrics:  newMetrics(),
		now:      time.Now,
		windows:  bufpool.New(cfg.MergeBufferBytes),
		defaults: topicconfig.NewLive(cfg.TopicDefaults),
	}
}

// Gatherer exposes the compactor's metrics for another process-wide
// endpoint (floe dev serves them on the agent's /metrics).
func (c *Compactor) Gatherer() prometheus.Gatherer { return c.metrics.reg }

// Start runs rounds every interval() until Close.
func (c *Compactor) Start(ctx context.Context) {
	c.loop = periodic.StartFunc(ctx, c.interval, c.RunOnce, func(err error) {
		c.log.Warn("compaction round failed", "err", err)
	})
}

// interval is the pause between rounds: the cluster's dynamic
// log.cleaner.backoff.ms as the last round read it, else Interval.
func (c *Compactor) interval() time.Duration {
	if d, ok := c.defaults.Get().CleanerBackoff(); ok {
		return d
	}
	return c.cfg.Interval
}

// Close stops the loop and waits for the running job to notice. Leases
// held are released so another compactor may continue at once.
func (c *Compactor) Close() { c.loop.Close() }

// Job names, used as lease names and metric labels.
const (
	jobMerge     = "merge"
	jobRetention = "retention"
	jobCompact   = "key-compaction"
	jobGC        = "gc"
)

// RunOnce runs one round: the cluster's dynamic configs read, retention, key compaction, merges, GC, each
// under its lease (a job whose lease another compactor holds is skipped),
// then refreshes the gauges. It returns the first error; later jobs still
// run.
func (c *Compactor) RunOnce(ctx context.Context) error {
	var errs []error
	if err := c.defaults.Refresh(ctx, c.store); err != nil {
		errs = append(errs, err) // the round goes on with the last ones read
	}
	for _, j := range []struct {
		name string
		fn   func(ctx context.Context, l *metadata.JobLease) error
	}{
		{jobRetention, c.retention},
		{jobCompact, c.keyCompaction},
		{jobMerge, c.merges},
		{jobGC, c.gc},
	} {
		if ctx.Err() != nil {
			break
		}
		err := c.withLease(ctx, j.name, j.fn)
		result := "ok"
		switch {
		case errors.Is(err, errLeaseHeld):
			result, err = "skipped", nil
		case err != nil:
			result = "error"
			errs = append(errs, fmt.Errorf("%s: %w", j.name, err))
		}
		c.metrics.jobs.WithLabelValues(j.name, result).Inc()
	}
	if ctx.Err() == nil {
		if err := c.refreshGauges(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

var errLeaseHeld = errors.New("lease held by another compactor")

func (c *Compactor) withLease(ctx context.Context, name string, fn func(ctx context.Context, l *metadata.JobLease) error) error {
	l, err := metadata.AcquireJobLease(ctx, c.store, name, c.cfg.ID, c.cfg.LeaseTTL)
	if err != nil {
		return err
	}
	if l == nil {
		return errLeaseHeld
	}
	defer func() {
		if err := l.Release(ctx); err != nil {
			c.log.Warn("release lease failed", "lease", name, "err", err)
		}
	}()
	return fn(ctx, l)
}
