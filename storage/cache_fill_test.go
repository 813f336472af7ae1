package storage_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"go.uber.org/goleak"

	"floe/storage"
)

// TestCacheFillThenRead: a range Fill brought in is read without a GET,
// its first read is FromAhead and counted a read-ahead hit, later ones are
// plain hits; Fill of a cached range starts nothing.
func TestCacheFillThenRead(t *testing.T) {
	obj := data(100)
	b := newCounting(t, map[string][]byte{"o": obj})
	c := storage.NewCache(b, 1000)

	started, err := c.Fill(t.Context(), "o", 10, 20)
	if err != nil || !started {
		t.Fatalf("Fill = %v, %v; want a GET started", started, err)
	}
	if st := c.Stats(); st.AheadGets != 1 || st.AheadBytes != 20 || st.AheadUnread != 20 || st.Misses != 0 {
		t.Fatalf("after Fill: %+v", st)
	}
	if again, err := c.Fill(t.Context(), "o", 10, 20); err != nil || again {
		t.Fatalf("Fill of a cached range = %v, %v; want nothing started", again, err)
	}
	for i, want := range []storage.Source{storage.FromAhead, storage.FromCache} {
		got, src, err := c.ReadSource(t.Context(), "o", 10, 20)
		if err != nil || string(got) != string(obj[10:30]) || src != want {
			t.Fatalf("read %d: %x, %v, %v; want %x from %v", i, got, src, err, obj[10:30], want)
		}
	}
	if n := b.gets.Load(); n != 1 {
		t.Fatalf("%d GETs, want 1", n)
	}
	if st := c.Stats(); st.AheadHits != 1 || st.AheadUnread != 0 || st.Hits != 2 || st.Misses != 0 {
		t.Fatalf("after the reads: %+v", st)
	}
}

// TestCacheFillJoinsNothing: Fill neither waits for nor duplicates a GET in
// flight, and a reader arriving while Fill's GET runs joins it (FromAhead);
// the range is then cached as read.
func TestCacheFillJoinsNothing(t *testing.T) {
	defer goleak.VerifyNone(t)
	obj := data(100)
	b := newCounting(t, map[string][]byte{"o": obj})
	b.gate = make(chan struct{})
	b.started = make(chan struct{}, 2)
	c := storage.NewCache(b, 1000)

	// A reader's GET in flight: Fill returns at once, starting nothing.
	read := make(chan error, 1)
	go func() {
		_, err := c.GetRange(t.Context(), "o", 0, 10)
		read <- err
	}()
	<-b.started
	if started, err := c.Fill(t.Context(), "o", 0, 10); started || err != nil {
		t.Fatalf("Fill beside a reader's GET = %v, %v", started, err)
	}

	// Fill's own GET: a reader joins it.
	filled := make(chan error, 1)
	go func() {
		_, err := c.Fill(t.Context(), "o", 50, 10)
		filled <- err
	}()
	<-b.started
	if !c.Pending("o", 50, 10) {
		t.Fatal("Fill's GET in flight is not pending")
	}
	type res struct {
		src storage.Source
		err error
	}
	joined := make(chan res, 1)
	go func() {
		_, src, err := c.ReadSource(t.Context(), "o", 50, 10)
		joined <- res{src, err}
	}()
	for c.Stats().AheadHits == 0 { // the reader has joined
		runtime.Gosched()
	}
	close(b.gate)
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	if err := <-filled; err != nil {
		t.Fatal(err)
	}
	if r := <-joined; r.err != nil || r.src != storage.FromAhead {
		t.Fatalf("reader joining Fill's GET: %v, %v; want FromAhead", r.src, r.err)
	}
	if n := b.gets.Load(); n != 2 {
		t.Fatalf("%d GETs, want 2", n)
	}
	if st := c.Stats(); st.AheadGets != 1 || st.AheadHits != 1 || st.AheadUnread != 0 {
		t.Fatalf("stats: %+v", st)
	}
	if _, src, _ := c.ReadSource(t.Context(), "o", 50, 10); src != storage.FromCache {
		t.Fatalf("second read of a range read while filling: %v, want FromCache", src)
	}
}

// TestCacheFillCancelled: a Fill whose ctx ends cancels its GET when no
// reader waits for it, and caches nothing.
func TestCacheFillCancelled(t *testing.T) {
	defer goleak.VerifyNone(t)
	b := newCounting(t, map[string][]byte{"o": data(100)})
	b.gate = make(chan struct{})
	b.started = make(chan struct{}, 1)
	b.getErrs = make(chan error, 1)
	c := storage.NewCache(b, 1000)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Fill(ctx, "o", 0, 10)
		done <- err
	}()
	<-b.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Fill = %v, want context.Canceled", err)
	}
	if err := <-b.getErrs; !errors.Is(err, context.Canceled) {
		t.Fatalf("Fill's GET saw %v, want context.Canceled", err)
	}
	if c.Pending("o", 0, 10) {
		t.Fatal("a cancelled Fill left its range pending")
	}
}

// TestCacheFillEvictedUnread: read-ahead evicted before anyone read it is
// counted, and no longer unread.
func TestCacheFillEvictedUnread(t *testing.T) {
	b := newCounting(t, map[string][]byte{"o": data(100)})
	c := storage.NewCache(b, 30)
	if _, err := c.Fill(t.Context(), "o", 0, 20); err != nil {
		t.Fatal(err)
	}
	checkRange(t, c, "o", 20, 20, data(100)[20:40]) // evicts the filled range
	if st := c.Stats(); st.AheadEvicted != 1 || st.AheadUnread != 0 || st.AheadHits != 0 || st.Bytes != 20 {
		t.Fatalf("stats: %+v", st)
	}
}
