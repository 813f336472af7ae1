// Package bufpool recycles byte buffers up to a bound on the bytes it
// keeps idle: an agent's produce request frames (held until their object
// is stored) and Fetch answers' record sets, and the source windows of the
// compactor's merges.
package bufpool

import (
	"math/bits"
	"sync"
)

// Pool recycles byte buffers. A fresh multi-megabyte buffer costs zeroing
// and page faults, and dropped ones grow the heap between collections; the
// profile of a closed-loop produce was dominated by both.
//
// Buffers come in size classes four per power of two (so at most a quarter
// of a buffer is slack); the free lists together hold at most max bytes, so
// the memory the pool keeps idle is a fixed overhead, unlike a sync.Pool's.
//
// State: everything under mu.
type Pool struct {
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

// New returns a pool that keeps at most max bytes of idle buffers.
func New(max int64) *Pool { return &Pool{max: max} }

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

// Get returns a buffer of length n, recycled when one fits. Its contents
// are undefined: callers overwrite all of it.
func (p *Pool) Get(n int) []byte {
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

// Put hands b back for reuse; the caller must not touch it afterwards.
// A buffer the pool did not hand out is left to the collector.
func (p *Pool) Put(b []byte) {
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
func (p *Pool) evictBelow(c int, n int64) bool {
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

// Held returns the bytes of the idle buffers the pool keeps.
func (p *Pool) Held() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// Clear drops every idle buffer.
func (p *Pool) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free, p.held = [poolClasses][][]byte{}, 0
}
