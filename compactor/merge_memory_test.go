package compactor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"floe/metadata"
	"floe/storage"
)

// recordingBucket records the length of every GET and which PUTs were
// streamed.
type recordingBucket struct {
	storage.Bucket
	mu       sync.Mutex
	maxGet   int64
	gets     int
	streamed []int64 // sizes of PutStream calls
}

func (b *recordingBucket) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	b.mu.Lock()
	b.maxGet = max(b.maxGet, length)
	b.gets++
	b.mu.Unlock()
	return b.Bucket.GetRange(ctx, key, offset, length)
}

func (b *recordingBucket) PutStream(ctx context.Context, key string, size int64, body io.Reader) error {
	b.mu.Lock()
	b.streamed = append(b.streamed, size)
	b.mu.Unlock()
	return storage.PutStream(ctx, b.Bucket, key, size, body)
}

// TestMergeStreamsWithinItsBuffer: four objects of about 330 KiB merge
// into one object of 1.3 MiB through a 256 KiB merge buffer. Every GET of
// the merge is one 64 KiB window of a source (the buffer shared out over
// four sources), the merged object is streamed into its PUT, and fetches
// return the same bytes before and after.
func TestMergeStreamsWithinItsBuffer(t *testing.T) {
	const buffer = 4 * 64 << 10
	e := newEnv(t, func(c *Config) { c.MergeBufferBytes = buffer })
	rb := &recordingBucket{Bucket: e.bucket}
	e.c = New(e.c.cfg, e.store, rb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	tp, err := e.store.CreateTopic(e.ctx, "t", 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("v", 10<<10)
	for range 4 {
		batches := map[int32][][]byte{}
		for p := range int32(3) {
			for range 11 {
				batches[p] = append(batches[p], producerBatch(rec{key: "k", value: value, ts: 1}, rec{key: "j", value: "w", ts: 2}))
			}
		}
		e.flush(tp.ID, batches)
	}
	before := make([][]byte, 3)
	for p := range int32(3) {
		before[p], _ = e.fetchAll(tp.ID, p)
	}
	rb.mu.Lock()
	rb.maxGet, rb.gets = 0, 0
	rb.mu.Unlock()
	if err := e.c.merges(e.ctx, e.lease(jobMerge)); err != nil {
		t.Fatal(err)
	}
	objs, _ := e.count()
	if objs != 1 {
		t.Fatalf("%d live objects after the merge, want 1", objs)
	}
	rb.mu.Lock()
	defer rb.mu.Unlock()
	if len(rb.streamed) != 1 || rb.streamed[0] < 4*buffer {
		t.Fatalf("streamed PUTs %v, want one of more than %d bytes", rb.streamed, 4*buffer)
	}
	if rb.maxGet > buffer/4 {
		t.Fatalf("a merge GET read %d bytes, more than its %d byte window", rb.maxGet, buffer/4)
	}
	if min := int(rb.streamed[0] / (buffer / 4)); rb.gets < min {
		t.Fatalf("%d GETs, want at least %d windows", rb.gets, min)
	}
	for p := range int32(3) {
		got, _ := e.fetchAll(tp.ID, p)
		if !bytes.Equal(got, before[p]) {
			t.Fatalf("partition %d: fetched bytes differ after merging", p)
		}
	}
}

// TestMergeOfBadBytesStoresNothing: a source whose last partition's bytes
// disagree with its row is found only once the merged object's first
// bytes are in its PUT. The PUT fails and stores nothing, the merge is
// reported unreadable, the index is left as it was and fetches of the
// other partitions still return what they did.
func TestMergeOfBadBytesStoresNothing(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MergeBufferBytes = 64 << 10 })
	tp, err := e.store.CreateTopic(e.ctx, "t", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("v", 8<<10)
	var keys []string
	for range 4 {
		batches := map[int32][][]byte{}
		for p := range int32(2) {
			for range 5 {
				batches[p] = append(batches[p], producerBatch(rec{key: "k", value: value, ts: 1}))
			}
		}
		keys = append(keys, e.flush(tp.ID, batches))
	}
	// Break the magic of the last batch of partition 1 in the last
	// object: its row says 5 batches, the bytes hold 4 and junk.
	rows, err := e.store.ObjectRows(e.ctx, keys[3:])
	if err != nil {
		t.Fatal(err)
	}
	var row metadata.IndexEntry
	for _, r := range rows {
		if r.Partition == 1 {
			row = r
		}
	}
	obj, err := e.bucket.GetRange(e.ctx, keys[3], 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	obj = bytes.Clone(obj)
	last := row.ByteOffset + row.ByteLength - int64(len(producerBatch(rec{key: "k", value: value, ts: 1})))
	obj[last+16] = 7 // magic
	if err := e.bucket.Put(e.ctx, keys[3], obj); err != nil {
		t.Fatal(err)
	}
	before, _ := e.fetchAll(tp.ID, 0)
	keysBefore := e.bucketKeys()
	objs0, rows0 := e.count()

	if err := e.c.merges(e.ctx, e.lease(jobMerge)); err != nil {
		t.Fatal(err)
	}
	if got := e.bucketKeys(); len(got) != len(keysBefore) {
		t.Fatalf("%d objects in the bucket after the failed merge, want %d", len(got), len(keysBefore))
	}
	if objs, rows := e.count(); objs != objs0 || rows != rows0 {
		t.Fatalf("objects %d, rows %d after the failed merge; want %d, %d", objs, rows, objs0, rows0)
	}
	if got, _ := e.fetchAll(tp.ID, 0); !bytes.Equal(got, before) {
		t.Fatal("partition 0 fetches other bytes after the failed merge")
	}
}

// TestMergeBoundsRows: eight contiguous rows of one partition merge into
// rows of at most MaxRowBytes (three source rows each here), not into one
// row a fetch would have to read whole, and fetches return the same bytes.
func TestMergeBoundsRows(t *testing.T) {
	batch := producerBatch(rec{key: "k", value: strings.Repeat("v", 4<<10), ts: 1})
	e := newEnv(t, func(c *Config) {
		c.Plan.FanIn = 8
		c.MaxRowBytes = 3 * int64(len(batch))
	})
	tp, err := e.store.CreateTopic(e.ctx, "t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 8 {
		e.flush(tp.ID, map[int32][][]byte{0: {batch}})
	}
	before, _ := e.fetchAll(tp.ID, 0)
	if err := e.c.merges(e.ctx, e.lease(jobMerge)); err != nil {
		t.Fatal(err)
	}
	objs, err := e.store.Objects(e.ctx, metadata.ObjectLive)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 {
		t.Fatalf("%d live objects after the merge, want 1", len(objs))
	}
	rows, err := e.store.ObjectRows(e.ctx, []string{objs[0].Key})
	if err != nil {
		t.Fatal(err)
	}
	var lengths []int64
	for _, r := range rows {
		lengths = append(lengths, r.ByteLength/int64(len(batch)))
	}
	if want := []int64{3, 3, 2}; !slices.Equal(lengths, want) {
		t.Fatalf("merged rows hold %v batches, want %v", lengths, want)
	}
	if got, _ := e.fetchAll(tp.ID, 0); !bytes.Equal(got, before) {
		t.Fatal("fetched bytes differ after merging")
	}
}

// TestKeyCompactionBoundsDecodedRecords: a partition whose stored bytes fit
// KeyCompactMaxBytes but whose decoded records do not (many tiny records,
// each a struct of some hundred bytes once decoded) is skipped, with a
// warning, rather than held in memory; with a bound above both it is
// compacted.
func TestKeyCompactionBoundsDecodedRecords(t *testing.T) {
	e := newEnv(t, nil)
	logs := e.logTo()
	tp, err := e.store.CreateTopic(e.ctx, "kc", 1, map[string]string{"cleanup.policy": "compact"})
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	for i := range 20 {
		var recs []rec
		for j := range 50 {
			recs = append(recs, rec{key: fmt.Sprint(j % 10), value: fmt.Sprint(i), ts: 1})
		}
		b := producerBatch(recs...)
		stored += int64(len(b))
		e.flush(tp.ID, map[int32][][]byte{0: {b}})
	}
	e.c.cfg.KeyCompactMaxBytes = 2 * stored
	if err := e.c.keyCompaction(e.ctx, e.lease(jobCompact)); err != nil {
		t.Fatal(err)
	}
	if _, recs := e.fetchAll(tp.ID, 0); len(recs) != 1000 {
		t.Fatalf("%d records after a pass over a partition too large decoded, want all 1000", len(recs))
	}
	if !strings.Contains(logs.String(), "decoded_bytes_over") {
		t.Fatalf("no warning of the skipped partition; logs:\n%s", logs)
	}
	e.c.cfg.KeyCompactMaxBytes = 100 * stored
	if err := e.c.keyCompaction(e.ctx, e.lease(jobCompact)); err != nil {
		t.Fatal(err)
	}
	if _, recs := e.fetchAll(tp.ID, 0); len(recs) != 10 {
		t.Fatalf("%d records after compaction, want one per key (10)", len(recs))
	}
}
