package agent

import (
	"slices"
	"sync"
	"sync/atomic"

	"floe/internal/bufpool"
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
	pool   *bufpool.Pool // nil: buf is not recycled
	buf    []byte
	size   int64
	refs   atomic.Int32
	// spoiled: a failed PUT may still be reading buf; never recycle it.
	spoiled atomic.Bool
}

func newHeldFrame(budget *byteBudget, pool *bufpool.Pool, buf []byte, size int64) *heldFrame {
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
		h.pool.Put(h.buf)
	}
	h.buf = nil
}
