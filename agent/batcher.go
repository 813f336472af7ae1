package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"floe/agent/internal/budget"
	"floe/internal/bufpool"
	"floe/metadata"
	"floe/storage"
)

// batcher builds the agent's one pending object out of the batches produced
// to every partition, and flushes it — one PUT, then one metadata commit —
// when the flush interval passes or it reaches FlushBytes.
//
// Several flushes may be in flight (PUTs overlap), but their commits are
// applied in the order the flushes were cut: a flush waits for its
// predecessor's commit before its own. Together with per-connection produce
// ordering this keeps the order of one producer connection's batches within
// a partition.
//
// State: everything under mu. cutMu serialises cutting a flush and handing
// it to the dispatcher, so flushes reach the dispatcher in cut order.
type batcher struct {
	a *Agent

	cutMu sync.Mutex

	mu         sync.Mutex
	room       *sync.Cond // signalled when buffered bytes drop or on close
	w          *storage.ObjectWriter
	parts      map[partKey][]*produceWaiter // waiters of the pending object, by partition, in add order
	pending    int64                        // bytes in the pending object
	buffered   int64                        // bytes in the pending object and in flight
	gen        uint64                       // pending object generation, for timers
	timerSet   bool
	firstAdd   time.Time     // when the pending object got its first batch
	lastCut    time.Time     // when the last object was cut (zero: never)
	lastQueued chan struct{} // the last cut flush's queued: closed once its commit is queued (or it is done)
	closed     bool
	cutDone    bool // cutCh is closed; guarded by cutMu
	cutCh      chan *flush
	sem        chan struct{} // bounds flushes in flight
	wg         sync.WaitGroup
	dispDone   chan struct{}
	flushSeq   uint64
	closeOnce  sync.Once

	// flushCtx is the context of every flush's PUT and commit: a flush
	// always finishes, since producers wait on it, unless shutdown's grace
	// runs out and Close calls abortFlushes.
	flushCtx     context.Context
	abortFlushes context.CancelFunc

	// bufs recycles produce request frames and Fetch answers' record
	// buffers (internal/bufpool).
	bufs *bufpool.Pool
	// writers recycles object writers once their flush has laid out its
	// object: a warm writer adds batches without allocating, where a new
	// one per cut grew its batch list again for every object (about 12
	// allocations and 180 KB for an object of 1000 batches).
	writers sync.Pool
	// lastAdd is the monotonic time (ns since start) of the last add, for
	// ProduceBusy.
	lastAdd atomic.Int64
}

// busyWindow is how long after its last produced batch the agent still
// counts as busy producing.
const busyWindow = 500 * time.Millisecond

var monoStart = time.Now()

// ProduceBusy reports whether the agent is producing: a batch arrived in
// the last half second or bytes are still waiting for their flush. floe
// dev's in-process compactor yields while it is.
func (a *Agent) ProduceBusy() bool {
	b := a.batcher
	if time.Duration(int64(time.Since(monoStart))-b.lastAdd.Load()) < busyWindow {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buffered > 0
}

type partKey struct {
	topic     metadata.TopicID
	partition int32
}

// produceWaiter is one partition of one produce request — one batch, as
// Kafka allows from Produce v3 on — waiting for its flush.
type produceWaiter struct {
	batch      metadata.BatchCommit
	done       chan struct{}
	baseOffset int64
	err        *kerr.Error
	// frame is the request frame the batch aliases, released once the
	// PUT of the batch's object has read it; nil if the batch owns its
	// bytes.
	frame *budget.Frame
}

// produceBatch is one validated batch handed to the batcher.
type produceBatch struct {
	data []byte
	// crc is the CRC-32C of all of data (kafkaproto.BatchChecksum): the
	// object's checksum, which the bucket checks, is folded from them.
	crc      uint32
	records  int64
	minTS    int64
	maxTS    int64
	pid      int64 // -1 unless idempotent
	epoch    int16
	sequence int32
	// transactional and marker carry the batch's transaction role into the
	// commit (metadata.PlanTxnRun).
	transactional bool
	marker        metadata.Marker
	// frame, if set, is the request frame data aliases; add takes over a
	// reference to it.
	frame *budget.Frame
}

// flush is one cut pending object on its way to the bucket and the store.
type flush struct {
	seq   uint64
	w     *storage.ObjectWriter
	parts map[partKey][]*produceWaiter
	bytes int64
	// prev is closed once the previous flush's commit holds its place in
	// the store's commit order (or that flush is done): this flush's
	// commit may start then, and still gets its offsets after it.
	prev <-chan struct{}
	// queued is this flush's prev for the next; queue closes it once.
	queued    chan struct{}
	queueOnce sync.Once
}

func newBatcher(a *Agent) *batcher {
	b := &batcher{
		a:          a,
		parts:      make(map[partKey][]*produceWaiter),
		gen:        1, // 0 is "any generation" in cut
		lastQueued: closedChan(),
		cutCh:      make(chan *flush, 1),
		sem:        make(chan struct{}, max(1, a.cfg.MaxInflightFlushes)),
		dispDone:   make(chan struct{}),
		// Idle recycled buffers are part of the agent's fixed overhead:
		// half the buffer budget keeps a few objects' worth.
		bufs: bufpool.New(a.cfg.poolBytes()),
	}
	b.writers.New = func() any { return storage.NewObjectWriter() }
	b.w = b.writers.Get().(*storage.ObjectWriter)
	b.room = sync.NewCond(&b.mu)
	b.flushCtx, b.abortFlushes = context.WithCancel(context.Background())
	return b
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func (b *batcher) start() {
	// A reader waiting for request budget is the same backpressure as a
	// produce waiting for buffer room.
	b.a.reqBudget.OnWait(b.a.metrics.backpressureWaits.Inc)
	go b.dispatch()
}

// errClosed is returned by add after close began.
var errClosed = errors.New("agent is shutting down")

// add places the batches of one partition of one produce request into the
// pending object and returns the waiter answered after its flush. It blocks
// while the agent's buffer budget is used up (backpressure).
func (b *batcher) add(topic metadata.TopicID, partition int32, pb produceBatch) (*produceWaiter, error) {
	size := int64(len(pb.data))
	b.lastAdd.Store(int64(time.Since(monoStart)))
	b.mu.Lock()
	for !b.closed && b.buffered > 0 && b.buffered+size > b.a.cfg.BufferBytes {
		b.a.metrics.backpressureWaits.Inc()
		b.room.Wait()
	}
	if b.closed {
		b.mu.Unlock()
		if pb.frame != nil {
			pb.frame.Unref()
		}
		return nil, errClosed
	}
	b.w.AddSummed(storage.TopicID(topic), partition, pb.data, pb.crc, pb.records, pb.minTS, pb.maxTS)
	pw := &produceWaiter{done: make(chan struct{}), frame: pb.frame, batch: metadata.BatchCommit{
		ByteLength: size, Records: pb.records, MinTimestamp: pb.minTS, MaxTimestamp: pb.maxTS,
		ProducerID: pb.pid, ProducerEpoch: pb.epoch, BaseSequence: pb.sequence,
		Transactional: pb.transactional, Marker: pb.marker,
	}}
	k := partKey{topic, partition}
	b.parts[k] = append(b.parts[k], pw)
	if b.pending == 0 {
		b.firstAdd = time.Now()
	}
	b.pending += size
	b.buffered += size
	b.a.metrics.bufferedBytes.Set(float64(b.buffered))
	full := b.pending >= b.a.cfg.FlushBytes
	if !full && !b.timerSet {
		b.timerSet = true
		gen := b.gen
		time.AfterFunc(flushDelay(b.a.cfg.FlushInterval, b.lastCut, time.Now()), func() { b.timedCut(gen) })
	}
	b.mu.Unlock()
	if full {
		b.cut(0)
	}
	return pw, nil
}

// timedCut is the flush timer of generation gen: it cuts the pending
// object, unless the object is tiny and may wait a little longer
// (tinyWait), in which case it sets itself again.
func (b *batcher) timedCut(gen uint64) {
	b.mu.Lock()
	if gen != b.gen || b.pending == 0 {
		b.mu.Unlock()
		return
	}
	if d := tinyWait(b.a.cfg.FlushInterval, b.pending, b.a.cfg.FlushBytes, time.Since(b.firstAdd)); d > 0 {
		time.AfterFunc(d, func() { b.timedCut(gen) })
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	b.cut(gen)
}

// tinyObjectBytes and tinyExtraWait are the adaptive flush: an object
// under tinyObjectBytes (or FlushBytes, if smaller) when its flush
// interval ends waits up to tinyExtraWait (at most 3 intervals) more for
// other batches to join it. Every flush pays a fixed cost whatever it
// carries — with floe dev's 5 ms interval an fsync of the object, one of
// its directory and one of SQLite's WAL, about 1.3 ms of CPU — so at
// 10 000 records/s, 150 flushes a second of 70 KB each spent three times
// kfake's CPU per GB. Waiting 15 ms more cuts them to about 50 a second,
// costs a tiny object's records at most that much latency, and changes
// nothing once produce fills an object within the interval; every
// acknowledgement still waits for its object's fsync and commit.
const (
	tinyObjectBytes = 1 << 20
	tinyExtraWait   = 15 * time.Millisecond
)

// tinyWait is how much longer a pending object of pending bytes, whose
// first batch arrived waited ago, waits before its timed cut (0: cut now).
func tinyWait(interval time.Duration, pending, flushBytes int64, waited time.Duration) time.Duration {
	if pending >= min(tinyObjectBytes, flushBytes) {
		return 0
	}
	limit := interval + min(3*interval, tinyExtraWait)
	if rest := limit - waited; rest >= minFlushDelay {
		return rest
	}
	return 0
}

// cut detaches the pending object and hands it to the dispatcher. gen != 0
// restricts the cut to that generation (a timer for an object already cut
// by size does nothing).
func (b *batcher) cut(gen uint64) {
	b.cutMu.Lock()
	defer b.cutMu.Unlock()
	b.mu.Lock()
	if (gen != 0 && gen != b.gen) || b.pending == 0 || b.cutDone {
		b.mu.Unlock()
		return
	}
	b.flushSeq++
	f := &flush{
		seq:    b.flushSeq,
		w:      b.w,
		parts:  b.parts,
		bytes:  b.pending,
		prev:   b.lastQueued,
		queued: make(chan struct{}),
	}
	b.lastQueued = f.queued
	b.w = b.writers.Get().(*storage.ObjectWriter)
	b.parts = make(map[partKey][]*produceWaiter)
	b.pending = 0
	b.gen++
	b.timerSet = false
	b.lastCut = time.Now()
	b.mu.Unlock()
	b.cutCh <- f
}

// minFlushDelay is the least a first batch waits for its flush, so the
// other partitions of its request join it.
const minFlushDelay = time.Millisecond

// flushDelay is how long an object whose first batch arrives at now waits
// before it is cut, given the last cut. After a pause (no cut within the
// interval) it waits the whole interval, so a burst is one object. While
// produce is continuous it is cut one interval after the last cut instead:
// a producer whose requests in flight are all waiting for a flush (Kafka
// clients allow 5 per connection by default) sends its next when the last
// flush answers, and waiting a whole interval from there added most of an
// interval to every record's latency. Either way timed flushes are at least
// one interval apart, and no batch waits longer than the interval.
func flushDelay(interval time.Duration, lastCut, now time.Time) time.Duration {
	since := now.Sub(lastCut)
	if lastCut.IsZero() || since >= interval {
		return interval
	}
	return min(max(interval-since, minFlushDelay), interval)
}

// dispatch starts flushes in cut order, at most MaxInflightFlushes at once.
func (b *batcher) dispatch() {
	defer close(b.dispDone)
	for f := range b.cutCh {
		b.sem <- struct{}{}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer func() { <-b.sem }()
			b.run(f)
		}()
	}
}

// queue lets the next flush's commit start.
func (f *flush) queue() { f.queueOnce.Do(func() { close(f.queued) }) }

// run PUTs one object, waits until the previous flush's commit is queued
// in the store (or done), commits, and answers every waiter. Its own
// commit lets the next flush's start once the store has queued it
// (metadata.WithCommitQueued): a store that commits overlapping calls
// together then commits the flushes in flight in one transaction, in
// order. Against a store that queues nothing, flushes commit one after
// another.
func (b *batcher) run(f *flush) {
	m := b.a.metrics
	start := time.Now()
	defer func() {
		f.queue()
		b.mu.Lock()
		b.buffered -= f.bytes
		m.bufferedBytes.Set(float64(b.buffered))
		b.room.Broadcast()
		b.mu.Unlock()
	}()

	// The object is its batches where the produce requests left them, then
	// a footer: no copy. The request frames they alias stay held (and
	// charged to the request budget) until the PUT has read them.
	parts, runs, sum := f.w.FinishParts(nil)
	b.writers.Put(f.w) // reset by FinishParts; it holds no batch any more
	f.w = nil
	size := int64(0)
	for _, p := range parts {
		size += int64(len(p))
	}
	key := storage.NewObjectKey()
	ctx := b.flushCtx
	err := b.put(ctx, key, sum, parts)
	cached := false
	if err == nil {
		cached = b.writeThrough(key, parts, runs, start)
	}
	f.releaseFrames(err != nil)
	<-f.prev
	if err != nil {
		b.a.log.Error("flush failed: put", "key", key, "err", err)
		m.flushErrors.Inc()
		f.fail(kerr.KafkaStorageError)
		return
	}
	commit := metadata.ObjectCommit{Key: key, Size: size, AgentID: b.a.id, Runs: make([]metadata.RunCommit, len(runs))}
	for i, r := range runs {
		rc := metadata.RunCommit{
			TopicID: metadata.TopicID(r.TopicID), Partition: r.Partition,
			ByteOffset: r.Offset, ByteLength: r.Length, Batches: r.Batches,
			Records: r.Records, MinTimestamp: r.MinTimestamp, MaxTimestamp: r.MaxTimestamp,
		}
		// The run holds the waiters' batches in add order.
		for _, pw := range f.parts[partKey{metadata.TopicID(r.TopicID), r.Partition}] {
			rc.BatchList = append(rc.BatchList, pw.batch)
		}
		commit.Runs[i] = rc
	}
	cstart := time.Now()
	results, err := b.commit(metadata.WithCommitQueued(ctx, f.queue), commit)
	m.commitSeconds.Observe(time.Since(cstart).Seconds())
	if err != nil {
		// The outcome is unknown (the commit may have landed); the client
		// retries, as it would after a Kafka leader failover.
		b.a.log.Error("flush failed: commit", "key", key, "err", err)
		m.flushErrors.Inc()
		f.fail(kerr.KafkaStorageError)
		return
	}
	now := time.Now()
	for i, r := range runs {
		k := partKey{metadata.TopicID(r.TopicID), r.Partition}
		whole := results[i].Err == nil // every batch got its offsets
		for j, pw := range f.parts[k] {
			res := results[i]
			switch {
			case res.Err != nil:
				pw.err = kerr.UnknownTopicOrPartition
			case j >= len(res.Batches):
				pw.err = kerr.UnknownServerError // a store that broke its contract
			case errors.Is(res.Batches[j].Err, metadata.ErrOutOfOrderSequence):
				pw.err = kerr.OutOfOrderSequenceNumber
			case errors.Is(res.Batches[j].Err, metadata.ErrInvalidProducerEpoch):
				pw.err = kerr.InvalidProducerEpoch
			case errors.Is(res.Batches[j].Err, metadata.ErrInvalidTxnState):
				pw.err = kerr.InvalidTxnState
			case res.Batches[j].Err != nil:
				pw.err = kerr.UnknownServerError
			default:
				// A duplicate is answered with its original offset.
				pw.baseOffset = res.Batches[j].BaseOffset
			}
			if pw.err != nil || (j < len(res.Batches) && res.Batches[j].Duplicate) {
				whole = false
			}
			close(pw.done)
		}
		delete(f.parts, k)
		if cached && whole {
			// The run is one index row, exactly as the store has it.
			base := results[i].BaseOffset
			b.a.heads.set(metadata.IndexEntry{
				TopicID: k.topic, Partition: k.partition, BaseOffset: base, EndOffset: base + r.Records,
				ObjectKey: key, ByteOffset: r.Offset, ByteLength: r.Length, Batches: r.Batches,
				MinTimestamp: r.MinTimestamp, MaxTimestamp: r.MaxTimestamp,
			}, now)
		}
	}
	f.fail(kerr.UnknownServerError) // any waiter without a run (cannot happen)
	m.flushes.Inc()
	m.flushBytes.Observe(float64(size))
	m.flushSeconds.Observe(time.Since(start).Seconds())
	b.a.commits.broadcast()
}

// tailReadWindow is how long after a fetch last waited at the head of the
// log flushed objects are still written through to the read cache: the
// time a tailing consumer takes to read what woke it and ask again.
const tailReadWindow = time.Second

// writeThrough puts each run of a stored object into the read cache, under
// the byte range its index entry will name, before the commit wakes the
// consumers waiting for it: a consumer at the head of the log then reads
// the records without a GET (an object-store round trip on its end-to-end
// latency, and a request to pay for). Only while some fetch waited for new
// records, now or within the last second. Consumers that are behind never
// wait: they read older objects first, by when these would have been
// pushed out of the cache, and copying them was 12% of the agent's CPU in
// a closed-loop run whose consumer lagged. The object's parts are request
// frames, recycled once the PUT is done, so the cache gets a copy of each
// run (the parts are the body's batches, a run's back to back, then the
// footer). One copy per run, not one of the body sliced up: the cache
// charges each range its own bytes, and a range evicted later than its
// neighbours would otherwise keep the whole body alive.
//
// It reports whether it cached the runs.
func (b *batcher) writeThrough(key string, parts [][]byte, runs []storage.Run, now time.Time) bool {
	if b.a.tailWaiting.Load() == 0 && now.Sub(time.Unix(0, b.a.tailReadAt.Load())) > tailReadWindow {
		return false
	}
	body := parts[:len(parts)-1]
	for _, r := range runs {
		n, size := 0, int64(0)
		for n < len(body) && size < r.Length {
			size += int64(len(body[n]))
			n++
		}
		b.a.cache.Put(key, r.Offset, bytes.Join(body[:n], nil)) // not zeroed first, unlike slices.Concat
		body = body[n:]
	}
	return true
}

// put writes the object with its checksum (folded from its batches'),
// retrying transient failures a few times.
func (b *batcher) put(ctx context.Context, key string, sum storage.Checksum, parts [][]byte) error {
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
		}
		if err = storage.PutSummed(ctx, b.a.bucket, key, sum, parts...); err == nil {
			return nil
		}
	}
	return fmt.Errorf("put %s: %w", key, err)
}

func (b *batcher) commit(ctx context.Context, c metadata.ObjectCommit) ([]metadata.RunResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := b.a.store.CommitObject(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", c.Key, err)
	}
	if len(res) != len(c.Runs) {
		return nil, fmt.Errorf("commit %s: %d results for %d runs", c.Key, len(res), len(c.Runs))
	}
	return res, nil
}

// releaseFrames drops the flush's references to the request frames its
// batches alias, once its PUT no longer reads them. After a failed PUT the
// HTTP transport may still be reading the body, so the frames are spoiled:
// never recycled for another request.
func (f *flush) releaseFrames(spoiled bool) {
	for _, ws := range f.parts {
		for _, pw := range ws {
			if pw.frame != nil {
				if spoiled {
					pw.frame.Spoil()
				}
				pw.frame.Unref()
				pw.frame = nil
			}
		}
	}
}

// fail answers every still-waiting waiter of the flush with code.
func (f *flush) fail(code *kerr.Error) {
	for k, ws := range f.parts {
		for _, pw := range ws {
			pw.err = code
			close(pw.done)
		}
		delete(f.parts, k)
	}
}

// close flushes what is pending, refuses new batches and waits until every
// flush has committed and answered its waiters.
func (b *batcher) close() {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		b.room.Broadcast()
		b.mu.Unlock()
		b.cut(0)
		b.cutMu.Lock()
		close(b.cutCh)
		b.cutDone = true
		b.cutMu.Unlock()
		<-b.dispDone
		b.wg.Wait()
	})
}
