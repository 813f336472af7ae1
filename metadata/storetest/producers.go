package storetest

import (
	"errors"
	"testing"

	"floe/metadata"
)

// idemRun builds a run of idempotent batches (10 bytes and n records each)
// from producer pid at epoch, starting at sequence seq and byte pos.
func idemRun(id metadata.TopicID, p int32, pos int64, pid int64, epoch int16, batches ...[2]int32) metadata.RunCommit {
	r := metadata.RunCommit{TopicID: id, Partition: p, ByteOffset: pos, MinTimestamp: 10, MaxTimestamp: 20}
	for _, b := range batches {
		seq, n := b[0], b[1]
		r.BatchList = append(r.BatchList, metadata.BatchCommit{ByteLength: 10, Records: int64(n),
			MinTimestamp: 10, MaxTimestamp: 20, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq})
		r.ByteLength += 10
		r.Records += int64(n)
		r.Batches++
	}
	return r
}

func testInitProducerID(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	a, ea, err := s.InitProducerID(ctx, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	b, eb, err := s.InitProducerID(ctx, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if a == b || a < 0 || b < 0 || ea != 0 || eb != 0 {
		t.Fatalf("fresh ids %d/%d and %d/%d, want distinct ids at epoch 0", a, ea, b, eb)
	}
	// KIP-360: the current epoch bumps.
	id, ep, err := s.InitProducerID(ctx, a, 0)
	if err != nil || id != a || ep != 1 {
		t.Fatalf("bump: %d/%d %v, want %d/1", id, ep, err, a)
	}
	// A stale epoch or unknown id is fenced.
	if _, _, err := s.InitProducerID(ctx, a, 0); !errors.Is(err, metadata.ErrInvalidProducerEpoch) {
		t.Fatalf("stale epoch: %v, want ErrInvalidProducerEpoch", err)
	}
	if _, _, err := s.InitProducerID(ctx, 1<<40, 0); !errors.Is(err, metadata.ErrInvalidProducerEpoch) {
		t.Fatalf("unknown id: %v, want ErrInvalidProducerEpoch", err)
	}
}

func testProducerSequences(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := mustCreate(t, s, "idem", 1)
	batch := func(key string, r metadata.RunCommit) metadata.RunResult {
		t.Helper()
		return commit(t, s, key, r)[0]
	}
	// Two batches of producer 7: offsets 0-2 and 3-4.
	res := batch("o1", idemRun(tp.ID, 0, 0, 7, 0, [2]int32{0, 3}, [2]int32{3, 2}))
	if res.Err != nil || len(res.Batches) != 2 || res.Batches[0].BaseOffset != 0 || res.Batches[1].BaseOffset != 3 {
		t.Fatalf("first commit: %+v", res)
	}
	// A retry of the second batch, between two new ones, in one run: the
	// duplicate gets its original offset and no offsets of its own, and the
	// run becomes two index rows around it.
	res = batch("o2", idemRun(tp.ID, 0, 100, 7, 0, [2]int32{5, 1}, [2]int32{3, 2}, [2]int32{6, 4}))
	want := []metadata.BatchResult{{BaseOffset: 5}, {BaseOffset: 3, Duplicate: true}, {BaseOffset: 6}}
	for i, w := range want {
		if res.Batches[i] != w {
			t.Fatalf("batch %d: %+v, want %+v", i, res.Batches[i], w)
		}
	}
	es, err := s.Lookup(ctx, tp.ID, 0, 5, 1<<30, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, "index around a duplicate", es, []metadata.IndexEntry{
		{TopicID: tp.ID, Partition: 0, BaseOffset: 5, EndOffset: 6, ObjectKey: "o2", ByteOffset: 100, ByteLength: 10, Batches: 1, MinTimestamp: 10, MaxTimestamp: 20},
		{TopicID: tp.ID, Partition: 0, BaseOffset: 6, EndOffset: 10, ObjectKey: "o2", ByteOffset: 120, ByteLength: 10, Batches: 1, MinTimestamp: 10, MaxTimestamp: 20},
	})
	if st := partition(t, s, tp.ID, 0); st.NextOffset != 10 {
		t.Fatalf("next offset %d, want 10", st.NextOffset)
	}
	// A gap is out of order; a stale epoch is invalid; neither takes offsets.
	res = batch("o3", idemRun(tp.ID, 0, 0, 7, 0, [2]int32{12, 1}))
	if !errors.Is(res.Batches[0].Err, metadata.ErrOutOfOrderSequence) {
		t.Fatalf("gap: %+v", res.Batches[0])
	}
	// A bumped epoch starts afresh at any sequence; then the old epoch is stale.
	res = batch("o4", idemRun(tp.ID, 0, 0, 7, 1, [2]int32{0, 1}))
	if res.Batches[0].Err != nil || res.Batches[0].BaseOffset != 10 {
		t.Fatalf("new epoch: %+v", res.Batches[0])
	}
	res = batch("o5", idemRun(tp.ID, 0, 0, 7, 0, [2]int32{10, 1}))
	if !errors.Is(res.Batches[0].Err, metadata.ErrInvalidProducerEpoch) {
		t.Fatalf("stale epoch: %+v", res.Batches[0])
	}
	// Another producer is independent; non-idempotent batches are unchecked.
	res = batch("o6", idemRun(tp.ID, 0, 0, 8, 0, [2]int32{40, 2}))
	if res.Batches[0].Err != nil || res.Batches[0].BaseOffset != 11 {
		t.Fatalf("other producer: %+v", res.Batches[0])
	}
	res = batch("o7", idemRun(tp.ID, 0, 0, -1, -1, [2]int32{-1, 2}, [2]int32{-1, 2}))
	if res.Batches[0].BaseOffset != 13 || res.Batches[1].BaseOffset != 15 {
		t.Fatalf("plain batches: %+v", res.Batches)
	}
	if st := partition(t, s, tp.ID, 0); st.NextOffset != 17 {
		t.Fatalf("next offset %d, want 17", st.NextOffset)
	}
}
