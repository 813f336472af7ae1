package postgres_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"floe/metadata"
	"floe/metadata/pgtest"
	"floe/metadata/postgres"
	"floe/metadata/storetest"
)

func open(t testing.TB, srv *pgtest.Server) *postgres.Store {
	s, err := postgres.Open(context.Background(), srv.CreateDatabase(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	srv := pgtest.Start(t)
	storetest.Run(t, func(t *testing.T) metadata.Store { return open(t, srv) })
}

// TestConcurrentOpen opens one new database from several stores at once:
// the advisory lock must make exactly one of them apply each migration.
func TestConcurrentOpen(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.CreateDatabase(t, "shared")
	ctx := context.Background()
	const n = 4
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = postgres.Open(ctx, url)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	// All stores see one database: a topic created through one is seen,
	// and a duplicate rejected, through another.
	if _, err := stores[0].CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[n-1].CreateTopic(ctx, "t", 1, nil); err == nil {
		t.Fatal("duplicate topic through a second store succeeded")
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var versions, shards int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM schema_migrations), (SELECT count(*) FROM counters)`).Scan(&versions, &shards); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if versions != len(files) || shards != 16 {
		t.Fatalf("schema_migrations rows %d, counter shards %d; want %d and 16", versions, shards, len(files))
	}
}

func BenchmarkCommitObject(b *testing.B) {
	srv := pgtest.Start(b)
	storetest.Bench(b, func(b *testing.B) metadata.Store { return open(b, srv) })
}

// BenchmarkCreateTopic: see storetest.BenchCreateTopic.
func BenchmarkCreateTopic(b *testing.B) {
	srv := pgtest.Start(b)
	storetest.BenchCreateTopic(b, func(b *testing.B) metadata.Store { return open(b, srv) })
}

// BenchmarkConcurrentCommits: see storetest.BenchConcurrentCommits. Each
// simulated agent has a pool of one connection: an agent's commits are
// serialised (flush order), or grouped into one transaction when several
// arrive at once, so one is all its flushes use at a time. server-cpu-us
// is the CPU of the PostgreSQL server's processes, from /proc.
func BenchmarkConcurrentCommits(b *testing.B) {
	srv := pgtest.Start(b)
	storetest.BenchConcurrentCommits(b, func(b *testing.B) (metadata.Store, func() metadata.Store) {
		url := srv.CreateDatabase(b, "")
		first, err := postgres.Open(context.Background(), url)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { first.Close() })
		return first, func() metadata.Store {
			sep := "?"
			if strings.Contains(url, "?") {
				sep = "&"
			}
			s, err := postgres.Open(context.Background(), url+sep+"pool_max_conns=1")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}
	}, serverCPU(b, srv))
}

// serverCPU returns a function reporting the CPU time used so far by the
// PostgreSQL server srv: its postmaster (the parent of a backend, found
// through pg_backend_pid), the children it has reaped, and its live
// children (the backends, autovacuum, the WAL writer). Nil when /proc does
// not show the server.
func serverCPU(b *testing.B, srv *pgtest.Server) func() time.Duration {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.URL("postgres"))
	if err != nil {
		b.Fatal(err)
	}
	var backend int
	err = conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend)
	conn.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}
	post := 0
	if f := procStat(fmt.Sprintf("/proc/%d/stat", backend)); f != nil {
		post, _ = strconv.Atoi(f[1])
	}
	if post <= 1 {
		b.Logf("no parent of backend %d in /proc: no server-cpu-us", backend)
		return nil
	}
	tick := time.Second / 100 // USER_HZ, 100 on Linux
	return func() time.Duration {
		var total time.Duration
		procs, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, p := range procs {
			f := procStat(p)
			if f == nil {
				continue
			}
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			ppid, _ := strconv.Atoi(f[1])
			n := 2 // utime and stime of a child
			if pid == post {
				n = 4 // and what its reaped children used
			} else if ppid != post {
				continue
			}
			for _, v := range f[11 : 11+n] {
				t, _ := strconv.ParseInt(v, 10, 64)
				total += time.Duration(t) * tick
			}
		}
		return total
	}
}

// procStat returns the fields of a /proc/<pid>/stat file after the
// command (which is in parentheses): state, ppid, … utime, stime, cutime,
// cstime at 11 to 14. Nil if it cannot be read.
func procStat(path string) []string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return nil
	}
	if f := strings.Fields(string(raw[i+1:])); len(f) >= 15 {
		return f
	}
	return nil
}

// TestGroupCommitFailureIsolated commits rounds of objects at the same
// time through one store, so that they are grouped into one transaction,
// one of each round under a key that is taken: that one must fail alone,
// and every other keep dense offsets and count as one commit.
func TestGroupCommitFailureIsolated(t *testing.T) {
	srv := pgtest.Start(t)
	s := open(t, srv)
	ctx := context.Background()
	tp, err := s.CreateTopic(ctx, "g", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	runOf := func(part int32, records int64) metadata.RunCommit {
		return metadata.RunCommit{TopicID: tp.ID, Partition: part, ByteLength: 10 * records, Batches: 1, Records: records, MinTimestamp: 1, MaxTimestamp: 2}
	}
	if _, err := s.CommitObject(ctx, metadata.ObjectCommit{Key: "taken", Size: 10, AgentID: "a", Runs: []metadata.RunCommit{runOf(0, 1)}}); err != nil {
		t.Fatal(err)
	}
	const rounds, perRound = 30, 8
	next := map[int32]int64{0: 1, 1: 0}
	for round := range rounds {
		type outcome struct {
			runs []metadata.RunCommit
			res  []metadata.RunResult
			err  error
		}
		outs := make([]outcome, perRound)
		var wg sync.WaitGroup
		for i := range perRound {
			key := fmt.Sprintf("r%d-%d", round, i)
			if i == round%perRound {
				key = "taken"
			}
			runs := []metadata.RunCommit{runOf(int32(i%2), int64(1+i)), runOf(1, 2)}
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := s.CommitObject(ctx, metadata.ObjectCommit{Key: key, Size: 100, AgentID: "a", Runs: runs})
				outs[i] = outcome{runs, res, err}
			}()
		}
		wg.Wait()
		// The runs' offsets, in offset order per partition, must tile the
		// partitions with no gap and no overlap.
		type placed struct{ base, end int64 }
		got := map[int32][]placed{}
		for i, o := range outs {
			if i == round%perRound {
				if o.err == nil {
					t.Fatalf("round %d: commit under a taken key succeeded", round)
				}
				continue
			}
			if o.err != nil {
				t.Fatalf("round %d: commit %d failed with its group: %v", round, i, o.err)
			}
			for j, r := range o.runs {
				got[r.Partition] = append(got[r.Partition], placed{o.res[j].BaseOffset, o.res[j].BaseOffset + r.Records})
			}
		}
		for p, ps := range got {
			slices.SortFunc(ps, func(a, b placed) int { return int(a.base - b.base) })
			for _, x := range ps {
				if x.base != next[p] {
					t.Fatalf("round %d: partition %d run at %d, want %d", round, p, x.base, next[p])
				}
				next[p] = x.end
			}
		}
	}
	for p, n := range next {
		st, err := s.Partition(ctx, tp.ID, p)
		if err != nil || st.NextOffset != n {
			t.Fatalf("partition %d: %+v, %v; want next offset %d", p, st, err, n)
		}
	}
	if c, err := s.CommitCount(ctx); err != nil || c != 1+rounds*(perRound-1) {
		t.Fatalf("CommitCount %d, %v; want %d", c, err, 1+rounds*(perRound-1))
	}
}

// TestCommitFunctionOfOlderAgents calls floe_commit_object, the commit of
// agents from before migration 0013, which they call during a rolling
// upgrade: it must commit as CommitObject does, after it and before it.
func TestCommitFunctionOfOlderAgents(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.CreateDatabase(t, "")
	ctx := context.Background()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp, err := s.CreateTopic(ctx, "old", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.CommitObject(ctx, metadata.ObjectCommit{Key: "new-1", Size: 10, AgentID: "new",
		Runs: []metadata.RunCommit{{TopicID: tp.ID, Partition: 1, ByteLength: 10, Batches: 1, Records: 4, MinTimestamp: 1, MaxTimestamp: 5}}})
	if err != nil || res[0].BaseOffset != 0 {
		t.Fatalf("CommitObject: %+v, %v", res, err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT o_run, o_base FROM floe_commit_object($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		"old-1", int64(30), "old", 3, [][]byte{tp.ID[:], tp.ID[:], make([]byte, 16)}, []int32{1, 0, 0},
		[]int64{0, 10, 20}, []int64{10, 10, 10}, []int32{1, 1, 1}, []int64{3, 2, 1}, []int64{1, 1, 1}, []int64{9, 2, 2})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var run int64
		var base *int64
		if err := rows.Scan(&run, &base); err != nil {
			t.Fatal(err)
		}
		if base == nil {
			got = append(got, fmt.Sprintf("%d:none", run))
		} else {
			got = append(got, fmt.Sprintf("%d:%d", run, *base))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"1:4", "2:0", "3:none"}; !slices.Equal(got, want) {
		t.Fatalf("floe_commit_object returned %v, want %v (an unknown topic's run gets none)", got, want)
	}
	res, err = s.CommitObject(ctx, metadata.ObjectCommit{Key: "new-2", Size: 10, AgentID: "new",
		Runs: []metadata.RunCommit{{TopicID: tp.ID, Partition: 1, ByteLength: 10, Batches: 1, Records: 1, MinTimestamp: 1, MaxTimestamp: 5}}})
	if err != nil || res[0].BaseOffset != 7 {
		t.Fatalf("CommitObject after the old function: %+v, %v; want base 7", res, err)
	}
	st, err := s.Partition(ctx, tp.ID, 1)
	if err != nil || st.NextOffset != 8 || st.MaxTimestamp != 9 {
		t.Fatalf("partition 1: %+v, %v; want next 8, max timestamp 9", st, err)
	}
	if c, err := s.CommitCount(ctx); err != nil || c != 3 {
		t.Fatalf("CommitCount %d, %v; want 3", c, err)
	}
	es, err := s.Lookup(ctx, tp.ID, 1, 0, 1<<40, 0)
	if err != nil || len(es) != 3 || es[1].ObjectKey != "old-1" || es[1].BaseOffset != 4 || es[1].EndOffset != 7 {
		t.Fatalf("index of partition 1: %+v, %v", es, err)
	}
}
