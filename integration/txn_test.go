package integration

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnCoordinator returns the node id FindCoordinator names for a
// transactional id.
func txnCoordinator(t testing.TB, ctx context.Context, cl *kgo.Client, id string) int32 {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1
	req.CoordinatorKey = id
	req.CoordinatorKeys = []string{id}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version >= 4 {
		if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			t.Fatalf("FindCoordinator = %+v", resp)
		}
		return resp.Coordinators[0].NodeID
	}
	return resp.NodeID
}

// nodeIDs maps agent addresses to their broker ids, as a fresh client sees
// them.
func nodeIDs(t testing.TB, ctx context.Context, seeds []string) map[string]int32 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, b := range md.Brokers {
		out[net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))] = b.NodeID
	}
	return out
}

// readCommitted reads topic from the start at read_committed until want
// records arrived, then a little longer to catch duplicates, and returns
// how many times each value was seen.
func readCommitted(t testing.TB, ctx context.Context, seeds []string, topic string, want int) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]int{}
	n := 0
	var extra time.Time
	for {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d committed records of %s before timeout", n, want, topic)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			n++
		})
		if n >= want && extra.IsZero() {
			extra = time.Now().Add(time.Second)
		}
		if !extra.IsZero() && time.Now().After(extra) {
			return seen
		}
	}
}

// TestTransactionsExactlyOnceAcrossAgentKill: two agents on PostgreSQL and
// MinIO, two franz-go GroupTransactSession workers copying an input topic to
// an output topic (consume, produce, commit offsets, all in one
// transaction), and kill -9 of the agent that coordinates one worker's
// transactional id while they run. A read_committed consumer of the output
// sees every input record exactly once, and the sessions carry on as
// against Kafka: none ends in a fatal state. The kill comes right after a
// commit of that worker, so that its next transaction's first request to
// the coordinator is an AddPartitionsToTxn, retried while the agent is dead
// and while it leaves the live set (departed.go tells why that used to
// fail franz-go's producer with "unknown broker").
//
// The agent killed is not the group's coordinator, so the group does not
// rebalance: partitions moving between workers while a transaction with
// offsets is being committed needs OffsetFetch to answer
// UNSTABLE_OFFSET_COMMIT for pending offsets (KIP-447), which the store
// offers (PendingTxnPartitions) and OffsetFetch does not use yet. For the
// same reason the input is produced once the group is stable.
func TestTransactionsExactlyOnceAcrossAgentKill(t *testing.T) {
	c := newCluster(t, "floe_txn_eos")
	ctx := testContext(t, 5*time.Minute)
	agents := c.startAgents(t, 2)
	seeds := []string{agents[0].Addr, agents[1].Addr}
	const (
		n     = 6000
		group = "eos-grp"
		in    = "eos-in"
		out   = "eos-out"
	)
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	createTopic(t, ctx, admin, in, 4, nil)
	createTopic(t, ctx, admin, out, 4, nil)

	// The victim: the agent that does not coordinate the group; one
	// worker's transactional id is coordinated by it, the other's by the
	// survivor.
	// Every agent's view of the live set must hold both agents before
	// placements are compared (views refresh at each heartbeat).
	listDeadline := time.Now().Add(30 * time.Second)
	for agents[0].metric(t, "floe_agent_live_agents") < 2 || agents[1].metric(t, "floe_agent_live_agents") < 2 {
		if time.Now().After(listDeadline) {
			t.Fatalf("agents never saw each other: live agents %v and %v", agents[0].metric(t, "floe_agent_live_agents"),
				agents[1].metric(t, "floe_agent_live_agents"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	ids := nodeIDs(t, ctx, seeds)
	if len(ids) != 2 || ids[agents[0].Addr] == ids[agents[1].Addr] {
		t.Fatalf("broker ids %v", ids)
	}
	groupNode := groupCoordinator(t, ctx, admin, group)
	victim, survivor := agents[0], agents[1]
	if ids[victim.Addr] == groupNode {
		victim, survivor = survivor, victim
	}
	var txnIDs []string
	for _, node := range []int32{ids[victim.Addr], ids[survivor.Addr]} {
		for i := 0; ; i++ {
			if i == 1000 {
				t.Fatalf("no transactional id is coordinated by node %d", node)
			}
			id := fmt.Sprintf("eos-%d", i)
			if txnCoordinator(t, ctx, admin, id) == node {
				txnIDs = append(txnIDs, id)
				break
			}
		}
	}

	var committed atomic.Int64 // input records whose transaction committed
	stop := make(chan struct{})
	// Worker 0 (coordinated by the victim) asks for the kill after one of
	// its commits and waits for it.
	killNow, killed := make(chan struct{}), make(chan struct{})
	var killOnce sync.Once
	var wg sync.WaitGroup
	for w, id := range txnIDs {
		sess, err := kgo.NewGroupTransactSession(append(kgoDebugLog(id), kgo.SeedBrokers(seeds[w]), kgo.TransactionalID(id),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.FetchMaxPartitionBytes(1), kgo.SessionTimeout(20*time.Second), kgo.RetryTimeout(time.Minute))...)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sess.Close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
				fs := sess.PollFetches(pctx)
				cancel()
				if err := sess.Begin(); err != nil {
					// Begin fails only once the producer is in a
					// fatal state, which a broker dying must not cause.
					t.Errorf("worker %s: begin: %v", id, err)
					return
				}
				var recs []*kgo.Record
				fs.EachRecord(func(r *kgo.Record) {
					recs = append(recs, &kgo.Record{Topic: out, Partition: r.Partition, Key: r.Key, Value: r.Value})
				})
				produceErr := sess.ProduceSync(ctx, recs...).FirstErr()
				try := kgo.TryCommit
				if produceErr != nil {
					t.Logf("worker %s: produce: %v (aborting)", id, produceErr)
					try = kgo.TryAbort
				}
				ok, err := sess.End(ctx, try)
				if err != nil {
					t.Logf("worker %s: end: %v", id, err)
					continue
				}
				if ok && try == kgo.TryCommit {
					if c := committed.Add(int64(len(recs))); w == 0 && c >= n/3 {
						killOnce.Do(func() {
							close(killNow)
							select {
							case <-killed:
							case <-ctx.Done():
							}
						})
					}
				}
			}
		}()
	}

	// Produce the input once both workers have their partitions.
	adm := kadm.NewClient(admin)
	for {
		gs, err := adm.DescribeGroups(ctx, group)
		if err == nil && gs[group].State == "Stable" && len(gs[group].Members) == 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("group never stable: %+v %v", gs, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Small batches: the workers take one per partition per transaction,
	// so the copy runs long enough to be interrupted.
	producer, err := kgo.NewClient(kgo.SeedBrokers(survivor.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(600), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: in, Partition: int32(i % 4), Value: fmt.Appendf(nil, "rec-%05d", i)})
	}
	produceAll(t, ctx, producer, recs)

	if c := committed.Load(); c > n/2 {
		t.Fatalf("%d of %d records were copied before the kill: make the copy slower", c, n)
	}
	select {
	case <-killNow:
	case <-ctx.Done():
		t.Fatalf("only %d records committed", committed.Load())
	}
	victim.Kill()
	close(killed)
	t.Logf("killed the coordinator of %s after %d records committed", txnIDs[0], committed.Load())

	seen := readCommitted(t, ctx, []string{survivor.Addr}, out, n)
	close(stop)
	wg.Wait()
	for i := range n {
		if v := fmt.Sprintf("rec-%05d", i); seen[v] != 1 {
			t.Errorf("%s seen %d times", v, seen[v])
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct output records, want %d", len(seen), n)
	}
	t.Logf("%d records copied in committed transactions", committed.Load())
}

// TestTransactionsAbortAndFencingAcrossAgents: a transactional producer on
// one agent, readers and a second producer instance on the other.
// Aborted records are visible read_uncommitted only; while a transaction is
// open the last stable offset stays at its first offset and the high
// watermark moves on; a second instance with the same transactional id
// fences the first, whose open transaction is aborted.
func TestTransactionsAbortAndFencingAcrossAgents(t *testing.T) {
	c := newCluster(t, "floe_txn_fence")
	ctx := testContext(t, 3*time.Minute)
	ab := c.startAgents(t, 2)
	a, b := ab[0], ab[1]
	reader, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	createTopic(t, ctx, reader, "fence", 1, nil)
	newProducer := func(seed string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.TransactionalID("fence-tx"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	txn := func(cl *kgo.Client, prefix string, n int) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var rs []*kgo.Record
		for i := range n {
			rs = append(rs, &kgo.Record{Topic: "fence", Partition: 0, Value: fmt.Appendf(nil, "%s%d", prefix, i)})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	end := func(cl *kgo.Client, how kgo.TransactionEndTry) {
		t.Helper()
		if err := cl.EndTransaction(ctx, how); err != nil {
			t.Fatal(err)
		}
	}
	offsets := func() (hwm, lso int64) {
		t.Helper()
		hwm, _ = listOffset(t, ctx, reader, "fence", 0, -1)
		req := kmsg.NewPtrListOffsetsRequest()
		req.IsolationLevel = 1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "fence"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, reader)
		if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("list offsets read_committed: %v %+v", err, resp)
		}
		return hwm, resp.Topics[0].Partitions[0].Offset
	}
	readAll := func(committed bool, want int) []string {
		t.Helper()
		opts := []kgo.Opt{kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics("fence"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(200 * time.Millisecond)}
		if committed {
			opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		var vs []string
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && (len(vs) < want || time.Until(deadline) > 4*time.Second) {
			pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { vs = append(vs, string(r.Value)) })
			cancel()
		}
		return vs
	}

	p1 := newProducer(a.Addr)
	txn(p1, "c", 3) // 0-2, commit marker 3
	end(p1, kgo.TryCommit)
	txn(p1, "a", 2) // 4-5, abort marker 6
	end(p1, kgo.TryAbort)
	txn(p1, "o", 2) // 7-8, open
	if hwm, lso := offsets(); hwm != 9 || lso != 7 {
		t.Fatalf("while open: high watermark %d, last stable offset %d; want 9, 7", hwm, lso)
	}
	if got, want := fmt.Sprint(readAll(true, 3)), "[c0 c1 c2]"; got != want {
		t.Fatalf("read_committed: %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(readAll(false, 7)), "[c0 c1 c2 a0 a1 o0 o1]"; got != want {
		t.Fatalf("read_uncommitted: %s, want %s", got, want)
	}

	// A second instance through the other agent fences the first and
	// aborts its open transaction (abort marker 9).
	p2 := newProducer(b.Addr)
	txn(p2, "n", 2) // 10-11
	if err := p1.ProduceSync(ctx, &kgo.Record{Topic: "fence", Partition: 0, Value: []byte("zombie")}).FirstErr(); err == nil {
		t.Fatal("the fenced producer's record was accepted")
	}
	if err := p1.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the fenced producer committed")
	}
	end(p2, kgo.TryCommit) // marker 12
	if hwm, lso := offsets(); hwm != 13 || lso != 13 {
		t.Fatalf("after the end: high watermark %d, last stable offset %d; want 13, 13", hwm, lso)
	}
	if got, want := fmt.Sprint(readAll(true, 5)), "[c0 c1 c2 n0 n1]"; got != want {
		t.Fatalf("read_committed after fencing: %s, want %s", got, want)
	}
}
