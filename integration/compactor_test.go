package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
	"floe/metadata/postgres"
	"floe/metadata/sqlite"
	"floe/storage"
	"floe/storage/file"
)

// compactorEnv is one agent and (optionally) one compactor process sharing
// an SQLite metadata file and a directory bucket, plus the test's own view
// of both stores.
type compactorEnv struct {
	t      *testing.T
	dir    string
	agent  *proc
	store  metadata.Store
	bucket storage.Bucket
	cl     *kgo.Client
}

func newCompactorEnv(t *testing.T) *compactorEnv {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := &compactorEnv{t: t, dir: dir}
	// A 1 ms flush interval: every produce request becomes an object.
	e.agent = startFloe(t, "agent", "--metadata", e.metaURL(), "--bucket", e.bucketURL(), "--flush-interval", "1ms")
	ctx := testContext(t, 2*time.Minute)
	s, err := sqlite.Open(ctx, filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e.store = s
	if e.bucket, err = file.New(filepath.Join(dir, "objects")); err != nil {
		t.Fatal(err)
	}
	e.cl, err = kgo.NewClient(kgo.SeedBrokers(e.agent.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.cl.Close)
	return e
}

func (e *compactorEnv) metaURL() string   { return "sqlite://" + filepath.Join(e.dir, "meta.db") }
func (e *compactorEnv) bucketURL() string { return "file://" + filepath.Join(e.dir, "objects") }

// startCompactor runs `floe compactor` on the env's stores; extra flags
// override the fast defaults given here.
func (e *compactorEnv) startCompactor(extra ...string) *proc {
	t := e.t
	t.Helper()
	p := &proc{t: t}
	p.HTTPAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p.args = append([]string{"compactor", "--metadata", e.metaURL(), "--bucket", e.bucketURL(),
		"--http-addr", p.HTTPAddr, "--interval", "100ms", "--lease-ttl", "2s", "--grace", "2s",
		"--retention", "-1ms"}, extra...)
	p.start()
	t.Cleanup(p.Stop)
	return p
}

// produceSeq produces recs one request at a time (one object each) and
// records the acknowledged offsets in them.
func (e *compactorEnv) produceSeq(ctx context.Context, recs []*kgo.Record) {
	e.t.Helper()
	for _, r := range recs {
		if err := e.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			e.t.Fatalf("produce: %v", err)
		}
	}
}

func (e *compactorEnv) counts(ctx context.Context) (objects, rows int) {
	e.t.Helper()
	objs, err := e.store.Objects(ctx, metadata.ObjectLive)
	if err != nil {
		e.t.Fatal(err)
	}
	n, err := e.store.CountIndexRows(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(objs), int(n)
}

func (e *compactorEnv) bucketKeys(ctx context.Context) map[string]bool {
	e.t.Helper()
	keys := map[string]bool{}
	if err := e.bucket.List(ctx, "", func(o storage.ObjectInfo) error {
		keys[o.Key] = true
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	return keys
}

// waitFor polls cond every 100 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readAll consumes topic from its earliest offset until every partition
// reached its high watermark and returns the records by partition. Errors
// are returned, not reported, so it can run in a goroutine.
func readAll(ctx context.Context, addr, topic string, ends map[int32]int64) (map[int32][]*kgo.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	out := map[int32][]*kgo.Record{}
	done := func() bool {
		for p, end := range ends {
			rs := out[p]
			if end > 0 && (len(rs) == 0 || rs[len(rs)-1].Offset < end-1) {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out, fmt.Errorf("read %s: %w", topic, ctx.Err())
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) { ferr = fmt.Errorf("fetch %s/%d: %w", topic, p, err) })
		if ferr != nil {
			return out, ferr
		}
		fs.EachRecord(func(r *kgo.Record) { out[r.Partition] = append(out[r.Partition], r) })
	}
	return out, nil
}

// sameRecords compares consumed records with the expected ones, by
// partition, in offset order: offsets, keys, values, headers, timestamps.
func sameRecords(want, got map[int32][]*kgo.Record) error {
	for p, ws := range want {
		gs := got[p]
		if len(gs) != len(ws) {
			return fmt.Errorf("partition %d: %d records, want %d", p, len(gs), len(ws))
		}
		for i, w := range ws {
			if gs[i].Offset != w.Offset {
				return fmt.Errorf("partition %d record %d: offset %d, want %d", p, i, gs[i].Offset, w.Offset)
			}
			if d := recordDiff(w, gs[i]); d != "" {
				return fmt.Errorf("partition %d offset %d: %s", p, w.Offset, d)
			}
		}
	}
	return nil
}

func byPartition(recs []*kgo.Record) (map[int32][]*kgo.Record, map[int32]int64) {
	out := map[int32][]*kgo.Record{}
	ends := map[int32]int64{}
	for _, r := range recs {
		out[r.Partition] = append(out[r.Partition], r)
		ends[r.Partition] = max(ends[r.Partition], r.Offset+1)
	}
	return out, ends
}

func TestCompactorMergesWhileConsuming(t *testing.T) {
	e := newCompactorEnv(t)
	ctx := testContext(t, 3*time.Minute)
	createTopic(t, ctx, e.cl, "merge", 3, nil)
	recs := genRecords(51, "merge", 3, 600)
	e.produceSeq(ctx, recs)
	want, ends := byPartition(recs)
	objs0, rows0 := e.counts(ctx)
	if objs0 < 300 {
		t.Fatalf("only %d objects from 600 produce requests", objs0)
	}

	// Consumers read everything again and again while the compactor works.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var readErr error
	reads := 0
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				got, err := readAll(rctx, e.agent.Addr, "merge", ends)
				cancel()
				if err == nil {
					err = sameRecords(want, got)
				}
				mu.Lock()
				reads++
				if err != nil && readErr == nil {
					readErr = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	c := e.startCompactor("--fan-in", "8", "--max-wait", "500ms")
	waitFor(t, 90*time.Second, "a 10x reduction of objects and index rows", func() bool {
		objs, rows := e.counts(ctx)
		return objs*10 <= objs0 && rows*10 <= rows0
	})
	time.Sleep(time.Second) // a few more reads over the final layout
	close(stop)
	wg.Wait()
	if readErr != nil {
		t.Fatalf("a consumer read different data during compaction: %v", readErr)
	}
	objs, rows := e.counts(ctx)
	t.Logf("objects %d -> %d, index rows %d -> %d; %d full reads during compaction", objs0, objs, rows0, rows, reads)
	if c.metric(t, "floe_compactor_merges_total") == 0 || c.metric(t, "floe_compactor_index_rows") != float64(rows) {
		t.Fatalf("metrics: merges %v, index rows %v (store says %d)", c.metric(t, "floe_compactor_merges_total"),
			c.metric(t, "floe_compactor_index_rows"), rows)
	}
	// After the grace period only live objects remain in the bucket.
	waitFor(t, 30*time.Second, "replaced objects to be deleted", func() bool {
		live, _ := e.store.Objects(ctx, metadata.ObjectLive)
		return len(e.bucketKeys(ctx)) == len(live)
	})
	got, err := readAll(ctx, e.agent.Addr, "merge", ends)
	if err == nil {
		err = sameRecords(want, got)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// fetchCode fetches one partition at offset with a raw request and returns
// the partition's error code.
func (e *compactorEnv) fetchCode(ctx context.Context, topic string, offset int64) int16 {
	t := e.t
	t.Helper()
	tp, err := e.store.Topic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	// The client picks the version: v13+ names the topic by id.
	rt.Topic, rt.TopicID = topic, tp.ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, e.cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func deleteRecords(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, offset int64) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	sp := resp.Topics[0].Partitions[0]
	return sp.LowWatermark, sp.ErrorCode
}

func onePartition(topic string, n int, ts func(i int) time.Time, value func(i int) []byte) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: value(i), Timestamp: ts(i)}
	}
	return recs
}

func TestCompactorRetentionAndDeleteRecords(t *testing.T) {
	e := newCompactorEnv(t)
	ctx := testContext(t, 3*time.Minute)
	str := func(s string) *string { return &s }
	createTopic(t, ctx, e.cl, "by-time", 1, map[string]*string{"retention.ms": str("60000")})
	createTopic(t, ctx, e.cl, "by-size", 1, map[string]*string{"retention.bytes": str("3000")})
	createTopic(t, ctx, e.cl, "delete-records", 1, nil)
	now := time.Now()
	small := func(i int) []byte { return []byte(fmt.Sprintf("v%d", i)) }
	oldThenNew := onePartition("by-time", 20, func(i int) time.Time {
		if i < 10 {
			return now.Add(-time.Hour)
		}
		return now
	}, small)
	e.produceSeq(ctx, oldThenNew)
	rng := rand.New(rand.NewPCG(1, 1))
	sized := onePartition("by-size", 30, func(int) time.Time { return now }, func(i int) []byte {
		// Random bytes: the producer's compression cannot shrink them.
		b := make([]byte, 200)
		for j := range b {
			b[j] = byte(rng.UintN(256))
		}
		return b
	})
	e.produceSeq(ctx, sized)
	deleted := onePartition("delete-records", 20, func(int) time.Time { return now }, small)
	e.produceSeq(ctx, deleted)

	// DeleteRecords needs no compactor: the agent advances the log start.
	if low, code := deleteRecords(t, ctx, e.cl, "delete-records", 7); low != 7 || code != 0 {
		t.Fatalf("DeleteRecords(7): low watermark %d, error %d", low, code)
	}
	if low, code := deleteRecords(t, ctx, e.cl, "delete-records", 3); low != 7 || code != 0 {
		t.Fatalf("DeleteRecords(3) after 7: low watermark %d, error %d; want 7 (never backwards)", low, code)
	}
	if _, code := deleteRecords(t, ctx, e.cl, "delete-records", 21); code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("DeleteRecords beyond the high watermark: error %d", code)
	}
	if off, _ := listOffset(t, ctx, e.cl, "delete-records", 0, -2); off != 7 {
		t.Fatalf("earliest offset after DeleteRecords: %d, want 7", off)
	}
	if code := e.fetchCode(ctx, "delete-records", 3); code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch below the log start: error %d, want OFFSET_OUT_OF_RANGE", code)
	}
	got, err := readAll(ctx, e.agent.Addr, "delete-records", map[int32]int64{0: 20})
	if err == nil {
		err = sameRecords(map[int32][]*kgo.Record{0: deleted[7:]}, got)
	}
	if err != nil {
		t.Fatalf("after DeleteRecords: %v", err)
	}
	if low, code := deleteRecords(t, ctx, e.cl, "delete-records", -1); low != 20 || code != 0 {
		t.Fatalf("DeleteRecords(-1): low watermark %d, error %d; want 20", low, code)
	}

	// No merges (huge fan-in and wait): retention sees one row per request.
	c := e.startCompactor("--fan-in", "1000", "--max-wait", "1h", "--grace", "1s")
	waitFor(t, 30*time.Second, "retention.ms to drop the hour-old records", func() bool {
		off, _ := listOffset(t, ctx, e.cl, "by-time", 0, -2)
		return off == 10
	})
	if code := e.fetchCode(ctx, "by-time", 5); code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch below the retention log start: error %d", code)
	}
	got, err = readAll(ctx, e.agent.Addr, "by-time", map[int32]int64{0: 20})
	if err == nil {
		err = sameRecords(map[int32][]*kgo.Record{0: oldThenNew[10:]}, got)
	}
	if err != nil {
		t.Fatalf("after retention.ms: %v", err)
	}
	waitFor(t, 30*time.Second, "retention.bytes to advance the log start", func() bool {
		off, _ := listOffset(t, ctx, e.cl, "by-size", 0, -2)
		return off > 0
	})
	// Like Kafka: what remains holds at least retention.bytes, and would
	// not without its oldest row.
	tp, err := e.store.Topic(ctx, "by-size")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := e.store.PartitionRows(ctx, tp.ID, 0, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, r := range rows {
		total += r.ByteLength
	}
	if total < 3000 || total-rows[0].ByteLength >= 3000 {
		t.Fatalf("retention.bytes 3000: %d bytes left in %d rows (first %d)", total, len(rows), rows[0].ByteLength)
	}
	// The objects of the dropped rows are deleted after the grace period.
	// (Until the compactor's collection marks them, the bucket holds
	// exactly the live objects too: wait for the deletions themselves.)
	waitFor(t, 30*time.Second, "objects of expired rows to be deleted", func() bool {
		live, _ := e.store.Objects(ctx, metadata.ObjectLive)
		return c.metric(t, `floe_compactor_deleted_objects_total{reason="replaced"}`) >= 10 &&
			len(e.bucketKeys(ctx)) == len(live)
	})
}

func TestCompactorDeletesOrphansAfterGrace(t *testing.T) {
	e := newCompactorEnv(t)
	ctx := testContext(t, 2*time.Minute)
	createTopic(t, ctx, e.cl, "orphans", 1, nil)
	e.produceSeq(ctx, onePartition("orphans", 5, func(int) time.Time { return time.Now() }, func(i int) []byte { return []byte{byte(i)} }))
	// What an agent leaves when it dies between PUT and commit.
	orphan := storage.NewObjectKey()
	if err := e.bucket.Put(ctx, orphan, []byte("uncommitted flush")); err != nil {
		t.Fatal(err)
	}
	put := time.Now()
	const grace = 3 * time.Second
	c := e.startCompactor("--grace", grace.String(), "--fan-in", "1000", "--max-wait", "1h")
	gcRuns := func() float64 { return c.metric(t, `floe_compactor_jobs_total{job="gc",result="ok"}`) }
	waitFor(t, 10*time.Second, "two GC rounds", func() bool { return gcRuns() >= 2 })
	if !e.bucketKeys(ctx)[orphan] {
		if time.Since(put) < grace {
			t.Fatalf("orphan deleted %v after its PUT, before the %v grace period", time.Since(put), grace)
		}
		t.Skip("machine too slow to observe the orphan within its grace period")
	}
	waitFor(t, 30*time.Second, "the orphan to be deleted", func() bool { return !e.bucketKeys(ctx)[orphan] })
	if gone := time.Since(put); gone < grace {
		t.Fatalf("orphan deleted after %v, before the grace period %v", gone, grace)
	}
	// Committed objects are untouched and the data is whole.
	live, _ := e.store.Objects(ctx, metadata.ObjectLive)
	keys := e.bucketKeys(ctx)
	if len(keys) != len(live) || len(live) != 5 {
		t.Fatalf("bucket %d objects, live %d, want 5", len(keys), len(live))
	}
	if c.metric(t, `floe_compactor_deleted_objects_total{reason="orphan"}`) != 1 {
		t.Fatalf("orphan deletions metric: %v", c.metric(t, `floe_compactor_deleted_objects_total{reason="orphan"}`))
	}
}

func TestCompactorKeyCompaction(t *testing.T) {
	e := newCompactorEnv(t)
	ctx := testContext(t, 3*time.Minute)
	str := func(s string) *string { return &s }
	createTopic(t, ctx, e.cl, "compacted", 2, map[string]*string{
		"cleanup.policy": str("compact"), "delete.retention.ms": str("600000")})
	rng := rand.New(rand.NewPCG(7, 8))
	now := time.Now()
	var recs []*kgo.Record
	for i := range 400 {
		r := &kgo.Record{Topic: "compacted", Partition: rng.Int32N(2),
			Key: []byte(fmt.Sprintf("key-%d", rng.IntN(25))), Value: []byte(fmt.Sprintf("value-%d", i)),
			Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}}}
		// The first half is an hour old: its tombstones expire; the rest
		// is fresh and keeps its tombstones.
		r.Timestamp = now.Add(time.Duration(i) * time.Millisecond)
		if i < 200 {
			r.Timestamp = r.Timestamp.Add(-time.Hour)
		}
		if rng.IntN(6) == 0 {
			r.Value = nil
		}
		recs = append(recs, r)
	}
	produceAll(t, ctx, e.cl, recs)
	all, ends := byPartition(recs)
	cutoff := now.Add(-10 * time.Minute)
	want := map[int32][]*kgo.Record{}
	for p, rs := range all {
		// Kafka's model: the latest record per key survives, unless it is
		// a tombstone older than delete.retention.ms; the log's last record
		// always stays (floe never leaves the log ending in a gap).
		slices.SortFunc(rs, func(a, b *kgo.Record) int { return int(a.Offset - b.Offset) })
		latest := map[string]int64{}
		for _, r := range rs {
			latest[string(r.Key)] = r.Offset
		}
		for i, r := range rs {
			if i == len(rs)-1 || (latest[string(r.Key)] == r.Offset && (r.Value != nil || !r.Timestamp.Before(cutoff))) {
				want[p] = append(want[p], r)
			}
		}
		if len(want[p]) >= len(rs)/2 {
			t.Fatalf("model keeps %d of %d records: too few superseded to test", len(want[p]), len(rs))
		}
	}
	c := e.startCompactor("--fan-in", "4", "--max-wait", "500ms")
	var lastErr error
	waitFor(t, 60*time.Second, "the compacted topic to match the model", func() bool {
		if c.metric(t, "floe_compactor_key_compactions_total") == 0 {
			return false
		}
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		got, err := readAll(rctx, e.agent.Addr, "compacted", ends)
		if err == nil {
			err = sameRecords(want, got)
		}
		lastErr = err
		return err == nil
	})
	if lastErr != nil {
		t.Fatal(lastErr)
	}
	// Earliest is still 0 (compaction never moves the log start) and the
	// high watermark is unchanged.
	for p, end := range ends {
		if off, _ := listOffset(t, ctx, e.cl, "compacted", p, -2); off != 0 {
			t.Fatalf("partition %d: earliest %d after key compaction", p, off)
		}
		if off, _ := listOffset(t, ctx, e.cl, "compacted", p, -1); off != end {
			t.Fatalf("partition %d: latest %d after key compaction, want %d", p, off, end)
		}
	}
}

func TestCompactorKill9DuringMerges(t *testing.T) {
	e := newCompactorEnv(t)
	ctx := testContext(t, 4*time.Minute)
	createTopic(t, ctx, e.cl, "crash", 3, nil)
	recs := genRecords(99, "crash", 3, 400)
	e.produceSeq(ctx, recs)
	want, ends := byPartition(recs)
	objs0, rows0 := e.counts(ctx)
	// A fixed id: the restarted compactor renews its own leases at once.
	// Bucket latency stretches each merge (GETs, then one PUT, then the
	// swap) so that the kills land inside merges, between PUT and swap too.
	c := e.startCompactor("--id", "crashy", "--fan-in", "4", "--max-level", "5", "--max-wait", "200ms", "--interval", "20ms",
		"--bucket-latency", "5ms")
	rng := rand.New(rand.NewPCG(5, 6))
	kills := 0
	for range 8 {
		time.Sleep(time.Duration(20+rng.IntN(300)) * time.Millisecond)
		c.Kill()
		kills++
		got, err := readAll(ctx, e.agent.Addr, "crash", ends)
		if err == nil {
			err = sameRecords(want, got)
		}
		if err != nil {
			t.Fatalf("after kill %d: %v", kills, err)
		}
		c.start()
	}
	waitFor(t, 90*time.Second, "merges to finish after the restarts", func() bool {
		objs, rows := e.counts(ctx)
		return objs*10 <= objs0 && rows*10 <= rows0
	})
	objs, rows := e.counts(ctx)
	t.Logf("%d kills; objects %d -> %d, index rows %d -> %d; %d orphans of killed jobs deleted", kills, objs0, objs, rows0, rows,
		strings.Count(c.Log(), "deleted orphan object"))
	got, err := readAll(ctx, e.agent.Addr, "crash", ends)
	if err == nil {
		err = sameRecords(want, got)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Objects written by killed merges are orphans; with the replaced
	// sources they are gone after the grace period.
	waitFor(t, 30*time.Second, "only live objects in the bucket", func() bool {
		live, _ := e.store.Objects(ctx, metadata.ObjectLive)
		keys := e.bucketKeys(ctx)
		for _, o := range live {
			if !keys[o.Key] {
				t.Fatalf("live object %s missing from the bucket", o.Key)
			}
		}
		return len(keys) == len(live)
	})
	if strings.Contains(c.Log(), "panic") {
		t.Fatalf("compactor panicked:\n%s", c.Log())
	}
}

// TestCompactorsOnPostgresAndMinIO runs two agents and two compactors on
// shared PostgreSQL and MinIO: the compactors share the work through their
// leases, and the merged result is read back whole through either agent.
func TestCompactorsOnPostgresAndMinIO(t *testing.T) {
	cl := newCluster(t, "floe_compactors")
	ctx := testContext(t, 5*time.Minute)
	ab := cl.startAgents(t, 2, "--flush-interval", "1ms")
	a, b := ab[0], ab[1]
	pcl, err := kgo.NewClient(kgo.SeedBrokers(a.Addr, b.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	createTopic(t, ctx, pcl, "pg-merge", 4, nil)
	recs := genRecords(77, "pg-merge", 4, 400)
	for _, r := range recs {
		if err := pcl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	want, ends := byPartition(recs)
	store, err := postgres.Open(ctx, cl.metaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	count := func() (int, int) {
		objs, err := store.Objects(ctx, metadata.ObjectLive)
		if err != nil {
			t.Fatal(err)
		}
		n, err := store.CountIndexRows(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(objs), int(n)
	}
	objs0, rows0 := count()
	var cs []*proc
	for i := range 2 {
		cs = append(cs, cl.startCompactor(t, "--id", fmt.Sprintf("pg-compactor-%d", i), "--interval", "50ms", "--grace", "2s",
			"--retention", "-1ms", "--fan-in", "8", "--max-wait", "300ms"))
	}
	waitFor(t, 2*time.Minute, "a 10x reduction on PostgreSQL and MinIO", func() bool {
		objs, rows := count()
		return objs*10 <= objs0 && rows*10 <= rows0
	})
	objs, rows := count()
	t.Logf("objects %d -> %d, index rows %d -> %d; merges by compactor: %v, %v", objs0, objs, rows0, rows,
		cs[0].metric(t, "floe_compactor_merges_total"), cs[1].metric(t, "floe_compactor_merges_total"))
	for _, addr := range []string{a.Addr, b.Addr} {
		got, err := readAll(ctx, addr, "pg-merge", ends)
		if err == nil {
			err = sameRecords(want, got)
		}
		if err != nil {
			t.Fatalf("through %s: %v", addr, err)
		}
	}
	if r := cs[0].metric(t, `floe_compactor_jobs_total{job="merge",result="error"}`) +
		cs[1].metric(t, `floe_compactor_jobs_total{job="merge",result="error"}`); r != 0 {
		t.Fatalf("%v merge jobs failed:\n%s\n%s", r, cs[0].Log(), cs[1].Log())
	}
}
