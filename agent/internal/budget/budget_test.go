package budget

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"floe/internal/bufpool"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func grown(c *Claim, n int64, stop Stop) <-chan error {
	done := make(chan error, 1)
	go func() { done <- c.Grow(n, stop) }()
	return done
}

func notYet(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s went on (err %v)", what, err)
	case <-time.After(30 * time.Millisecond):
	}
}

func got(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still waits after 10 s", what)
		return nil
	}
}

func TestTakeWaitsForRelease(t *testing.T) {
	b := New(100, 0)
	if err := b.Take(60, nil); err != nil {
		t.Fatal(err)
	}
	if !b.TryTake(40) || b.TryTake(1) {
		t.Fatal("TryTake: 40 more must fit and 1 beyond must not")
	}
	waits := 0
	b.OnWait(func() { waits++ })
	done := grown(b.Claim(false), 10, nil)
	notYet(t, done, "a take past the limit")
	b.Release(60)
	if err := got(t, done, "the take"); err != nil {
		t.Fatal(err)
	}
	if b.InUse() != 50 || waits != 1 {
		t.Fatalf("in use %d, waits %d; want 50 and 1", b.InUse(), waits)
	}
	b.Release(50)
	// Alone, a charge larger than the whole budget is admitted.
	if err := b.Take(500, nil); err != nil || b.InUse() != 500 {
		t.Fatalf("an oversized take on an empty budget: %v, in use %d", err, b.InUse())
	}
	b.Force(7)
	if b.InUse() != 507 {
		t.Fatalf("in use %d after Force, want 507", b.InUse())
	}
}

// TestStopEndsWait: a waiter's Stop ends its wait when the budget wakes it
// (shutdown) or at the latest after Recheck (a deadline, a peer gone),
// taking nothing; the other waiters then see it gone.
func TestStopEndsWait(t *testing.T) {
	b := New(100, 0)
	b.recheck = 20 * time.Millisecond
	b.Force(100)
	var closing atomic.Bool
	errClosing := errors.New("closing")
	woken := grown(b.Claim(false), 1, func() error {
		if closing.Load() {
			return errClosing
		}
		return nil
	})
	deadline := time.Now().Add(100 * time.Millisecond)
	errLate := errors.New("deadline")
	timed := grown(b.Claim(false), 1, func() error {
		if time.Now().After(deadline) {
			return errLate
		}
		return nil
	})
	waitFor(t, "two waiters", func() bool { return b.Waiting() == 2 })
	closing.Store(true)
	b.Wake()
	if err := got(t, woken, "a woken waiter"); !errors.Is(err, errClosing) {
		t.Fatalf("woken waiter: %v", err)
	}
	if err := got(t, timed, "a waiter past its deadline"); !errors.Is(err, errLate) {
		t.Fatalf("waiter past its deadline: %v", err)
	}
	if b.InUse() != 100 || b.Waiting() != 0 {
		t.Fatalf("in use %d, waiting %d; want 100 and 0", b.InUse(), b.Waiting())
	}
}

// TestOldestWaitingHolderGoesOn: two frames, each partly read and holding
// half the budget, both need more. Neither can release first, so the
// oldest is let past the limit; once it is done the other goes on.
func TestOldestWaitingHolderGoesOn(t *testing.T) {
	b := New(100, 0)
	// An older frame that holds nothing waits too; it must not stand in
	// the holders' way (issue 26: a waiter that held nothing at the head of
	// the line kept every holder waiting).
	fresh := b.Claim(false)
	first, second := b.Claim(false), b.Claim(false)
	for _, c := range []*Claim{first, second} {
		if err := c.Grow(50, nil); err != nil {
			t.Fatal(err)
		}
	}
	freshDone := grown(fresh, 60, nil)
	waitFor(t, "the fresh frame waits", func() bool { return b.Waiting() == 1 })
	secondDone := grown(second, 50, nil)
	waitFor(t, "the second frame waits", func() bool { return b.Waiting() == 2 })
	notYet(t, secondDone, "a holder past the limit while another holder is not waiting")
	firstDone := grown(first, 50, nil)
	if err := got(t, firstDone, "the oldest holder"); err != nil {
		t.Fatal(err)
	}
	notYet(t, secondDone, "the second holder, while the first holds 100 and is not waiting")
	first.Release()
	if err := got(t, secondDone, "the second holder"); err != nil {
		t.Fatal(err)
	}
	notYet(t, freshDone, "the fresh frame while the second holds 100")
	second.Release()
	if err := got(t, freshDone, "the fresh frame"); err != nil {
		t.Fatal(err)
	}
	if b.InUse() != 60 {
		t.Fatalf("in use %d, want 60", b.InUse())
	}
}

// TestSmallFramesHaveRoom: with the large room full of frames waiting for
// more, a small frame is still admitted at once from the reserve; small
// frames beyond the reserve wait for small ones, and may take from the
// large room when it has space.
func TestSmallFramesHaveRoom(t *testing.T) {
	b := New(100, 10)
	big, reading := b.Claim(false), b.Claim(false)
	if err := big.Grow(60, nil); err != nil {
		t.Fatal(err)
	}
	if err := reading.Grow(40, nil); err != nil {
		t.Fatal(err)
	}
	// big waits for more while reading (a frame whose peer is still
	// sending) holds the rest.
	bigMore := grown(big, 100, nil)
	waitFor(t, "the large frame waits", func() bool { return b.Waiting() == 1 })
	small := b.Claim(true)
	if err := got(t, grown(small, 8, nil), "a small frame"); err != nil {
		t.Fatal(err)
	}
	over := b.Claim(true)
	overDone := grown(over, 8, nil)
	notYet(t, overDone, "a small frame beyond the reserve with the large room full")
	small.Release()
	if err := got(t, overDone, "the second small frame"); err != nil {
		t.Fatal(err)
	}
	over.Release()
	notYet(t, bigMore, "the large frame while another is being read")
	reading.Release()
	if err := got(t, bigMore, "the large frame"); err != nil {
		t.Fatal(err)
	}
	big.Release()
	// With the large room free, small frames beyond the reserve use it.
	var claims []*Claim
	for range 5 {
		c := b.Claim(true)
		if err := c.Grow(8, nil); err != nil {
			t.Fatal(err)
		}
		claims = append(claims, c)
	}
	if b.InUse() != 40 {
		t.Fatalf("in use %d, want 40", b.InUse())
	}
	for _, c := range claims {
		c.Release()
	}
	if b.InUse() != 0 {
		t.Fatalf("in use %d after every release, want 0", b.InUse())
	}
}

func TestFrameReleasesOnLastRef(t *testing.T) {
	b := New(1<<20, 0)
	pool := bufpool.New(1 << 20)
	c := b.Claim(false)
	if err := c.Grow(1000, nil); err != nil {
		t.Fatal(err)
	}
	f := NewFrame(c, pool, pool.Get(1000))
	f.Ref()
	f.Unref()
	if b.InUse() != 1000 {
		t.Fatalf("in use %d with one reference left, want 1000", b.InUse())
	}
	f.Unref()
	if b.InUse() != 0 || f.Bytes() != nil {
		t.Fatalf("in use %d after the last reference, want 0 and the buffer gone", b.InUse())
	}
}

// TestConcurrentClaims: many goroutines grow frames, wait, give up on
// deadlines and release, at random; the budget's books end at zero and no
// goroutine is left waiting. Run with -race.
func TestConcurrentClaims(t *testing.T) {
	b := New(64, 16)
	b.recheck = time.Millisecond
	var wg sync.WaitGroup
	errLate := errors.New("late")
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 300 {
				small := rng.IntN(3) == 0
				c := b.Claim(small)
				deadline := time.Now().Add(time.Duration(rng.IntN(3000)) * time.Microsecond)
				stop := func() error {
					if time.Now().After(deadline) {
						return errLate
					}
					return nil
				}
				n := int64(1 + rng.IntN(16))
				if small {
					n = int64(1 + rng.IntN(8))
				}
				for range 1 + rng.IntN(4) {
					if c.Grow(n, stop) != nil {
						break
					}
					n *= 2
				}
				c.Release()
			}
		}()
	}
	wg.Wait()
	if b.InUse() != 0 || b.Waiting() != 0 {
		t.Fatalf("in use %d, waiting %d after every goroutine is done; want 0 and 0", b.InUse(), b.Waiting())
	}
}
