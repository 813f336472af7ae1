package compactor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"floe/metadata"
)

// junkRecords returns a copy of a batch that claims gzip for its plain
// records, with its CRC fixed: the header parses and its offsets add up,
// but its records do not decode — what an agent stored before it validated
// records on produce.
func junkRecords(b []byte) []byte {
	b = bytes.Clone(b)
	b[22] |= 1 // attributes: gzip
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// syncBuffer is a log sink tests read while the compactor may write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// logTo gives e's compactor a logger writing to the returned buffer.
func (e *env) logTo() *syncBuffer {
	var logs syncBuffer
	e.c = New(e.c.cfg, e.store, e.bucket, slog.New(slog.NewTextHandler(&logs, nil)))
	return &logs
}

// TestKeyCompactionSkipsUnreadablePartition: one partition of a compacted
// topic holds a batch whose records do not decode. Key compaction used to
// stop the whole pass there, so the other compacted topics stayed
// uncompacted; now it skips that partition, counts and logs it (once), and
// compacts the rest.
func TestKeyCompactionSkipsUnreadablePartition(t *testing.T) {
	e := newEnv(t, nil)
	logs := e.logTo()
	compact := map[string]string{"cleanup.policy": "compact"}
	// Topics are walked by name: the bad one comes first.
	bad, err := e.store.CreateTopic(e.ctx, "a-bad", 2, compact)
	if err != nil {
		t.Fatal(err)
	}
	good, err := e.store.CreateTopic(e.ctx, "b-good", 1, compact)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	for i := range 10 {
		b := producerBatch(rec{key: "k" + strconv.Itoa(i%5), value: fmt.Sprintf("v%d", i), ts: now + int64(i)})
		e.flush(bad.ID, map[int32][][]byte{0: {b}, 1: {b}})
		e.flush(good.ID, map[int32][][]byte{0: {b}})
	}
	e.flush(bad.ID, map[int32][][]byte{0: {junkRecords(producerBatch(rec{key: "k0", value: "x", ts: now}))}})

	type part struct {
		topic metadata.TopicID
		name  string
		p     int32
	}
	readable := []part{{good.ID, good.Name, 0}, {bad.ID, bad.Name, 1}}
	want := map[part][]rec{}
	for _, rp := range readable {
		_, all := e.fetchAll(rp.topic, rp.p)
		want[rp] = compactModel(all, 0)
		if len(want[rp]) != 5 {
			t.Fatalf("%s/%d: model keeps %d of %d records", rp.name, rp.p, len(want[rp]), len(all))
		}
	}
	for pass := 1; pass <= 2; pass++ {
		if err := e.c.RunOnce(e.ctx); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		for _, rp := range readable {
			if _, got := e.fetchAll(rp.topic, rp.p); !slices.Equal(got, want[rp]) {
				t.Fatalf("pass %d: %s/%d not compacted:\ngot  %v\nwant %v", pass, rp.name, rp.p, got, want[rp])
			}
		}
		// The unreadable partition is left as it was: no row of it moved
		// to a key-compacted object, all 11 offsets still indexed.
		rows, err := e.store.PartitionRows(e.ctx, bad.ID, 0, 11)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := e.store.Objects(e.ctx, metadata.ObjectLive)
		if err != nil {
			t.Fatal(err)
		}
		level := map[string]int{}
		for _, o := range objs {
			level[o.Key] = o.Level
		}
		var span int64
		for _, r := range rows {
			if level[r.ObjectKey] == KeyCompactedLevel {
				t.Fatalf("pass %d: the unreadable partition was key-compacted: %+v", pass, r)
			}
			span += r.EndOffset - r.BaseOffset
		}
		if span != 11 {
			t.Fatalf("pass %d: the unreadable partition's rows span %d offsets, want 11", pass, span)
		}
		if n := testutil.ToFloat64(e.c.metrics.unreadable.WithLabelValues(jobCompact)); n != float64(pass) {
			t.Fatalf("pass %d: floe_compactor_unreadable_partitions_total{job=%q} = %v, want %d", pass, jobCompact, n, pass)
		}
	}
	if n := strings.Count(logs.String(), "skipped a partition that cannot be read"); n != 1 {
		t.Fatalf("logged %d times over two passes, want once:\n%s", n, logs.String())
	}
	if l := logs.String(); !strings.Contains(l, "topic=a-bad ") || !strings.Contains(l, " partition=0 ") {
		t.Fatalf("log does not name the partition:\n%s", logs.String())
	}
}

// TestMergeSkipsJobWithUnreadableRows: an object whose bytes no longer
// match its index rows fails the merge job holding it; the other jobs of
// the round still run, and the skip is counted.
func TestMergeSkipsJobWithUnreadableRows(t *testing.T) {
	e := newEnv(t, nil) // fan-in 4: 8 objects make two jobs
	tp, err := e.store.CreateTopic(e.ctx, "t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range 8 {
		keys = append(keys, e.flush(tp.ID, map[int32][][]byte{0: {producerBatch(rec{value: strconv.Itoa(i), ts: time.Now().UnixMilli()})}}))
	}
	objs, err := e.store.Objects(e.ctx, metadata.ObjectLive)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.Key == keys[0] {
			if err := e.bucket.Put(e.ctx, o.Key, bytes.Repeat([]byte{0xff}, int(o.Size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.c.RunOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	objs, err = e.store.Objects(e.ctx, metadata.ObjectLive)
	if err != nil {
		t.Fatal(err)
	}
	levels := map[int]int{}
	for _, o := range objs {
		levels[o.Level]++
	}
	if levels[0] != 4 || levels[1] != 1 {
		t.Fatalf("live objects by level %v, want 4 of level 0 (the skipped job) and 1 of level 1", levels)
	}
	if n := testutil.ToFloat64(e.c.metrics.unreadable.WithLabelValues(jobMerge)); n != 1 {
		t.Fatalf("floe_compactor_unreadable_partitions_total{job=%q} = %v, want 1", jobMerge, n)
	}
}
