package integration

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupCoordinator returns the node id FindCoordinator names for group.
func groupCoordinator(t testing.TB, ctx context.Context, cl *kgo.Client, group string) int32 {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = group
	req.CoordinatorKeys = []string{group}
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
	if resp.ErrorCode != 0 {
		t.Fatalf("FindCoordinator error %d", resp.ErrorCode)
	}
	return resp.NodeID
}

// TestGroupCoordinatorFailover: three agents on PostgreSQL + MinIO, three
// franz-go members seeded to different agents, on the classic protocol and
// on KIP-848. The coordinator's agent is
// killed (-9) mid-consumption. Every record is still consumed, no member is
// left out, commits after recovery land (lag 0), and a record seen again
// after the kill is never below the offset its partition had committed
// (and acknowledged) before the kill.
func TestGroupCoordinatorFailover(t *testing.T) {
	t.Run("classic", func(t *testing.T) { groupFailover(t, "floe_group_failover", nil) })
	// Kafka's 5 s heartbeat interval lets a KIP-848 group take two of them
	// (the owner's revocation, then the joiner's assignment) to take in each
	// new member: about as long as consuming half the records takes, so the
	// group might never be seen settled before the kill. floe dev's 1 s.
	t.Run("kip848", func(t *testing.T) {
		groupFailover(t, "floe_group_failover_848", []string{"--group-consumer-heartbeat-interval", "1s"}, kgo.ServerSideBalancer())
	})
}

func groupFailover(t *testing.T, db string, agentArgs []string, opts ...kgo.Opt) {
	c := newCluster(t, db)
	ctx := testContext(t, 5*time.Minute)
	agents := c.startAgents(t, 3, agentArgs...)
	seeds := []string{agents[0].Addr, agents[1].Addr, agents[2].Addr}
	const (
		n     = 9000
		group = "failover-grp"
		topic = "failover"
	)
	// Small batches so that consumption takes many polls.
	admin := groupTopic(t, ctx, agents[0].Addr, topic, 6, n, kgo.ProducerBatchMaxBytes(600), kgo.ProducerLinger(0))
	admin.Close()
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	var (
		mu          sync.Mutex
		seen        = map[[2]int64]int{} // (partition, offset) -> times
		acked       = map[int32]int64{}  // committed and acknowledged
		killed      bool
		firstCommit time.Time // first commit acknowledged after the kill
		ackedAtKill map[int32]int64
		badDup      []string
	)
	record := func(r *kgo.Record) {
		mu.Lock()
		defer mu.Unlock()
		k := [2]int64{int64(r.Partition), r.Offset}
		if seen[k] > 0 && killed && r.Offset < ackedAtKill[r.Partition] {
			badDup = append(badDup, fmt.Sprintf("%d/%d (committed %d before the kill)", r.Partition, r.Offset, ackedAtKill[r.Partition]))
		}
		seen[k]++
	}
	distinct := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var members []*kgo.Client
	for i := range 3 {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds[i]), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ClientID(fmt.Sprintf("member-%d", i)), kgo.DisableAutoCommit(), kgo.SessionTimeout(10 * time.Second),
			kgo.FetchMaxWait(200 * time.Millisecond), kgo.FetchMaxPartitionBytes(1), kgo.RetryTimeout(time.Minute)},
			append(opts, kgoDebugLog(fmt.Sprintf("member-%d", i))...)...)...)
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, cl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				fs := cl.PollFetches(pctx)
				cancel()
				fs.EachRecord(record)
				if err := cl.CommitUncommittedOffsets(ctx); err != nil {
					continue
				}
				mu.Lock()
				for _, ps := range cl.CommittedOffsets() {
					for p, eo := range ps {
						if killed && firstCommit.IsZero() && eo.Offset > ackedAtKill[p] {
							firstCommit = time.Now()
						}
						acked[p] = max(acked[p], eo.Offset)
					}
				}
				mu.Unlock()
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
		for _, m := range members {
			m.Close()
		}
	}()

	// Mid-consumption, with all three members in: kill the coordinator.
	adm := kadm.NewClient(admin)
	for {
		d, err := adm.DescribeGroups(ctx, group)
		if err == nil && d[group].State == "Stable" && len(d[group].Members) == 3 && distinct() >= n/4 {
			break
		}
		if distinct() >= n/2 || ctx.Err() != nil {
			t.Fatalf("group never settled with 3 members before half the records were consumed (%d seen)", distinct())
		}
		time.Sleep(20 * time.Millisecond)
	}
	coord := groupCoordinator(t, ctx, admin, group)
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var victim *proc
	for _, b := range md.Brokers {
		if b.NodeID == coord {
			addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
			for _, a := range agents {
				if a.Addr == addr {
					victim = a
				}
			}
		}
	}
	if victim == nil {
		t.Fatalf("coordinator node %d is none of the agents", coord)
	}
	mu.Lock()
	killed = true
	ackedAtKill = map[int32]int64{}
	for p, o := range acked {
		ackedAtKill[p] = o
	}
	atKill := len(seen)
	mu.Unlock()
	killedAt := time.Now()
	victim.Kill()
	t.Logf("killed coordinator node %d after %d of %d records; commits acked then: %v", coord, atKill, n, ackedAtKill)

	var survivor *kgo.Client
	for _, a := range agents {
		if a != victim {
			survivor, err = kgo.NewClient(kgo.SeedBrokers(a.Addr))
			if err != nil {
				t.Fatal(err)
			}
			defer survivor.Close()
			break
		}
	}
	// FindCoordinator moves to a live agent within seconds.
	for groupCoordinator(t, ctx, survivor, group) == coord {
		if time.Since(killedAt) > 30*time.Second {
			t.Fatal("FindCoordinator still names the dead agent after 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("FindCoordinator moved after %v", time.Since(killedAt).Round(time.Millisecond))

	for distinct() < n {
		if ctx.Err() != nil {
			t.Fatalf("only %d of %d records consumed", distinct(), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("all records consumed %v after the kill", time.Since(killedAt).Round(time.Millisecond))
	mu.Lock()
	t.Logf("first commit acknowledged %v after the kill", firstCommit.Sub(killedAt).Round(time.Millisecond))
	mu.Unlock()
	checkCommittedAtEnd(t, ctx, survivor, group, topic, n)
	// No member stuck: all three are in the stable group.
	sadm := kadm.NewClient(survivor)
	for {
		d, err := sadm.DescribeGroups(ctx, group)
		if err == nil && d[group].State == "Stable" && len(d[group].Members) == 3 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("group after failover: %+v %v", d[group], err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	dups := 0
	for _, c := range seen {
		if c > 1 {
			dups += c - 1
		}
	}
	t.Logf("records seen twice: %d", dups)
	if len(badDup) > 0 {
		t.Fatalf("%d records re-consumed below an acknowledged commit, e.g. %v", len(badDup), badDup[:min(5, len(badDup))])
	}
}
