package agent

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"floe/agent/internal/budget"
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
// A partition may have several consumers at different offsets (streams):
// a fetch continues the stream with the highest last fetch offset at or
// below its own (consumers move forward; one that outran what was planned
// for it is still that stream), else it starts a new one (at most
// aheadStreams a partition, the least recently used replaced). A
// stream's window starts at an eighth of cfg.ReadAheadPartitionBytes and
// doubles with each plan, so a consumer that reads little wastes little.
//
// Bounds: at most cfg.ReadAheadEntries index entries and
// cfg.ReadAheadPartitionBytes bytes ahead of a partition's consumers, all
// streams together, each stream refilled once less than half its window
// is left; the bytes of planned and
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
	budget     *budget.Budget
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

// aheadPart is what read-ahead planned of one partition: its streams,
// least recently used first.
type aheadPart struct{ streams []*aheadStream }

// aheadStream is what read-ahead planned for one consumer of a partition.
type aheadStream struct {
	pos int64 // the fetch offset of the stream's last fetch
	end int64 // where what it read or planned ends: the next plan's start
	// planned are the entries read ahead (or found cached), in offset
	// order, that end after pos.
	planned []aheadRange
	window  int64 // bytes the stream may have ahead now
	// planning: a look-up for the stream is queued or running; no second
	// one starts meanwhile.
	planning bool
}

func (s *aheadStream) ahead() (n int64) {
	for _, pr := range s.planned {
		n += pr.bytes
	}
	return n
}

type aheadRange struct{ end, bytes int64 }

const (
	// aheadQueue bounds the look-ups and GETs waiting for a worker, per
	// worker; beyond it read-ahead is skipped.
	aheadQueue = 64
	// aheadParts bounds the partitions whose plans are remembered; a
	// forgotten plan costs one more index look-up.
	aheadParts = 4096
	// aheadStreams bounds the streams remembered per partition.
	aheadStreams = 8
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
		budget: budget.New(cfg.ReadAheadBytes, 0), limit: cfg.ReadAheadBytes,
		workers: cfg.ReadAheadConcurrency,
		tasks:   make(chan func(context.Context), aheadQueue*cfg.ReadAheadConcurrency),
		skips: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_agent_read_ahead_skips_total",
			Help: "Read-ahead left out, by reason: cache (read-ahead not yet read fills half the read cache), budget (--read-ahead-bytes in flight), queue (the workers are behind)."},
			[]string{"reason"}),
		parts: make(map[aheadKey]*aheadPart),
	}
	reg.MustRegister(r.skips, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "floe_agent_read_ahead_inflight_bytes",
		Help: "Bytes of read-ahead GETs planned or running (within --read-ahead-bytes)."},
		func() float64 { return float64(r.budget.InUse()) }))
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
			for old := range r.parts { // any one
				delete(r.parts, old)
				break
			}
		}
		p = &aheadPart{}
		r.parts[k] = p
	}
	st := p.stream(offset, next, r.bytes/8)
	if st == nil {
		r.mu.Unlock()
		return // every stream of the partition is planning
	}
	st.pos, st.end = offset, max(st.end, next)
	// What ends at or before the fetch offset is behind this consumer, and
	// behind every stream that is not ahead of it: no longer ahead. (A
	// stream whose consumer stopped would otherwise hold the partition's
	// bounds for good.)
	var partBytes int64
	partEntries := 0
	for _, o := range p.streams {
		if o.pos <= offset {
			i := 0
			for i < len(o.planned) && o.planned[i].end <= offset {
				i++
			}
			o.planned = o.planned[i:]
		}
		partBytes += o.ahead()
		partEntries += len(o.planned)
	}
	ahead := st.ahead()
	if st.planning || ahead*2 >= st.window || len(st.planned)*2 >= r.entries {
		r.mu.Unlock()
		return // being planned, or at least half its window still ahead
	}
	wantBytes := min(st.window-ahead, r.bytes-partBytes)
	wantEntries := r.entries - partEntries
	if wantBytes <= 0 || wantEntries <= 0 {
		r.mu.Unlock()
		return // the partition's other streams hold all it may have ahead
	}
	from := max(next, st.end)
	st.window = min(st.window*2, r.bytes)
	st.planning = true
	r.mu.Unlock()

	if !r.queue(func(ctx context.Context) { r.plan(ctx, st, k, from, end, wantBytes, wantEntries) }) {
		r.mu.Lock()
		st.planning = false
		r.mu.Unlock()
	}
}

// stream returns the stream a fetch from offset that read up to next
// continues (the one with the highest pos at or below offset), made most
// recently used, or a new one with the given window
// (replacing the least recently used stream not planning); nil if none
// can be replaced. r.mu must be held.
func (p *aheadPart) stream(offset, next, window int64) *aheadStream {
	at := -1
	for i, s := range p.streams {
		if s.pos <= offset && (at < 0 || s.pos > p.streams[at].pos) {
			at = i
		}
	}
	var s *aheadStream
	switch {
	case at >= 0:
		s = p.streams[at]
		p.streams = append(p.streams[:at], p.streams[at+1:]...)
	case len(p.streams) < aheadStreams:
		s = &aheadStream{pos: offset, end: next, window: window}
	default:
		for i, o := range p.streams {
			if !o.planning {
				p.streams = append(p.streams[:i], p.streams[i+1:]...)
				s = &aheadStream{pos: offset, end: next, window: window}
				break
			}
		}
		if s == nil {
			return nil
		}
	}
	p.streams = append(p.streams, s)
	return s
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
	return (r.cache.Stats().AheadUnread+r.budget.InUse()+n)*2 > r.cacheBytes
}

// plan looks up the index entries of k for stream st from offset from on (up to end,
// wantBytes and wantEntries) and queues the GETs of those not cached or in
// flight, within the budget, in offset order; it stops at the first that
// does not fit.
func (r *readAhead) plan(ctx context.Context, st *aheadStream, k aheadKey, from, end, wantBytes int64, wantEntries int) {
	var planned []aheadRange
	defer func() {
		r.mu.Lock()
		st.planning = false
		st.planned = append(st.planned, planned...)
		if n := len(planned); n > 0 {
			st.end = max(st.end, planned[n-1].end)
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
			if n > r.limit || !r.budget.TryTake(n) {
				r.skips.WithLabelValues("budget").Inc()
				return
			}
			if !r.queue(func(ctx context.Context) {
				defer r.budget.Release(n)
				_, _ = r.cache.Fill(ctx, e.ObjectKey, e.ByteOffset, n)
			}) {
				r.budget.Release(n)
				return
			}
		}
		planned = append(planned, aheadRange{end: e.EndOffset, bytes: n})
	}
}
