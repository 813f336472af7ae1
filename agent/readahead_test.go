package agent

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
	"floe/storage"
	"floe/storage/mem"
)

// aheadBucket is the bucket of the read-ahead tests: every GET takes delay
// and is counted, its length is in flight while it runs (the peak is
// kept), and a GET of a key in block waits for its ctx to end instead.
type aheadBucket struct {
	storage.Bucket
	delay time.Duration
	gets  atomic.Int64

	mu             sync.Mutex
	inflight, peak int64
	block          map[string]bool
	blocked        int     // GETs waiting in block now
	unblocked      []error // the ctx errors blocked GETs left with
}

func (b *aheadBucket) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	b.gets.Add(1)
	b.mu.Lock()
	b.inflight += length
	b.peak = max(b.peak, b.inflight)
	blocked := b.block[key]
	if blocked {
		b.blocked++
	}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.inflight -= length
		b.mu.Unlock()
	}()
	if blocked {
		<-ctx.Done()
		b.mu.Lock()
		b.blocked--
		b.unblocked = append(b.unblocked, ctx.Err())
		b.mu.Unlock()
		return nil, ctx.Err()
	}
	select {
	case <-time.After(b.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return b.Bucket.GetRange(ctx, key, offset, length)
}

// aheadValue is the record value of the read-ahead tests: each record is
// produced alone, so each is one object, one index entry of ~16 KB.
const aheadValue = 16000

// produceObjects produces n records of aheadValue bytes to partition 0 of
// a new topic, one object each, and returns the topic and its index
// entries.
func produceObjects(t *testing.T, ta *testAgent, name string, n int) (metadata.Topic, []metadata.IndexEntry) {
	t.Helper()
	ctx := t.Context()
	cl := ta.client(t, kgo.DefaultProduceTopic(name), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // the bytes stored are the bytes produced
	ta.createTopic(t, cl, name, 1)
	for range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, aheadValue)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	topic, err := ta.store.Topic(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := ta.store.Lookup(ctx, topic.ID, 0, 0, 1<<40, 10*n)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != n {
		t.Fatalf("%d records in %d index entries, want one each", n, len(entries))
	}
	return topic, entries
}

// fetchAhead fetches partition 0 of topic from offset with a partition
// limit of maxBytes and returns the offset after the answer's last batch.
func fetchAhead(t *testing.T, cl *kgo.Client, topic metadata.Topic, offset int64, maxBytes int32) int64 {
	t.Helper()
	req := fetchReq(topic, 0)
	req.Topics[0].Partitions[0].FetchOffset = offset
	req.Topics[0].Partitions[0].PartitionMaxBytes = maxBytes
	resp, err := cl.SeedBrokers()[0].Request(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch at %d: error code %d", offset, p.ErrorCode)
	}
	next := offset
	for b := p.RecordBatches; len(b) >= 27; {
		size := 12 + int(binary.BigEndian.Uint32(b[8:12]))
		next = int64(binary.BigEndian.Uint64(b[0:8])) + int64(binary.BigEndian.Uint32(b[23:27])) + 1
		b = b[size:]
	}
	return next
}

// settle waits until the agent's read-ahead has nothing planned or
// running.
func settle(t *testing.T, ta *testAgent) {
	t.Helper()
	if ta.ahead == nil {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for !ta.ahead.Idle() {
		if time.Now().After(deadline) {
			t.Fatalf("read-ahead still holds %d bytes", ta.ahead.InFlight())
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a plan's look-up may still run
}

// sequentialReaders sets up the tests of consumers reading old data in
// order: an agent over a bucket whose GETs take 10 ms, a topic of n
// objects (produceObjects) and a client.
func sequentialReaders(t *testing.T, name string, n int) (*aheadBucket, *testAgent, metadata.Topic, *kgo.Client) {
	t.Helper()
	b := &aheadBucket{Bucket: mem.New(), delay: 10 * time.Millisecond}
	ta := newTestAgent(t, b)
	topic, _ := produceObjects(t, ta, name, n)
	return b, ta, topic, ta.client(t)
}

// TestReadAheadServesCatchUp: a consumer reading old data sequentially,
// one object per fetch, misses only at its start: read-ahead has the
// later objects cached or on their way when its next fetches ask, and
// every object is read from the bucket once.
func TestReadAheadServesCatchUp(t *testing.T) {
	t.Parallel()
	const n = 40
	b, ta, topic, cl := sequentialReaders(t, "ahead-catchup", n)
	gets0, st0 := b.gets.Load(), ta.cache.Stats()
	fetches := 0
	for offset := int64(0); offset < n; fetches++ {
		offset = fetchAhead(t, cl, topic, offset, aheadValue+1000)
	}
	settle(t, ta)
	st := ta.cache.Stats()
	misses, aheadHits := st.Misses-st0.Misses, st.AheadHits-st0.AheadHits
	t.Logf("%d fetches: %d GETs, %d misses, %d read-ahead GETs, %d read-ahead hits", fetches,
		b.gets.Load()-gets0, misses, st.AheadGets-st0.AheadGets, aheadHits)
	if misses > 4 {
		t.Errorf("%d fetches missed the cache %d times, want at most 4 (the first fetches)", fetches, misses)
	}
	if aheadHits < n-4 {
		t.Errorf("%d read-ahead hits over %d objects, want at least %d", aheadHits, n, n-4)
	}
	if gets := b.gets.Load() - gets0; gets != n {
		t.Errorf("%d GETs for %d objects, want one each", gets, n)
	}
}

// TestReadAheadTwoConsumersOfAPartition: two consumers reading one
// partition from different offsets, fetches interleaved, are two streams:
// read-ahead serves both (one plan per partition served only the one
// furthest ahead, and read on past where it stopped).
func TestReadAheadTwoConsumersOfAPartition(t *testing.T) {
	t.Parallel()
	const n = 60
	b, ta, topic, cl := sequentialReaders(t, "ahead-two", n)
	gets0, st0 := b.gets.Load(), ta.cache.Stats()
	low, high := int64(0), int64(n/2)
	for low < n/2 || high < n {
		if low < n/2 {
			low = fetchAhead(t, cl, topic, low, aheadValue+1000)
		}
		if high < n {
			high = fetchAhead(t, cl, topic, high, aheadValue+1000)
		}
	}
	settle(t, ta)
	st := ta.cache.Stats()
	misses, aheadHits := st.Misses-st0.Misses, st.AheadHits-st0.AheadHits
	t.Logf("%d GETs, %d misses, %d read-ahead GETs, %d read-ahead hits",
		b.gets.Load()-gets0, misses, st.AheadGets-st0.AheadGets, aheadHits)
	// One plan per partition gave 16 misses and 44 hits here.
	if misses > 10 {
		t.Errorf("two consumers missed the cache %d times, want at most 10 (their first fetches)", misses)
	}
	if aheadHits < n-10 {
		t.Errorf("%d read-ahead hits over %d objects, want at least %d", aheadHits, n, n-10)
	}
	// The low consumer stops where the high one started: what its stream
	// read past that is the high one's anyway.
	if gets := b.gets.Load() - gets0; gets != n {
		t.Errorf("%d GETs for %d objects, want one each", gets, n)
	}
}

// TestReadAheadStoppedConsumerFreesItsBounds: two consumers of a
// partition, fetches interleaved, the one behind stopping where the other
// started. What the stopped one's stream read ahead, now behind the other
// consumer, no longer counts against the partition's bounds (it held
// them for good: --read-ahead-entries is shared by the partition's
// streams, so the consumer left was read ahead for less and less).
func TestReadAheadStoppedConsumerFreesItsBounds(t *testing.T) {
	t.Parallel()
	const n = 60
	_, ta, topic, cl := sequentialReaders(t, "ahead-stopped", n)
	low, high := int64(0), int64(n/3)
	for low < n/3 {
		low = fetchAhead(t, cl, topic, low, aheadValue+1000)
		high = fetchAhead(t, cl, topic, high, aheadValue+1000)
	}
	settle(t, ta)
	// behind counts the streams, and the planned entries that end at or
	// before offset (a fetch's start: what it read itself is trimmed by
	// the next).
	behind := func(offset int64) (streams, entries int) { return ta.ahead.Behind(topic.ID, 0, offset) }
	if streams, _ := behind(0); streams != 2 {
		t.Fatalf("%d read-ahead streams, want one per consumer", streams)
	}
	for high < n-5 {
		from := high
		high = fetchAhead(t, cl, topic, from, aheadValue+1000)
		settle(t, ta)
		if _, entries := behind(from); entries > 0 {
			t.Fatalf("after a fetch at %d, %d entries planned behind it still count against the partition's bounds", from, entries)
		}
	}
}

// TestReadAheadNotForTailingConsumer: fetches that reach the high
// watermark, from the bucket or written through, read nothing ahead.
func TestReadAheadNotForTailingConsumer(t *testing.T) {
	t.Parallel()
	b := &aheadBucket{Bucket: mem.New()}
	ta := newTestAgent(t, b)
	topic, _ := produceObjects(t, ta, "ahead-tail", 10)
	cl := ta.client(t)
	// Cold: all of it from the bucket in one fetch, up to the head.
	if next := fetchAhead(t, cl, topic, 0, 1<<20); next != 10 {
		t.Fatalf("fetch read up to %d, want 10", next)
	}
	if ta.cache.Stats().Misses == 0 {
		t.Fatal("the cold fetch made no GET")
	}
	// Tailing: each fetch at the head gets what was just produced.
	pl := ta.client(t, kgo.DefaultProduceTopic("ahead-tail"), kgo.ProducerLinger(0))
	offset := int64(10)
	for range 10 {
		if err := pl.ProduceSync(t.Context(), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		offset = fetchAhead(t, cl, topic, offset, 1<<20)
	}
	if offset != 20 {
		t.Fatalf("tailing fetches ended at %d, want 20", offset)
	}
	time.Sleep(100 * time.Millisecond)
	if st := ta.cache.Stats(); st.AheadGets != 0 {
		t.Fatalf("fetches at the head read %d ranges ahead, want none (%+v)", st.AheadGets, st)
	}
}

// TestReadAheadWithinBudget: with room for three objects in flight, one
// fetch reads three ahead and no more, never holding more than the budget
// in GETs at once, and gives the budget back.
func TestReadAheadWithinBudget(t *testing.T) {
	t.Parallel()
	b := &aheadBucket{Bucket: mem.New(), delay: 30 * time.Millisecond}
	const budget = 50_000 // three objects of ~16 KB, not four
	ta := newTestAgent(t, b, func(c *Config) { c.ReadAheadBytes = budget })
	topic, _ := produceObjects(t, ta, "ahead-budget", 20)
	cl := ta.client(t)
	if next := fetchAhead(t, cl, topic, 0, aheadValue+1000); next != 1 {
		t.Fatalf("fetch read up to %d, want 1", next)
	}
	settle(t, ta)
	b.mu.Lock()
	peak := b.peak
	b.mu.Unlock()
	if peak > budget {
		t.Errorf("%d bytes of GETs in flight at once, over the read-ahead budget of %d", peak, budget)
	}
	if st := ta.cache.Stats(); st.AheadGets != 3 {
		t.Errorf("%d read-ahead GETs, want the 3 the budget holds", st.AheadGets)
	}
	if got := testutilCounter(t, ta, "floe_agent_read_ahead_skips_total"); got < 1 {
		t.Errorf("no read-ahead skipped for the budget")
	}
	if n := ta.ahead.InFlight(); n != 0 {
		t.Errorf("read-ahead still holds %d bytes of its budget", n)
	}
}

// TestReadAheadStopsOnClose: read-ahead GETs still running when the agent
// closes are cancelled, and Close waits for its workers.
func TestReadAheadStopsOnClose(t *testing.T) {
	t.Parallel()
	b := &aheadBucket{Bucket: mem.New()}
	ta := newTestAgent(t, b, func(c *Config) { c.DrainDelay, c.ReadAheadConcurrency = 0, 4 })
	topic, entries := produceObjects(t, ta, "ahead-close", 20)
	b.mu.Lock()
	b.block = map[string]bool{}
	for _, e := range entries[2:] {
		b.block[e.ObjectKey] = true
	}
	b.mu.Unlock()
	cl := ta.client(t)
	fetchAhead(t, cl, topic, 0, aheadValue+1000)
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		blocked := b.blocked
		b.mu.Unlock()
		if blocked == ta.cfg.ReadAheadConcurrency {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d read-ahead GETs running, want %d", blocked, ta.cfg.ReadAheadConcurrency)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := ta.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b.mu.Lock()
		blocked, unblocked := b.blocked, append([]error(nil), b.unblocked...)
		b.mu.Unlock()
		if blocked == 0 {
			if len(unblocked) != ta.cfg.ReadAheadConcurrency {
				t.Fatalf("%d blocked GETs ended, want %d", len(unblocked), ta.cfg.ReadAheadConcurrency)
			}
			for _, err := range unblocked {
				if err != context.Canceled {
					t.Fatalf("a read-ahead GET ended with %v, want context.Canceled", err)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d read-ahead GETs still running after Close", blocked)
		}
	}
}

// testutilCounter sums the values of the agent's metric name.
func testutilCounter(t *testing.T, ta *testAgent, name string) float64 {
	t.Helper()
	mfs, err := ta.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if c := m.GetCounter(); c != nil {
				sum += c.GetValue()
			} else {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}
