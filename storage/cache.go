package storage

import (
	"container/list"
	"context"
	"sync"
)

// Cache is the fetch path's read cache: an LRU of byte ranges of immutable
// objects, keyed by (key, offset, length) and bounded by a byte budget.
// Concurrent readers of the same range share one GET, so a burst of
// consumers reading the same fresh object costs one request, not one per
// consumer.
//
// Slices returned by GetRange are shared between callers and with the cache
// itself: callers must treat them as read-only.
//
// All fields below mu are guarded by it. The bucket GET itself runs without
// the lock, in a goroutine of its own (see GetRange).
type Cache struct {
	bucket Bucket
	budget int64

	mu      sync.Mutex
	entries map[rangeKey]*list.Element // values of lru
	lru     *list.List                 // of *cacheEntry, most recently used first
	flights map[rangeKey]*flight       // GETs in progress
	stats   CacheStats
}

// CacheStats counts what a Cache did since it was made.
type CacheStats struct {
	// Hits counts GetRange calls that started no GET: served from the
	// cache, or by joining a GET already in flight for the same range.
	Hits int64
	// Misses counts GetRange calls that started a GET.
	Misses int64
	// Evictions counts ranges dropped to stay within the budget.
	Evictions int64
	// Bytes is the size of the ranges now cached.
	Bytes int64

	// Read-ahead (Fill). AheadGets counts the GETs Fill started and
	// AheadBytes the bytes they brought in; neither is in Misses.
	// AheadHits counts the reads that were the first of a range Fill
	// brought in or is bringing in (they are in Hits too). AheadUnread is
	// the bytes of ranges Fill cached that nobody read yet, and
	// AheadEvicted counts such ranges dropped unread (read-ahead wasted).
	AheadGets, AheadBytes, AheadHits int64
	AheadUnread, AheadEvicted        int64
}

// Source says where Read found a range.
type Source int

const (
	// FromGet: this call started the GET.
	FromGet Source = iota
	// FromCache: cached.
	FromCache
	// FromFlight: joined a GET in flight another reader started (so the
	// range was not cached either).
	FromFlight
	// FromAhead: the first read of a range Fill brought in (or is
	// bringing in): read-ahead that paid off.
	FromAhead
)

type rangeKey struct {
	key            string
	offset, length int64
}

type cacheEntry struct {
	k    rangeKey
	data []byte
	// ahead: cached by Fill and not read since (guarded by Cache.mu).
	ahead bool
}

// flight is one GET shared by every reader of its range that arrives while
// it runs. data and err are written before done is closed and only read
// after, so readers need no lock for them.
type flight struct {
	done chan struct{}
	data []byte
	err  error
	// waiters counts readers still waiting (guarded by Cache.mu). When the
	// last one gives up, nobody wants the result: the GET is cancelled.
	waiters int
	cancel  context.CancelFunc
	// ahead: started by Fill; read: a reader joined it since (both
	// guarded by Cache.mu). A range Fill brought in that a reader already
	// waited for is cached as read.
	ahead, read bool
}

// NewCache returns a cache in front of b holding at most budgetBytes of
// ranges. A budget of zero or less caches nothing but still shares
// concurrent GETs.
func NewCache(b Bucket, budgetBytes int64) *Cache {
	return &Cache{
		bucket:  b,
		budget:  budgetBytes,
		entries: make(map[rangeKey]*list.Element),
		lru:     list.New(),
		flights: make(map[rangeKey]*flight),
	}
}

// GetRange returns length bytes of key from offset, as Bucket.GetRange does,
// from the cache when it can. The result must be treated as read-only.
//
// If ctx ends while the range is being fetched, GetRange returns ctx.Err()
// at once, but the GET carries on for any other reader waiting on it; it is
// cancelled only when no reader is left. So the goroutine that runs the GET
// needs no owner: it ends with the GET, which nobody keeps waiting on. A
// failed GET is not cached: the next reader tries again.
func (c *Cache) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	data, _, err := c.Read(ctx, key, offset, length)
	return data, err
}

// Read is GetRange that also reports whether this call was a hit: served
// from the cache or by joining a GET already in flight, starting no GET of
// its own (what CacheStats.Hits counts). An agent serving a range to
// another agent counts with it the GETs the zone's shared cache saved.
func (c *Cache) Read(ctx context.Context, key string, offset, length int64) (data []byte, hit bool, err error) {
	data, src, err := c.ReadSource(ctx, key, offset, length)
	return data, src != FromGet, err
}

// ReadSource is Read that also tells a read of what Fill brought in
// (FromAhead) from any other hit: the fetch path goes on reading ahead of
// a consumer whose reads read-ahead serves.
func (c *Cache) ReadSource(ctx context.Context, key string, offset, length int64) ([]byte, Source, error) {
	k := rangeKey{key: key, offset: offset, length: length}

	c.mu.Lock()
	if el, ok := c.entries[k]; ok {
		c.lru.MoveToFront(el)
		c.stats.Hits++
		e := el.Value.(*cacheEntry)
		src := FromCache
		if e.ahead {
			e.ahead, src = false, FromAhead
			c.stats.AheadHits++
			c.stats.AheadUnread -= int64(len(e.data))
		}
		c.mu.Unlock()
		return e.data, src, nil
	}
	if err := ctx.Err(); err != nil {
		c.mu.Unlock()
		return nil, FromGet, err
	}
	src := FromGet
	f, ok := c.flights[k]
	if ok {
		c.stats.Hits++
		src = FromFlight
		if f.ahead && !f.read {
			src = FromAhead
			c.stats.AheadHits++
		}
		f.read = true
	} else {
		c.stats.Misses++
		f = c.startFlight(ctx, k, false)
	}
	f.waiters++
	c.mu.Unlock()
	data, err := c.wait(ctx, k, f)
	return data, src, err
}

// Fill brings the range into the cache ahead of its readers (read-ahead)
// and reports whether it started a GET. A range already cached or being
// fetched is left to that (no second GET, and no wait for it). Readers
// arriving while the GET runs join it; it is cancelled if ctx ends and no
// reader waits for it. Fill waits for its GET, so a caller can bound the
// GETs it runs at once.
func (c *Cache) Fill(ctx context.Context, key string, offset, length int64) (bool, error) {
	k := rangeKey{key: key, offset: offset, length: length}
	c.mu.Lock()
	if _, ok := c.entries[k]; ok {
		c.mu.Unlock()
		return false, nil
	}
	if _, ok := c.flights[k]; ok {
		c.mu.Unlock()
		return false, nil
	}
	if err := ctx.Err(); err != nil {
		c.mu.Unlock()
		return false, err
	}
	c.stats.AheadGets++
	f := c.startFlight(ctx, k, true)
	f.waiters++
	c.mu.Unlock()
	_, err := c.wait(ctx, k, f)
	return true, err
}

// Pending reports whether the range is cached or being fetched: Fill would
// start no GET for it.
func (c *Cache) Pending(key string, offset, length int64) bool {
	k := rangeKey{key: key, offset: offset, length: length}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, cached := c.entries[k]
	_, flying := c.flights[k]
	return cached || flying
}

// startFlight starts the shared GET of k. c.mu must be held.
func (c *Cache) startFlight(ctx context.Context, k rangeKey, ahead bool) *flight {
	// The GET must outlive this caller's ctx (other readers may join it)
	// but keep its values, such as trace ids.
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f := &flight{done: make(chan struct{}), cancel: cancel, ahead: ahead}
	c.flights[k] = f
	go c.fill(fctx, k, f)
	return f
}

// wait waits for f, which the caller was counted a waiter of, or for ctx.
func (c *Cache) wait(ctx context.Context, k rangeKey, f *flight) ([]byte, error) {
	select {
	case <-f.done:
		return f.data, f.err
	case <-ctx.Done():
		c.mu.Lock()
		f.waiters--
		if f.waiters == 0 && c.flights[k] == f {
			// Forget the flight before cancelling it, so a reader
			// arriving now starts a fresh GET instead of joining one
			// that is about to fail with context.Canceled.
			delete(c.flights, k)
			f.cancel()
		}
		c.mu.Unlock()
		return nil, ctx.Err()
	}
}

// Put caches data as the bytes of key from offset, as GetRange would
// return them, without a GET: for the writer of an object that knows its
// contents. data must not be modified afterwards. An entry already cached
// or being fetched for the range is left as it is.
func (c *Cache) Put(key string, offset int64, data []byte) {
	k := rangeKey{key: key, offset: offset, length: int64(len(data))}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.flights[k]; ok {
		return
	}
	c.insert(k, data, false)
}

// Has reports whether the range is cached, so GetRange would return it
// without a GET.
func (c *Cache) Has(key string, offset, length int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[rangeKey{key: key, offset: offset, length: length}]
	return ok
}

// fill runs one shared GET and publishes its result.
func (c *Cache) fill(ctx context.Context, k rangeKey, f *flight) {
	data, err := c.bucket.GetRange(ctx, k.key, k.offset, k.length)
	f.cancel()

	c.mu.Lock()
	if c.flights[k] == f {
		delete(c.flights, k)
	}
	if err == nil {
		if f.ahead {
			c.stats.AheadBytes += int64(len(data))
		}
		c.insert(k, data, f.ahead && !f.read)
	}
	f.data, f.err = data, err
	c.mu.Unlock()
	close(f.done)
}

// insert caches data under k and evicts least recently used ranges until
// the cache fits its budget; ahead marks a range read-ahead brought in that
// nobody read yet. c.mu must be held.
func (c *Cache) insert(k rangeKey, data []byte, ahead bool) {
	size := int64(len(data))
	if size > c.budget {
		return // would evict everything and still not fit
	}
	if size == 0 {
		// Empty ranges (reads at or past the end) would cost nothing
		// against the budget, so nothing would ever evict them.
		return
	}
	if _, ok := c.entries[k]; ok {
		// Filled by a newer flight for the same range that started
		// after this one was abandoned; both hold the same bytes.
		return
	}
	c.entries[k] = c.lru.PushFront(&cacheEntry{k: k, data: data, ahead: ahead})
	c.stats.Bytes += size
	if ahead {
		c.stats.AheadUnread += size
	}
	for c.stats.Bytes > c.budget {
		el := c.lru.Back()
		e := el.Value.(*cacheEntry)
		c.lru.Remove(el)
		delete(c.entries, e.k)
		c.stats.Bytes -= int64(len(e.data))
		c.stats.Evictions++
		if e.ahead {
			c.stats.AheadUnread -= int64(len(e.data))
			c.stats.AheadEvicted++
		}
	}
}

// Stats returns a snapshot of the cache's counters.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}
