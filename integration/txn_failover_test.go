package integration

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTransactionsCoordinatorKilledBetweenTransactions: a transactional
// producer whose coordinator agent is killed -9 between two transactions
// goes on with the next ones, as against Kafka, where a broker dying moves
// the coordinator: its next transaction adds partitions while the dead
// agent is still in the live set and then while it leaves it. No call may
// fail, and a read_committed consumer sees every record once.
func TestTransactionsCoordinatorKilledBetweenTransactions(t *testing.T) {
	c := newCluster(t, "floe_txn_failover")
	ctx := testContext(t, 3*time.Minute)
	agents := c.startAgents(t, 2)
	seeds := []string{agents[0].Addr, agents[1].Addr}
	const topic = "txfo"
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	createTopic(t, ctx, admin, topic, 8, nil)
	for agents[0].metric(t, "floe_agent_live_agents") < 2 || agents[1].metric(t, "floe_agent_live_agents") < 2 {
		if ctx.Err() != nil {
			t.Fatal("agents never saw each other")
		}
		time.Sleep(100 * time.Millisecond)
	}
	ids := nodeIDs(t, ctx, seeds)
	victim, survivor := agents[0], agents[1]
	var txnID string
	for i := 0; txnID == ""; i++ {
		if i == 1000 {
			t.Fatal("no transactional id is coordinated by the victim")
		}
		if id := fmt.Sprintf("txfo-%d", i); txnCoordinator(t, ctx, admin, id) == ids[victim.Addr] {
			txnID = id
		}
	}

	cl, err := kgo.NewClient(append(kgoDebugLog(txnID), kgo.SeedBrokers(seeds...), kgo.TransactionalID(txnID),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RetryTimeout(time.Minute))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	const txns, perTxn, killAt = 40, 8, 5
	for i := range txns {
		if i == killAt {
			victim.Kill()
			t.Logf("killed the coordinator of %s", txnID)
		}
		start := time.Now()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatalf("transaction %d: begin: %v", i, err)
		}
		var recs []*kgo.Record
		for p := range perTxn {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: fmt.Appendf(nil, "t%02d-p%d", i, p)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("transaction %d: produce: %v", i, err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("transaction %d: commit: %v", i, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Logf("transaction %d took %v", i, d)
		}
	}

	// The mechanism, checked directly: franz-go names cached coordinators
	// by node id, so once the survivor has dropped the victim from its
	// live set, the victim's node id must still resolve, to a live agent.
	for survivor.metric(t, "floe_agent_live_agents") != 1 {
		if ctx.Err() != nil {
			t.Fatal("the survivor never dropped the victim from its live set")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cl.ForceMetadataRefresh()
	deadline := time.Now().Add(10 * time.Second)
	for {
		req := kmsg.NewPtrApiVersionsRequest()
		_, err := cl.Broker(int(ids[victim.Addr])).Request(ctx, req)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the departed coordinator's node id %d does not resolve: %v", ids[victim.Addr], err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	seen := readCommitted(t, ctx, []string{survivor.Addr}, topic, txns*perTxn)
	for i := range txns {
		for p := range perTxn {
			if v := fmt.Sprintf("t%02d-p%d", i, p); seen[v] != 1 {
				t.Errorf("%s seen %d times", v, seen[v])
			}
		}
	}
}

// kgoDebugLog returns a franz-go debug logger option, its lines prefixed
// with the time and name, when FLOE_KGO_LOG is set (it is verbose: every
// request).
func kgoDebugLog(name string) []kgo.Opt {
	if os.Getenv("FLOE_KGO_LOG") == "" {
		return nil
	}
	return []kgo.Opt{kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, func() string {
		return time.Now().Format("15:04:05.000000 ") + name + " "
	}))}
}
