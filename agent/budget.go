package agent

import (
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
)

// byteBudget bounds the agent's request and flush memory: the bytes of
// request frames read and still referenced, plus the flushed objects on
// their way to the bucket. A flood of large requests slows readers down
// (TCP backpressure) instead of growing memory without bound. A request
// larger than the whole budget is still admitted when nothing else holds
// any, so every valid request can be served.
//
// A frame is charged as its bytes arrive (grow), not when its size is
// announced, so a peer's claim costs nothing until it sends. Readers that
// already hold part of a frame and wait for more could otherwise wait on
// each other forever; when every byte held belongs to such waiters, the
// oldest of them goes on past the limit, so some frame always completes.
//
// State: everything under mu.
type byteBudget struct {
	mu    sync.Mutex
	freed *sync.Cond
	limit int64
	used  int64
	// growers are the tickets of the grow calls waiting now, oldest first;
	// growHeld is what their callers already hold.
	growers  []uint64
	ticket   uint64
	growHeld int64
	// onWait, if set, is called (under mu) each time an acquire has to
	// wait: the agent counts it as backpressure.
	onWait func()
}

func newByteBudget(limit int64) *byteBudget {
	b := &byteBudget{limit: limit}
	b.freed = sync.NewCond(&b.mu)
	return b
}

// acquire waits until n bytes fit (or nothing is held) and takes them;
// abort is checked while waiting and returns false without taking anything.
func (b *byteBudget) acquire(n int64, abort func() bool) bool {
	return b.grow(0, n, abort)
}

// grow is acquire for a caller that already holds held bytes of this
// budget and cannot release them before it gets n more (a frame partly
// read). If everything held is held by such callers, waiting, the oldest
// takes its n bytes past the limit.
func (b *byteBudget) grow(held, n int64, abort func() bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used == 0 || b.used+n <= b.limit {
		b.used += n
		return true
	}
	b.ticket++
	t := b.ticket
	b.growers = append(b.growers, t)
	b.growHeld += held
	b.freed.Broadcast() // the oldest grower may be able to go on now
	defer func() {
		b.growers = slices.DeleteFunc(b.growers, func(g uint64) bool { return g == t })
		b.growHeld -= held
		b.freed.Broadcast() // the next grower may be the oldest now
	}()
	waited := false
	for b.used > 0 && b.used+n > b.limit {
		if held > 0 && b.used == b.growHeld && b.growers[0] == t {
			break // all held is waiting for more: the oldest goes on
		}
		if abort() {
			return false
		}
		if !waited && b.onWait != nil {
			b.onWait()
		}
		waited = true
		b.freed.Wait()
	}
	b.used += n
	return true
}

// tryAcquire takes n bytes if they fit now (or nothing is held).
func (b *byteBudget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used > 0 && b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// release returns n bytes.
func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.freed.Broadcast()
}

// wake lets waiters re-check abort (on shutdown).
func (b *byteBudget) wake() { b.freed.Broadcast() }

// inUse reports the bytes held.
func (b *byteBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// heldFrame is one request frame charged to the request budget. It is
// released — budget returned, buffer recycled — when its last reference
// goes: the connection holds one until the request is answered, and each
// produced batch that aliases the frame holds one until the PUT of its
// object has read it (objects are PUT from the frames, not copied out of
// them). So an acks=0 produce, answered at once, still holds its frame
// until its batches are stored, and a produce frame is released before
// its flush's commit.
type heldFrame struct {
	budget *byteBudget
	pool   *bufPool // nil: buf is not recycled
	buf    []byte
	size   int64
	refs   atomic.Int32
	// spoiled: a failed PUT may still be reading buf; never recycle it.
	spoiled atomic.Bool
}

func newHeldFrame(budget *byteBudget, pool *bufPool, buf []byte, size int64) *heldFrame {
	h := &heldFrame{budget: budget, pool: pool, buf: buf, size: size}
	h.refs.Store(1)
	return h
}

func (h *heldFrame) ref() { h.refs.Add(1) }

// spoil keeps buf from being recycled when the frame is released.
func (h *heldFrame) spoil() { h.spoiled.Store(true) }

func (h *heldFrame) unref() {
	if h.refs.Add(-1) != 0 {
		return
	}
	h.budget.release(h.size)
	if h.pool != nil && !h.spoiled.Load() {
		h.pool.put(h.buf)
	}
	h.buf = nil
}

// bufPool recycles large buffers: produce request frames, which hold their
// batches until their object is stored, and Fetch answers' record sets,
// until the connection has written them. A fresh multi-megabyte buffer
// costs zeroing and page faults, and dropped ones grow the heap between
// collections; the profile of a closed-loop produce was dominated by both.
//
// Buffers come in size classes four per power of two (so at most a quarter
// of a buffer is slack); the free lists together hold at most max bytes, so
// the memory the pool keeps idle is a fixed overhead, unlike a sync.Pool's.
//
// State: everything under mu.
type bufPool struct {
	mu   sync.Mutex
	free [poolClasses][][]byte
	held int64
	max  int64
}

const (
	// poolMinShift: buffers under 4 KiB are not worth pooling. Smaller
	// produce frames were (under 64 KiB, a producer's at 10,000 records/s):
	// fresh, they were half of floe dev's allocations at that rate, and a
	// collection every 5 MB allocated over a live heap of 7 MB was an eighth
	// of its CPU.
	poolMinShift = 12
	poolClasses  = 4 * (31 - poolMinShift)
)

func newBufPool(max int64) *bufPool { return &bufPool{max: max} }

// poolClass returns the class of a buffer of n bytes and the class's
// capacity, or -1 when n is not pooled.
func poolClass(n int) (int, int) {
	if n < 1<<poolMinShift || n > 1<<30 {
		return -1, 0
	}
	// n lies in (2^e, 2^(e+1)]; quarters of 2^e above it.
	e := bits.Len(uint(n-1)) - 1
	q := (n - 1 - 1<<e) >> (e - 2) // 0..3
	size := 1<<e + (q+1)<<(e-2)
	c := 4*(e-poolMinShift) + q
	if c < 0 || c >= poolClasses {
		return -1, 0
	}
	return c, size
}

// get returns a buffer of length n, recycled when one fits. Its contents
// are undefined: callers overwrite all of it.
func (p *bufPool) get(n int) []byte {
	c, size := poolClass(n)
	if c < 0 {
		return make([]byte, n)
	}
	p.mu.Lock()
	// Buffers vary in size: a free buffer up to twice the size
	// (four classes up) serves better than a fresh allocation, which would
	// add to the heap while idle buffers sit in the pool.
	for k := c; k < min(c+5, poolClasses); k++ {
		if l := len(p.free[k]); l > 0 {
			b := p.free[k][l-1]
			p.free[k][l-1] = nil
			p.free[k] = p.free[k][:l-1]
			p.held -= int64(cap(b))
			p.mu.Unlock()
			return b[:n]
		}
	}
	p.mu.Unlock()
	return make([]byte, n, size)
}

// put hands b back for reuse; the caller must not touch it afterwards.
func (p *bufPool) put(b []byte) {
	c, size := poolClass(cap(b))
	if c < 0 || size != cap(b) {
		return // not one of ours: let the collector have it
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	over := p.held + int64(cap(b)) - p.max
	if over > 0 && !p.evictBelow(c, over) {
		return
	}
	p.free[c] = append(p.free[c], b[:0])
	p.held += int64(cap(b))
}

// evictBelow drops idle buffers of classes below c, smallest first, until
// n bytes are freed, and reports whether they were; if the smaller buffers
// hold less than n it drops none. A full pool makes room this way for a
// larger buffer: a buffer serves requests from half its size up, so a pool
// filled with small ones (a closed-loop producer's frames range from 1 to
// 16 MB) turned away the large ones and every large frame was a fresh,
// zeroed allocation.
func (p *bufPool) evictBelow(c int, n int64) bool {
	var smaller int64
	for _, free := range p.free[:c] {
		if len(free) > 0 {
			smaller += int64(len(free)) * int64(cap(free[0])) // a class's buffers share a capacity
		}
	}
	if smaller < n {
		return false
	}
	for k := 0; n > 0; k++ {
		for l := len(p.free[k]); l > 0 && n > 0; l-- {
			n -= int64(cap(p.free[k][l-1]))
			p.held -= int64(cap(p.free[k][l-1]))
			p.free[k][l-1] = nil
			p.free[k] = p.free[k][:l-1]
		}
	}
	return true
}
