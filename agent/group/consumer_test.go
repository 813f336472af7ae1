package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

type chHarness struct {
	t      *testing.T
	g      *ConsumerGroup
	now    time.Time
	topics map[string]int32
	next   int
}

func newCH(t *testing.T) *chHarness {
	h := &chHarness{t: t, now: time.Unix(1000, 0), topics: map[string]int32{"a": 4, "b": 2}}
	h.g = NewConsumerGroup("g", ConsumerConfig{SessionTimeout: 10 * time.Second, HeartbeatInterval: time.Second,
		NewMemberID: func() string { h.next++; return fmt.Sprintf("m%d", h.next) }})
	return h
}

func (h *chHarness) hb(r HeartbeatRequest) HeartbeatResult {
	if r.RebalanceTimeout == 0 {
		r.RebalanceTimeout = 30 * time.Second
	}
	return h.g.Heartbeat(h.now, r, h.topics)
}

func (h *chHarness) join(subs ...string) HeartbeatResult {
	h.t.Helper()
	r := h.hb(HeartbeatRequest{MemberEpoch: 0, Subscribed: subs, Owned: Assignment{}})
	if r.Err != 0 {
		h.t.Fatalf("join: error %d", r.Err)
	}
	return r
}

// settle heartbeats every member with what it was told until nothing
// changes; it returns each member's final assignment.
func (h *chHarness) settle(owned map[string]Assignment, epochs map[string]int32) {
	h.t.Helper()
	for range 10 {
		moved := false
		for _, id := range h.g.memberIDs() {
			r := h.hb(HeartbeatRequest{MemberID: id, MemberEpoch: epochs[id], RebalanceTimeout: -1, Owned: owned[id]})
			if r.Err != 0 {
				h.t.Fatalf("heartbeat %s: error %d", id, r.Err)
			}
			if r.Assignment != nil && !r.Assignment.equal(owned[id]) {
				owned[id] = r.Assignment
				moved = true
			}
			if r.MemberEpoch != epochs[id] {
				epochs[id] = r.MemberEpoch
				moved = true
			}
		}
		if !moved {
			return
		}
	}
	h.t.Fatal("group never settled")
}

func noOverlap(t *testing.T, owned map[string]Assignment) int {
	t.Helper()
	seen := Assignment{}
	n := 0
	for id, a := range owned {
		for tp, ps := range a {
			for _, p := range ps {
				if seen.has(tp, p) {
					t.Fatalf("%s/%d owned twice (second by %s)", tp, p, id)
				}
				seen.add(tp, p)
				n++
			}
		}
	}
	return n
}

func TestConsumerGroupJoinAndRebalance(t *testing.T) {
	h := newCH(t)
	r1 := h.join("a", "b")
	if r1.MemberEpoch != 1 || r1.Assignment.size() != 6 {
		t.Fatalf("first join = %+v", r1)
	}
	owned := map[string]Assignment{r1.MemberID: r1.Assignment}
	epochs := map[string]int32{r1.MemberID: r1.MemberEpoch}
	r2 := h.join("a", "b")
	// The newcomer gets nothing while m1 still owns everything.
	if r2.Assignment.size() != 0 || r2.MemberEpoch != 2 {
		t.Fatalf("second join = %+v", r2)
	}
	owned[r2.MemberID], epochs[r2.MemberID] = r2.Assignment, r2.MemberEpoch
	// m1 is told to revoke half; its epoch stays until it confirms.
	r := h.hb(HeartbeatRequest{MemberID: r1.MemberID, MemberEpoch: 1, RebalanceTimeout: -1, Owned: owned[r1.MemberID]})
	if r.MemberEpoch != 1 || r.Assignment.size() != 3 {
		t.Fatalf("revocation = %+v", r)
	}
	if h.g.StateName() != "Reconciling" {
		t.Fatalf("state %s", h.g.StateName())
	}
	owned[r1.MemberID] = r.Assignment
	h.settle(owned, epochs)
	if n := noOverlap(t, owned); n != 6 {
		t.Fatalf("%d partitions owned, want 6: %v", n, owned)
	}
	if owned[r1.MemberID].size() != 3 || epochs[r1.MemberID] != 2 || epochs[r2.MemberID] != 2 || h.g.StateName() != "Stable" {
		t.Fatalf("settled %v %v state %s", owned, epochs, h.g.StateName())
	}
	// Leaving hands everything back to the other member.
	if r := h.hb(HeartbeatRequest{MemberID: r2.MemberID, MemberEpoch: -1}); r.Err != 0 {
		t.Fatal(r.Err)
	}
	delete(owned, r2.MemberID)
	h.settle(owned, epochs)
	if owned[r1.MemberID].size() != 6 || epochs[r1.MemberID] != 3 {
		t.Fatalf("after leave %v %v", owned, epochs)
	}
}

func TestConsumerGroupErrors(t *testing.T) {
	h := newCH(t)
	r1 := h.join("a")
	for _, tc := range []struct {
		name string
		req  HeartbeatRequest
		want int16
	}{
		{"unknown member", HeartbeatRequest{MemberID: "x", MemberEpoch: 1, RebalanceTimeout: -1}, kerr.UnknownMemberID.Code},
		{"future epoch", HeartbeatRequest{MemberID: r1.MemberID, MemberEpoch: 7, RebalanceTimeout: -1}, kerr.FencedMemberEpoch.Code},
		{"join owning partitions", HeartbeatRequest{MemberEpoch: 0, Subscribed: []string{"a"}, Owned: Assignment{"a": {0}}}, kerr.InvalidRequest.Code},
		{"bad assignor", HeartbeatRequest{MemberEpoch: 0, Subscribed: []string{"a"}, Assignor: "x"}, kerr.UnsupportedAssignor.Code},
		{"leave unknown", HeartbeatRequest{MemberID: "x", MemberEpoch: -1}, kerr.UnknownMemberID.Code},
	} {
		if r := h.hb(tc.req); r.Err != tc.want {
			t.Errorf("%s: error %d, want %d", tc.name, r.Err, tc.want)
		}
	}
	if c := h.g.CommitCheck(r1.MemberID, 1); c != 0 {
		t.Errorf("commit at current epoch = %d", c)
	}
	if c := h.g.CommitCheck(r1.MemberID, 2); c != kerr.FencedMemberEpoch.Code {
		t.Errorf("commit at future epoch = %d", c)
	}
	if c := h.g.CommitCheck("", -1); c != kerr.UnknownMemberID.Code {
		t.Errorf("admin commit to a live group = %d", c)
	}
	// Session timeout removes the member.
	h.now = h.now.Add(11 * time.Second)
	h.g.Tick(h.now, h.topics)
	if !h.g.IsEmpty() || h.g.StateName() != "Empty" {
		t.Fatalf("member survived its session: %s", h.g.StateName())
	}
}

func TestConsumerGroupRangeAndSnapshot(t *testing.T) {
	h := newCH(t)
	r1 := h.hb(HeartbeatRequest{MemberEpoch: 0, Subscribed: []string{"a"}, Assignor: RangeAssignor, Owned: Assignment{}})
	r2 := h.hb(HeartbeatRequest{MemberEpoch: 0, Subscribed: []string{"a"}, Assignor: RangeAssignor, Owned: Assignment{}})
	owned := map[string]Assignment{r1.MemberID: r1.Assignment, r2.MemberID: r2.Assignment}
	epochs := map[string]int32{r1.MemberID: r1.MemberEpoch, r2.MemberID: r2.MemberEpoch}
	h.settle(owned, epochs)
	if fmt.Sprint(owned[r1.MemberID]["a"]) != "[0 1]" || fmt.Sprint(owned[r2.MemberID]["a"]) != "[2 3]" {
		t.Fatalf("range assignment %v", owned)
	}
	g2, err := RestoreConsumerGroup("g", h.g.cfg, h.g.Snapshot(), h.now)
	if err != nil {
		t.Fatal(err)
	}
	r := g2.Heartbeat(h.now, HeartbeatRequest{MemberID: r2.MemberID, MemberEpoch: epochs[r2.MemberID], RebalanceTimeout: -1,
		Owned: owned[r2.MemberID]}, h.topics)
	if r.Err != 0 || r.MemberEpoch != epochs[r2.MemberID] || r.Assignment != nil || g2.StateName() != "Stable" {
		t.Fatalf("heartbeat after restore = %+v state %s", r, g2.StateName())
	}
	// More partitions: a new epoch and a new target.
	h.topics["a"] = 6
	r = h.hb(HeartbeatRequest{MemberID: r1.MemberID, MemberEpoch: epochs[r1.MemberID], RebalanceTimeout: -1, Owned: owned[r1.MemberID]})
	if r.Err != 0 || h.g.Epoch() != epochs[r1.MemberID]+1 {
		t.Fatalf("after partition growth: %+v epoch %d", r, h.g.Epoch())
	}
}

func TestConsumerGroupStaticRestart(t *testing.T) {
	h := newCH(t)
	r1 := h.hb(HeartbeatRequest{MemberEpoch: 0, InstanceID: "i1", Subscribed: []string{"a", "b"}, Owned: Assignment{}})
	epoch := h.g.Epoch()
	r2 := h.hb(HeartbeatRequest{MemberEpoch: 0, InstanceID: "i1", Subscribed: []string{"a", "b"}, Owned: Assignment{}})
	if r2.MemberID == r1.MemberID || h.g.Epoch() != epoch || r2.Assignment.size() != 6 {
		t.Fatalf("static restart = %+v, group epoch %d -> %d", r2, epoch, h.g.Epoch())
	}
	if r := h.hb(HeartbeatRequest{MemberID: r1.MemberID, MemberEpoch: r1.MemberEpoch, RebalanceTimeout: -1}); r.Err != kerr.UnknownMemberID.Code {
		t.Fatalf("old static incarnation = %+v", r)
	}
}

// A regex subscription is resolved against the existing topics, whole names
// only, internal topics included; a topic created later that matches joins
// the assignment at the next heartbeat, with a new group epoch.
func TestConsumerRegexSubscription(t *testing.T) {
	h := newCH(t)
	h.topics = map[string]int32{"orders": 2, "orders-v2": 1, "xorders": 1, "__consumer_offsets": 1}
	re := "orders|__consumer_offsets"
	r := h.hb(HeartbeatRequest{MemberEpoch: 0, Regex: &re, Owned: Assignment{}, RebalanceTimeout: time.Second})
	if r.Err != 0 {
		t.Fatalf("join with regex: error %d", r.Err)
	}
	want := Assignment{"orders": {0, 1}, "__consumer_offsets": {0}}
	if !r.Assignment.equal(want) {
		t.Fatalf("assignment %v, want %v (whole-name matches only)", r.Assignment, want)
	}
	epoch := r.MemberEpoch

	// Nothing changed: same epoch, no new assignment to send.
	r = h.hb(HeartbeatRequest{MemberID: r.MemberID, MemberEpoch: epoch, RebalanceTimeout: -1, Owned: want})
	if r.Err != 0 || r.MemberEpoch != epoch || r.Assignment != nil {
		t.Fatalf("steady heartbeat = %+v, want epoch %d and no assignment", r, epoch)
	}

	// Widening the regex moves the member to a new epoch once it gave
	// up what no longer matches.
	id := r.MemberID
	owned, epochs := map[string]Assignment{id: want}, map[string]int32{id: epoch}
	wide := "orders.*"
	r = h.hb(HeartbeatRequest{MemberID: id, MemberEpoch: epoch, RebalanceTimeout: -1, Owned: want, Regex: &wide})
	if r.Err != 0 {
		t.Fatalf("changing the regex: error %d", r.Err)
	}
	if r.Assignment != nil {
		owned[id] = r.Assignment
	}
	h.settle(owned, epochs)
	want = Assignment{"orders": {0, 1}, "orders-v2": {0}}
	if epochs[id] <= epoch || !owned[id].equal(want) {
		t.Fatalf("after changing the regex: epoch %d owns %v, want a new epoch and %v", epochs[id], owned[id], want)
	}

	// A matching topic created later joins the assignment.
	epoch = epochs[id]
	h.topics["orders-eu"] = 3
	h.settle(owned, epochs)
	want = Assignment{"orders": {0, 1}, "orders-v2": {0}, "orders-eu": {0, 1, 2}}
	if epochs[id] <= epoch || !owned[id].equal(want) {
		t.Fatalf("after a matching topic was created: epoch %d owns %v, want a new epoch and %v", epochs[id], owned[id], want)
	}
	if !h.g.Subscribed()["orders-eu"] {
		t.Fatal("Subscribed() does not include regex-matched topics")
	}

	// A coordinator taking over keeps the resolution: no new epoch.
	epoch = epochs[id]
	g2, err := RestoreConsumerGroup("g", h.g.cfg, h.g.Snapshot(), h.now)
	if err != nil {
		t.Fatal(err)
	}
	h.g = g2
	r = h.hb(HeartbeatRequest{MemberID: id, MemberEpoch: epoch, RebalanceTimeout: -1, Owned: want})
	if r.Err != 0 || r.MemberEpoch != epoch || h.g.Epoch() != epoch {
		t.Fatalf("after restore: %+v, group epoch %d, want epoch %d unchanged", r, h.g.Epoch(), epoch)
	}
}

// TestConsumerGroupConfigure: a group's new session timeout (its
// consumer.session.timeout.ms) applies to a member from its next
// heartbeat, as in Kafka: the deadline it had stands until then.
func TestConsumerGroupConfigure(t *testing.T) {
	h := newCH(t) // 10 s sessions
	m := h.join("a").MemberID
	cfg := h.g.Config()
	cfg.SessionTimeout, cfg.HeartbeatInterval = 2*time.Second, 500*time.Millisecond
	h.g.Configure(cfg)
	if got := h.g.Config(); got.SessionTimeout != 2*time.Second || got.HeartbeatInterval != 500*time.Millisecond {
		t.Fatalf("Config after Configure: %+v", got)
	}
	h.now = h.now.Add(3 * time.Second)
	h.g.Tick(h.now, h.topics)
	if h.g.IsEmpty() {
		t.Fatal("member removed before its old 10 s deadline")
	}
	r := h.hb(HeartbeatRequest{MemberID: m, MemberEpoch: 1, RebalanceTimeout: -1})
	if r.Err != 0 {
		t.Fatalf("heartbeat: error %d", r.Err)
	}
	h.now = h.now.Add(1900 * time.Millisecond)
	h.g.Tick(h.now, h.topics)
	if h.g.IsEmpty() {
		t.Fatal("member removed within its new 2 s session")
	}
	h.now = h.now.Add(100 * time.Millisecond)
	h.g.Tick(h.now, h.topics)
	if !h.g.IsEmpty() {
		t.Fatal("member kept past its new 2 s session")
	}
}
