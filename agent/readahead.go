package agent

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"floe/metadata"
	"floe/storage"
)

// readAhead reads the object runs a consumer catching up on old data will
// fetch next into the read cache while it is still busy with this fetch's,
// so that its next fetch finds them there instead of waiting for its own
// GETs (prefetch overlaps the GETs of one fetch; this overlaps fetches).
//
// A fetch of a partition that read a run from the object store (a miss, or
// a GET in flight it joined) or a run read-ahead brought in is a consumer
// behind the head: after it, the index entries that follow what the fetch
// read are looked up and their ranges filled (Cache.Fill, which starts no
// second GET for a range cached or in flight). A fetch that reached the high
// watermark has nothing ahead and reads nothing ahead, so a tailing consumer
// never causes any.
//
// Bounds: at most cfg.ReadAheadEntries index entries and
// cfg.ReadAheadPartitionBytes bytes ahead of a partition's last fetch
// offset (refilled once less than half is left); the bytes of planned and
// running GETs within the read-ahead budget (cfg.ReadAheadBytes, one of
// the agent's memory budgets: once cached they are the read cache's); at
// most cfg.ReadAheadConcurrency look-ups and GETs at once; and none while
// the ranges read ahead and not yet read would take more than half the
// read cache (the cache is under pressure: more would evict what
// consumers are about to read). What does not fit is skipped, never waited
// for: read-ahead is only ever a head start.
//
// State: the partitions' plans under mu; the work queue is a channel read
// by the workers Start launches under the agent's context and WaitGroup,
// so Close cancels the look-ups and GETs running and waits for them.
type readAhead struct {
	store      metadata.Store
	cache      *storage.Cache
	cacheBytes int64
	entries    int   // per partition, ahead of the consumer
	bytes      int64 // per partition, ahead of the consumer
	budget     *byteBudget
	limit      int64 // the budget's size
	workers    int
	tasks      chan func(context.Context)
	skips      *prometheus.CounterVec

	mu    sync.Mutex
	parts map[aheadKey]*aheadPart
}

type aheadKey struct {
	topic     metadata.TopicID
	partition int32
}

// aheadPart is what read-ahead planned of one partition.
type aheadPart struct {
	// planned are the entries read ahead (or found cached), in offset
	// order, from the partition's last fetch offset on.
	planned []aheadRange
	// planning: a look-up for the partition is queued or running; no
	// second one starts meanwhile.
	planning bool
}

type aheadRange struct{ end, bytes int64 }

const (
	// aheadQueue bounds the look-ups and GETs waiting for a worker, per
	// worker; beyond it read-ahead is skipped.
	aheadQueue = 64
	// aheadParts bounds the partitions whose plans are remembered; a
	// forgotten plan costs one more index look-up.
	aheadParts = 4096
)

// newReadAhead returns nil when cfg turns read-ahead off (no budget, no
// workers, or no read cache to keep what it reads).
func newReadAhead(cfg Config, store metadata.Store, cache *storage.Cache, reg prometheus.Registerer) *readAhead {
	if cfg.ReadAheadBytes <= 0 || cfg.ReadAheadConcurrency <= 0 || cfg.ReadAheadEntries <= 0 ||
		cfg.ReadAheadPartitionBytes <= 0 || cfg.CacheBytes <= 0 {
		return nil
	}
	r := &readAhead{
		store: store, cache: cache, cacheBytes: cfg.CacheBytes,
		entries: cfg.ReadAheadEntries, bytes: cfg.ReadAheadPartitionBytes,
		budget: newByteBudget(cfg.ReadAheadBytes), limit: cfg.ReadAheadBytes,
		workers: cfg.ReadAheadConcurrency,
		tasks:   make(chan func(context.Context), aheadQueue*cfg.ReadAheadConcurrency),
		skips: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_agent_read_ahead_skips_total",
			Help: "Read-ahead left out, by reason: cache (read-ahead not yet read fills half the read cache), budget (--read-ahead-bytes in flight), queue (the workers are behind)."},
			[]string{"reason"}),
		parts: make(map[aheadKey]*aheadPart),
	}
	reg.MustRegister(r.skips, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "floe_agent_read_ahead_inflight_bytes",
		Help: "Bytes of read-ahead GETs planned or running (within --read-ahead-bytes)."},
		func() float64 { return float64(r.budget.inUse()) }))
	return r
}

// start launches the workers under ctx; they are counted in wg.
func (r *readAhead) start(ctx context.Context, wg *sync.WaitGroup) {
	for range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case t := <-r.tasks:
					t(ctx)
				}
			}
		}()
	}
}

// after is told of a fetch of a partition, from offset on, that read index
// entries up to next (the end offset of the last one it read) from the
// object store or from read-ahead, in a partition whose answers end at end
// (the high watermark or, read_committed, the last stable offset). It plans
// the reads of what follows next, unless enough is planned already.
func (r *readAhead) after(topic metadata.TopicID, partition int32, offset, next, end int64) {
	if r == nil || next >= end {
		return // at the head: nothing ahead
	}
	if r.pressure(0) {
		r.skips.WithLabelValues("cache").Inc()
		return
	}
	k := aheadKey{topic, partition}
	r.mu.Lock()
	p := r.parts[k]
	if p == nil {
		if len(r.parts) >= aheadParts {
			for old, op := range r.parts { // any one not planning
				if !op.planning {
					delete(r.parts, old)
					break
				}
			}
		}
		p = &aheadPart{}
		r.parts[k] = p
	}
	// What ends at or before the fetch offset was read: no longer ahead.
	i := 0
	for i < len(p.planned) && p.planned[i].end <= offset {
		i++
	}
	p.planned = p.planned[i:]
	var ahead int64
	for _, pr := range p.planned {
		ahead += pr.bytes
	}
	if p.planning || ahead*2 >= r.bytes || len(p.planned)*2 >= r.entries {
		r.mu.Unlock()
		return // being planned, or at least half still ahead
	}
	from := next
	if n := len(p.planned); n > 0 {
		from = max(from, p.planned[n-1].end)
	}
	wantBytes, wantEntries := r.bytes-ahead, r.entries-len(p.planned)
	p.planning = true
	r.mu.Unlock()

	if !r.queue(func(ctx context.Context) { r.plan(ctx, k, from, end, wantBytes, wantEntries) }) {
		r.mu.Lock()
		p.planning = false
		r.mu.Unlock()
	}
}

// queue hands t to a worker, or reports false when the queue is full.
func (r *readAhead) queue(t func(context.Context)) bool {
	select {
	case r.tasks <- t:
		return true
	default:
		r.skips.WithLabelValues("queue").Inc()
		return false
	}
}

// pressure reports whether reading n more bytes ahead would leave the
// ranges read ahead and not yet read (cached or on their way) over half
// the read cache.
func (r *readAhead) pressure(n int64) bool {
	return (r.cache.Stats().AheadUnread+r.budget.inUse()+n)*2 > r.cacheBytes
}

// plan looks up the index entries of k from offset from on (up to end,
// wantBytes and wantEntries) and queues the GETs of those not cached or in
// flight, within the budget, in offset order; it stops at the first that
// does not fit.
func (r *readAhead) plan(ctx context.Context, k aheadKey, from, end, wantBytes int64, wantEntries int) {
	var planned []aheadRange
	defer func() {
		r.mu.Lock()
		if p := r.parts[k]; p != nil {
			p.planning = false
			p.planned = append(p.planned, planned...)
		}
		r.mu.Unlock()
	}()
	entries, err := r.store.Lookup(ctx, k.topic, k.partition, from, wantBytes, wantEntries)
	if err != nil {
		return // the fetch that gets there looks again and reports it
	}
	for _, e := range entries {
		if e.EndOffset <= from || e.BaseOffset >= end {
			continue
		}
		n := e.ByteLength
		if !r.cache.Pending(e.ObjectKey, e.ByteOffset, n) {
			if r.pressure(n) {
				r.skips.WithLabelValues("cache").Inc()
				return
			}
			if n > r.limit || !r.budget.tryAcquire(n) {
				r.skips.WithLabelValues("budget").Inc()
				return
			}
			if !r.queue(func(ctx context.Context) {
				defer r.budget.release(n)
				_, _ = r.cache.Fill(ctx, e.ObjectKey, e.ByteOffset, n)
			}) {
				r.budget.release(n)
				return
			}
		}
		planned = append(planned, aheadRange{end: e.EndOffset, bytes: n})
	}
}
