package integration

// The Go half of the client compatibility matrix: franz-go, sarama (with
// Kafka 2.8 and 4.0 configured) and segmentio/kafka-go, each against
// `floe dev` and against two `floe agent`s on real PostgreSQL and MinIO.
// Every case ends with one `compat: client | target | feature | result`
// log line; docs/compatibility.md is built from `go test -v` output.
//
// Layout: this file holds the targets, the shared message model and the
// franz-go cases; compat_go_sarama_test.go and compat_go_kafkago_test.go
// hold the other two clients.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// compatTarget is one floe deployment the clients run against.
type compatTarget struct {
	name string
	// produce is the address producers are seeded with, seeds those of
	// consumers and groups (every agent).
	produce string
	seeds   []string
	// produceID and consumeID are the client ids of producers and of
	// consumers. On the cluster they name different zones (floe_az=), and
	// each agent has its own zone, so every record is produced through
	// one agent and read through the other.
	produceID, consumeID string
	// admin is a franz-go client pinned to Kafka 3.0's versions, so the
	// raw Fetch of rawBatches keeps topic names.
	admin *kgo.Client
	// procs are the floe processes, for their logs on failure.
	procs []*proc
}

func newCompatTarget(t *testing.T, name string, procs []*proc, produceID, consumeID string) *compatTarget {
	tg := &compatTarget{name: name, produce: procs[0].Addr, procs: procs, produceID: produceID, consumeID: consumeID}
	for _, p := range procs {
		tg.seeds = append(tg.seeds, p.Addr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.seeds...), kgo.MaxVersions(kversion.V3_0_0()), kgo.ClientID(consumeID))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	tg.admin = cl
	// Floe's log is the first thing to read when a client disagrees.
	t.Cleanup(func() {
		if t.Failed() {
			for i, p := range procs {
				t.Logf("floe %s process %d log:\n%s", name, i, p.Log())
			}
		}
	})
	return tg
}

// compatClient is one client variant: it runs its feature subtests
// against a target; label names it in the matrix lines.
type compatClient struct {
	name, label string
	run         func(t *testing.T, tg *compatTarget, label string)
}

// TestCompatGo runs every Go client's cases against `floe dev` and against
// two agents on PostgreSQL + MinIO (skipped, as pgtest and miniotest
// decide, when the servers are unavailable and FLOE_REQUIRE_SERVERS is
// not 1). Subtests are target/client/feature; clients of one target run
// in parallel on distinct topics, groups and transactional ids.
func TestCompatGo(t *testing.T) {
	clients := []compatClient{
		{"franz-go", "franz-go", runCompatFranz},
		{"sarama-2.8", "sarama 2.8", runCompatSarama},
		{"sarama-4.0", "sarama 4.0", runCompatSarama},
		{"kafka-go", "kafka-go", runCompatKafkaGo},
	}
	forEachCompatTarget(t, "floe_compat_go", func(t *testing.T, tg *compatTarget) {
		for _, c := range clients {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t, tg, c.label)
			})
		}
	})
}

// forEachCompatTarget runs fn as subtest "dev" against `floe dev` and as
// "cluster" against two agents on PostgreSQL + MinIO (database db), whose
// clients cross agents (checkZoneLeaders). The cluster skips, or fails
// with FLOE_REQUIRE_SERVERS=1, when the servers are unavailable, as pgtest
// and miniotest decide.
func forEachCompatTarget(t *testing.T, db string, fn func(t *testing.T, tg *compatTarget)) {
	t.Run("dev", func(t *testing.T) {
		p := startFloe(t, "dev", "--data-dir", t.TempDir())
		fn(t, newCompatTarget(t, "dev", []*proc{p}, "floe-compat", "floe-compat"))
	})
	t.Run("cluster", func(t *testing.T) {
		c := newClusterTB(t, db)
		a, b := c.startAgent(t, "--zone", "za"), c.startAgent(t, "--zone", "zb")
		tg := newCompatTarget(t, "cluster", []*proc{a, b}, "floe-compat,floe_az=za", "floe-compat,floe_az=zb")
		checkZoneLeaders(t, tg)
		fn(t, tg)
	})
}

// consumers is the consumers' bootstrap list: every agent.
func (tg *compatTarget) consumers() string { return strings.Join(tg.seeds, ",") }

// checkZoneLeaders makes sure the cluster target's clients cross agents:
// a producer's Metadata names the first agent as every partition's
// leader, a consumer's the second. An agent learns of a newly started one
// from the metadata store a moment later, so this waits up to 15 s for
// both to agree.
func checkZoneLeaders(t *testing.T, tg *compatTarget) {
	ctx := testContext(t, time.Minute)
	createTopic(t, ctx, tg.admin, "compat-zones", 4, nil)
	mismatch := func() string {
		ids := nodeIDs(t, ctx, tg.seeds)
		for i, clientID := range []string{tg.produceID, tg.consumeID} {
			want, ok := ids[tg.procs[i].Addr]
			if !ok || len(ids) != len(tg.procs) {
				return fmt.Sprintf("brokers in Metadata: %v", ids)
			}
			cl := newKgo(t, kgo.SeedBrokers(tg.seeds...), kgo.ClientID(clientID))
			md, err := kadm.NewClient(cl).Metadata(ctx, "compat-zones")
			cl.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range md.Topics["compat-zones"].Partitions {
				if p.Leader != want {
					return fmt.Sprintf("client id %q: leader of compat-zones/%d is node %d, want %d (%s)", clientID, p.Partition, p.Leader, want, tg.procs[i].Addr)
				}
			}
		}
		return ""
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		msg := mismatch()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// compatCase runs one feature as a subtest and logs its matrix line.
func compatCase(t *testing.T, tg *compatTarget, client, feature string, f func(t *testing.T)) {
	t.Run(strings.ReplaceAll(feature, " ", "_"), func(t *testing.T) {
		compatResult(t, client, tg.name, feature)
		f(t)
	})
}

// compatResult logs the (sub)test's matrix line when it ends:
//
//	compat: CLIENT | TARGET | FEATURE | pass|FAIL|skip
func compatResult(t *testing.T, client, target, feature string) {
	t.Cleanup(func() {
		res := "pass"
		switch {
		case t.Failed():
			res = "FAIL"
		case t.Skipped():
			res = "skip"
		}
		t.Logf("compat: %s | %s | %s | %s", client, target, feature, res)
	})
}

// compatValue is a compressible value, so that clients which fall back to
// an uncompressed batch when compression does not pay (franz-go) still
// store the codec asked for.
func compatValue(tag string, i int) []byte {
	return bytes.Repeat(fmt.Appendf(nil, "%s value %04d|", tag, i), 8)
}

// compatBaseTime is the first explicit record timestamp.
var compatBaseTime = time.UnixMilli(1_700_000_000_000)

// compatMsg is a consumed or acknowledged record in a client-neutral form,
// so that sarama and kafka-go results compare field by field.
type compatMsg struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
	Headers   string // "k=v;k=v"
	Time      int64  // Unix milliseconds
}

func (m compatMsg) String() string {
	return fmt.Sprintf("%d/%d key=%q value=%q headers=%q ts=%d", m.Partition, m.Offset, m.Key, m.Value, m.Headers, m.Time)
}

// compareMsgs fails t unless got equals want, both ordered by partition
// and offset.
func compareMsgs(t testing.TB, what string, got, want []compatMsg) {
	t.Helper()
	order := func(ms []compatMsg) {
		sort.SliceStable(ms, func(i, j int) bool {
			if ms[i].Partition != ms[j].Partition {
				return ms[i].Partition < ms[j].Partition
			}
			return ms[i].Offset < ms[j].Offset
		})
	}
	order(got)
	order(want)
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("%s: record %d is\n  %v\nwant\n  %v", what, i, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
}

// checkStoredCodec fails t unless partition 0 of topic holds n records in
// batches that all carry codec, as stored by floe.
func checkStoredCodec(t *testing.T, ctx context.Context, tg *compatTarget, topic string, codec int8, n int) {
	t.Helper()
	hs := rawBatches(t, ctx, tg.admin, topic)
	total := 0
	for _, h := range hs {
		if h.Codec() != codec {
			t.Fatalf("%s: batch at offset %d stored with codec %d, want %d", topic, h.BaseOffset, h.Codec(), codec)
		}
		total += int(h.NumRecords)
	}
	if total != n {
		t.Fatalf("%s: %d records in %d stored batches, want %d", topic, total, len(hs), n)
	}
}

// checkIdempotentBatches fails t unless every stored batch of partition 0
// of topic carries a producer id and sequences that continue from 0 —
// what an idempotent producer writes.
func checkIdempotentBatches(t *testing.T, ctx context.Context, tg *compatTarget, topic string, n int) {
	t.Helper()
	hs := rawBatches(t, ctx, tg.admin, topic)
	seq, pid := int32(0), hs[0].ProducerID
	for _, h := range hs {
		if h.ProducerID < 0 || h.ProducerID != pid || h.IsTransactional() {
			t.Fatalf("%s: batch at %d has producer id %d (transactional %v), want one non-transactional id %d", topic, h.BaseOffset, h.ProducerID, h.IsTransactional(), pid)
		}
		if h.BaseSequence != seq {
			t.Fatalf("%s: batch at %d has base sequence %d, want %d", topic, h.BaseOffset, h.BaseSequence, seq)
		}
		seq += h.NumRecords
	}
	if int(seq) != n {
		t.Fatalf("%s: %d records stored, want %d", topic, seq, n)
	}
}

// checkTxnLayout fails t unless partition 0 of topic holds, in order, a
// committed transaction of 10, an aborted one of 10 and a committed one of
// 5, each followed by its control marker: the layout Kafka writes.
func checkTxnLayout(t *testing.T, ctx context.Context, tg *compatTarget, topic string) {
	t.Helper()
	var layout []string
	markers := map[string]bool{}
	for _, h := range rawBatches(t, ctx, tg.admin, topic) {
		kind := "data"
		if h.IsControl() {
			kind = "marker"
		}
		if !h.IsTransactional() {
			kind = "non-transactional-" + kind
		}
		item := fmt.Sprintf("%s@%d+%d", kind, h.BaseOffset, h.NumRecords)
		layout = append(layout, item)
		if kind == "marker" {
			markers[item] = true
		}
	}
	// Data batches may be split; markers must sit at 10, 21 and 27, and
	// nothing may be stored outside a transaction.
	want := []string{"marker@10+1", "marker@21+1", "marker@27+1"}
	if len(markers) != len(want) || strings.Contains(strings.Join(layout, " "), "non-transactional") {
		t.Fatalf("%s stored as %v, want transactional data with markers %v", topic, layout, want)
	}
	for _, m := range want {
		if !markers[m] {
			t.Fatalf("%s stored as %v, want transactional data with markers %v", topic, layout, want)
		}
	}
}

// txnValues lists the values of the three transactions checkTxnLayout
// expects, with the offsets Kafka gives them: c-0..9 at 0–9, a-0..9 at
// 11–20, c-10..14 at 22–26.
func txnValues() (committed, aborted, last []string) {
	for i := range 10 {
		committed = append(committed, fmt.Sprintf("c-%d", i))
		aborted = append(aborted, fmt.Sprintf("a-%d", i))
	}
	for i := 10; i < 15; i++ {
		last = append(last, fmt.Sprintf("c-%d", i))
	}
	return
}

// txnWant renders the records a consumer must see, "offset=value", at
// read_committed (withAborted false) or read_uncommitted.
func txnWant(withAborted bool) []string {
	c, a, l := txnValues()
	var out []string
	for i, v := range c {
		out = append(out, fmt.Sprintf("%d=%s", i, v))
	}
	if withAborted {
		for i, v := range a {
			out = append(out, fmt.Sprintf("%d=%s", 11+i, v))
		}
	}
	for i, v := range l {
		out = append(out, fmt.Sprintf("%d=%s", 22+i, v))
	}
	return out
}

// ---- franz-go ----

// compatKgoRecords makes n records for topic over partitions, with keys,
// compressible values, two headers and explicit timestamps.
func compatKgoRecords(topic, tag string, partitions int32, n int) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{
			Topic: topic, Partition: int32(i) % partitions,
			Key:       fmt.Appendf(nil, "%s-key-%d", tag, i),
			Value:     compatValue(tag, i),
			Headers:   []kgo.RecordHeader{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}, {Key: "tag", Value: []byte(tag)}},
			Timestamp: compatBaseTime.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return recs
}

func newKgo(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func runCompatFranz(t *testing.T, tg *compatTarget, client string) {
	ctx := testContext(t, 2*time.Minute)
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		id    int8
	}{
		{"none", kgo.NoCompression(), 0},
		{"gzip", kgo.GzipCompression(), 1},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	}
	for _, c := range codecs {
		compatCase(t, tg, client, c.name+" produce+consume", func(t *testing.T) {
			topic := "franz-go-" + c.name
			createTopic(t, ctx, tg.admin, topic, 1, nil)
			prod := newKgo(t, kgo.SeedBrokers(tg.produce), kgo.ClientID(tg.produceID), kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ProducerBatchCompression(c.codec))
			recs := compatKgoRecords(topic, c.name, 1, 200)
			produceAll(t, ctx, prod, recs)
			checkStoredCodec(t, ctx, tg, topic, c.id, len(recs))
			verifyRecords(t, recs, compatConsumeKgo(t, ctx, tg, topic, len(recs)))
		})
	}

	compatCase(t, tg, client, "idempotent produce", func(t *testing.T) {
		const topic = "franz-go-idempotent"
		createTopic(t, ctx, tg.admin, topic, 1, nil)
		// Idempotence is franz-go's default.
		prod := newKgo(t, kgo.SeedBrokers(tg.produce), kgo.ClientID(tg.produceID), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(20))
		recs := compatKgoRecords(topic, "idem", 1, 100)
		produceAll(t, ctx, prod, recs)
		for _, r := range recs {
			if r.ProducerID < 0 {
				t.Fatalf("record %d acknowledged without a producer id", r.Offset)
			}
		}
		checkIdempotentBatches(t, ctx, tg, topic, len(recs))
		verifyRecords(t, recs, compatConsumeKgo(t, ctx, tg, topic, len(recs)))
	})

	compatCase(t, tg, client, "consumer group commit+resume", func(t *testing.T) {
		const topic, group = "franz-go-group", "franz-go-g"
		createTopic(t, ctx, tg.admin, topic, 3, nil)
		prod := newKgo(t, kgo.SeedBrokers(tg.produce), kgo.ClientID(tg.produceID), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		first := compatKgoRecords(topic, "first", 3, 60)
		produceAll(t, ctx, prod, first)
		member := func() *kgo.Client {
			cl, err := kgo.NewClient(kgo.SeedBrokers(tg.seeds...), kgo.ClientID(tg.consumeID), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			return cl
		}
		// poll reads until n records arrived, then half a second more to
		// catch any record read twice.
		poll := func(cl *kgo.Client, n int) []*kgo.Record {
			var got []*kgo.Record
			var quiet time.Time
			for {
				pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				fs := cl.PollFetches(pctx)
				cancel()
				if ctx.Err() != nil {
					t.Fatalf("group read %d of %d records before timeout", len(got), n)
				}
				fs.EachError(func(topic string, p int32, err error) {
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("fetch %s/%d: %v", topic, p, err)
					}
				})
				got = append(got, fs.Records()...)
				if len(got) >= n {
					if quiet.IsZero() {
						quiet = time.Now().Add(500 * time.Millisecond)
					} else if time.Now().After(quiet) {
						return got
					}
				}
			}
		}
		checkCommitted := func(recs []*kgo.Record) {
			t.Helper()
			want := map[int32]int64{}
			for _, r := range recs {
				want[r.Partition] = max(want[r.Partition], r.Offset+1)
			}
			offs, err := kadm.NewClient(tg.admin).FetchOffsets(ctx, group)
			if err != nil {
				t.Fatal(err)
			}
			for p, w := range want {
				o, ok := offs.Lookup(topic, p)
				if !ok || o.Err != nil || o.At != w {
					t.Fatalf("committed offset of %s/%d = %+v, want %d", topic, p, o, w)
				}
			}
		}

		cl := member()
		got := poll(cl, len(first))
		verifyRecords(t, first, byPartitionOrdered(got))
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		cl.Close() // leaves the group
		checkCommitted(first)

		second := compatKgoRecords(topic, "second", 3, 30)
		produceAll(t, ctx, prod, second)
		cl = member()
		defer cl.Close()
		got = poll(cl, len(second))
		for _, r := range got {
			if len(r.Headers) != 2 || string(r.Headers[1].Value) != "second" {
				t.Fatalf("the new member re-read %s/%d (%s), which was committed", topic, r.Partition, r.Key)
			}
		}
		if len(got) != len(second) {
			t.Fatalf("the new member read %d records, want the %d new ones", len(got), len(second))
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		checkCommitted(append(first, second...))
	})

	compatCase(t, tg, client, "transactional produce read_committed", func(t *testing.T) {
		const topic = "franz-go-txn"
		createTopic(t, ctx, tg.admin, topic, 1, nil)
		prod := newKgo(t, kgo.SeedBrokers(tg.produce), kgo.ClientID(tg.produceID), kgo.TransactionalID("franz-go-txn-"+tg.name),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		c, a, l := txnValues()
		txn := func(values []string, commit kgo.TransactionEndTry) {
			t.Helper()
			if err := prod.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			var recs []*kgo.Record
			for _, v := range values {
				recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
			}
			if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if err := prod.EndTransaction(ctx, commit); err != nil {
				t.Fatal(err)
			}
		}
		txn(c, kgo.TryCommit)
		txn(a, kgo.TryAbort)
		txn(l, kgo.TryCommit)
		checkTxnLayout(t, ctx, tg, topic)
		for _, iso := range []struct {
			name  string
			level kgo.IsolationLevel
			all   bool
		}{{"read_committed", kgo.ReadCommitted(), false}, {"read_uncommitted", kgo.ReadUncommitted(), true}} {
			want := txnWant(iso.all)
			cons := newKgo(t, kgo.SeedBrokers(tg.seeds...), kgo.ClientID(tg.consumeID), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso.level),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
			var got []string
			// The last committed record is last in the log: once it is
			// read, every aborted record would have been read before it.
			for len(got) == 0 || !strings.HasSuffix(got[len(got)-1], "=c-14") {
				fs := cons.PollFetches(ctx)
				if ctx.Err() != nil {
					t.Fatalf("%s: read %v before timeout", iso.name, got)
				}
				fs.EachError(func(topic string, p int32, err error) { t.Fatalf("%s: fetch %s/%d: %v", iso.name, topic, p, err) })
				fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%d=%s", r.Offset, r.Value)) })
			}
			cons.Close()
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("%s read\n  %v\nwant\n  %v", iso.name, got, want)
			}
		}
	})
}

// compatConsumeKgo reads topic from the start with a consumer of tg until
// n records arrived and returns them by partition in offset order.
func compatConsumeKgo(t *testing.T, ctx context.Context, tg *compatTarget, topic string, n int) map[int32][]*kgo.Record {
	t.Helper()
	cl := newKgo(t, kgo.SeedBrokers(tg.seeds...), kgo.ClientID(tg.consumeID), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s before timeout", len(got), n, topic)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	return byPartitionOrdered(got)
}

// byPartitionOrdered groups records by partition in offset order.
func byPartitionOrdered(recs []*kgo.Record) map[int32][]*kgo.Record {
	out := map[int32][]*kgo.Record{}
	for _, r := range recs {
		out[r.Partition] = append(out[r.Partition], r)
	}
	for _, rs := range out {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Offset < rs[j].Offset })
	}
	return out
}
