package agent

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestByteBudget(t *testing.T) {
	b := newByteBudget(100)
	never := func() bool { return false }
	if !b.acquire(60, never) || !b.acquire(40, never) {
		t.Fatal("bytes within the limit were refused")
	}
	// 10 more do not fit: the acquire waits until something is released.
	var got atomic.Bool
	done := make(chan struct{})
	go func() {
		got.Store(b.acquire(10, never))
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("acquire past the limit did not wait")
	case <-time.After(50 * time.Millisecond):
	}
	b.release(60)
	<-done
	if !got.Load() || b.inUse() != 50 {
		t.Fatalf("after release: acquired %v, in use %d, want true and 50", got.Load(), b.inUse())
	}
	b.release(50)

	// A request larger than the whole budget is admitted when it is alone.
	if !b.acquire(500, never) {
		t.Fatal("an oversized request was refused on an empty budget")
	}
	// Shutdown: a waiter gives up when told to, taking nothing.
	var closing atomic.Bool
	aborted := make(chan bool)
	go func() { aborted <- b.acquire(1, closing.Load) }()
	time.Sleep(20 * time.Millisecond)
	closing.Store(true)
	b.wake()
	if <-aborted {
		t.Fatal("acquire succeeded after abort")
	}
	if b.inUse() != 500 {
		t.Fatalf("in use %d, want 500", b.inUse())
	}
}
