package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"floe/metadata"
)

// Bench measures CommitObject with 1 and 500 runs per object (one run per
// partition of a 500-partition topic), and a typical `floe dev` flush: 16
// partitions, one run each, holding one batch of each of two producers
// (`floe bench produce --partitions 16 --producers 2`), plain and
// idempotent, where every commit also reads and writes producer state.
// ns/op is the latency of one commit from a single caller; p50-ns and
// p99-ns its distribution. merge=32x16 times the compactor's swap instead
// (benchMerge). open must return a new, empty store.
func Bench(b *testing.B, open func(b *testing.B) metadata.Store) {
	for _, runs := range []int{1, 500} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			s := open(b)
			ctx := context.Background()
			tp, err := s.CreateTopic(ctx, "bench", 500, nil)
			if err != nil {
				b.Fatal(err)
			}
			obj := metadata.ObjectCommit{Size: int64(runs) * 1000, AgentID: "bench", Runs: make([]metadata.RunCommit, runs)}
			for i := range obj.Runs {
				obj.Runs[i] = metadata.RunCommit{TopicID: tp.ID, Partition: int32(i), ByteOffset: int64(i) * 1000,
					ByteLength: 1000, Batches: 1, Records: 10, MinTimestamp: 1, MaxTimestamp: 2}
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				obj.Key = fmt.Sprintf("bench-%d", i)
				if _, err := s.CommitObject(ctx, obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("flush=16x2", func(b *testing.B) { benchFlush(b, open(b), 16, 2, false) })
	b.Run("flush=16x2idempotent", func(b *testing.B) { benchFlush(b, open(b), 16, 2, true) })
	b.Run("merge=32x16", func(b *testing.B) { benchMerge(b, open(b), 32, 16) })
}

// benchMerge measures the compactor's swap of a level-0 merge: ReplaceRows
// of the rows of objects flushes committed one after another, each with a
// run of every one of partitions partitions, by one row per partition
// (what `floe dev`'s compactor does every 32 flushes). Only the swap is
// timed; the commits before each are not.
func benchMerge(b *testing.B, s metadata.Store, objects, partitions int) {
	ctx := context.Background()
	tp, err := s.CreateTopic(ctx, "bench", int32(partitions), nil)
	if err != nil {
		b.Fatal(err)
	}
	const runBytes = 1000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		keys := make([]string, objects)
		for o := range keys {
			keys[o] = fmt.Sprintf("bench-%d-%d", i, o)
			obj := metadata.ObjectCommit{Key: keys[o], Size: int64(partitions) * runBytes, AgentID: "bench"}
			for p := range partitions {
				obj.Runs = append(obj.Runs, metadata.RunCommit{TopicID: tp.ID, Partition: int32(p), ByteOffset: int64(p) * runBytes,
					ByteLength: runBytes, Batches: 1, Records: 10, MinTimestamp: 1, MaxTimestamp: 2})
			}
			if _, err := s.CommitObject(ctx, obj); err != nil {
				b.Fatal(err)
			}
		}
		sources, err := s.ObjectRows(ctx, keys)
		if err != nil || len(sources) != objects*partitions {
			b.Fatalf("ObjectRows: %d rows, %v", len(sources), err)
		}
		r := metadata.Replacement{Sources: sources, Key: fmt.Sprintf("merged-%d", i), Level: 1, Grace: time.Hour}
		for j := 0; j < len(sources); j += objects {
			first, last := sources[j], sources[j+objects-1]
			r.Rows = append(r.Rows, metadata.IndexEntry{TopicID: first.TopicID, Partition: first.Partition, BaseOffset: first.BaseOffset,
				EndOffset: last.EndOffset, ObjectKey: r.Key, ByteOffset: r.Size, ByteLength: int64(objects) * runBytes,
				Batches: int32(objects), MinTimestamp: 1, MaxTimestamp: 2})
			r.Size += int64(objects) * runBytes
		}
		b.StartTimer()
		if err := s.ReplaceRows(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// benchFlush commits objects of one run per partition, each run holding
// one 10-record batch per producer; idempotent producers' sequences advance
// from commit to commit, as their flushes do.
func benchFlush(b *testing.B, s metadata.Store, partitions, producers int, idempotent bool) {
	ctx := context.Background()
	tp, err := s.CreateTopic(ctx, "bench", int32(partitions), nil)
	if err != nil {
		b.Fatal(err)
	}
	ps, ok := s.(metadata.ProducerStore)
	if !ok {
		b.Skip("store has no producer ids")
	}
	pids := make([]int64, producers)
	for i := range pids {
		pids[i] = -1
		if !idempotent {
			continue
		}
		if pids[i], _, err = ps.InitProducerID(ctx, -1, -1); err != nil {
			b.Fatal(err)
		}
	}
	const batchRecords, batchBytes = 10, 10 * 1024
	obj := metadata.ObjectCommit{AgentID: "bench", Runs: make([]metadata.RunCommit, partitions)}
	for i := range obj.Runs {
		r := metadata.RunCommit{TopicID: tp.ID, Partition: int32(i), ByteOffset: obj.Size,
			ByteLength: int64(producers) * batchBytes, Batches: int32(producers), Records: int64(producers) * batchRecords,
			MinTimestamp: 1, MaxTimestamp: 2, BatchList: make([]metadata.BatchCommit, producers)}
		for j := range r.BatchList {
			r.BatchList[j] = metadata.BatchCommit{ByteLength: batchBytes, Records: batchRecords,
				MinTimestamp: 1, MaxTimestamp: 2, ProducerID: pids[j]}
		}
		obj.Runs[i] = r
		obj.Size += r.ByteLength
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		obj.Key = fmt.Sprintf("bench-%d", i)
		start := time.Now()
		res, err := s.CommitObject(ctx, obj)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			for _, br := range r.Batches {
				if br.Err != nil || br.Duplicate {
					b.Fatalf("commit %d: batch result %+v", i, br)
				}
			}
		}
		for _, r := range obj.Runs {
			for j := range r.BatchList {
				r.BatchList[j].BaseSequence += batchRecords
			}
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
}

// BenchCreateTopic measures CreateTopic of a 10,000-partition topic (the
// agents' default limit per topic) and CommitOffsets of 50,000 offsets (a
// large consumer group's commit, in metadata.OffsetChunk chunks): each
// should take a fraction of a second, so that neither holds the store's
// writers up for long. open must return a new, empty store.
func BenchCreateTopic(b *testing.B, open func(b *testing.B) metadata.Store) {
	b.Run("partitions=10000", func(b *testing.B) {
		s := open(b)
		ctx := context.Background()
		for i := 0; b.Loop(); i++ {
			if _, err := s.CreateTopic(ctx, fmt.Sprintf("big-%d", i), 10_000, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("offsets=50000", func(b *testing.B) {
		s := open(b)
		ctx := context.Background()
		offs := make([]metadata.GroupOffset, 50_000)
		for i := range offs {
			offs[i] = metadata.GroupOffset{Topic: fmt.Sprint("t", i/10_000), Partition: int32(i % 10_000), Offset: int64(i), LeaderEpoch: -1}
		}
		for b.Loop() {
			if err := s.CommitOffsets(ctx, "bench", offs); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchConcurrentCommits measures the store as the one thing every agent
// shares: committers (simulated agents, each with a store handle of its
// own, as each agent has its own connection pool) commit flushes of 16
// partitions chosen at random out of 64 hot ones, plain or idempotent (two
// producers per flush in flight, sequences advancing per partition), all at
// once. With inflight > 1 each agent has that many flushes committing at
// once on its one handle (an agent's --flush-concurrency), each slot with
// producers of its own: what a store's group commit can combine. The
// offered= cases are open-loop: each agent flushes at a fixed interval,
// its flushes committing one after the other (as agents of the previous
// release did) or overlapped=4 (as agents do now: up to 4 at once, each
// started once the previous one is queued in the store), and a commit's
// latency is counted from when its flush was due. It reports commits/s
// (one per flush) over the whole run, the p50/p99
// latency of one commit, and the CPU time per commit of this process
// (client-cpu-us) and, when serverCPU is not nil, of the store's server
// (server-cpu-us; serverCPU returns the CPU time it has used so far). open
// returns the store of the first committer (a new, empty database) and a
// function opening one more handle to the same database.
func BenchConcurrentCommits(b *testing.B, open func(b *testing.B) (metadata.Store, func() metadata.Store), serverCPU func() time.Duration) {
	for _, idempotent := range []bool{false, true} {
		mode := "plain"
		if idempotent {
			mode = "idempotent"
		}
		for _, inflight := range []int{1, 4} {
			for _, committers := range []int{1, 8, 32, 128} {
				name := fmt.Sprintf("%s/inflight=%d/committers=%d", mode, inflight, committers)
				b.Run(name, func(b *testing.B) { benchConcurrent(b, open, serverCPU, committers, inflight, 0, 0, idempotent) })
			}
		}
		// The goal's load, offered instead of closed-loop: 2,000 flushes/s
		// (500 agents at a 250 ms interval) from 128 agents.
		const agents, offered = 128, 2000
		interval := time.Second * agents / offered
		b.Run(fmt.Sprintf("%s/offered=%d/committers=%d", mode, offered, agents), func(b *testing.B) {
			benchConcurrent(b, open, serverCPU, agents, 1, interval, 0, idempotent)
		})
		// The same, each agent overlapping its flushes' commits as the
		// agent does (agent/batcher.go): up to 4 at once, each started
		// once the one before is queued.
		b.Run(fmt.Sprintf("%s/offered=%d/committers=%d/overlapped=4", mode, offered, agents), func(b *testing.B) {
			benchConcurrent(b, open, serverCPU, agents, 1, interval, 4, idempotent)
		})
	}
}

func benchConcurrent(b *testing.B, open func(b *testing.B) (metadata.Store, func() metadata.Store), serverCPU func() time.Duration,
	committers, inflight int, interval time.Duration, pipelined int, idempotent bool) {
	const hot, perFlush, producers, batchRecords, batchBytes = 64, 16, 2, 10, 10 * 1024
	ctx := context.Background()
	first, more := open(b)
	tp, err := first.CreateTopic(ctx, "hot", hot, nil)
	if err != nil {
		b.Fatal(err)
	}
	// A slot is one flush in flight of one agent: its producers, their
	// sequences and the latencies of its commits.
	type slot struct {
		s    metadata.Store
		name string
		pids []int64
		seq  map[[2]int64]int32 // (pid, partition) → next sequence
		rng  *rand.Rand
		lat  []time.Duration
	}
	var slots []*slot
	for i := range committers {
		s := first
		if i > 0 {
			s = more()
		}
		for j := range inflight {
			sl := &slot{s: s, name: fmt.Sprintf("%d-%d", i, j), seq: map[[2]int64]int32{}, rng: rand.New(rand.NewPCG(uint64(i*inflight+j), 7))}
			for range producers {
				pid := int64(-1)
				if idempotent {
					if pid, _, err = s.(metadata.ProducerStore).InitProducerID(ctx, -1, -1); err != nil {
						b.Fatal(err)
					}
				}
				sl.pids = append(sl.pids, pid)
			}
			slots = append(slots, sl)
		}
	}
	// flush is slot c's next flush, number n: perFlush of the hot
	// partitions, each run one batch per producer, sequences advancing.
	flush := func(c *slot, n int64) metadata.ObjectCommit {
		parts := c.rng.Perm(hot)[:perFlush]
		slices.Sort(parts)
		obj := metadata.ObjectCommit{Key: fmt.Sprintf("bench-%s-%d", c.name, n), AgentID: "agent-" + c.name}
		for _, p := range parts {
			r := metadata.RunCommit{TopicID: tp.ID, Partition: int32(p), ByteOffset: obj.Size,
				ByteLength: producers * batchBytes, Batches: producers, Records: producers * batchRecords,
				MinTimestamp: 1, MaxTimestamp: 2}
			for _, pid := range c.pids {
				bc := metadata.BatchCommit{ByteLength: batchBytes, Records: batchRecords, MinTimestamp: 1, MaxTimestamp: 2, ProducerID: pid}
				if idempotent {
					k := [2]int64{pid, int64(p)}
					bc.BaseSequence = c.seq[k]
					c.seq[k] += batchRecords
				}
				r.BatchList = append(r.BatchList, bc)
			}
			obj.Runs = append(obj.Runs, r)
			obj.Size += r.ByteLength
		}
		return obj
	}
	// commit commits obj and records its latency from t0 in c.
	var latMu sync.Mutex
	commit := func(ctx context.Context, c *slot, obj metadata.ObjectCommit, t0 time.Time) error {
		res, err := c.s.CommitObject(ctx, obj)
		latMu.Lock()
		c.lat = append(c.lat, time.Since(t0))
		latMu.Unlock()
		if err != nil {
			return err
		}
		for _, r := range res {
			for _, br := range r.Batches {
				if br.Err != nil || br.Duplicate {
					return fmt.Errorf("commit %s: batch result %+v", obj.Key, br)
				}
			}
		}
		return nil
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(slots)) // a slot sends one at most; pipelined commits never block on it
	b.ResetTimer()
	var cpu0 time.Duration
	if serverCPU != nil {
		cpu0 = serverCPU()
	}
	self0 := selfCPU()
	start := time.Now()
	for i, c := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			due := start.Add(interval * time.Duration(i) / time.Duration(len(slots)))
			if pipelined > 0 {
				// As an agent's flushes: each due at its interval, its
				// commit started once the previous one is queued in the
				// store (metadata.WithCommitQueued), up to pipelined
				// committing at once.
				sem := make(chan struct{}, pipelined)
				prev := make(chan struct{})
				close(prev)
				for {
					n := next.Add(1)
					if n > int64(b.N) {
						return
					}
					sem <- struct{}{}
					time.Sleep(time.Until(due))
					obj, t0 := flush(c, n), due
					due = due.Add(interval)
					<-prev
					queued := make(chan struct{})
					var once sync.Once
					queue := func() { once.Do(func() { close(queued) }) }
					prev = queued
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer func() { queue(); <-sem }()
						if err := commit(metadata.WithCommitQueued(ctx, queue), c, obj, t0); err != nil {
							select {
							case errs <- err:
							default: // one is enough to fail the run
							}
						}
					}()
				}
			}
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				if interval > 0 {
					time.Sleep(time.Until(due))
				}
				obj := flush(c, n)
				t0 := time.Now()
				if interval > 0 {
					t0, due = due, due.Add(interval)
				}
				if err := commit(ctx, c, obj, t0); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	self := selfCPU() - self0
	var server time.Duration
	if serverCPU != nil {
		server = serverCPU() - cpu0
	}
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	var lat []time.Duration
	for _, c := range slots {
		lat = append(lat, c.lat...)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "commits/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(self.Microseconds())/float64(b.N), "client-cpu-us")
	if serverCPU != nil {
		b.ReportMetric(float64(server.Microseconds())/float64(b.N), "server-cpu-us")
	}
}

// selfCPU is the CPU time (user and system) this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
