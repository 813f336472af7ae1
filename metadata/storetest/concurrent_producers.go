package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"

	"floe/metadata"
)

// accepted is one batch a commit gave offsets: where its bytes are and
// which offsets it took.
type accepted struct {
	key           string
	pos           int64
	base, records int64
}

// concProducer is one producer of testConcurrentProducerCommits: plain
// (id -1), idempotent, or transactional (then abort says how it ends).
type concProducer struct {
	id    int64
	txn   bool
	abort bool
	parts []int32
}

// testConcurrentProducerCommits commits, from several goroutines at once,
// objects whose runs carry idempotent batches (with retries and sequence
// gaps), transactional batches and markers, and plain batches, to shared
// partitions: the path every idempotent producer takes (PostgreSQL's
// commitChecked, SQLite's Go commit). Every accepted batch must get
// offsets no other batch has, the offsets of each partition must be dense,
// retries must be answered with their original offsets, gaps refused as
// PlanRun dictates, and the index and the aborted transactions must be
// exactly what the results said.
func testConcurrentProducerCommits(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	const parts, rounds = 4, 12
	tp := mustCreate(t, s, "conc-producers", parts)
	var producers []concProducer
	for i := range 7 {
		p := concProducer{id: -1, txn: i >= 3 && i < 6, abort: i == 5, parts: []int32{int32(i % parts), int32((i + 1) % parts)}}
		if i > 0 {
			id, _, err := s.InitProducerID(ctx, -1, -1)
			if err != nil {
				t.Fatal(err)
			}
			p.id = id
		}
		if p.txn {
			tps := make([]metadata.TopicIDPartition, len(p.parts))
			for j, part := range p.parts {
				tps[j] = metadata.TopicIDPartition{Topic: tp.ID, Partition: part}
			}
			if err := s.AddTxnPartitions(ctx, p.id, 0, tps); err != nil {
				t.Fatal(err)
			}
		}
		producers = append(producers, p)
	}

	var (
		mu      sync.Mutex
		got     = map[int32][]accepted{}
		aborted = map[int32][]metadata.AbortedTxn{}
	)
	errs := make([]error, len(producers))
	var wg sync.WaitGroup
	for n, p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine, ab, err := p.commitAll(ctx, s, tp.ID, n, rounds)
			errs[n] = err
			mu.Lock()
			defer mu.Unlock()
			for part, as := range mine {
				got[part] = append(got[part], as...)
			}
			for part, a := range ab {
				aborted[part] = append(aborted[part], a)
			}
		}()
	}
	wg.Wait()
	for n, err := range errs {
		if err != nil {
			t.Fatalf("producer %d: %v", n, err)
		}
	}

	for part := range int32(parts) {
		as := got[part]
		sort.Slice(as, func(i, j int) bool { return as[i].base < as[j].base })
		byBase := map[int64]accepted{}
		next := int64(0)
		for _, a := range as {
			if a.base != next {
				t.Fatalf("partition %d: batch %+v at %d, want %d (offsets not dense or taken twice)", part, a, a.base, next)
			}
			next = a.base + a.records
			byBase[a.base] = a
		}
		if st := partition(t, s, tp.ID, part); st.NextOffset != next {
			t.Fatalf("partition %d: next offset %d, accepted batches end at %d", part, st.NextOffset, next)
		}
		es, err := s.Lookup(ctx, tp.ID, part, 0, 1<<40, 0)
		if err != nil {
			t.Fatal(err)
		}
		end := int64(0)
		for _, e := range es {
			a, ok := byBase[e.BaseOffset]
			if e.BaseOffset != end || !ok || a.key != e.ObjectKey || a.pos != e.ByteOffset {
				t.Fatalf("partition %d: index row %+v does not start at accepted batch %+v (offset %d)", part, e, a, end)
			}
			// The row holds accepted batches of its object back to back.
			pos := e.ByteOffset
			for o := e.BaseOffset; o < e.EndOffset; {
				b, ok := byBase[o]
				if !ok || b.key != e.ObjectKey || b.pos != pos {
					t.Fatalf("partition %d: index row %+v holds %+v at offset %d", part, e, b, o)
				}
				o, pos = o+b.records, pos+10
			}
			if pos != e.ByteOffset+e.ByteLength {
				t.Fatalf("partition %d: index row %+v is %d bytes of batches", part, e, pos-e.ByteOffset)
			}
			end = e.EndOffset
		}
		if end != next {
			t.Fatalf("partition %d: index ends at %d, offsets at %d", part, end, next)
		}
		want := aborted[part]
		sort.Slice(want, func(i, j int) bool { return want[i].FirstOffset < want[j].FirstOffset })
		ab, err := s.AbortedTxns(ctx, tp.ID, part, 0, next)
		if err != nil || !(len(ab) == 0 && len(want) == 0 || reflect.DeepEqual(ab, want)) {
			t.Fatalf("partition %d: aborted %+v %v, want %+v", part, ab, err, want)
		}
	}
	if open, err := s.FirstOpenOffsets(ctx, tp.ID); err != nil || len(open) != 0 {
		t.Fatalf("open transactions after every marker: %v %v", open, err)
	}
}

// commitAll commits rounds objects of p, each with one run per partition
// of p, then (transactional p) one marker per partition, and checks every
// batch result. It returns the accepted batches per partition and the
// aborted transaction per partition.
func (p concProducer) commitAll(ctx context.Context, s metadata.Store, topic metadata.TopicID, n, rounds int) (map[int32][]accepted, map[int32]metadata.AbortedTxn, error) {
	mine := map[int32][]accepted{}
	seq := map[int32]int32{}
	first := map[int32]int64{}
	// want is what one batch of a run must get: new offsets, the offset
	// of an earlier batch (a retry), or an error.
	type want struct {
		records int64
		dupOf   int64 // >= 0: a retry of the batch at this offset
		err     error
	}
	check := func(key string, runs []metadata.RunCommit, wants [][]want, res []metadata.RunResult) error {
		if len(res) != len(runs) {
			return fmt.Errorf("%s: %d results for %d runs", key, len(res), len(runs))
		}
		for i, r := range runs {
			if res[i].Err != nil || len(res[i].Batches) != len(r.BatchList) {
				return fmt.Errorf("%s run %d: %+v", key, i, res[i])
			}
			pos := r.ByteOffset
			for j, w := range wants[i] {
				b := res[i].Batches[j]
				switch {
				case w.err != nil:
					if !errors.Is(b.Err, w.err) {
						return fmt.Errorf("%s run %d batch %d: %+v, want %v", key, i, j, b, w.err)
					}
				case w.dupOf >= 0:
					if !b.Duplicate || b.Err != nil || b.BaseOffset != w.dupOf {
						return fmt.Errorf("%s run %d batch %d: %+v, want a duplicate of %d", key, i, j, b, w.dupOf)
					}
				default:
					if b.Duplicate || b.Err != nil {
						return fmt.Errorf("%s run %d batch %d: %+v, want new offsets", key, i, j, b)
					}
					if _, ok := first[r.Partition]; !ok {
						first[r.Partition] = b.BaseOffset
					}
					mine[r.Partition] = append(mine[r.Partition], accepted{key: key, pos: pos, base: b.BaseOffset, records: w.records})
				}
				pos += 10
			}
		}
		return nil
	}
	idempotent := p.id >= 0 && !p.txn
	for round := range rounds {
		key := fmt.Sprintf("p%d-r%d", n, round)
		var (
			runs  []metadata.RunCommit
			wants [][]want
			pos   int64
		)
		for _, part := range p.parts {
			var bs [][2]int32
			var ws []want
			add := func(b [2]int32, w want) { bs, ws = append(bs, b), append(ws, w) }
			s0 := seq[part]
			if p.id < 0 {
				s0 = -1
			}
			add([2]int32{s0, 2}, want{records: 2, dupOf: -1})
			if idempotent && round%4 == 3 {
				// A sequence gap between two good batches: refused, and
				// the run becomes two index rows around it.
				add([2]int32{s0 + 100, 1}, want{err: metadata.ErrOutOfOrderSequence})
			}
			s1 := s0 + 2
			if p.id < 0 {
				s1 = -1
			}
			add([2]int32{s1, 3}, want{records: 3, dupOf: -1})
			if idempotent && round%3 == 2 {
				// A retry of the previous round's last batch (within the
				// last five): answered with its original offset.
				prev := mine[part][len(mine[part])-1]
				add([2]int32{s0 - 3, 3}, want{dupOf: prev.base})
			}
			if p.id >= 0 {
				seq[part] = s0 + 5
			}
			r := idemRun(topic, part, pos, p.id, 0, bs...)
			if p.id < 0 {
				r = idemRun(topic, part, pos, -1, -1, bs...)
			}
			for i := range r.BatchList {
				r.BatchList[i].Transactional = p.txn
			}
			pos += r.ByteLength
			runs, wants = append(runs, r), append(wants, ws)
		}
		res, err := s.CommitObject(ctx, metadata.ObjectCommit{Key: key, Size: pos, AgentID: "agent-1", Runs: runs})
		if err != nil {
			return nil, nil, fmt.Errorf("commit %s: %w", key, err)
		}
		if err := check(key, runs, wants, res); err != nil {
			return nil, nil, err
		}
	}
	ab := map[int32]metadata.AbortedTxn{}
	if !p.txn {
		return mine, ab, nil
	}
	m := metadata.MarkerCommit
	if p.abort {
		m = metadata.MarkerAbort
	}
	key := fmt.Sprintf("p%d-markers", n)
	var runs []metadata.RunCommit
	var wants [][]want
	for i, part := range p.parts {
		r := markerRun(topic, part, p.id, 0, m)
		r.ByteOffset = int64(10 * i)
		runs, wants = append(runs, r), append(wants, []want{{records: 1, dupOf: -1}})
	}
	res, err := s.CommitObject(ctx, metadata.ObjectCommit{Key: key, Size: int64(10 * len(runs)), AgentID: "agent-1", Runs: runs})
	if err != nil {
		return nil, nil, fmt.Errorf("commit %s: %w", key, err)
	}
	if err := check(key, runs, wants, res); err != nil {
		return nil, nil, err
	}
	if p.abort {
		for i, part := range p.parts {
			ab[part] = metadata.AbortedTxn{ProducerID: p.id, FirstOffset: first[part], LastOffset: res[i].Batches[0].BaseOffset}
		}
	}
	return mine, ab, nil
}

// testConcurrentFencing races a producer at a bumped epoch against its
// zombie at the old one, both committing to the same partitions. In each
// partition the zombie's batches are accepted until the successor's first
// batch lands there and refused with ErrInvalidProducerEpoch from then on,
// so every accepted zombie offset lies below every successor offset; the
// successor's batches are all accepted. (The store knows of the bump only
// through the successor's data, as Kafka's partition leaders do.)
func testConcurrentFencing(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	const parts, rounds = 2, 20
	tp := mustCreate(t, s, "fencing", parts)
	pid, _, err := s.InitProducerID(ctx, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	// result is one committed batch: its partition, epoch and outcome.
	type result struct {
		part  int32
		epoch int16
		res   metadata.BatchResult
	}
	// produce commits rounds objects at epoch, one batch per partition;
	// with untilFenced it goes on until every partition refused it (the
	// successor commits in the meantime, however the goroutines are run).
	produce := func(epoch int16, untilFenced bool, out *[]result) error {
		seq := map[int32]int32{}
		fenced := map[int32]bool{}
		for round := 0; round < rounds || untilFenced && len(fenced) < parts; round++ {
			if round > 100*rounds {
				return fmt.Errorf("epoch %d still not fenced after %d rounds", epoch, round)
			}
			var runs []metadata.RunCommit
			for part := range int32(parts) {
				runs = append(runs, idemRun(tp.ID, part, int64(10*part), pid, epoch, [2]int32{seq[part], 2}))
			}
			key := fmt.Sprintf("e%d-r%d", epoch, round)
			res, err := s.CommitObject(ctx, metadata.ObjectCommit{Key: key, Size: 10 * parts, AgentID: "agent-1", Runs: runs})
			if err != nil {
				return fmt.Errorf("commit %s: %w", key, err)
			}
			for i, r := range res {
				if r.Err != nil || len(r.Batches) != 1 {
					return fmt.Errorf("commit %s run %d: %+v", key, i, r)
				}
				b := r.Batches[0]
				if b.Err == nil {
					seq[int32(i)] += 2
				} else {
					fenced[int32(i)] = true
				}
				*out = append(*out, result{part: int32(i), epoch: epoch, res: b})
			}
		}
		return nil
	}
	var zombie, successor []result
	var zerr, serr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); zerr = produce(0, true, &zombie) }()
	go func() {
		defer wg.Done()
		if _, ep, err := s.InitProducerID(ctx, pid, 0); err != nil || ep != 1 {
			serr = fmt.Errorf("bump: epoch %d, %v", ep, err)
			return
		}
		serr = produce(1, false, &successor)
	}()
	wg.Wait()
	if zerr != nil || serr != nil {
		t.Fatalf("zombie: %v; successor: %v", zerr, serr)
	}
	for part := range int32(parts) {
		firstNew := int64(-1)
		for _, r := range successor {
			if r.part != part {
				continue
			}
			if r.res.Err != nil || r.res.Duplicate {
				t.Fatalf("partition %d: successor batch %+v", part, r.res)
			}
			if firstNew < 0 {
				firstNew = r.res.BaseOffset
			}
		}
		fenced := false
		for _, r := range zombie {
			switch {
			case r.part != part:
			case r.res.Err == nil && !r.res.Duplicate && !fenced:
				if r.res.BaseOffset >= firstNew {
					t.Fatalf("partition %d: zombie batch at %d, successor's first at %d", part, r.res.BaseOffset, firstNew)
				}
			case errors.Is(r.res.Err, metadata.ErrInvalidProducerEpoch):
				fenced = true
			default:
				t.Fatalf("partition %d: zombie batch %+v (fenced %v)", part, r.res, fenced)
			}
		}
		if !fenced {
			t.Fatalf("partition %d: the zombie was never fenced", part)
		}
		if st := partition(t, s, tp.ID, part); st.NextOffset != firstNew+2*rounds {
			t.Fatalf("partition %d: next offset %d, want %d", part, st.NextOffset, firstNew+2*rounds)
		}
	}
}
