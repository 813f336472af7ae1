package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

func TestMarkerBatch(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{false, true} {
		b := markerBatch(77, 3, commit, 9, 1234)
		h, recs, err := kafkaproto.DecodeRecords(b)
		if err != nil {
			t.Fatal(err)
		}
		if h.TotalSize() != len(b) || !h.IsControl() || !h.IsTransactional() || h.ProducerID != 77 || h.ProducerEpoch != 3 ||
			h.BaseSequence != -1 || h.NumRecords != 1 || h.FirstTimestamp != 1234 || h.MaxTimestamp != 1234 {
			t.Fatalf("header %+v", h)
		}
		if crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)) != h.CRC {
			t.Fatal("bad CRC")
		}
		typ := uint16(0)
		if commit {
			typ = 1
		}
		k, v := recs[0].Key, recs[0].Value
		if len(k) != 4 || binary.BigEndian.Uint16(k) != 0 || binary.BigEndian.Uint16(k[2:]) != typ {
			t.Fatalf("key %x", k)
		}
		if len(v) != 6 || binary.BigEndian.Uint16(v) != 0 || binary.BigEndian.Uint32(v[2:]) != 9 {
			t.Fatalf("value %x", v)
		}
	}
}

// listOffset asks for the latest offset of topic/0 at an isolation level.
func listOffset(t *testing.T, cl *kgo.Client, topic string, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatal(err)
	}
	return p.Offset
}

// consumeValues reads topic/0 up to offset end at an isolation level and
// returns the record values in order.
func consumeValues(t *testing.T, ta *testAgent, topic string, committed bool, want int) []string {
	t.Helper()
	opts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100 * time.Millisecond)}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl := ta.client(t, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var out []string
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	// Nothing more may follow.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	cl.PollFetches(ctx2).EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	return out
}

func txnRecords(topic, prefix string, n int) []*kgo.Record {
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "%s%d", prefix, i)})
	}
	return rs
}

// produceInTxn begins a transaction on p and produces txnRecords(topic,
// prefix, n) in it.
func produceInTxn(t *testing.T, ctx context.Context, p *kgo.Client, topic, prefix string, n int) {
	t.Helper()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, txnRecords(topic, prefix, n)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestTransactionsReadCommitted: a committed, an aborted and an open
// transaction, with plain records in between. read_committed readers see
// the committed and plain records only and stop at the open transaction,
// whose first offset ListOffsets reports as the last stable offset;
// read_uncommitted readers see everything.
func TestTransactionsReadCommitted(t *testing.T) {
	ta := newParallelAgent(t)
	ctx := context.Background()
	admin := ta.client(t)
	ta.createTopic(t, admin, "tx", 1)
	p := ta.client(t, kgo.TransactionalID("tx-1"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	plain := ta.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))

	run := func(prefix string, n int, end kgo.TransactionEndTry) {
		t.Helper()
		produceInTxn(t, ctx, p, "tx", prefix, n)
		if err := p.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	run("c", 3, kgo.TryCommit) // 0-2, marker 3
	if err := plain.ProduceSync(ctx, txnRecords("tx", "p", 1)...).FirstErr(); err != nil {
		t.Fatal(err) // 4
	}
	run("a", 2, kgo.TryAbort)             // 5-6, marker 7
	produceInTxn(t, ctx, p, "tx", "o", 2) // 8-9, open
	if err := plain.ProduceSync(ctx, txnRecords("tx", "q", 1)...).FirstErr(); err != nil {
		t.Fatal(err) // 10
	}
	if hwm, lso := listOffset(t, admin, "tx", 0), listOffset(t, admin, "tx", 1); hwm != 11 || lso != 8 {
		t.Fatalf("high watermark %d, last stable offset %d; want 11 and 8", hwm, lso)
	}
	got := fmt.Sprint(consumeValues(t, ta, "tx", true, 4))
	if want := "[c0 c1 c2 p0]"; got != want {
		t.Fatalf("read_committed before the end: %s, want %s", got, want)
	}
	got = fmt.Sprint(consumeValues(t, ta, "tx", false, 9))
	if want := "[c0 c1 c2 p0 a0 a1 o0 o1 q0]"; got != want {
		t.Fatalf("read_uncommitted: %s, want %s", got, want)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err) // marker 11
	}
	if hwm, lso := listOffset(t, admin, "tx", 0), listOffset(t, admin, "tx", 1); hwm != 12 || lso != 12 {
		t.Fatalf("after commit: high watermark %d, last stable offset %d; want 12 and 12", hwm, lso)
	}
	got = fmt.Sprint(consumeValues(t, ta, "tx", true, 7))
	if want := "[c0 c1 c2 p0 o0 o1 q0]"; got != want {
		t.Fatalf("read_committed after the end: %s, want %s", got, want)
	}
}

// TestTransactionZombieFenced: a second producer with the same
// transactional id aborts the first one's open transaction and fences it.
func TestTransactionZombieFenced(t *testing.T) {
	ta := newParallelAgent(t)
	ctx := context.Background()
	admin := ta.client(t)
	ta.createTopic(t, admin, "zombie", 1)
	old := ta.client(t, kgo.TransactionalID("z"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceInTxn(t, ctx, old, "zombie", "old", 2)
	// The new instance: InitProducerId aborts the old transaction.
	fresh := ta.client(t, kgo.TransactionalID("z"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceInTxn(t, ctx, fresh, "zombie", "new", 2)
	// The zombie can neither produce nor commit.
	err := old.ProduceSync(ctx, txnRecords("zombie", "late", 1)...).FirstErr()
	if err == nil {
		t.Fatal("fenced producer's record was accepted")
	}
	if err := old.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("fenced producer committed")
	}
	if err := fresh.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(consumeValues(t, ta, "zombie", true, 2))
	if want := "[new0 new1]"; got != want {
		t.Fatalf("read_committed: %s, want %s", got, want)
	}
	if hwm, lso := listOffset(t, admin, "zombie", 0), listOffset(t, admin, "zombie", 1); hwm != lso {
		t.Fatalf("high watermark %d, last stable offset %d", hwm, lso)
	}
}

// TestTransactionTimeout: a transaction left open past its timeout is
// aborted by the coordinator, which fences the producer.
func TestTransactionTimeout(t *testing.T) {
	ta := newParallelAgent(t)
	ctx := context.Background()
	admin := ta.client(t)
	ta.createTopic(t, admin, "slow", 1)
	p := ta.client(t, kgo.TransactionalID("slow"), kgo.TransactionTimeout(time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceInTxn(t, ctx, p, "slow", "x", 3)
	if lso := listOffset(t, admin, "slow", 1); lso != 0 {
		t.Fatalf("last stable offset %d while open, want 0", lso)
	}
	deadline := time.Now().Add(10 * time.Second)
	for listOffset(t, admin, "slow", 1) != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("not aborted: last stable offset %d, high watermark %d", listOffset(t, admin, "slow", 1), listOffset(t, admin, "slow", 0))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("commit after the timeout: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	if got := consumeValues(t, ta, "slow", true, 0); len(got) != 0 {
		t.Fatalf("aborted records visible: %v", got)
	}
	// The producer recovers its id (KIP-588: the abort re-initialises it
	// with its old epoch) and carries on.
	if err := p.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("abort after the timeout: %v", err)
	}
	produceInTxn(t, ctx, p, "slow", "y", 2)
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(consumeValues(t, ta, "slow", true, 2)), "[y0 y1]"; got != want {
		t.Fatalf("after recovery: %s, want %s", got, want)
	}
}

// TestGroupTransactSession: consume-transform-produce with franz-go's
// GroupTransactSession on one agent: the output read_committed holds every
// input record once, and the group's committed offsets (written by EndTxn
// from TxnOffsetCommit) reach the end of the input.
func TestGroupTransactSession(t *testing.T) {
	ta := newParallelAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := ta.client(t)
	ta.createTopic(t, admin, "etl-in", 2)
	ta.createTopic(t, admin, "etl-out", 1)
	const n = 200
	in := ta.client(t)
	for i := range n {
		in.Produce(ctx, &kgo.Record{Topic: "etl-in", Value: fmt.Appendf(nil, "v%d", i)}, nil)
	}
	if err := in.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(ta.KafkaAddr()), kgo.TransactionalID("etl"),
		kgo.ConsumerGroup("etl-grp"), kgo.ConsumeTopics("etl-in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	done := 0
	for done < n && ctx.Err() == nil {
		fs := sess.PollFetches(ctx)
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		var out []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, &kgo.Record{Topic: "etl-out", Partition: 0, Value: r.Value})
		})
		if err := sess.ProduceSync(ctx, out...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatal(err)
		}
		if committed {
			done += len(out)
		}
	}
	got := consumeValues(t, ta, "etl-out", true, n)
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	if len(got) != n || len(seen) != n {
		t.Fatalf("read %d output records, %d distinct; want %d", len(got), len(seen), n)
	}
	offs, err := ta.store.FetchOffsets(ctx, "etl-grp")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, o := range offs {
		sum += o.Offset
	}
	if sum != n {
		t.Fatalf("committed offsets %+v add up to %d, want %d", offs, sum, n)
	}
}
