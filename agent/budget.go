package agent

import "sync"

// byteBudget bounds the bytes of requests read but not yet answered, across
// all connections, so a flood of large requests slows readers down (TCP
// backpressure) instead of growing memory without bound. A request larger
// than the whole budget is still admitted when nothing else holds any, so
// every valid request can be served.
//
// State: everything under mu.
type byteBudget struct {
	mu    sync.Mutex
	freed *sync.Cond
	limit int64
	used  int64
}

func newByteBudget(limit int64) *byteBudget {
	b := &byteBudget{limit: limit}
	b.freed = sync.NewCond(&b.mu)
	return b
}

// acquire waits until n bytes fit (or nothing is held) and takes them;
// abort is checked while waiting and returns false without taking anything.
func (b *byteBudget) acquire(n int64, abort func() bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used > 0 && b.used+n > b.limit {
		if abort() {
			return false
		}
		b.freed.Wait()
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
