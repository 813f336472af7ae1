package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKIP848StaticMembers: franz-go members with group.instance.id on the
// KIP-848 protocol. A static member that leaves for now (epoch -2, as
// Kafka's own consumer does on close) keeps its partitions and the group
// its epoch: its restart takes them back, the other member's assignment is
// never touched, and what was produced meanwhile is consumed exactly once.
// A second process with a live member's instance id gets
// UNRELEASED_INSTANCE_ID, and takes over once that member has left.
//
// franz-go's own close sends epoch -2 without the instance id; Kafka
// answers INVALID_REQUEST "InstanceId can't be null." and keeps the member
// (until its session expires), so the -2 with the instance id is sent here
// as Kafka's consumer sends it.
func TestKIP848StaticMembers(t *testing.T) {
	ta := newParallelAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic, g, n = "t848s", "g848s", 200
	prod := produceNumbered(t, ctx, ta, topic, 4, n)
	adm := kadm.NewClient(prod)
	produced := n
	produce := func(k int) {
		for range k {
			if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(produced))).FirstErr(); err != nil {
				t.Fatal(err)
			}
			produced++
		}
	}

	var mu sync.Mutex
	consumed := map[string]int{} // times each value was consumed
	consumedAll := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(consumed) == produced
	}
	a := startStaticMember(t, ctx, ta, g, topic, "a", &mu, consumed)
	b := startStaticMember(t, ctx, ta, g, topic, "b", &mu, consumed)
	waitUntil(ctx, t, "all records consumed", consumedAll)
	d := waitStable(ctx, t, prod, g, a, b)
	epoch := d.Epoch
	aParts, bParts := a.owned(), b.owned()
	aRevokes := a.revokes()
	if len(aParts) != 2 || len(bParts) != 2 {
		t.Fatalf("assignments a=%v b=%v, want 2 partitions each", aParts, bParts)
	}

	// (1) b restarts: franz-go's leave is refused, ours keeps its place.
	bID := b.leave(ctx, t)
	if r := staticHeartbeat(ctx, t, prod, g, bID, " ", -2); r.ErrorCode != kerr.InvalidRequest.Code || *r.ErrorMessage != "InstanceId can't be empty." {
		t.Fatalf("leave with a blank instance id = %+v", r)
	}
	if r := staticHeartbeat(ctx, t, prod, g, bID, "b", -2); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("leave with -2 = %+v", r)
	}
	produce(100) // half of them to b's partitions, which wait for it
	b2 := startStaticMember(t, ctx, ta, g, topic, "b", &mu, consumed)
	waitUntil(ctx, t, "all records consumed after b's restart", consumedAll)
	d = waitStable(ctx, t, prod, g, a, b2)
	if b2.id() == bID || d.Epoch != epoch || !slices.Equal(b2.owned(), bParts) || !slices.Equal(a.owned(), aParts) || a.revokes() != aRevokes {
		t.Fatalf("after b's restart: epoch %d (was %d), b %s %v (was %s %v), a %v (was %v), a's revocations %d (was %d)",
			d.Epoch, epoch, b2.id(), b2.owned(), bID, bParts, a.owned(), aParts, a.revokes(), aRevokes)
	}

	// (3) A second "a" while a is in the group: the instance id is in use.
	join := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	join.Group, join.MemberID, join.InstanceID = g, "a-second-process", kmsg.StringPtr("a")
	join.SubscribedTopicNames, join.RebalanceTimeoutMillis, join.Topics = []string{topic}, 30000, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r, err := join.RequestWith(ctx, prod); err != nil || r.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("join with a's instance id = %+v, %v", r, err)
	}
	a2 := startStaticMember(t, ctx, ta, g, topic, "a", &mu, consumed)
	waitUntil(ctx, t, "franz-go to surface UNRELEASED_INSTANCE_ID", func() bool {
		a2.mu.Lock()
		defer a2.mu.Unlock()
		return a2.unreleased
	})
	if len(a2.owned()) != 0 {
		t.Fatalf("second a owns %v while a is in the group", a2.owned())
	}
	// Once a leaves for now, the second process takes its place.
	aID := a.leave(ctx, t)
	if r := staticHeartbeat(ctx, t, prod, g, aID, "a", -2); r.ErrorCode != 0 {
		t.Fatalf("a's leave with -2 = %+v", r)
	}
	produce(100)
	waitUntil(ctx, t, "all records consumed after a's successor joined", consumedAll)
	d = waitStable(ctx, t, prod, g, a2, b2)
	if d.Epoch != epoch || !slices.Equal(a2.owned(), aParts) || !slices.Equal(b2.owned(), bParts) || b2.revokes() != 0 {
		t.Fatalf("after a's successor joined: epoch %d (was %d), a %v (was %v), b %v (was %v), b's revocations %d",
			d.Epoch, epoch, a2.owned(), aParts, b2.owned(), bParts, b2.revokes())
	}

	// (2) Exactly once across the restarts, every offset committed.
	a2.stop(ctx, t)
	b2.stop(ctx, t)
	mu.Lock()
	for v, k := range consumed {
		if k != 1 {
			t.Errorf("value %s consumed %d times", v, k)
		}
	}
	mu.Unlock()
	lag, err := adm.Lag(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	if gl := lag[g]; gl.Error() != nil || gl.Lag.Total() != 0 {
		t.Fatalf("lag %d (%v) after consuming everything", gl.Lag.Total(), gl.Error())
	}
}

// staticMember is a franz-go KIP-848 member with an instance id, polling
// and committing in a goroutine of its own, counting what it consumes in
// a map shared with the other members; it tracks its partitions through
// the assignment callbacks.
type staticMember struct {
	cl       *kgo.Client
	stopPoll context.CancelFunc
	done     chan struct{}

	mu         sync.Mutex
	assigned   map[int32]bool
	revoked    int  // partitions revoked or lost
	unreleased bool // a poll surfaced UNRELEASED_INSTANCE_ID
}

func startStaticMember(t *testing.T, ctx context.Context, ta *testAgent, g, topic, instance string, mu *sync.Mutex, consumed map[string]int) *staticMember {
	m := &staticMember{assigned: map[int32]bool{}, done: make(chan struct{})}
	drop := func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, p := range ps[topic] {
			delete(m.assigned, p)
			m.revoked++
		}
	}
	m.cl = ta.client(t, kgo.ConsumerGroup(g), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(), kgo.InstanceID(instance),
		kgo.ClientID(instance), kgo.FetchMaxWait(100*time.Millisecond), kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range ps[topic] {
				m.assigned[p] = true
			}
		}), kgo.OnPartitionsRevoked(drop), kgo.OnPartitionsLost(drop))
	pollCtx, stop := context.WithCancel(ctx)
	m.stopPoll = stop
	go func() {
		defer close(m.done)
		for pollCtx.Err() == nil {
			pctx, pcancel := context.WithTimeout(pollCtx, 300*time.Millisecond)
			fs := m.cl.PollFetches(pctx)
			pcancel()
			fs.EachRecord(func(r *kgo.Record) {
				mu.Lock()
				consumed[string(r.Value)]++
				mu.Unlock()
			})
			for _, e := range fs.Errors() {
				if errors.Is(e.Err, kerr.UnreleasedInstanceID) {
					m.mu.Lock()
					m.unreleased = true
					m.mu.Unlock()
				}
			}
			if err := m.cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("%s commit: %v", instance, err)
			}
		}
	}()
	return m
}

// stop ends the member's polling (its last poll committed).
func (m *staticMember) stop(ctx context.Context, t *testing.T) {
	t.Helper()
	m.stopPoll()
	select {
	case <-m.done:
	case <-ctx.Done():
		t.Fatal("poll loop did not stop")
	}
}

// leave stops the member and has franz-go leave the group, which it does
// with epoch -2 and no instance id: Kafka refuses that, and the member
// stays in the group, no longer heartbeating. It returns the member id.
func (m *staticMember) leave(ctx context.Context, t *testing.T) string {
	t.Helper()
	m.stop(ctx, t)
	err := m.cl.LeaveGroupContext(ctx)
	if want := kerr.InvalidRequest.Error() + ": InstanceId can't be null."; !errors.Is(err, kerr.InvalidRequest) || err.Error() != want {
		t.Fatalf("franz-go's static leave = %v, want INVALID_REQUEST: InstanceId can't be null.", err)
	}
	return m.id()
}

func (m *staticMember) id() string { id, _ := m.cl.GroupMetadata(); return id }

func (m *staticMember) owned() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.assigned))
}

func (m *staticMember) revokes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.revoked
}

// staticHeartbeat sends one ConsumerGroupHeartbeat for a static member at
// epoch, as Kafka's consumer does (its instance id on every request).
func staticHeartbeat(ctx context.Context, t *testing.T, cl *kgo.Client, g, member, instance string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = g, member, epoch, &instance
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// waitStable waits until ConsumerGroupDescribe shows g stable with exactly
// the members ms, each holding what its callbacks were given, and returns
// that description.
func waitStable(ctx context.Context, t *testing.T, cl *kgo.Client, g string, ms ...*staticMember) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	var d kmsg.ConsumerGroupDescribeResponseGroup
	waitUntil(ctx, t, "group "+g+" stable", func() bool {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{g}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		d = resp.Groups[0]
		if d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != len(ms) {
			return false
		}
		for _, dm := range d.Members {
			var parts []int32
			for _, tp := range dm.Assignment.TopicPartitions {
				parts = append(parts, tp.Partitions...)
			}
			slices.Sort(parts)
			j := slices.IndexFunc(ms, func(m *staticMember) bool { return m.id() == dm.MemberID })
			if j < 0 || dm.MemberEpoch != d.Epoch || !slices.Equal(parts, ms[j].owned()) {
				return false
			}
		}
		return true
	})
	return d
}
