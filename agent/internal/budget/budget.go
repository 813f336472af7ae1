// Package budget bounds the bytes an agent holds in memory for requests
// being read and answered (and, with the same type, for Fetch answers and
// read-ahead). It is pure bookkeeping: no sockets, no agent; the caller
// says when it waits, what ends a wait, and when bytes come back.
//
// A request frame is charged as its bytes arrive, through a Claim that the
// frame keeps until its last reference goes (Frame). Two rules keep every
// reader able to make progress, whatever its peers do:
//
//   - Small frames (a whole frame of at most the caller's small size:
//     ApiVersions, Metadata, SASL, heartbeats, small produces) have a
//     reserve of their own that large frames never take, so a new client's
//     first request is answered while large frames wait.
//   - Large frames that hold part of their bytes and wait for more cannot
//     release first. When every large byte held belongs to such waiters,
//     the oldest frame (by its first charge) goes on past the limit, and
//     keeps that place until it is complete, so it overshoots by at most one
//     frame.
//
// A wait ends when the caller's Stop says so — its peer went away, its
// frame's deadline passed, the agent is closing — which Grow asks when it
// starts waiting, on every change of the budget, and at least every
// Recheck. Bytes of a claim whose wait was stopped are still held until the
// caller releases the claim.
//
// State: everything under Budget.mu; a Claim's fields are under its
// Budget's mu too.
package budget

import (
	"slices"
	"sync"
	"time"
)

// Recheck is how often a waiting Grow asks its Stop at least.
const Recheck = 250 * time.Millisecond

// Stop ends a wait with its error; nil goes on waiting.
type Stop func() error

// Budget bounds bytes held. The zero value is not usable: use New.
type Budget struct {
	mu sync.Mutex
	// limit bounds large claims; reserve is the small claims' own room,
	// beyond limit.
	limit, reserve int64
	// large is held by large claims and by small ones that took from the
	// large room; small by small claims in the reserve.
	large, small int64
	// waiting are the claims waiting in Grow, oldest (lowest age) first;
	// waitHeld is what the large ones among them hold.
	waiting  []*Claim
	waitHeld int64
	ages     uint64
	onWait   func()
	recheck  time.Duration
}

// New returns a budget of limit bytes for large claims and reserve more for
// small ones (0: no reserve; small claims then share the limit).
func New(limit, reserve int64) *Budget {
	return &Budget{limit: limit, reserve: reserve, recheck: Recheck}
}

// OnWait sets f to be called (under the budget's lock, so it must not call
// back) each time a Grow starts waiting: the agent counts it as
// backpressure.
func (b *Budget) OnWait(f func()) {
	b.mu.Lock()
	b.onWait = f
	b.mu.Unlock()
}

// Claim is the charge of one frame: what it holds, in which room, and its
// age, which orders waiters for the oldest-goes-on rule.
type Claim struct {
	b     *Budget
	age   uint64
	small bool
	// held is all the claim holds; inReserve the part of it in the
	// small reserve.
	held, inReserve int64
	// wake is signalled when the budget changes while the claim waits.
	wake    chan struct{}
	waiting bool
}

// Claim starts the charge of a frame. small: the whole frame is at most
// the caller's small size, and takes from the reserve first.
func (b *Budget) Claim(small bool) *Claim {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ages++
	return &Claim{b: b, age: b.ages, small: small, wake: make(chan struct{}, 1)}
}

// Held reports what the claim holds.
func (c *Claim) Held() int64 {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	return c.held
}

// Grow takes n more bytes for the claim, waiting until they may be taken
// or stop returns an error, which Grow returns having taken nothing more.
// stop may be nil: the wait then ends only with the bytes.
func (c *Claim) Grow(n int64, stop Stop) error {
	b := c.b
	if b.tryGrow(c, n) {
		return nil
	}
	timer := time.NewTimer(b.recheck)
	defer timer.Stop()
	for {
		if stop != nil {
			if err := stop(); err != nil {
				b.abandon(c)
				return err
			}
		}
		select {
		case <-c.wake:
		case <-timer.C:
			timer.Reset(b.recheck)
		}
		if b.tryGrow(c, n) {
			return nil
		}
	}
}

// tryGrow takes n for c if it may now; otherwise c waits (joins the
// waiters, once) and tryGrow reports false. Grow calls it whenever the
// budget may have changed; the model test drives it directly.
func (b *Budget) tryGrow(c *Claim, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.take(c, n) {
		return true
	}
	if !c.waiting {
		b.enqueue(c)
		if b.onWait != nil {
			b.onWait()
		}
	}
	return false
}

// abandon ends c's wait without taking anything.
func (b *Budget) abandon(c *Claim) {
	b.mu.Lock()
	b.dequeue(c)
	b.mu.Unlock()
}

// Release returns everything the claim holds. The claim may grow again
// afterwards, as a new frame of the same age.
func (c *Claim) Release() {
	b := c.b
	b.mu.Lock()
	b.small -= c.inReserve
	b.large -= c.held - c.inReserve
	c.held, c.inReserve = 0, 0
	b.signal()
	b.mu.Unlock()
}

// take charges n to c if the rules let it now, and reports whether they
// did. A waiting claim that takes leaves the waiters.
func (b *Budget) take(c *Claim, n int64) bool {
	ok, inReserve := b.admits(c, n)
	if !ok {
		return false
	}
	if c.waiting {
		b.dequeue(c)
	}
	c.held += n
	if inReserve {
		c.inReserve += n
		b.small += n
	} else {
		b.large += n
	}
	return true
}

// admits reports whether c may take n now, and from which room.
func (b *Budget) admits(c *Claim, n int64) (ok, inReserve bool) {
	switch {
	case c.small && b.reserve > 0 && (b.small == 0 || b.small+n <= b.reserve):
		return true, true
	case b.large == 0 || b.large+n <= b.limit:
		return true, false
	case !c.small && c.held > 0 && c.waiting && b.large == b.waitHeld && b.oldestHolder() == c:
		// Every large byte is held by a frame waiting for more: the
		// oldest goes on past the limit.
		return true, false
	}
	return false, false
}

// oldestHolder is the oldest waiting claim that holds bytes, or nil.
func (b *Budget) oldestHolder() *Claim {
	for _, w := range b.waiting {
		if w.held > 0 {
			return w
		}
	}
	return nil
}

func (b *Budget) enqueue(c *Claim) {
	i, _ := slices.BinarySearchFunc(b.waiting, c.age, func(w *Claim, age uint64) int {
		switch {
		case w.age < age:
			return -1
		case w.age > age:
			return 1
		}
		return 0
	})
	b.waiting = slices.Insert(b.waiting, i, c)
	c.waiting = true
	b.waitHeld += c.held - c.inReserve
	b.signal() // the oldest may go on now
}

func (b *Budget) dequeue(c *Claim) {
	if !c.waiting {
		return
	}
	c.waiting = false
	b.waiting = slices.DeleteFunc(b.waiting, func(w *Claim) bool { return w == c })
	b.waitHeld -= c.held - c.inReserve
	b.signal() // another may be the oldest now
}

// signal tells every waiter to look again.
func (b *Budget) signal() {
	for _, w := range b.waiting {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// TryTake takes n bytes of the large room if they fit now (or nothing is
// held there), for a charge not tied to a claim; Release returns them.
func (b *Budget) TryTake(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.large > 0 && b.large+n > b.limit {
		return false
	}
	b.large += n
	return true
}

// Take waits until n bytes fit in the large room and takes them, for a
// charge not tied to a claim (it holds nothing while it waits); Release
// returns them.
func (b *Budget) Take(n int64, stop Stop) error {
	return b.Claim(false).Grow(n, stop)
}

// Force takes n bytes past the limit: a charge that cannot wait, such as
// a Fetch answer's first batch larger than the whole budget (KIP-74).
func (b *Budget) Force(n int64) {
	b.mu.Lock()
	b.large += n
	b.mu.Unlock()
}

// Release returns n bytes taken with TryTake, Take or Force.
func (b *Budget) Release(n int64) {
	b.mu.Lock()
	b.large -= n
	b.signal()
	b.mu.Unlock()
}

// Wake lets every waiter ask its Stop again (on shutdown).
func (b *Budget) Wake() {
	b.mu.Lock()
	b.signal()
	b.mu.Unlock()
}

// InUse reports the bytes held, in both rooms.
func (b *Budget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.large + b.small
}

// Waiting reports how many claims wait in Grow.
func (b *Budget) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiting)
}
