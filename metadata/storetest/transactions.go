package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"floe/metadata"
)

// txnRun is idemRun with every batch transactional.
func txnRun(id metadata.TopicID, p int32, pid int64, epoch int16, batches ...[2]int32) metadata.RunCommit {
	r := idemRun(id, p, 0, pid, epoch, batches...)
	for i := range r.BatchList {
		r.BatchList[i].Transactional = true
	}
	return r
}

// markerRun is a run of one marker batch.
func markerRun(id metadata.TopicID, p int32, pid int64, epoch int16, m metadata.Marker) metadata.RunCommit {
	r := idemRun(id, p, 0, pid, epoch, [2]int32{-1, 1})
	r.BatchList[0].Marker = m
	r.BatchList[0].Transactional = true
	return r
}

func testTxnRecords(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	if _, err := s.LoadTxn(ctx, "t1"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("LoadTxn of unknown id: %v, want ErrNotFound", err)
	}
	started := time.UnixMilli(time.Now().UnixMilli())
	in := metadata.Transaction{ID: "t1", ProducerID: 42, ProducerEpoch: 3, TimedOutEpoch: 2, State: metadata.TxnOngoing, Timeout: 7 * time.Second,
		Partitions: []metadata.TopicPartition{{Topic: "b", Partition: 2}, {Topic: "a", Partition: 0}},
		Groups:     []string{"g"}, StartedAt: started}
	if err := s.SaveTxn(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveTxn(ctx, metadata.Transaction{ID: "t0", ProducerID: 1, TimedOutEpoch: -1, State: metadata.TxnEmpty, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadTxn(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if got.UpdatedAt.IsZero() {
		t.Fatal("UpdatedAt not set")
	}
	got.UpdatedAt = time.Time{}
	if !reflect.DeepEqual(got, in) || !got.StartedAt.Equal(started) {
		t.Fatalf("LoadTxn = %+v, want %+v", got, in)
	}
	// An update replaces everything.
	in.State, in.Partitions, in.Groups, in.StartedAt = metadata.TxnCompleteCommit, nil, nil, time.Time{}
	if err := s.SaveTxn(ctx, in); err != nil {
		t.Fatal(err)
	}
	all, err := s.Transactions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].ID != "t0" || all[0].TimedOutEpoch != -1 || all[1].ID != "t1" || all[1].State != metadata.TxnCompleteCommit ||
		len(all[1].Partitions) != 0 || !all[1].StartedAt.IsZero() {
		t.Fatalf("Transactions = %+v", all)
	}
}

func testTxnCommitChecks(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := mustCreate(t, s, "txn", 2)
	if err := s.AddTxnPartitions(ctx, 9, 0, []metadata.TopicIDPartition{{Topic: tp.ID, Partition: 5}}); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Fatalf("unknown partition: %v", err)
	}
	// Plain data at 0-1; a transactional batch outside a transaction is
	// refused and takes no offsets.
	commit(t, s, "o1", idemRun(tp.ID, 0, 0, -1, -1, [2]int32{-1, 2}))
	res := commit(t, s, "o2", txnRun(tp.ID, 0, 9, 0, [2]int32{0, 1}))[0]
	if !errors.Is(res.Batches[0].Err, metadata.ErrInvalidTxnState) {
		t.Fatalf("batch outside a transaction: %+v", res.Batches[0])
	}
	if err := s.AddTxnPartitions(ctx, 9, 0, []metadata.TopicIDPartition{{Topic: tp.ID, Partition: 0}, {Topic: tp.ID, Partition: 1}}); err != nil {
		t.Fatal(err)
	}
	open, err := s.FirstOpenOffsets(ctx, tp.ID)
	if err != nil || len(open) != 0 {
		t.Fatalf("open before data: %v %v", open, err)
	}
	// Transactional data at 2-4, plain data at 5, more of the txn at 6.
	res = commit(t, s, "o3", txnRun(tp.ID, 0, 9, 0, [2]int32{0, 3}))[0]
	if res.Batches[0].Err != nil || res.Batches[0].BaseOffset != 2 {
		t.Fatalf("transactional batch: %+v", res.Batches[0])
	}
	commit(t, s, "o4", idemRun(tp.ID, 0, 0, -1, -1, [2]int32{-1, 1}))
	// A stale epoch or a newer one that never added the partition fails.
	rs := commit(t, s, "o5", txnRun(tp.ID, 0, 9, 1, [2]int32{3, 1}), txnRun(tp.ID, 0, 9, 0, [2]int32{3, 1}))
	if !errors.Is(rs[0].Batches[0].Err, metadata.ErrInvalidTxnState) || rs[1].Batches[0].Err != nil || rs[1].Batches[0].BaseOffset != 6 {
		t.Fatalf("epochs: %+v %+v", rs[0].Batches[0], rs[1].Batches[0])
	}
	if !errors.Is(commit(t, s, "o5b", txnRun(tp.ID, 1, 9, 1, [2]int32{0, 1}))[0].Batches[0].Err, metadata.ErrInvalidTxnState) {
		t.Fatal("a newer epoch that did not add the partition was accepted")
	}
	open, err = s.FirstOpenOffsets(ctx, tp.ID)
	if err != nil || !reflect.DeepEqual(open, map[int32]int64{0: 2}) {
		t.Fatalf("open = %v %v, want {0: 2}", open, err)
	}
	// An abort marker closes it and records the aborted range.
	res = commit(t, s, "o6", markerRun(tp.ID, 0, 9, 0, metadata.MarkerAbort), markerRun(tp.ID, 1, 9, 0, metadata.MarkerAbort))[0]
	if res.Batches[0].Err != nil {
		t.Fatalf("marker: %+v", res.Batches[0])
	}
	marker := res.Batches[0].BaseOffset
	open, err = s.FirstOpenOffsets(ctx, tp.ID)
	if err != nil || len(open) != 0 {
		t.Fatalf("open after the marker: %v %v", open, err)
	}
	ab, err := s.AbortedTxns(ctx, tp.ID, 0, 0, 100)
	if err != nil || len(ab) != 1 || ab[0] != (metadata.AbortedTxn{ProducerID: 9, FirstOffset: 2, LastOffset: marker}) {
		t.Fatalf("aborted = %+v %v (marker at %d)", ab, err, marker)
	}
	if ab, err := s.AbortedTxns(ctx, tp.ID, 0, marker+1, 100); err != nil || len(ab) != 0 {
		t.Fatalf("aborted past the marker = %+v %v", ab, err)
	}
	if ab, err := s.AbortedTxns(ctx, tp.ID, 1, 0, 100); err != nil || len(ab) != 0 {
		t.Fatalf("a partition without data has no aborted transaction: %+v %v", ab, err)
	}
	// After the marker the partition is no longer in a transaction.
	if !errors.Is(commit(t, s, "o7", txnRun(tp.ID, 0, 9, 0, [2]int32{4, 1}))[0].Batches[0].Err, metadata.ErrInvalidTxnState) {
		t.Fatal("batch after the marker accepted")
	}
	// A next transaction at a bumped epoch that commits: no aborted entry,
	// and a stale coordinator's marker is refused.
	if err := s.AddTxnPartitions(ctx, 9, 1, []metadata.TopicIDPartition{{Topic: tp.ID, Partition: 0}}); err != nil {
		t.Fatal(err)
	}
	res = commit(t, s, "o8", txnRun(tp.ID, 0, 9, 1, [2]int32{0, 1}))[0]
	if res.Batches[0].Err != nil {
		t.Fatalf("new epoch batch: %+v", res.Batches[0])
	}
	if !errors.Is(commit(t, s, "o9", markerRun(tp.ID, 0, 9, 0, metadata.MarkerCommit))[0].Batches[0].Err, metadata.ErrInvalidProducerEpoch) {
		t.Fatal("stale marker accepted")
	}
	commit(t, s, "o10", markerRun(tp.ID, 0, 9, 1, metadata.MarkerCommit))
	if ab, err := s.AbortedTxns(ctx, tp.ID, 0, marker+1, 100); err != nil || len(ab) != 0 {
		t.Fatalf("committed transaction listed as aborted: %+v %v", ab, err)
	}
	if open, err := s.FirstOpenOffsets(ctx, tp.ID); err != nil || len(open) != 0 {
		t.Fatalf("open after commit: %v %v", open, err)
	}
}

func testTxnOffsets(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	if err := s.PutTxnOffsets(ctx, "t", "g1", []metadata.GroupOffset{{Topic: "a", Partition: 0, Offset: 5, LeaderEpoch: -1, Metadata: "m"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTxnOffsets(ctx, "t", "g1", []metadata.GroupOffset{{Topic: "a", Partition: 0, Offset: 7, LeaderEpoch: 2}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTxnOffsets(ctx, "t", "g2", []metadata.GroupOffset{{Topic: "b", Partition: 1, Offset: 1, LeaderEpoch: -1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTxnOffsets(ctx, "u", "g1", []metadata.GroupOffset{{Topic: "a", Partition: 0, Offset: 99, LeaderEpoch: -1}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.TxnOffsets(ctx, "t")
	want := map[string][]metadata.GroupOffset{
		"g1": {{Topic: "a", Partition: 0, Offset: 7, LeaderEpoch: 2}},
		"g2": {{Topic: "b", Partition: 1, Offset: 1, LeaderEpoch: -1}},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("TxnOffsets = %+v %v, want %+v", got, err, want)
	}
	pend, err := s.PendingTxnPartitions(ctx, "g1")
	if err != nil || !reflect.DeepEqual(pend, []metadata.TopicPartition{{Topic: "a", Partition: 0}}) {
		t.Fatalf("PendingTxnPartitions(g1) = %+v %v", pend, err)
	}
	if err := s.DeleteTxnOffsets(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.TxnOffsets(ctx, "t"); err != nil || len(got) != 0 {
		t.Fatalf("after delete: %+v %v", got, err)
	}
	if pend, err := s.PendingTxnPartitions(ctx, "g2"); err != nil || len(pend) != 0 {
		t.Fatalf("PendingTxnPartitions(g2) after delete = %+v %v", pend, err)
	}
	if got, err := s.TxnOffsets(ctx, "u"); err != nil || len(got["g1"]) != 1 {
		t.Fatalf("other transaction's offsets: %+v %v", got, err)
	}
}

// testTxnOffsetsChunked puts more transactional offsets than one chunk
// holds: all of them are pending, a partition named twice keeps the last.
func testTxnOffsetsChunked(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	in, want := chunkedOffsets(2*metadata.OffsetChunk + 500)
	if err := s.PutTxnOffsets(ctx, "t", "g", in); err != nil {
		t.Fatal(err)
	}
	got, err := s.TxnOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got["g"]) != len(want) {
		t.Fatalf("TxnOffsets: %d groups, %d offsets of g; want 1 and %d", len(got), len(got["g"]), len(want))
	}
	for i, g := range got["g"] {
		w := want[i]
		if g.Topic != w.Topic || g.Partition != w.Partition || g.Offset != w.Offset || g.LeaderEpoch != w.LeaderEpoch || g.Metadata != w.Metadata {
			t.Fatalf("offset %d: got %+v, want %+v", i, g, w)
		}
	}
}
