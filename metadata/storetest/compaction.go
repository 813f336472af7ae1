package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"floe/metadata"
)

// mergedRows is the replacement of sources (one partition's rows, contiguous
// in offsets) by one row in key at byteOffset.
func mergedRow(key string, byteOffset int64, sources ...metadata.IndexEntry) metadata.IndexEntry {
	e := metadata.IndexEntry{
		TopicID: sources[0].TopicID, Partition: sources[0].Partition,
		BaseOffset: sources[0].BaseOffset, EndOffset: sources[len(sources)-1].EndOffset,
		ObjectKey: key, ByteOffset: byteOffset,
		MinTimestamp: sources[0].MinTimestamp, MaxTimestamp: sources[0].MaxTimestamp,
	}
	for _, s := range sources {
		e.ByteLength += s.ByteLength
		e.Batches += s.Batches
		e.MinTimestamp = min(e.MinTimestamp, s.MinTimestamp)
		e.MaxTimestamp = max(e.MaxTimestamp, s.MaxTimestamp)
	}
	return e
}

func lookupAll(t *testing.T, s metadata.Store, id metadata.TopicID, p int32, from int64) []metadata.IndexEntry {
	t.Helper()
	es, err := s.Lookup(ctxT(t), id, p, from, 1<<40, 0)
	if err != nil {
		t.Fatalf("Lookup(%d@%d): %v", p, from, err)
	}
	return es
}

func objectKeys(t *testing.T, s metadata.Store, state string) []string {
	t.Helper()
	os, err := s.Objects(ctxT(t), state)
	if err != nil {
		t.Fatalf("Objects(%s): %v", state, err)
	}
	var keys []string
	for _, o := range os {
		keys = append(keys, o.Key)
	}
	slices.Sort(keys)
	return keys
}

func sameKeys(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: %q, want %q", what, got, want)
	}
}

// threeObjects commits o0, o1, o2, each with a run of partitions 0 and 1
// of a new topic, and returns the topic.
func threeObjects(t *testing.T, s metadata.Store, name string) metadata.Topic {
	t.Helper()
	tp := mustCreate(t, s, name, 2)
	for i := range int64(3) {
		commit(t, s, fmt.Sprintf("o%d", i),
			run(tp.ID, 0, 2+i, 0, 100+i, 10*i, 10*i+5),
			run(tp.ID, 1, 3, 100+i, 50, 10*i, 10*i+1))
	}
	return tp
}

func testReplaceRowsMerge(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := threeObjects(t, s, "merge")
	sources, err := s.ObjectRows(ctx, []string{"o0", "o1", "o2"})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountIndexRows(ctx); err != nil || n != 6 {
		t.Fatalf("CountIndexRows: %d, %v; want 6", n, err)
	}
	if len(sources) != 6 {
		t.Fatalf("ObjectRows: %d rows, want 6: %+v", len(sources), sources)
	}
	p0, p1 := lookupAll(t, s, tp.ID, 0, 0), lookupAll(t, s, tp.ID, 1, 0)
	sameEntries(t, "ObjectRows", sources, append(slices.Clone(p0), p1...))
	m0 := mergedRow("m", 0, p0...)
	m1 := mergedRow("m", m0.ByteLength, p1...)
	err = s.ReplaceRows(ctx, metadata.Replacement{Sources: sources, Key: "m", Size: 999, Level: 1,
		Rows: []metadata.IndexEntry{m0, m1}, Grace: time.Hour})
	if err != nil {
		t.Fatalf("ReplaceRows: %v", err)
	}
	sameEntries(t, "partition 0 after merge", lookupAll(t, s, tp.ID, 0, 3), []metadata.IndexEntry{m0})
	sameEntries(t, "partition 1 after merge", lookupAll(t, s, tp.ID, 1, 0), []metadata.IndexEntry{m1})
	if n, err := s.CountIndexRows(ctx); err != nil || n != 2 {
		t.Fatalf("CountIndexRows after merge: %d, %v; want 2", n, err)
	}
	live, err := s.Objects(ctx, metadata.ObjectLive)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0].Key != "m" || live[0].Level != 1 || live[0].Size != 999 || live[0].State != metadata.ObjectLive {
		t.Fatalf("live objects after merge: %+v", live)
	}
	replaced, err := s.Objects(ctx, metadata.ObjectReplaced)
	if err != nil {
		t.Fatal(err)
	}
	if len(replaced) != 3 {
		t.Fatalf("replaced objects: %+v", replaced)
	}
	for _, o := range replaced {
		if o.Level != 0 || o.DeleteAfter.Before(time.Now().Add(50*time.Minute)) {
			t.Fatalf("replaced object %+v: want level 0, deletable in about an hour", o)
		}
	}
	if d, err := s.DeletableObjects(ctx, 10); err != nil || len(d) != 0 {
		t.Fatalf("DeletableObjects within grace: %+v, %v", d, err)
	}
	if rows, err := s.ObjectRows(ctx, []string{"o0"}); err != nil || len(rows) != 0 {
		t.Fatalf("rows of replaced o0: %+v, %v", rows, err)
	}
	// Replacing the same sources again must fail: they are gone.
	err = s.ReplaceRows(ctx, metadata.Replacement{Sources: sources, Key: "m2", Size: 1, Level: 1,
		Rows: []metadata.IndexEntry{m0}, Grace: time.Hour})
	wantErr(t, "second ReplaceRows of the same sources", err, metadata.ErrConflict)
	known, err := s.KnownObjects(ctx, []string{"o0", "m", "m2", "nope"})
	if err != nil {
		t.Fatal(err)
	}
	if len(known) != 2 || !known["o0"] || !known["m"] {
		t.Fatalf("KnownObjects: %v, want o0 and m", known)
	}
}

func testReplaceRowsPartial(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := threeObjects(t, s, "partial")
	p0 := lookupAll(t, s, tp.ID, 0, 0)
	// Only partition 0 of o0 and o1: both objects keep their partition-1
	// rows, so they stay live; rows stay in offset order.
	m := mergedRow("m", 0, p0[:2]...)
	if err := s.ReplaceRows(ctx, metadata.Replacement{Sources: p0[:2], Key: "m", Size: 1, Level: 1,
		Rows: []metadata.IndexEntry{m}, Grace: 0}); err != nil {
		t.Fatal(err)
	}
	sameEntries(t, "partition 0", lookupAll(t, s, tp.ID, 0, 0), []metadata.IndexEntry{m, p0[2]})
	sameKeys(t, "live", objectKeys(t, s, metadata.ObjectLive), "m", "o0", "o1", "o2")
	if n, err := s.MarkUnreferenced(ctx, 0, 0); err != nil || n != 0 {
		t.Fatalf("MarkUnreferenced with every object referenced: %d, %v", n, err)
	}
}

// testReplaceRowsAroundARow: sources of a partition with a row between
// them that is not a source (another agent's flush between two merged
// ones) are replaced, and that row is left alone; a source given twice is
// a conflict, and changes nothing.
func testReplaceRowsAroundARow(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := threeObjects(t, s, "around")
	p0 := lookupAll(t, s, tp.ID, 0, 0)
	twice := []metadata.IndexEntry{p0[0], p0[0]}
	err := s.ReplaceRows(ctx, metadata.Replacement{Sources: twice, Key: "m", Size: 1, Level: 1,
		Rows: []metadata.IndexEntry{mergedRow("m", 0, p0[0])}})
	wantErr(t, "ReplaceRows with a source given twice", err, metadata.ErrConflict)
	sameEntries(t, "partition 0 after the refused replacement", lookupAll(t, s, tp.ID, 0, 0), p0)
	m0, m2 := mergedRow("m", 0, p0[0]), mergedRow("m", p0[0].ByteLength, p0[2])
	if err := s.ReplaceRows(ctx, metadata.Replacement{Sources: []metadata.IndexEntry{p0[2], p0[0]}, Key: "m", Size: 1, Level: 1,
		Rows: []metadata.IndexEntry{m0, m2}}); err != nil {
		t.Fatal(err)
	}
	sameEntries(t, "partition 0", lookupAll(t, s, tp.ID, 0, 0), []metadata.IndexEntry{m0, p0[1], m2})
	if n, err := s.CountIndexRows(ctx); err != nil || n != 6 {
		t.Fatalf("CountIndexRows: %d, %v; want 6", n, err)
	}
}

func testReplaceRowsConflict(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := threeObjects(t, s, "conflict")
	p0 := lookupAll(t, s, tp.ID, 0, 0)
	// A changed field is a conflict too.
	changed := slices.Clone(p0)
	changed[1].ByteLength++
	err := s.ReplaceRows(ctx, metadata.Replacement{Sources: changed, Key: "m", Size: 1, Level: 1,
		Rows: []metadata.IndexEntry{mergedRow("m", 0, changed...)}, Grace: 0})
	wantErr(t, "ReplaceRows with a changed source", err, metadata.ErrConflict)
	// Retention drops the first row: the merge planned before it conflicts.
	if _, err := s.AdvanceLogStart(ctx, tp.ID, 0, p0[0].EndOffset); err != nil {
		t.Fatal(err)
	}
	err = s.ReplaceRows(ctx, metadata.Replacement{Sources: p0, Key: "m", Size: 1, Level: 1,
		Rows: []metadata.IndexEntry{mergedRow("m", 0, p0...)}, Grace: 0})
	wantErr(t, "ReplaceRows after retention", err, metadata.ErrConflict)
	sameEntries(t, "partition 0 unchanged", lookupAll(t, s, tp.ID, 0, p0[1].BaseOffset), p0[1:])
	if known, err := s.KnownObjects(ctx, []string{"m"}); err != nil || len(known) != 0 {
		t.Fatalf("failed replacement recorded its object: %v, %v", known, err)
	}
	// Rows outside the sources are refused before anything is written.
	bad := mergedRow("m", 0, p0[1:]...)
	bad.EndOffset++
	err = s.ReplaceRows(ctx, metadata.Replacement{Sources: p0[1:], Key: "m", Size: 1, Level: 1,
		Rows: []metadata.IndexEntry{bad}})
	wantErr(t, "ReplaceRows with a row beyond its sources", err, metadata.ErrInvalidCommit)
	// After a topic deletion the sources are gone.
	if err := s.DeleteTopic(ctx, "conflict"); err != nil {
		t.Fatal(err)
	}
	err = s.ReplaceRows(ctx, metadata.Replacement{Sources: p0[1:], Key: "m", Size: 1, Level: 1,
		Rows: []metadata.IndexEntry{mergedRow("m", 0, p0[1:]...)}})
	wantErr(t, "ReplaceRows after DeleteTopic", err, metadata.ErrConflict)
}

func testReplaceRowsConcurrent(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := threeObjects(t, s, "race")
	p1 := lookupAll(t, s, tp.ID, 1, 0)
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		won []string
	)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("m%d", i)
			err := s.ReplaceRows(ctx, metadata.Replacement{Sources: p1, Key: key, Size: 1, Level: 1,
				Rows: []metadata.IndexEntry{mergedRow(key, 0, p1...)}, Grace: time.Hour})
			if err == nil {
				mu.Lock()
				won = append(won, key)
				mu.Unlock()
			} else if !errors.Is(err, metadata.ErrConflict) {
				t.Errorf("ReplaceRows %s: %v", key, err)
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d concurrent replacements of the same rows succeeded: %v", len(won), won)
	}
	sameEntries(t, "partition 1", lookupAll(t, s, tp.ID, 1, 0), []metadata.IndexEntry{mergedRow(won[0], 0, p1...)})
}

func testAdvanceLogStart(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := threeObjects(t, s, "retention")
	p0 := lookupAll(t, s, tp.ID, 0, 0) // [0,2) [2,5) [5,9)
	// Inside the second row: the first row goes, the second stays.
	st, err := s.AdvanceLogStart(ctx, tp.ID, 0, 3)
	if err != nil || st.LogStartOffset != 3 || st.NextOffset != 9 {
		t.Fatalf("AdvanceLogStart(3): %+v, %v", st, err)
	}
	sameEntries(t, "rows from 3", lookupAll(t, s, tp.ID, 0, 3), p0[1:])
	_, err = s.Lookup(ctx, tp.ID, 0, 2, 1<<20, 0)
	wantErr(t, "Lookup below log start", err, metadata.ErrOffsetOutOfRange)
	// Never backwards.
	if st, err = s.AdvanceLogStart(ctx, tp.ID, 0, 1); err != nil || st.LogStartOffset != 3 {
		t.Fatalf("AdvanceLogStart(1) after 3: %+v, %v", st, err)
	}
	if got := partition(t, s, tp.ID, 0).LogStartOffset; got != 3 {
		t.Fatalf("log start %d after a backwards request, want 3", got)
	}
	// Never past the high watermark; every row is gone.
	if st, err = s.AdvanceLogStart(ctx, tp.ID, 0, 1000); err != nil || st.LogStartOffset != 9 || st.NextOffset != 9 {
		t.Fatalf("AdvanceLogStart(1000): %+v, %v", st, err)
	}
	if es := lookupAll(t, s, tp.ID, 0, 9); len(es) != 0 {
		t.Fatalf("rows at the high watermark after full retention: %+v", es)
	}
	if rows, err := s.PartitionRows(ctx, tp.ID, 0, 1<<40); err != nil || len(rows) != 0 {
		t.Fatalf("PartitionRows after full retention: %+v, %v", rows, err)
	}
	// Partition 1 is untouched; its rows keep every object referenced.
	if n, err := s.MarkUnreferenced(ctx, 0, time.Hour); err != nil || n != 0 {
		t.Fatalf("MarkUnreferenced: %d, %v; want 0", n, err)
	}
	if _, err := s.AdvanceLogStart(ctx, tp.ID, 1, 6); err != nil {
		t.Fatal(err)
	}
	// o0 and o1 now have no rows. A large minAge protects them.
	if n, err := s.MarkUnreferenced(ctx, time.Hour, 0); err != nil || n != 0 {
		t.Fatalf("MarkUnreferenced(minAge 1h): %d, %v; want 0", n, err)
	}
	if n, err := s.MarkUnreferenced(ctx, 0, 0); err != nil || n != 2 {
		t.Fatalf("MarkUnreferenced: %d, %v; want 2", n, err)
	}
	sameKeys(t, "replaced", objectKeys(t, s, metadata.ObjectReplaced), "o0", "o1")
	del, err := s.DeletableObjects(ctx, 1)
	if err != nil || len(del) != 1 {
		t.Fatalf("DeletableObjects(limit 1): %+v, %v", del, err)
	}
	// Live keys are never forgotten.
	if err := s.ForgetObjects(ctx, []string{"o0", "o1", "o2"}); err != nil {
		t.Fatal(err)
	}
	known, err := s.KnownObjects(ctx, []string{"o0", "o1", "o2"})
	if err != nil || len(known) != 1 || !known["o2"] {
		t.Fatalf("KnownObjects after ForgetObjects: %v, %v", known, err)
	}
	_, err = s.AdvanceLogStart(ctx, tp.ID, 7, 1)
	wantErr(t, "AdvanceLogStart of an unknown partition", err, metadata.ErrUnknownTopic)
	_, err = s.PartitionRows(ctx, tp.ID, 7, 1)
	wantErr(t, "PartitionRows of an unknown partition", err, metadata.ErrUnknownTopic)
}

func testDeleteTopicUnreferences(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	threeObjects(t, s, "gone")
	if err := s.DeleteTopic(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.MarkUnreferenced(ctx, 0, time.Hour); err != nil || n != 3 {
		t.Fatalf("MarkUnreferenced after DeleteTopic: %d, %v; want 3", n, err)
	}
	if d, err := s.DeletableObjects(ctx, 10); err != nil || len(d) != 0 {
		t.Fatalf("DeletableObjects within grace: %+v, %v", d, err)
	}
}

func testLeases(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	acquire := func(name, owner string, ttl time.Duration, want bool) {
		t.Helper()
		got, err := s.AcquireLease(ctx, name, owner, ttl)
		if err != nil || got != want {
			t.Fatalf("AcquireLease(%s, %s): %v, %v; want %v", name, owner, got, err, want)
		}
	}
	acquire("merge", "a", time.Minute, true)
	acquire("merge", "b", time.Minute, false)
	acquire("merge", "a", time.Minute, true) // renewal
	acquire("gc", "b", time.Minute, true)
	ls, err := s.Leases(ctx)
	if err != nil || len(ls) != 2 || ls[0].Name != "gc" || ls[0].Owner != "b" || ls[1].Name != "merge" || ls[1].Owner != "a" {
		t.Fatalf("Leases: %+v, %v", ls, err)
	}
	if err := s.ReleaseLease(ctx, "merge", "b"); err != nil {
		t.Fatal(err)
	}
	acquire("merge", "b", time.Minute, false) // b's release of a's lease did nothing
	if err := s.ReleaseLease(ctx, "merge", "a"); err != nil {
		t.Fatal(err)
	}
	acquire("merge", "b", 50*time.Millisecond, true)
	time.Sleep(150 * time.Millisecond)
	acquire("merge", "a", time.Minute, true) // b's lease expired
	acquire("merge", "b", time.Minute, false)
	// Concurrent acquirers of a free lease: exactly one wins.
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins int
	)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.AcquireLease(ctx, "contended", fmt.Sprintf("c%d", i), time.Minute)
			if err != nil {
				t.Errorf("AcquireLease: %v", err)
			}
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d concurrent acquirers won the same lease", wins)
	}
}
