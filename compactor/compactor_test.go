package compactor

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"floe/kafkaproto"
	"floe/metadata"
	"floe/storage"
	"floe/storage/mem"
	"floe/topicconfig"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestEncodeBatch(t *testing.T) {
	b := producerBatch(rec{key: "a", value: "1", ts: 100}, rec{key: "", value: "<nil>", ts: 90}, rec{key: "c", value: "", ts: 120})
	if _, err := kafkaproto.ValidateProduced(b); err != nil {
		t.Fatalf("producer-style batch does not validate: %v", err)
	}
	// A compacted batch: offsets 7 and 12 survive of [5, 15).
	ks := []keptRecord{
		{offset: 7, timestamp: 50, rec: kafkaproto.Record{Key: []byte("k"), Value: []byte("v")}},
		{offset: 12, timestamp: 40, rec: kafkaproto.Record{Key: []byte("k2"), Value: nil}},
	}
	b = encodeBatch(5, 10, ks)
	h, recs, err := kafkaproto.DecodeRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	if crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)) != h.CRC || h.TotalSize() != len(b) {
		t.Fatalf("bad crc or length: %+v", h)
	}
	if h.BaseOffset != 5 || h.LastOffsetDelta != 9 || h.NumRecords != 2 || h.FirstTimestamp != 40 || h.MaxTimestamp != 50 || h.ProducerID != -1 {
		t.Fatalf("header %+v", h)
	}
	if recs[0].OffsetDelta != 2 || recs[1].OffsetDelta != 7 || h.RecordTimestamp(recs[0]) != 50 || h.RecordTimestamp(recs[1]) != 40 ||
		string(recs[0].Value) != "v" || recs[1].Value != nil || string(recs[1].Key) != "k2" {
		t.Fatalf("records %+v", recs)
	}
}

// randomFlushes writes n objects of 1–3 partitions of topic, each with 1–2
// batches of 1–4 records, keys drawn from keys (0 = no key), and returns
// every record written per partition.
func randomFlushes(e *env, rng *rand.Rand, topic metadata.Topic, n, keys int, tombstones float64, ts func(i int) int64) {
	for i := range n {
		batches := map[int32][][]byte{}
		for p := range topic.Partitions {
			if rng.IntN(3) == 0 && len(batches) > 0 {
				continue
			}
			for range 1 + rng.IntN(2) {
				var rs []rec
				for range 1 + rng.IntN(4) {
					r := rec{value: fmt.Sprintf("v%d-%d", i, rng.IntN(1000)), ts: ts(i)}
					if keys > 0 {
						r.key = "k" + strconv.Itoa(rng.IntN(keys))
					}
					if rng.Float64() < tombstones {
						r.value = "<nil>"
					}
					rs = append(rs, r)
				}
				batches[p] = append(batches[p], producerBatch(rs...))
			}
		}
		e.flush(topic.ID, batches)
	}
}

func TestMergeReducesObjectsAndKeepsFetchesIdentical(t *testing.T) {
	e := newEnv(t, nil)
	tp, err := e.store.CreateTopic(e.ctx, "t", 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Now().UnixMilli()
	randomFlushes(e, rng, tp, 200, 0, 0, func(int) int64 { return now })
	before := make([][]byte, 3)
	for p := range int32(3) {
		before[p], _ = e.fetchAll(tp.ID, p)
	}
	objs0, rows0 := e.count()
	for round := range 6 {
		e.runOnce()
		for p := range int32(3) {
			got, _ := e.fetchAll(tp.ID, p)
			if !bytes.Equal(got, before[p]) {
				t.Fatalf("round %d partition %d: fetched bytes differ after merging", round, p)
			}
		}
	}
	objs, rows := e.count()
	t.Logf("objects %d -> %d, index rows %d -> %d", objs0, objs, rows0, rows)
	if objs*10 > objs0 || rows*10 > rows0 {
		t.Fatalf("objects %d -> %d, index rows %d -> %d: less than 10x", objs0, objs, rows0, rows)
	}
	// Replaced objects stay in the bucket through the grace period.
	replaced, err := e.store.Objects(e.ctx, metadata.ObjectReplaced)
	if err != nil {
		t.Fatal(err)
	}
	keys := e.bucketKeys()
	for _, o := range replaced {
		if !keys[o.Key] {
			t.Fatalf("replaced object %s deleted within the grace period", o.Key)
		}
	}
}

func TestMergeAcrossAGapSplitsRows(t *testing.T) {
	e := newEnv(t, nil)
	tp, err := e.store.CreateTopic(e.ctx, "t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range 3 {
		keys = append(keys, e.flush(tp.ID, map[int32][][]byte{0: {producerBatch(rec{value: "a" + strconv.Itoa(i)}, rec{value: "b"})}}))
	}
	before, _ := e.fetchAll(tp.ID, 0)
	if err := e.c.merge(e.ctx, MergeJob{Level: 0, Keys: []string{keys[0], keys[2]}}); err != nil {
		t.Fatal(err)
	}
	after, _ := e.fetchAll(tp.ID, 0)
	if !bytes.Equal(before, after) {
		t.Fatal("fetched bytes differ after merging around a gap")
	}
	rows, err := e.store.PartitionRows(e.ctx, tp.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].ObjectKey != rows[2].ObjectKey || rows[1].ObjectKey != keys[1] {
		t.Fatalf("rows after merging objects 0 and 2: %+v", rows)
	}
}

// hookBucket runs onGet before each GetRange: a hand-written fault hook.
type hookBucket struct {
	storage.Bucket
	onGet func()
}

func (b *hookBucket) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if b.onGet != nil {
		b.onGet()
	}
	return b.Bucket.GetRange(ctx, key, off, n)
}

func TestMergeConflictWithRetention(t *testing.T) {
	e := newEnv(t, nil)
	tp, err := e.store.CreateTopic(e.ctx, "t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range 4 {
		keys = append(keys, e.flush(tp.ID, map[int32][][]byte{0: {producerBatch(rec{value: strconv.Itoa(i), ts: time.Now().UnixMilli()})}}))
	}
	hb := &hookBucket{Bucket: e.bucket}
	e.c.bucket = hb
	hb.onGet = func() {
		hb.onGet = nil
		// Retention runs while the merge reads its sources.
		if _, err := e.store.AdvanceLogStart(e.ctx, tp.ID, 0, 1); err != nil {
			t.Error(err)
		}
	}
	if err := e.c.merge(e.ctx, MergeJob{Level: 0, Keys: keys}); err != nil {
		t.Fatal(err)
	}
	if got := e.bucketKeys(); len(got) != 4 {
		t.Fatalf("bucket after an abandoned merge: %v (the merged object must be deleted)", got)
	}
	if objs, rows := e.count(); objs != 4 || rows != 3 {
		t.Fatalf("after conflict: %d objects, %d rows; want 4 and 3", objs, rows)
	}
	_, recs := e.fetchAll(tp.ID, 0)
	if len(recs) != 3 || recs[0].offset != 1 || recs[0].value != "1" {
		t.Fatalf("records after retention and a failed merge: %v", recs)
	}
}

// TestRetentionDynamicDefault: retention applies the cluster's dynamic
// log.retention.minutes to a topic without retention.ms, not to one with
// its own, and log.cleanup.policy=compact keeps retention off topics
// without a policy of their own.
func TestRetentionDynamicDefault(t *testing.T) {
	e := newEnv(t, nil)
	plain, err := e.store.CreateTopic(e.ctx, "plain", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	own, err := e.store.CreateTopic(e.ctx, "own", 1, map[string]string{"retention.ms": "-1"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	for i := range 4 {
		ts := now - 3600_000 // an hour old
		if i >= 2 {
			ts = now
		}
		for _, id := range []metadata.TopicID{plain.ID, own.ID} {
			e.flush(id, map[int32][][]byte{0: {producerBatch(rec{key: "k", value: strconv.Itoa(i), ts: ts})}})
		}
	}
	setCluster := func(kv map[string]string) {
		t.Helper()
		if err := e.store.UpdateClusterConfigs(e.ctx, func(map[string]string) (map[string]string, error) { return kv, nil }); err != nil {
			t.Fatal(err)
		}
		if err := e.c.defaults.Refresh(e.ctx, e.store); err != nil { // as RunOnce does
			t.Fatal(err)
		}
		if err := e.c.retention(e.ctx, e.lease(jobRetention)); err != nil {
			t.Fatal(err)
		}
	}
	logStart := func(id metadata.TopicID) int64 {
		st, err := e.store.Partition(e.ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		return st.LogStartOffset
	}
	setCluster(map[string]string{"log.retention.minutes": "30", "log.cleanup.policy": "compact"})
	if logStart(plain.ID) != 0 {
		t.Fatalf("dynamic compact policy: log start %d, want no retention", logStart(plain.ID))
	}
	setCluster(map[string]string{"log.retention.minutes": "30"})
	if got := logStart(plain.ID); got != 2 {
		t.Fatalf("dynamic log.retention.minutes=30: log start %d, want 2", got)
	}
	if got := logStart(own.ID); got != 0 {
		t.Fatalf("topic with its own retention.ms=-1: log start %d, want 0", got)
	}
	// Every round reads them first.
	if err := e.store.UpdateClusterConfigs(e.ctx, func(map[string]string) (map[string]string, error) {
		return map[string]string{"log.retention.bytes": "5", "log.cleaner.backoff.ms": "1500"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := e.c.interval(); got != e.c.cfg.Interval {
		t.Fatalf("interval %v before a round read the backoff, want --interval %v", got, e.c.cfg.Interval)
	}
	if err := e.c.RunOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.c.defaults.Get().Default(topicconfig.RetentionBytes); got != "5" {
		t.Fatalf("after a round retention.bytes defaults to %s, want the dynamic 5", got)
	}
	if got := e.c.interval(); got != 1500*time.Millisecond {
		t.Fatalf("interval %v, want the dynamic log.cleaner.backoff.ms 1.5s", got)
	}
}

func TestRetentionByTimeAndSize(t *testing.T) {
	e := newEnv(t, nil)
	byTime, err := e.store.CreateTopic(e.ctx, "time", 1, map[string]string{"retention.ms": "60000"})
	if err != nil {
		t.Fatal(err)
	}
	bySize, err := e.store.CreateTopic(e.ctx, "size", 1, map[string]string{"retention.bytes": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	keep, err := e.store.CreateTopic(e.ctx, "compacted", 1, map[string]string{"cleanup.policy": "compact", "retention.ms": "1"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	for i := range 10 {
		ts := now - 3600_000 // an hour old
		if i >= 6 {
			ts = now
		}
		v := fmt.Sprintf("%0300d", i) // ~300 bytes per batch
		e.flush(byTime.ID, map[int32][][]byte{0: {producerBatch(rec{key: "k", value: v, ts: ts})}})
		e.flush(bySize.ID, map[int32][][]byte{0: {producerBatch(rec{key: "k", value: v, ts: ts})}})
		e.flush(keep.ID, map[int32][][]byte{0: {producerBatch(rec{key: "k" + strconv.Itoa(i), value: v, ts: ts})}})
	}
	if err := e.c.retention(e.ctx, e.lease(jobRetention)); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.store.Partition(e.ctx, byTime.ID, 0); st.LogStartOffset != 6 {
		t.Fatalf("retention.ms: log start %d, want 6", st.LogStartOffset)
	}
	_, recs := e.fetchAll(byTime.ID, 0)
	if len(recs) != 4 || recs[0].offset != 6 {
		t.Fatalf("retention.ms: records %v", recs)
	}
	// Each batch is about 370 bytes: keeping at least 1000 bytes keeps 3.
	st, _ := e.store.Partition(e.ctx, bySize.ID, 0)
	rows, _ := e.store.PartitionRows(e.ctx, bySize.ID, 0, 100)
	var total int64
	for _, r := range rows {
		total += r.ByteLength
	}
	if st.LogStartOffset != 7 || total < 1000 || total-rows[0].ByteLength >= 1000 {
		t.Fatalf("retention.bytes: log start %d, %d bytes in %d rows", st.LogStartOffset, total, len(rows))
	}
	if st, _ := e.store.Partition(e.ctx, keep.ID, 0); st.LogStartOffset != 0 {
		t.Fatalf("cleanup.policy=compact topic lost data to retention: log start %d", st.LogStartOffset)
	}
	// GC reclaims the objects whose only rows retention dropped.
	e.c.cfg.Grace = 0
	if err := e.c.gc(e.ctx, e.lease(jobGC)); err != nil {
		t.Fatal(err)
	}
	if replaced, _ := e.store.Objects(e.ctx, metadata.ObjectReplaced); len(replaced) != 0 {
		t.Fatalf("replaced objects left after GC with no grace: %d", len(replaced))
	}
	keys := e.bucketKeys()
	live, _ := e.store.Objects(e.ctx, metadata.ObjectLive)
	if len(keys) != len(live) {
		t.Fatalf("bucket holds %d objects, store %d live", len(keys), len(live))
	}
	for _, o := range live {
		if !keys[o.Key] {
			t.Fatalf("live object %s missing from the bucket", o.Key)
		}
	}
}

func TestGCGracePeriods(t *testing.T) {
	const grace = 400 * time.Millisecond
	e := newEnv(t, func(c *Config) { c.Grace = grace; c.Plan.FanIn = 2 })
	tp, err := e.store.CreateTopic(e.ctx, "t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	e.flush(tp.ID, map[int32][][]byte{0: {producerBatch(rec{value: "a", ts: now})}})
	e.flush(tp.ID, map[int32][][]byte{0: {producerBatch(rec{value: "b", ts: now})}})
	// An object PUT by an agent that died before committing it.
	orphan := storage.NewObjectKey()
	if err := e.bucket.Put(e.ctx, orphan, []byte("never committed")); err != nil {
		t.Fatal(err)
	}
	// Data outside the objects prefix is never touched.
	if err := e.bucket.Put(e.ctx, "iceberg/table/metadata.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	e.runOnce() // merges the two objects
	keys := e.bucketKeys()
	if len(keys) != 5 || !keys[orphan] {
		t.Fatalf("within the grace period every object stays: %v", keys)
	}
	_, recs := e.fetchAll(tp.ID, 0)
	if len(recs) != 2 {
		t.Fatalf("records after merge: %v", recs)
	}
	time.Sleep(grace + 100*time.Millisecond)
	e.runOnce()
	keys = e.bucketKeys()
	live, _ := e.store.Objects(e.ctx, metadata.ObjectLive)
	if len(live) != 1 || len(keys) != 2 || !keys[live[0].Key] || !keys["iceberg/table/metadata.json"] {
		t.Fatalf("after the grace period: bucket %v, live %+v", keys, live)
	}
	if known, _ := e.store.KnownObjects(e.ctx, []string{orphan}); len(known) != 0 {
		t.Fatal("orphan known to the store")
	}
}

// compactModel returns the records key compaction must leave of all (in
// offset order): the latest record of each key, unless it is a tombstone
// older than cutoff; records without a key; and the very last record.
func compactModel(all []rec, cutoff int64) []rec {
	latest := map[string]int64{}
	for _, r := range all {
		if r.key != "" {
			latest[r.key] = r.offset
		}
	}
	var out []rec
	for i, r := range all {
		if i == len(all)-1 || r.key == "" || (latest[r.key] == r.offset && (r.value != "<nil>" || r.ts >= cutoff)) {
			out = append(out, r)
		}
	}
	return out
}

func TestKeyCompactionMatchesModel(t *testing.T) {
	e := newEnv(t, nil)
	tp, err := e.store.CreateTopic(e.ctx, "kc", 2, map[string]string{"cleanup.policy": "compact", "delete.retention.ms": "600000"})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	now := time.Now().UnixMilli()
	// The first half is two hours old, so its tombstones expire.
	ts := func(i int) int64 {
		if i < 40 {
			return now - 7200_000 + int64(i)
		}
		return now + int64(i)
	}
	randomFlushes(e, rng, tp, 80, 12, 0.2, ts)
	var full [2][]rec
	for p := range int32(2) {
		_, full[p] = e.fetchAll(tp.ID, p)
	}
	cutoff := now - 600_000
	for pass := range 2 {
		e.runOnce()
		for p := range int32(2) {
			_, got := e.fetchAll(tp.ID, p)
			want := compactModel(full[p], cutoff)
			if !slices.Equal(got, want) {
				t.Fatalf("pass %d partition %d: got %d records, want %d\ngot  %v\nwant %v", pass, p, len(got), len(want), got, want)
			}
			if len(want) >= len(full[p]) {
				t.Fatalf("partition %d: nothing compacted away (%d records)", p, len(want))
			}
			// A fetch from any offset, including ones compacted away,
			// returns the surviving records from there on.
			for _, from := range []int64{1, full[p][len(full[p])/2].offset, full[p][len(full[p])-1].offset} {
				rows, err := e.store.Lookup(e.ctx, tp.ID, p, from, 1<<40, 0)
				if err != nil || len(rows) == 0 || rows[len(rows)-1].EndOffset != full[p][len(full[p])-1].offset+1 {
					t.Fatalf("Lookup(%d): %+v, %v", from, rows, err)
				}
			}
		}
		// More data, then compact again: the model is over the whole history.
		if pass == 0 {
			randomFlushes(e, rng, tp, 20, 12, 0.2, func(i int) int64 { return now + 1000 + int64(i) })
			for p := range int32(2) {
				_, more := e.fetchAll(tp.ID, p)
				for _, r := range more {
					if r.offset > full[p][len(full[p])-1].offset {
						full[p] = append(full[p], r)
					}
				}
			}
		}
	}
}

func TestLeaseHeldElsewhereSkipsJob(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Plan.FanIn = 2 })
	tp, err := e.store.CreateTopic(e.ctx, "t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		e.flush(tp.ID, map[int32][][]byte{0: {producerBatch(rec{value: "x", ts: time.Now().UnixMilli()})}})
	}
	if ok, err := e.store.AcquireLease(e.ctx, jobMerge, "someone-else", time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	e.runOnce()
	if objs, _ := e.count(); objs != 4 {
		t.Fatalf("merge ran under another compactor's lease: %d objects", objs)
	}
	if err := e.store.ReleaseLease(e.ctx, jobMerge, "someone-else"); err != nil {
		t.Fatal(err)
	}
	e.runOnce()
	if objs, _ := e.count(); objs != 2 {
		t.Fatalf("after the lease was released: %d objects, want 2", objs)
	}
	if ls, _ := e.store.Leases(e.ctx); len(ls) != 0 {
		t.Fatalf("leases left after a round: %+v", ls)
	}
}

func TestStartCloseRunsRoundsAndLeaksNothing(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Interval = 10 * time.Millisecond; c.Plan.FanIn = 2 })
	tp, err := e.store.CreateTopic(e.ctx, "t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		e.flush(tp.ID, map[int32][][]byte{0: {producerBatch(rec{value: "x", ts: time.Now().UnixMilli()})}})
	}
	e.c.Start(e.ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if objs, _ := e.count(); objs == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the loop did not merge 4 objects into 1")
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.c.Close()
	e.c.Close() // idempotent
}

func TestKeyCompactionWaitsForDirtyRatioOrLag(t *testing.T) {
	e := newEnv(t, nil)
	tp, err := e.store.CreateTopic(e.ctx, "kc", 1, map[string]string{"cleanup.policy": "compact"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	for i := range 20 {
		e.flush(tp.ID, map[int32][][]byte{0: {producerBatch(rec{key: "k" + strconv.Itoa(i%10), value: fmt.Sprintf("%050d", i), ts: now})}})
	}
	l := e.lease(jobCompact)
	if err := e.c.keyCompaction(e.ctx, l); err != nil {
		t.Fatal(err)
	}
	if _, recs := e.fetchAll(tp.ID, 0); len(recs) != 10 {
		t.Fatalf("first pass (all dirty): %d records, want 10", len(recs))
	}
	// One new record: 1 dirty row of 2, far less than half the bytes.
	e.flush(tp.ID, map[int32][][]byte{0: {producerBatch(rec{key: "k0", value: "new", ts: now})}})
	if err := e.c.keyCompaction(e.ctx, l); err != nil {
		t.Fatal(err)
	}
	if _, recs := e.fetchAll(tp.ID, 0); len(recs) != 11 {
		t.Fatalf("below min.cleanable.dirty.ratio: %d records, want 11 (not compacted)", len(recs))
	}
	// max.compaction.lag.ms 0: any dirty row is overdue.
	if err := e.store.SetTopicConfigs(e.ctx, "kc", map[string]string{"cleanup.policy": "compact", "max.compaction.lag.ms": "0"}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.keyCompaction(e.ctx, l); err != nil {
		t.Fatal(err)
	}
	_, recs := e.fetchAll(tp.ID, 0)
	if len(recs) != 10 || recs[len(recs)-1].value != "new" || recs[len(recs)-1].offset != 20 {
		t.Fatalf("after the lag passed: %v", recs)
	}
}

// TestCorruptRowsFailWithoutPanic feeds truncated and bit-flipped rows to
// the merge and key-compaction readers: each must return an error or a
// result, never panic.
func TestCorruptRowsFailWithoutPanic(t *testing.T) {
	good := append(producerBatch(rec{key: "a", value: "1"}, rec{key: "b", value: "2"}), producerBatch(rec{key: "c", value: "3"})...)
	row := metadata.IndexEntry{BaseOffset: 10, EndOffset: 13, ByteLength: int64(len(good)), ObjectKey: "k"}
	if recs, err := rowRecords(row, good); err != nil || len(recs) != 3 || recs[2].offset != 12 {
		t.Fatalf("rowRecords of a good row: %v, %v", recs, err)
	}
	// copyRow reads the row from a bucket holding b as its object.
	addRow := func(row metadata.IndexEntry, b []byte) error {
		bucket := mem.New()
		if err := bucket.Put(t.Context(), row.ObjectKey, b); err != nil {
			t.Fatal(err)
		}
		src := &source{bucket: bucket, key: row.ObjectKey, end: row.ByteOffset + row.ByteLength, window: 7}
		return copyRow(t.Context(), storage.NewStreamWriter(io.Discard), src, row, &pacer{c: &Compactor{}})
	}
	if err := addRow(row, good); err != nil {
		t.Fatalf("copyRow of a good row: %v", err)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range 2000 {
		b := slices.Clone(good)
		switch i % 3 {
		case 0:
			b = b[:rng.IntN(len(b))]
		case 1:
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		case 2:
			for range 4 {
				b[rng.IntN(len(b))] = byte(rng.IntN(256))
			}
		}
		_, _ = rowRecords(row, b)
		_ = addRow(row, b)
	}
	short := row
	short.EndOffset = 12
	if _, err := rowRecords(short, good); err == nil {
		t.Fatal("rowRecords accepted batches spanning more offsets than the row")
	}
	if err := addRow(short, good); err == nil {
		t.Fatal("copyRow accepted batches spanning more offsets than the row")
	}
}

// TestRetentionHold: retention keeps what the hold (the Iceberg converter's
// converted offsets) has not released, and logs it; a partition missing
// from the hold keeps everything.
func TestRetentionHold(t *testing.T) {
	var hold map[int32]int64
	e := newEnv(t, func(c *Config) {
		c.RetentionHold = func(_ context.Context, tp metadata.Topic) (map[int32]int64, bool, error) {
			return hold, tp.Name == "held", nil
		}
	})
	held, err := e.store.CreateTopic(e.ctx, "held", 2, map[string]string{"retention.ms": "60000"})
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().UnixMilli() - 3600_000
	for range 10 {
		e.flush(held.ID, map[int32][][]byte{
			0: {producerBatch(rec{key: "k", value: "v", ts: old})},
			1: {producerBatch(rec{key: "k", value: "v", ts: old})},
		})
	}
	hold = map[int32]int64{0: 4}
	if err := e.c.retention(e.ctx, e.lease(jobRetention)); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]int64{0: 4, 1: 0} {
		if st, _ := e.store.Partition(e.ctx, held.ID, p); st.LogStartOffset != want {
			t.Fatalf("partition %d: log start %d under hold %v, want %d", p, st.LogStartOffset, hold, want)
		}
	}
	hold = map[int32]int64{0: 10, 1: 10}
	if err := e.c.retention(e.ctx, e.lease(jobRetention)); err != nil {
		t.Fatal(err)
	}
	// Released: retention does what it would without a hold.
	for p := range int32(2) {
		if st, _ := e.store.Partition(e.ctx, held.ID, p); st.LogStartOffset != 10 {
			t.Fatalf("partition %d: log start %d once released, want 10", p, st.LogStartOffset)
		}
	}
}

// TestKeyCompactionHold: key compaction keeps superseded records at or
// above the hold (not yet in the topic's Iceberg table).
func TestKeyCompactionHold(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.RetentionHold = func(context.Context, metadata.Topic) (map[int32]int64, bool, error) {
			return map[int32]int64{0: 5}, true, nil
		}
	})
	tp, err := e.store.CreateTopic(e.ctx, "kch", 1, map[string]string{"cleanup.policy": "compact"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	for i := range 10 {
		e.flush(tp.ID, map[int32][][]byte{0: {producerBatch(rec{key: "k", value: strconv.Itoa(i), ts: now})}})
	}
	if err := e.c.keyCompaction(e.ctx, e.lease(jobCompact)); err != nil {
		t.Fatal(err)
	}
	_, recs := e.fetchAll(tp.ID, 0)
	var offs []int64
	for _, r := range recs {
		offs = append(offs, r.offset)
	}
	// Below the hold only the compacted range's last record survives.
	if fmt.Sprint(offs) != "[4 5 6 7 8 9]" {
		t.Fatalf("offsets after key compaction under a hold at 5: %v", offs)
	}
}

// listCounting counts a bucket's List calls.
type listCounting struct {
	storage.Bucket
	lists atomic.Int64
}

func (b *listCounting) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	b.lists.Add(1)
	return b.Bucket.List(ctx, prefix, fn)
}

// TestGCOrphanScanOncePerGrace: listing the bucket for orphans (every
// object, on S3 a LIST per thousand) happens once per grace period, not
// every round, and still deletes an orphan once it is older than that.
func TestGCOrphanScanOncePerGrace(t *testing.T) {
	const grace = 300 * time.Millisecond
	e := newEnv(t, func(c *Config) { c.Grace = grace })
	lb := &listCounting{Bucket: e.bucket}
	e.c = New(e.c.cfg, e.store, lb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	orphan := storage.NewObjectKey()
	if err := e.bucket.Put(e.ctx, orphan, []byte("never committed")); err != nil {
		t.Fatal(err)
	}
	scans := func() float64 { return testutil.ToFloat64(e.c.metrics.orphanScans) }
	e.runOnce()
	e.runOnce()
	e.runOnce()
	if lb.lists.Load() != 1 || scans() != 1 {
		t.Fatalf("three rounds within the grace period listed the bucket %d times (%v scans), want once", lb.lists.Load(), scans())
	}
	if !e.bucketKeys()[orphan] {
		t.Fatal("orphan deleted before the grace period")
	}
	time.Sleep(grace + 50*time.Millisecond)
	e.runOnce()
	if lb.lists.Load() != 2 || scans() != 2 {
		t.Fatalf("a round after the grace period: %d listings, %v scans, want 2", lb.lists.Load(), scans())
	}
	if e.bucketKeys()[orphan] {
		t.Fatal("orphan older than the grace period not deleted")
	}
	e.runOnce()
	if lb.lists.Load() != 2 {
		t.Fatalf("the round right after a scan listed again (%d listings)", lb.lists.Load())
	}
}

// TestMergeBacklogSpreadsOverRounds: once a round's merges have run for an
// Interval, the rest wait for the next round, so that retention and key
// compaction, which run first in every round, are never held back by a
// backlog of (paced) merges.
func TestMergeBacklogSpreadsOverRounds(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Interval = time.Nanosecond })
	tp, err := e.store.CreateTopic(e.ctx, "t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	for i := range 16 { // FanIn 4: four level-0 merges planned
		e.flush(tp.ID, map[int32][][]byte{0: {producerBatch(rec{value: fmt.Sprint(i), ts: now})}})
	}
	before, _ := e.fetchAll(tp.ID, 0)
	merges := func() float64 { return testutil.ToFloat64(e.c.metrics.merges) }
	for round := 1; round <= 4; round++ {
		e.runOnce()
		if got := merges(); got != float64(round) {
			t.Fatalf("after round %d: %v merges, want %d (one per round past the Interval)", round, got, round)
		}
	}
	if after, _ := e.fetchAll(tp.ID, 0); !bytes.Equal(after, before) {
		t.Fatal("fetched bytes differ after the merges")
	}
}

// TestMergeWindowsRecycled: a merge's source windows go back to the
// compactor's pool, within the merges' budget, and the next merges read
// through them (their bytes still fetch the same).
func TestMergeWindowsRecycled(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MergeBufferBytes = 1 << 20 })
	tp, err := e.store.CreateTopic(e.ctx, "t", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	for i := range 64 { // objects of 2 × 10 KiB: windows the pool keeps (over 4 KiB)
		batches := map[int32][][]byte{}
		for p := range int32(2) {
			var rs []rec
			for j := range 10 {
				rs = append(rs, rec{value: strings.Repeat(fmt.Sprint(i, p, j), 200)[:1000], ts: now})
			}
			batches[p] = [][]byte{producerBatch(rs...)}
		}
		e.flush(tp.ID, batches)
	}
	var before [2][]byte
	for p := range int32(2) {
		before[p], _ = e.fetchAll(tp.ID, p)
	}
	merges := func() float64 { return testutil.ToFloat64(e.c.metrics.merges) }
	e.runOnce()
	held := e.c.windows.Held()
	if merges() == 0 || held == 0 || held > e.c.cfg.MergeBufferBytes {
		t.Fatalf("after %v merges the pool keeps %d bytes of windows, want some, at most %d", merges(), held, e.c.cfg.MergeBufferBytes)
	}
	for range 3 {
		e.runOnce()
	}
	for p := range int32(2) {
		if got, _ := e.fetchAll(tp.ID, p); !bytes.Equal(got, before[p]) {
			t.Fatalf("partition %d: fetched bytes differ after merges through recycled windows", p)
		}
	}
}

// checksumBucket checks, as S3 does with x-amz-checksum-crc32c, the
// checksum each object is PUT with.
type checksumBucket struct {
	storage.Bucket
	mu            sync.Mutex
	summed, wrong int
}

func (b *checksumBucket) PutChecksummed(ctx context.Context, key string, crc uint32, parts ...[]byte) error {
	b.mu.Lock()
	b.summed++
	if crc32.Checksum(bytes.Join(parts, nil), crc32.MakeTable(crc32.Castagnoli)) != crc {
		b.wrong++
	}
	b.mu.Unlock()
	return b.Bucket.Put(ctx, key, parts...)
}

// TestKeyCompactionPutsChecksummed: key compaction's objects, whose batches
// it encodes itself, are PUT with the checksum of their bytes.
func TestKeyCompactionPutsChecksummed(t *testing.T) {
	e := newEnv(t, nil)
	cb := &checksumBucket{Bucket: e.bucket}
	e.c = New(e.c.cfg, e.store, cb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	tp, err := e.store.CreateTopic(e.ctx, "kc", 2, map[string]string{"cleanup.policy": "compact"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	randomFlushes(e, rand.New(rand.NewPCG(9, 10)), tp, 40, 5, 0.1, func(i int) int64 { return now + int64(i) })
	e.runOnce()
	if n := testutil.ToFloat64(e.c.metrics.keyCompactions); n == 0 || cb.summed == 0 || cb.wrong != 0 {
		t.Fatalf("%v partitions key-compacted, %d objects PUT with a checksum, %d of them wrong", n, cb.summed, cb.wrong)
	}
}
