// Package readahead reads the object runs a consumer catching up on old
// data will fetch next into the read cache while it is still busy with
// this fetch's. It sees the index through one look-up (Index) and the read
// cache through the three calls it makes of it (Cache), and knows nothing
// of the agent that tells it of fetches (ReadAhead.After).
package readahead

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"floe/agent/internal/budget"
	"floe/metadata"
	"floe/storage"
)

// ReadAhead reads the object runs a consumer catching up on old data will
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
// stream's window starts at an eighth of Config.PartitionBytes and
// doubles with each plan, so a consumer that reads little wastes little.
//
// Bounds: at most Config.Entries index entries and
// Config.PartitionBytes bytes ahead of a partition's consumers, all
// streams together, each stream refilled once less than half its window
// is left; the bytes of planned and
// running GETs within the read-ahead budget (Config.Bytes, one of
// the agent's memory budgets: once cached they are the read cache's); at
// most Config.Workers look-ups and GETs at once; and none while
// the ranges read ahead and not yet read would take more than half the
// read cache (the cache is under pressure: more would evict what
// consumers are about to read). What does not fit is skipped, never waited
// for: read-ahead is only ever a head start.
//
// State: the partitions' plans under mu; the work queue is a channel read
// by the workers Start launches under the agent's context and WaitGroup,
// so Close cancels the look-ups and GETs running and waits for them.
type ReadAhead struct {
	index      Index
	cache      Cache
	cacheBytes int64
	entries    int   // per partition, ahead of the consumer
	bytes      int64 // per partition, ahead of the consumer
	budget     *budget.Budget
	limit      int64 // the budget's size
	workers    int
	tasks      chan func(context.Context)
	// pending counts the tasks queued and not yet done (Idle).
	pending atomic.Int64
	skips   *prometheus.CounterVec

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

// Config bounds read-ahead: the agent's --read-ahead-* flags.
type Config struct {
	// Bytes is the budget of GETs planned or running.
	Bytes int64
	// Workers is how many look-ups and GETs run at once.
	Workers int
	// Entries and PartitionBytes bound what a partition's consumers have
	// read ahead, all streams together.
	Entries        int
	PartitionBytes int64
	// CacheBytes is the read cache's size: read-ahead not yet read stays
	// under half of it.
	CacheBytes int64
}

// Index is the look-up of the index entries from an offset
// (metadata.Store.Lookup).
type Index interface {
	Lookup(ctx context.Context, topic metadata.TopicID, partition int32, offset, maxBytes int64, limit int) ([]metadata.IndexEntry, error)
}

// Cache is what read-ahead asks of the read cache (storage.Cache).
type Cache interface {
	// Pending reports whether a range is cached or on its way.
	Pending(key string, offset, length int64) bool
	// Fill reads a range into the cache unless it is there or in flight.
	Fill(ctx context.Context, key string, offset, length int64) (bool, error)
	Stats() storage.CacheStats
}

// New returns nil when cfg turns read-ahead off (no budget, no workers, or
// no read cache to keep what it reads). Its metrics join reg.
func New(cfg Config, index Index, cache Cache, reg prometheus.Registerer) *ReadAhead {
	if cfg.Bytes <= 0 || cfg.Workers <= 0 || cfg.Entries <= 0 || cfg.PartitionBytes <= 0 || cfg.CacheBytes <= 0 {
		return nil
	}
	r := &ReadAhead{
		index: index, cache: cache, cacheBytes: cfg.CacheBytes,
		entries: cfg.Entries, bytes: cfg.PartitionBytes,
		budget: budget.New(cfg.Bytes, 0), limit: cfg.Bytes,
		workers: cfg.Workers,
		tasks:   make(chan func(context.Context), aheadQueue*cfg.Workers),
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

// Start launches the workers under ctx; they are counted in wg, so the
// agent's Close cancels the look-ups and GETs running and waits for them.
func (r *ReadAhead) Start(ctx context.Context, wg *sync.WaitGroup) {
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
					r.pending.Add(-1)
				}
			}
		}()
	}
}

// After is told of a fetch of a partition, from offset on, that read index
// entries up to next (the end offset of the last one it read) from the
// object store or from read-ahead, in a partition whose answers end at end
// (the high watermark or, read_committed, the last stable offset). It plans
// the reads of what follows next, unless enough is planned already.
func (r *ReadAhead) After(topic metadata.TopicID, partition int32, offset, next, end int64) {
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
func (r *ReadAhead) queue(t func(context.Context)) bool {
	r.pending.Add(1)
	select {
	case r.tasks <- t:
		return true
	default:
		r.pending.Add(-1)
		r.skips.WithLabelValues("queue").Inc()
		return false
	}
}

// pressure reports whether reading n more bytes ahead would leave the
// ranges read ahead and not yet read (cached or on their way) over half
// the read cache.
func (r *ReadAhead) pressure(n int64) bool {
	return (r.cache.Stats().AheadUnread+r.budget.InUse()+n)*2 > r.cacheBytes
}

// plan looks up the index entries of k for stream st from offset from on (up to end,
// wantBytes and wantEntries) and queues the GETs of those not cached or in
// flight, within the budget, in offset order; it stops at the first that
// does not fit.
func (r *ReadAhead) plan(ctx context.Context, st *aheadStream, k aheadKey, from, end, wantBytes int64, wantEntries int) {
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
	entries, err := r.index.Lookup(ctx, k.topic, k.partition, from, wantBytes, wantEntries)
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

// InFlight reports the bytes of GETs planned or running.
func (r *ReadAhead) InFlight() int64 { return r.budget.InUse() }

// Idle reports whether no GET is planned or running and no look-up or GET
// is queued or running.
func (r *ReadAhead) Idle() bool { return r.budget.InUse() == 0 && r.pending.Load() == 0 }

// Behind reports, of one partition's streams, how many there are and how
// many of the entries they read ahead end at or before offset (behind a
// consumer there).
func (r *ReadAhead) Behind(topic metadata.TopicID, partition int32, offset int64) (streams, entries int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.parts[aheadKey{topic, partition}]
	if p == nil {
		return 0, 0
	}
	for _, s := range p.streams {
		streams++
		for _, pr := range s.planned {
			if pr.end <= offset {
				entries++
			}
		}
	}
	return streams, entries
}
