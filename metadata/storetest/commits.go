package storetest

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"

	"floe/metadata"
)

func testCommitDenseOffsets(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := mustCreate(t, s, "dense", 3)
	next := make([]int64, 3)
	maxTS := []int64{-1, -1, -1}
	var want [3][]metadata.IndexEntry
	for i := range 30 {
		key := fmt.Sprintf("obj-%02d", i)
		var runs []metadata.RunCommit
		var pos int64
		// Every commit touches partition i%3; every other one also the next.
		for _, p := range []int32{int32(i % 3), int32((i + 1) % 3)}[:1+i%2] {
			records := int64(i%5 + 1)
			ts := int64(1000 + (i*7)%13)
			r := run(tp.ID, p, records, pos, 10*records, ts-5, ts)
			pos += r.ByteLength
			runs = append(runs, r)
		}
		res := commit(t, s, key, runs...)
		for j, r := range runs {
			if res[j].Err != nil || res[j].BaseOffset != next[r.Partition] {
				t.Fatalf("%s run %d (partition %d): %+v, want base %d", key, j, r.Partition, res[j], next[r.Partition])
			}
			want[r.Partition] = append(want[r.Partition], entryOf(key, r, next[r.Partition]))
			next[r.Partition] += r.Records
			maxTS[r.Partition] = max(maxTS[r.Partition], r.MaxTimestamp)
		}
	}
	for p := range int32(3) {
		st := partition(t, s, tp.ID, p)
		if st.NextOffset != next[p] || st.MaxTimestamp != maxTS[p] || st.LogStartOffset != 0 {
			t.Fatalf("partition %d: %+v, want next %d max ts %d", p, st, next[p], maxTS[p])
		}
		es, err := s.Lookup(ctx, tp.ID, p, 0, 1<<40, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameEntries(t, fmt.Sprintf("partition %d index", p), es, want[p])
	}
}

func testCommitSeveralPartitions(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	a := mustCreate(t, s, "a", 4)
	b := mustCreate(t, s, "b", 2)
	// Runs deliberately not in (topic, partition) order.
	runs := []metadata.RunCommit{
		run(b.ID, 1, 3, 0, 30, 1, 2),
		run(a.ID, 3, 4, 30, 40, 1, 2),
		run(a.ID, 0, 5, 70, 50, 1, 2),
		run(b.ID, 0, 6, 120, 60, 1, 2),
		run(a.ID, 1, 7, 180, 70, 1, 2),
	}
	for round := range int64(3) {
		key := fmt.Sprintf("o%d", round)
		res := commit(t, s, key, runs...)
		for i, r := range runs {
			if res[i].Err != nil || res[i].BaseOffset != round*r.Records {
				t.Fatalf("%s run %d: %+v, want base %d", key, i, res[i], round*r.Records)
			}
		}
	}
	for _, r := range runs {
		st := partition(t, s, r.TopicID, r.Partition)
		if st.NextOffset != 3*r.Records {
			t.Fatalf("%x/%d next offset %d, want %d", r.TopicID, r.Partition, st.NextOffset, 3*r.Records)
		}
		es, err := s.Lookup(ctx, r.TopicID, r.Partition, r.Records, 1<<40, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameEntries(t, "Lookup from round 1", es, []metadata.IndexEntry{entryOf("o1", r, r.Records), entryOf("o2", r, 2*r.Records)})
	}
	if st := partition(t, s, a.ID, 2); st.NextOffset != 0 {
		t.Fatalf("untouched partition moved: %+v", st)
	}
}

func testCommitUnknownPartition(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := mustCreate(t, s, "u", 2)
	c0, _ := s.CommitCount(ctx)
	runs := []metadata.RunCommit{
		run(tp.ID, 0, 3, 0, 30, 1, 5),
		run(tp.ID, 99, 3, 30, 30, 1, 5),
		run(metadata.TopicID{0xff}, 0, 3, 60, 30, 1, 5),
		run(tp.ID, 1, 2, 90, 20, 1, 5),
		run(tp.ID, -1, 2, 110, 20, 1, 5),
		run(tp.ID, 0, 4, 130, 40, 1, 9),
	}
	res := commit(t, s, "mixed", runs...)
	for _, i := range []int{1, 2, 4} {
		wantErr(t, fmt.Sprintf("run %d", i), res[i].Err, metadata.ErrUnknownTopic)
	}
	want := map[int]int64{0: 0, 3: 0, 5: 3}
	for i, base := range want {
		if res[i].Err != nil || res[i].BaseOffset != base {
			t.Fatalf("run %d: %+v, want base %d", i, res[i], base)
		}
	}
	if st := partition(t, s, tp.ID, 0); st.NextOffset != 7 || st.MaxTimestamp != 9 {
		t.Fatalf("partition 0: %+v", st)
	}
	if st := partition(t, s, tp.ID, 1); st.NextOffset != 2 || st.MaxTimestamp != 5 {
		t.Fatalf("partition 1: %+v", st)
	}
	es, err := s.Lookup(ctx, tp.ID, 0, 0, 1<<40, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, "partition 0", es, []metadata.IndexEntry{entryOf("mixed", runs[0], 0), entryOf("mixed", runs[5], 3)})
	if c, _ := s.CommitCount(ctx); c != c0+1 {
		t.Fatalf("CommitCount %d, want %d", c, c0+1)
	}
}

func testCommitTwoRunsOnePartition(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := mustCreate(t, s, "two", 2)
	commit(t, s, "first", run(tp.ID, 0, 10, 0, 100, 1, 1))
	runs := []metadata.RunCommit{
		run(tp.ID, 0, 3, 0, 30, 50, 60),
		run(tp.ID, 1, 2, 30, 20, 1, 2),
		run(tp.ID, 0, 4, 50, 40, 10, 20),
		run(tp.ID, 0, 1, 90, 10, 30, 40),
	}
	res := commit(t, s, "second", runs...)
	for i, base := range []int64{10, 0, 13, 17} {
		if res[i].Err != nil || res[i].BaseOffset != base {
			t.Fatalf("run %d: %+v, want base %d", i, res[i], base)
		}
	}
	if st := partition(t, s, tp.ID, 0); st.NextOffset != 18 || st.MaxTimestamp != 60 {
		t.Fatalf("partition 0: %+v, want next 18, max ts 60", st)
	}
	es, err := s.Lookup(ctx, tp.ID, 0, 11, 1<<40, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, "partition 0 from 11", es, []metadata.IndexEntry{
		entryOf("second", runs[0], 10), entryOf("second", runs[2], 13), entryOf("second", runs[3], 17),
	})
}

func testCommitEmptyAndAllUnknown(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	c0, _ := s.CommitCount(ctx)
	res := commit(t, s, "empty")
	if len(res) != 0 {
		t.Fatalf("empty commit: %v", res)
	}
	res = commit(t, s, "ghost", run(metadata.TopicID{9}, 0, 1, 0, 1, 1, 1), run(metadata.TopicID{9}, 1, 1, 1, 1, 1, 1))
	for i := range res {
		wantErr(t, fmt.Sprintf("run %d of unknown topic", i), res[i].Err, metadata.ErrUnknownTopic)
	}
	if c, _ := s.CommitCount(ctx); c != c0+2 {
		t.Fatalf("CommitCount %d, want %d", c, c0+2)
	}
}

func testCommitFailureCommitsNothing(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := mustCreate(t, s, "f", 1)
	first := run(tp.ID, 0, 5, 0, 50, 1, 7)
	commit(t, s, "same-key", first)
	c0, _ := s.CommitCount(ctx)
	// An object key can be committed once; the second commit must fail as
	// a whole and leave no trace.
	_, err := s.CommitObject(ctx, metadata.ObjectCommit{Key: "same-key", Size: 1, AgentID: "x",
		Runs: []metadata.RunCommit{run(tp.ID, 0, 3, 0, 30, 100, 200)}})
	if err == nil {
		t.Fatal("second commit of the same object key succeeded")
	}
	if st := partition(t, s, tp.ID, 0); st.NextOffset != 5 || st.MaxTimestamp != 7 {
		t.Fatalf("partition after failed commit: %+v", st)
	}
	if c, _ := s.CommitCount(ctx); c != c0 {
		t.Fatalf("CommitCount %d after failed commit, want %d", c, c0)
	}
	es, err := s.Lookup(ctx, tp.ID, 0, 0, 1<<40, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, "index after failed commit", es, []metadata.IndexEntry{entryOf("same-key", first, 0)})
}

func testCommitInvalid(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := mustCreate(t, s, "inv", 1)
	c0, _ := s.CommitCount(ctx)
	good := run(tp.ID, 0, 1, 0, 10, 1, 1)
	bad := []metadata.ObjectCommit{
		{Key: "", Runs: []metadata.RunCommit{good}},
		{Key: "neg-size", Size: -1, Runs: []metadata.RunCommit{good}},
		{Key: "zero-records", Runs: []metadata.RunCommit{good, run(tp.ID, 0, 0, 10, 10, 1, 1)}},
		{Key: "neg-records", Runs: []metadata.RunCommit{run(tp.ID, 0, -4, 10, 10, 1, 1)}},
		{Key: "neg-length", Runs: []metadata.RunCommit{good, run(tp.ID, 0, 1, 10, -10, 1, 1)}},
		{Key: "neg-offset", Runs: []metadata.RunCommit{run(tp.ID, 0, 1, -1, 10, 1, 1)}},
	}
	for _, obj := range bad {
		_, err := s.CommitObject(ctx, obj)
		wantErr(t, "CommitObject "+obj.Key, err, metadata.ErrInvalidCommit)
	}
	if st := partition(t, s, tp.ID, 0); st.NextOffset != 0 {
		t.Fatalf("invalid commits moved the partition: %+v", st)
	}
	if c, _ := s.CommitCount(ctx); c != c0 {
		t.Fatalf("CommitCount %d after invalid commits, want %d", c, c0)
	}
}

func testCommitCount(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	c, err := s.CommitCount(ctx)
	if err != nil || c != 0 {
		t.Fatalf("CommitCount of a new store: %d, %v", c, err)
	}
	tp := mustCreate(t, s, "cc", 3)
	for i := range 7 {
		runs := []metadata.RunCommit{run(tp.ID, int32(i%3), 2, 0, 20, 1, 1), run(tp.ID, int32((i+1)%3), 1, 20, 10, 1, 1)}
		commit(t, s, fmt.Sprintf("c%d", i), runs...)
		if c, err := s.CommitCount(ctx); err != nil || c != int64(i+1) {
			t.Fatalf("CommitCount after %d commits: %d, %v", i+1, c, err)
		}
	}
}

// testConcurrentCommits commits from 8 goroutines at once to overlapping
// partitions (including two runs of one partition in one object) and checks
// that every partition's offsets are dense from 0 and never handed out twice.
func testConcurrentCommits(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	a := mustCreate(t, s, "ca", 6)
	b := mustCreate(t, s, "cb", 2)
	type key = struct {
		id metadata.TopicID
		p  int32
	}
	all := []key{{a.ID, 0}, {a.ID, 1}, {a.ID, 2}, {a.ID, 3}, {a.ID, 4}, {a.ID, 5}, {b.ID, 0}, {b.ID, 1}}
	c0, _ := s.CommitCount(ctx)

	const workers, perWorker = 8, 50
	var (
		mu  sync.Mutex
		got = map[key][]metadata.IndexEntry{}
		wg  sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for i := range perWorker {
				objKey := fmt.Sprintf("w%d-%03d", w, i)
				var runs []metadata.RunCommit
				var pos int64
				for range 1 + rng.IntN(4) {
					k := all[rng.IntN(len(all))]
					n := int64(1 + rng.IntN(10))
					runs = append(runs, run(k.id, k.p, n, pos, n*10, int64(i), int64(i+w)))
					pos += n * 10
				}
				res, err := s.CommitObject(ctx, metadata.ObjectCommit{Key: objKey, Size: pos, AgentID: fmt.Sprint(w), Runs: runs})
				if err != nil {
					t.Errorf("CommitObject(%s): %v", objKey, err)
					return
				}
				mu.Lock()
				for j, r := range runs {
					if res[j].Err != nil {
						t.Errorf("%s run %d: %v", objKey, j, res[j].Err)
						continue
					}
					k := key{r.TopicID, r.Partition}
					got[k] = append(got[k], entryOf(objKey, r, res[j].BaseOffset))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, k := range all {
		es := got[k]
		sort.Slice(es, func(i, j int) bool { return es[i].BaseOffset < es[j].BaseOffset })
		var next int64
		for _, e := range es {
			if e.BaseOffset != next {
				t.Fatalf("%x/%d: entry %s at %d, want %d (gap or overlap)", k.id, k.p, e.ObjectKey, e.BaseOffset, next)
			}
			next = e.EndOffset
		}
		st := partition(t, s, k.id, k.p)
		if st.NextOffset != next {
			t.Fatalf("%x/%d: next offset %d, runs add up to %d", k.id, k.p, st.NextOffset, next)
		}
		idx, err := s.Lookup(ctx, k.id, k.p, 0, 1<<40, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameEntries(t, fmt.Sprintf("%x/%d index", k.id, k.p), idx, es)
	}
	if c, _ := s.CommitCount(ctx); c != c0+workers*perWorker {
		t.Fatalf("CommitCount %d, want %d", c, c0+workers*perWorker)
	}
}

// testCommitQueuedOrder starts each of a chain of commits once the one
// before it has run its metadata.CommitQueued hook, without waiting for
// it to return (as an agent's flushes in flight do), with a duplicate
// object key in the middle: every commit runs its hook, the duplicate
// alone fails, and the others get their offsets in chain order.
func testCommitQueuedOrder(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := mustCreate(t, s, "queued", 2)
	commit(t, s, "dup", run(tp.ID, 0, 1, 0, 10, 0, 0))
	keys := []string{"q0", "q1", "q2", "dup", "q3", "q4", "q5", "q6", "q7"}
	type outcome struct {
		res    []metadata.RunResult
		err    error
		queued bool
	}
	outs := make([]chan outcome, len(keys))
	for i, k := range keys {
		queued := make(chan struct{})
		var once sync.Once
		qctx := metadata.WithCommitQueued(ctx, func() { once.Do(func() { close(queued) }) })
		outs[i] = make(chan outcome, 1)
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			res, err := s.CommitObject(qctx, metadata.ObjectCommit{Key: k, Size: 20, Runs: []metadata.RunCommit{
				run(tp.ID, 0, 2, 0, 10, 1, 1), run(tp.ID, 1, 1, 10, 10, 1, 1),
			}})
			select {
			case <-queued:
				outs[i] <- outcome{res, err, true}
			default:
				outs[i] <- outcome{res, err, false}
			}
		}()
		select {
		case <-queued:
		case <-returned:
		}
	}
	next := [2]int64{1, 0}
	for i, k := range keys {
		o := <-outs[i]
		if !o.queued {
			t.Errorf("%s: CommitObject returned without running its CommitQueued hook", k)
		}
		if k == "dup" {
			if o.err == nil {
				t.Errorf("duplicate object key committed: %+v", o.res)
			}
			continue
		}
		if o.err != nil {
			t.Fatalf("%s: %v", k, o.err)
		}
		for p, want := range next {
			if o.res[p].BaseOffset != want {
				t.Errorf("%s partition %d: base %d, want %d (chain order)", k, p, o.res[p].BaseOffset, want)
			}
		}
		next[0] += 2
		next[1]++
	}
	if got := partition(t, s, tp.ID, 0).NextOffset; got != next[0] {
		t.Errorf("partition 0 next offset %d, want %d", got, next[0])
	}
}
