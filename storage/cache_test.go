package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"floe/storage"
	"floe/storage/mem"
)

// countingBucket counts GetRange calls and can hold them at a gate.
type countingBucket struct {
	storage.Bucket
	gets atomic.Int64
	// gate, if not nil, is received from before each GET proceeds.
	gate chan struct{}
	// started, if not nil, receives one value as each GET begins.
	started chan struct{}
	// getErrs receives the ctx error each GET saw on its way out.
	getErrs chan error
}

func (b *countingBucket) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	b.gets.Add(1)
	if b.started != nil {
		b.started <- struct{}{}
	}
	if b.gate != nil {
		select {
		case <-b.gate:
		case <-ctx.Done():
		}
	}
	if b.getErrs != nil {
		defer func() { b.getErrs <- ctx.Err() }()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return b.Bucket.GetRange(ctx, key, offset, length)
}

func newCounting(t *testing.T, objects map[string][]byte) *countingBucket {
	t.Helper()
	b := mem.New()
	for k, v := range objects {
		if err := b.Put(t.Context(), k, v); err != nil {
			t.Fatal(err)
		}
	}
	return &countingBucket{Bucket: b}
}

func data(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return b
}

func checkRange(t *testing.T, c *storage.Cache, key string, off, n int64, want []byte) {
	t.Helper()
	got, err := c.GetRange(t.Context(), key, off, n)
	if err != nil {
		t.Fatalf("GetRange(%s, %d, %d): %v", key, off, n, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("GetRange(%s, %d, %d) = %x, want %x", key, off, n, got, want)
	}
}

func TestCacheLRU(t *testing.T) {
	obj := data(1000)
	b := newCounting(t, map[string][]byte{"o": obj})
	c := storage.NewCache(b, 100)

	checkRange(t, c, "o", 0, 40, obj[:40]) // A
	checkRange(t, c, "o", 0, 40, obj[:40])
	if s := c.Stats(); b.gets.Load() != 1 || s != (storage.CacheStats{Hits: 1, Misses: 1, Bytes: 40}) {
		t.Fatalf("after A twice: %d gets, stats %+v", b.gets.Load(), s)
	}
	checkRange(t, c, "o", 40, 40, obj[40:80])  // B
	checkRange(t, c, "o", 0, 40, obj[:40])     // A is now the most recent
	checkRange(t, c, "o", 80, 40, obj[80:120]) // C evicts B, the least recent
	if s := c.Stats(); b.gets.Load() != 3 || s != (storage.CacheStats{Hits: 2, Misses: 3, Evictions: 1, Bytes: 80}) {
		t.Fatalf("after C: %d gets, stats %+v", b.gets.Load(), s)
	}
	checkRange(t, c, "o", 0, 40, obj[:40]) // A still cached
	if b.gets.Load() != 3 {
		t.Fatalf("A was evicted: %d gets", b.gets.Load())
	}
	checkRange(t, c, "o", 40, 40, obj[40:80]) // B again: a GET, evicts C
	if s := c.Stats(); b.gets.Load() != 4 || s.Evictions != 2 || s.Bytes != 80 {
		t.Fatalf("after B again: %d gets, stats %+v", b.gets.Load(), s)
	}
	// The same bytes under another (offset, length) are another entry.
	checkRange(t, c, "o", 0, 20, obj[:20])
	if b.gets.Load() != 5 {
		t.Fatalf("range (0,20) served from (0,40): %d gets", b.gets.Load())
	}
}

// TestCachePut: ranges put by an object's writer are served without a GET,
// count against the budget and are evicted like fetched ones.
func TestCachePut(t *testing.T) {
	obj := data(1000)
	b := newCounting(t, map[string][]byte{"o": obj})
	c := storage.NewCache(b, 100)
	c.Put("o", 0, obj[:40])
	c.Put("o", 40, obj[40:80])
	checkRange(t, c, "o", 0, 40, obj[:40])
	checkRange(t, c, "o", 40, 40, obj[40:80])
	if s := c.Stats(); b.gets.Load() != 0 || s != (storage.CacheStats{Hits: 2, Bytes: 80}) {
		t.Fatalf("after reading both put ranges: %d gets, stats %+v", b.gets.Load(), s)
	}
	c.Put("o", 80, obj[80:120]) // evicts (0,40), the least recently used
	checkRange(t, c, "o", 0, 40, obj[:40])
	if s := c.Stats(); b.gets.Load() != 1 || s.Evictions != 2 || s.Bytes != 80 {
		t.Fatalf("after (0,40) again: %d gets, stats %+v", b.gets.Load(), s)
	}
	c.Put("o", 0, obj[:200]) // larger than the whole budget: not cached
	if s := c.Stats(); s.Bytes != 80 {
		t.Fatalf("a range over budget was cached: %+v", s)
	}
}

func TestCacheTooLargeAndEmpty(t *testing.T) {
	obj := data(300)
	b := newCounting(t, map[string][]byte{"o": obj})
	c := storage.NewCache(b, 100)
	checkRange(t, c, "o", 0, -1, obj)
	checkRange(t, c, "o", 0, -1, obj)
	checkRange(t, c, "o", 300, 10, []byte{})
	checkRange(t, c, "o", 300, 10, []byte{})
	if s := c.Stats(); b.gets.Load() != 4 || s.Bytes != 0 || s.Evictions != 0 {
		t.Fatalf("%d gets, stats %+v; want 4 gets and nothing cached", b.gets.Load(), s)
	}

	// A zero budget caches nothing.
	c = storage.NewCache(b, 0)
	checkRange(t, c, "o", 0, 10, obj[:10])
	checkRange(t, c, "o", 0, 10, obj[:10])
	if b.gets.Load() != 6 || c.Stats().Bytes != 0 {
		t.Fatalf("zero budget: %d gets, stats %+v", b.gets.Load(), c.Stats())
	}
}

func TestCacheErrorsNotCached(t *testing.T) {
	b := newCounting(t, nil)
	c := storage.NewCache(b, 1000)
	for range 2 {
		if _, err := c.GetRange(t.Context(), "late", 0, 5); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("GetRange(missing) = %v, want ErrNotFound", err)
		}
	}
	if b.gets.Load() != 2 {
		t.Fatalf("a failed GET was cached: %d gets", b.gets.Load())
	}
	if err := b.Put(t.Context(), "late", []byte("arrived")); err != nil {
		t.Fatal(err)
	}
	checkRange(t, c, "late", 0, 5, []byte("arriv"))
}

// TestCacheSharedGet runs many readers of one range at once: they must all
// get its bytes from exactly one GET.
func TestCacheSharedGet(t *testing.T) {
	defer goleak.VerifyNone(t)
	obj := data(4096)
	b := newCounting(t, map[string][]byte{"o": obj})
	b.gate = make(chan struct{})
	c := storage.NewCache(b, 1<<20)

	const readers = 50
	results := make([][]byte, readers)
	errs := make([]error, readers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			results[i], errs[i] = c.GetRange(t.Context(), "o", 100, 1000)
		})
	}
	// Hold the GET until every reader has joined it.
	for s := c.Stats(); s.Hits+s.Misses < readers; s = c.Stats() {
		time.Sleep(time.Millisecond)
	}
	close(b.gate)
	wg.Wait()
	for i := range readers {
		if errs[i] != nil || !bytes.Equal(results[i], obj[100:1100]) {
			t.Fatalf("reader %d: %v, %d bytes", i, errs[i], len(results[i]))
		}
	}
	if n := b.gets.Load(); n != 1 {
		t.Fatalf("%d readers caused %d GETs, want 1", readers, n)
	}
	if s := c.Stats(); s.Misses != 1 || s.Hits != readers-1 || s.Bytes != 1000 {
		t.Fatalf("stats %+v", s)
	}
}

// TestCacheReadReportsHits checks Read's hit flag: of concurrent readers of
// one range exactly one started the GET; a later read is a hit; a failed
// GET is no hit for the reader that started it.
func TestCacheReadReportsHits(t *testing.T) {
	defer goleak.VerifyNone(t)
	obj := data(4096)
	b := newCounting(t, map[string][]byte{"o": obj})
	b.gate = make(chan struct{})
	c := storage.NewCache(b, 1<<20)

	const readers = 20
	hits := make([]bool, readers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			got, hit, err := c.Read(t.Context(), "o", 10, 100)
			if err != nil || !bytes.Equal(got, obj[10:110]) {
				t.Errorf("reader %d: %v, %d bytes", i, err, len(got))
			}
			hits[i] = hit
		})
	}
	for s := c.Stats(); s.Hits+s.Misses < readers; s = c.Stats() {
		time.Sleep(time.Millisecond)
	}
	close(b.gate)
	wg.Wait()
	misses := 0
	for _, h := range hits {
		if !h {
			misses++
		}
	}
	if misses != 1 || b.gets.Load() != 1 {
		t.Fatalf("%d of %d readers report a miss, %d GETs; want 1 and 1", misses, readers, b.gets.Load())
	}
	if _, hit, err := c.Read(t.Context(), "o", 10, 100); err != nil || !hit {
		t.Fatalf("cached range: hit %v, err %v", hit, err)
	}
	if _, hit, err := c.Read(t.Context(), "missing", 0, 10); !errors.Is(err, storage.ErrNotFound) || hit {
		t.Fatalf("missing object: hit %v, err %v", hit, err)
	}
}

// TestCacheWaiterGivesUp checks that a reader whose ctx ends leaves at once
// without cancelling the GET others still wait for.
func TestCacheWaiterGivesUp(t *testing.T) {
	defer goleak.VerifyNone(t)
	obj := data(100)
	b := newCounting(t, map[string][]byte{"o": obj})
	b.gate = make(chan struct{})
	b.started = make(chan struct{}, 1)
	b.getErrs = make(chan error, 1)
	c := storage.NewCache(b, 1000)

	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan error, 1)
	go func() {
		_, err := c.GetRange(ctx, "o", 0, 50) // starts the GET
		first <- err
	}()
	<-b.started
	second := make(chan []byte, 1)
	go func() {
		got, err := c.GetRange(t.Context(), "o", 0, 50) // joins it
		if err != nil {
			t.Error(err)
		}
		second <- got
	}()
	for c.Stats().Hits < 1 {
		time.Sleep(time.Millisecond)
	}

	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled reader got %v, want context.Canceled", err)
	}
	close(b.gate)
	if got := <-second; !bytes.Equal(got, obj[:50]) {
		t.Fatalf("remaining reader got %x", got)
	}
	if err := <-b.getErrs; err != nil {
		t.Fatalf("the shared GET saw its ctx end (%v) though a reader still waited", err)
	}
	if b.gets.Load() != 1 {
		t.Fatalf("%d GETs, want 1", b.gets.Load())
	}
}

// TestCacheLastWaiterCancels checks that a GET nobody waits for any more is
// cancelled, and that a later reader starts a fresh one.
func TestCacheLastWaiterCancels(t *testing.T) {
	defer goleak.VerifyNone(t)
	obj := data(100)
	b := newCounting(t, map[string][]byte{"o": obj})
	b.gate = make(chan struct{})
	b.started = make(chan struct{}, 1)
	b.getErrs = make(chan error, 2)
	c := storage.NewCache(b, 1000)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.GetRange(ctx, "o", 0, 10)
		done <- err
	}()
	<-b.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if err := <-b.getErrs; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned GET's ctx: %v, want context.Canceled", err)
	}

	close(b.gate)
	b.started = nil
	checkRange(t, c, "o", 0, 10, obj[:10])
	if b.gets.Load() != 2 {
		t.Fatalf("%d GETs, want 2", b.gets.Load())
	}
	if _, err := c.GetRange(ctx, "o", 0, 20); !errors.Is(err, context.Canceled) {
		t.Fatalf("GetRange with a dead ctx = %v", err)
	}
	if b.gets.Load() != 2 {
		t.Fatal("a dead ctx started a GET")
	}
}

// TestCacheConcurrent mixes readers of overlapping ranges under a budget
// that forces evictions; every answer must be exactly the requested bytes.
func TestCacheConcurrent(t *testing.T) {
	objs := map[string][]byte{}
	for i := range 4 {
		objs[fmt.Sprint("o", i)] = data(2000 + i)
	}
	b := newCounting(t, objs)
	c := storage.NewCache(b, 3000)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 500 {
				key := fmt.Sprint("o", r.IntN(4))
				off := int64(r.IntN(20) * 100)
				n := int64(r.IntN(5)*100 + 100)
				got, err := c.GetRange(t.Context(), key, off, n)
				if err != nil {
					t.Error(err)
					return
				}
				want := objs[key][off:min(off+n, int64(len(objs[key])))]
				if !bytes.Equal(got, want) {
					t.Errorf("GetRange(%s, %d, %d) wrong bytes", key, off, n)
					return
				}
			}
		})
	}
	wg.Wait()
	s := c.Stats()
	if s.Bytes > 3000 || s.Hits+s.Misses != 8*500 || s.Misses != b.gets.Load() || s.Evictions == 0 {
		t.Fatalf("stats %+v with %d GETs", s, b.gets.Load())
	}
}
