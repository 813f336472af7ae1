package readahead

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"floe/metadata"
	"floe/storage"
	"floe/storage/mem"
)

// index is a partition's index: entry i covers offsets [10i, 10i+10) in
// object "obj-i", 100 bytes each. It counts look-ups.
type index struct {
	mu      sync.Mutex
	lookups int
}

func (x *index) Lookup(_ context.Context, topic metadata.TopicID, partition int32, offset, maxBytes int64, limit int) ([]metadata.IndexEntry, error) {
	x.mu.Lock()
	x.lookups++
	x.mu.Unlock()
	var out []metadata.IndexEntry
	var bytes int64
	for i := offset / 10; i < 100 && len(out) < limit && bytes < maxBytes; i++ {
		out = append(out, metadata.IndexEntry{TopicID: topic, Partition: partition, BaseOffset: i * 10, EndOffset: i*10 + 10,
			ObjectKey: fmt.Sprintf("obj-%d", i), ByteLength: 100})
		bytes += 100
	}
	return out, nil
}

// count is how many look-ups were made.
func (x *index) count() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.lookups
}

func setup(t *testing.T, cfg Config) (*ReadAhead, *index, *storage.Cache) {
	t.Helper()
	b := mem.New()
	for i := range 100 {
		if err := b.Put(context.Background(), fmt.Sprintf("obj-%d", i), make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	cache := storage.NewCache(b, cfg.CacheBytes)
	x := &index{}
	r := New(cfg, x, cache, prometheus.NewRegistry())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	r.Start(ctx, &wg)
	t.Cleanup(func() { cancel(); wg.Wait() })
	return r, x, cache
}

func settle(t *testing.T, r *ReadAhead) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !r.Idle(); {
		if time.Now().After(deadline) {
			t.Fatalf("read-ahead not idle after 5 s: %d bytes in flight", r.InFlight())
		}
		time.Sleep(time.Millisecond)
	}
}

var topic = metadata.TopicID{1}

// TestReadsWhatFollows: a fetch behind the head has the entries after it
// read into the cache, within the partition's bounds; one at the head has
// nothing read.
func TestReadsWhatFollows(t *testing.T) {
	r, x, cache := setup(t, Config{Bytes: 1 << 20, Workers: 2, Entries: 4, PartitionBytes: 1 << 20, CacheBytes: 1 << 20})
	r.After(topic, 0, 990, 1000, 1000) // at the head
	settle(t, r)
	if x.count() != 0 {
		t.Fatalf("a fetch at the head looked up %d times", x.count())
	}
	r.After(topic, 0, 0, 10, 1000) // read entry 0, 990 offsets behind
	settle(t, r)
	st := cache.Stats()
	if x.count() != 1 || st.AheadGets != 4 {
		// The first window is an eighth of the partition's bytes (far
		// more than 4 entries here), so the Entries bound is what stops it.
		t.Fatalf("%d look-ups, %d GETs ahead; want 1 and 4", x.count(), st.AheadGets)
	}
	// Enough is ahead: the next fetch of the stream plans nothing more.
	r.After(topic, 0, 10, 20, 1000)
	settle(t, r)
	if x.count() != 1 {
		t.Fatalf("%d look-ups with half the entries still ahead, want 1", x.count())
	}
	for _, key := range []string{"obj-1", "obj-2", "obj-3", "obj-4"} {
		if !cache.Pending(key, 0, 100) {
			t.Errorf("%s not read ahead", key)
		}
	}
	if streams, behind := r.Behind(topic, 0, 10); streams != 1 || behind != 0 {
		t.Fatalf("%d streams, %d entries behind offset 10; want 1 and 0", streams, behind)
	}
}

// TestBudgetSkips: GETs beyond the read-ahead budget are skipped, never
// waited for, and the budget comes back once they are done.
func TestBudgetSkips(t *testing.T) {
	r, _, cache := setup(t, Config{Bytes: 250, Workers: 1, Entries: 50, PartitionBytes: 100 << 10, CacheBytes: 1 << 20})
	r.After(topic, 0, 0, 10, 1000)
	settle(t, r)
	if got := cache.Stats().AheadGets; got < 1 || got > 2 {
		t.Fatalf("%d GETs ahead with a budget of two and a half entries, want 1 or 2", got)
	}
	if r.InFlight() != 0 {
		t.Fatalf("%d bytes still held", r.InFlight())
	}
}

// TestOffWithoutBudget: no budget, no workers or no cache: no read-ahead,
// and a nil ReadAhead is told of fetches safely.
func TestOffWithoutBudget(t *testing.T) {
	for _, cfg := range []Config{{Workers: 1, Entries: 1, PartitionBytes: 1, CacheBytes: 1},
		{Bytes: 1, Entries: 1, PartitionBytes: 1, CacheBytes: 1}, {Bytes: 1, Workers: 1, Entries: 1, PartitionBytes: 1}} {
		if r := New(cfg, &index{}, nil, prometheus.NewRegistry()); r != nil {
			t.Fatalf("%+v: read-ahead on", cfg)
		}
	}
	var r *ReadAhead
	r.After(topic, 0, 0, 10, 1000)
}
