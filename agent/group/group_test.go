package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// harness drives one Group through scripted steps with a fake clock and
// records every reply by the name of the request that got it.
type harness struct {
	t     *testing.T
	g     *Group
	now   time.Time
	next  int
	joins map[string]*JoinResult
	syncs map[string]*SyncResult
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, now: time.Unix(1000, 0), joins: map[string]*JoinResult{}, syncs: map[string]*SyncResult{}}
	h.g = New("g", Config{
		InitialRebalanceDelay: 100 * time.Millisecond,
		MinSessionTimeout:     time.Second, MaxSessionTimeout: time.Hour,
		NewMemberID: func(c string) string { h.next++; return fmt.Sprintf("%s-%d", c, h.next) },
	})
	return h
}

func protos(names ...string) []Protocol {
	var ps []Protocol
	for _, n := range names {
		ps = append(ps, Protocol{Name: n, Metadata: []byte("md-" + n)})
	}
	return ps
}

// join sends a JoinGroup from client c (its reply is recorded as tag).
func (h *harness) join(tag, memberID, instance string, v4 bool, ps ...string) {
	h.joins[tag] = nil
	h.g.Join(h.now, JoinRequest{MemberID: memberID, InstanceID: instance, ClientID: "c", SessionTimeout: 10 * time.Second,
		RebalanceTimeout: 30 * time.Second, ProtocolType: "consumer", Protocols: protos(ps...), RequireKnownMemberID: v4},
		func(r JoinResult) {
			if h.joins[tag] != nil {
				h.t.Fatalf("join %s answered twice", tag)
			}
			h.joins[tag] = &r
		})
}

func (h *harness) sync(tag, memberID string, gen int32, assign map[string][]byte) {
	h.syncs[tag] = nil
	h.g.Sync(h.now, SyncRequest{MemberID: memberID, Generation: gen, Assignments: assign}, func(r SyncResult) {
		if h.syncs[tag] != nil {
			h.t.Fatalf("sync %s answered twice", tag)
		}
		h.syncs[tag] = &r
	})
}

func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.g.Tick(h.now)
}

func (h *harness) joined(tag string, code int16) JoinResult {
	h.t.Helper()
	r := h.joins[tag]
	if r == nil {
		h.t.Fatalf("join %s not answered", tag)
	}
	if r.Err != code {
		h.t.Fatalf("join %s: error %d (%v), want %d", tag, r.Err, kerr.ErrorForCode(r.Err), code)
	}
	return *r
}

func (h *harness) parked(tag string) {
	h.t.Helper()
	if h.joins[tag] != nil {
		h.t.Fatalf("join %s answered early: %+v", tag, *h.joins[tag])
	}
}

func (h *harness) synced(tag string, code int16, assignment string) {
	h.t.Helper()
	r := h.syncs[tag]
	if r == nil {
		h.t.Fatalf("sync %s not answered", tag)
	}
	if r.Err != code || string(r.Assignment) != assignment {
		h.t.Fatalf("sync %s = %+v, want error %d assignment %q", tag, *r, code, assignment)
	}
}

func (h *harness) state(s State, gen int32) {
	h.t.Helper()
	if h.g.State() != s || h.g.Generation() != gen {
		h.t.Fatalf("state %s gen %d, want %s gen %d", h.g.State(), h.g.Generation(), s, gen)
	}
}

// twoMembers brings a group to Stable generation 1 with members a (leader)
// and b, both v4+ joiners (MEMBER_ID_REQUIRED round trip).
func twoMembers(t *testing.T) (h *harness, a, b string) {
	h = newHarness(t)
	h.join("a0", "", "", true, "range")
	a = h.joined("a0", kerr.MemberIDRequired.Code).MemberID
	h.join("b0", "", "", true, "range")
	b = h.joined("b0", kerr.MemberIDRequired.Code).MemberID
	h.join("a1", a, "", true, "range")
	h.parked("a1") // b's pending id holds the rebalance
	h.join("b1", b, "", true, "range")
	h.parked("a1") // initial delay
	h.advance(100 * time.Millisecond)
	h.parked("a1") // b joined during the delay: one delay more
	h.advance(100 * time.Millisecond)
	ja, jb := h.joined("a1", 0), h.joined("b1", 0)
	if ja.Generation != 1 || ja.Leader != a || ja.Protocol != "range" || len(ja.Members) != 2 || len(jb.Members) != 0 {
		t.Fatalf("join results %+v %+v", ja, jb)
	}
	h.state(CompletingRebalance, 1)
	h.sync("sb", b, 1, nil)
	if h.syncs["sb"] != nil {
		t.Fatal("follower sync answered before the leader's")
	}
	h.sync("sa", a, 1, map[string][]byte{a: []byte("A"), b: []byte("B")})
	h.synced("sa", 0, "A")
	h.synced("sb", 0, "B")
	h.state(Stable, 1)
	if !h.g.TakeChanged() {
		t.Fatal("no change reported")
	}
	return h, a, b
}

func TestJoinSyncStable(t *testing.T) {
	h, a, b := twoMembers(t)
	for _, tc := range []struct {
		member string
		gen    int32
		want   int16
	}{
		{a, 1, 0}, {b, 1, 0}, {a, 0, kerr.IllegalGeneration.Code}, {"nobody", 1, kerr.UnknownMemberID.Code},
	} {
		if got := h.g.Heartbeat(h.now, tc.member, "", tc.gen); got != tc.want {
			t.Errorf("Heartbeat(%s, %d) = %d, want %d", tc.member, tc.gen, got, tc.want)
		}
		if got := h.g.CommitCheck(h.now, tc.member, "", tc.gen); got != tc.want {
			t.Errorf("CommitCheck(%s, %d) = %d, want %d", tc.member, tc.gen, got, tc.want)
		}
	}
	if got := h.g.CommitCheck(h.now, "", "", -1); got != kerr.UnknownMemberID.Code {
		t.Errorf("admin commit to an active group = %d", got)
	}
	// A follower rejoining with the same protocols gets the generation back.
	h.join("b2", b, "", true, "range")
	if r := h.joined("b2", 0); r.Generation != 1 {
		t.Fatalf("rejoin = %+v", r)
	}
	h.state(Stable, 1)
	// Sync in Stable returns the stored assignment.
	h.sync("sb2", b, 1, nil)
	h.synced("sb2", 0, "B")
}

func TestLeaveRebalances(t *testing.T) {
	h, a, b := twoMembers(t)
	if got := h.g.Leave(h.now, b, ""); got != 0 {
		t.Fatalf("leave = %d", got)
	}
	h.state(PreparingRebalance, 1)
	if got := h.g.Heartbeat(h.now, a, "", 1); got != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat during rebalance = %d", got)
	}
	if got := h.g.CommitCheck(h.now, a, "", 1); got != 0 {
		t.Fatalf("commit during PreparingRebalance = %d, want 0", got)
	}
	h.join("a2", a, "", true, "range")
	if r := h.joined("a2", 0); r.Generation != 2 || r.Leader != a || len(r.Members) != 1 {
		t.Fatalf("rejoin = %+v", r)
	}
	if got := h.g.Leave(h.now, b, ""); got != kerr.UnknownMemberID.Code {
		t.Fatalf("second leave = %d", got)
	}
	h.g.Leave(h.now, a, "")
	h.state(Empty, 3)
	if got := h.g.CommitCheck(h.now, "", "", -1); got != 0 {
		t.Fatalf("admin commit to empty group = %d", got)
	}
}

func TestSessionTimeoutAndRebalanceTimeout(t *testing.T) {
	h, a, b := twoMembers(t)
	// a heartbeats, b goes silent: after the session timeout b is removed.
	for range 3 {
		h.advance(4 * time.Second)
		h.g.Heartbeat(h.now, a, "", 1)
	}
	h.state(PreparingRebalance, 1)
	h.join("a2", a, "", true, "range")
	h.joined("a2", 0)
	h.state(CompletingRebalance, 2)
	// The leader never syncs: after the rebalance timeout it is removed.
	h.advance(31 * time.Second)
	h.state(Empty, 3)
	_ = b
}

func TestRebalanceTimeoutDropsLaggards(t *testing.T) {
	h, a, b := twoMembers(t)
	h.join("a2", a, "", true, "range", "roundrobin") // changed protocols: rebalance
	h.parked("a2")
	for range 5 { // b heartbeats but never rejoins
		h.advance(5 * time.Second)
		h.g.Heartbeat(h.now, b, "", 1)
		h.parked("a2")
	}
	h.advance(5 * time.Second)
	r := h.joined("a2", 0)
	if r.Generation != 2 || len(r.Members) != 1 || r.Protocol != "range" {
		t.Fatalf("join after timeout = %+v", r)
	}
	if got := h.g.Heartbeat(h.now, b, "", 1); got != kerr.UnknownMemberID.Code {
		t.Fatalf("dropped member heartbeat = %d", got)
	}
}

func TestProtocolSelection(t *testing.T) {
	for _, tc := range []struct {
		a, b []string
		want string
		err  int16
	}{
		{[]string{"range", "roundrobin"}, []string{"roundrobin", "range"}, "range", 0},
		{[]string{"sticky", "range"}, []string{"range"}, "range", 0},
		{[]string{"cooperative-sticky"}, []string{"range"}, "", kerr.InconsistentGroupProtocol.Code},
	} {
		h := newHarness(t)
		h.join("a", "", "", false, tc.a...)
		h.join("b", "", "", false, tc.b...)
		if tc.err != 0 {
			h.joined("b", tc.err)
			continue
		}
		h.advance(200 * time.Millisecond) // b joined during the initial delay: two delays
		if r := h.joined("a", 0); r.Protocol != tc.want {
			t.Errorf("%v/%v: protocol %q, want %q", tc.a, tc.b, r.Protocol, tc.want)
		}
	}
}

func TestJoinErrors(t *testing.T) {
	h, _, _ := twoMembers(t)
	h.join("x", "stranger", "", true, "range")
	h.joined("x", kerr.UnknownMemberID.Code)
	h.g.Join(h.now, JoinRequest{ClientID: "c", SessionTimeout: time.Millisecond, RebalanceTimeout: time.Second,
		ProtocolType: "consumer", Protocols: protos("range")}, func(r JoinResult) { h.joins["y"] = &r })
	h.joined("y", kerr.InvalidSessionTimeout.Code)
	h.g.Join(h.now, JoinRequest{ClientID: "c", SessionTimeout: time.Second * 10, RebalanceTimeout: time.Second,
		ProtocolType: "connect", Protocols: protos("range")}, func(r JoinResult) { h.joins["z"] = &r })
	h.joined("z", kerr.InconsistentGroupProtocol.Code)
	// v0-v3 joins get an id at once, no MEMBER_ID_REQUIRED (KIP-394 is v4+).
	h.join("old", "", "", false, "range")
	h.parked("old")
	h.state(PreparingRebalance, 1)
}

func TestStaticMemberRejoinNoRebalance(t *testing.T) {
	h := newHarness(t)
	h.join("s1", "", "inst-1", true, "range")
	h.join("s2", "", "inst-2", true, "range")
	h.advance(200 * time.Millisecond) // s2 joined during the initial delay: two delays
	m1, m2 := h.joined("s1", 0).MemberID, h.joined("s2", 0).MemberID
	leader := h.joined("s1", 0).Leader
	h.sync("a", m1, 1, map[string][]byte{m1: []byte("1"), m2: []byte("2")})
	h.sync("b", m2, 1, map[string][]byte{m1: []byte("1"), m2: []byte("2")})
	h.state(Stable, 1)
	// inst-2 restarts (no leave) and rejoins without a member id.
	h.join("s2b", "", "inst-2", true, "range")
	r := h.joined("s2b", 0)
	if r.Generation != 1 || r.MemberID == m2 {
		t.Fatalf("static rejoin = %+v", r)
	}
	h.state(Stable, 1)
	if (leader == m2) != r.SkipAssignment {
		t.Fatalf("skip assignment %v for leader %s", r.SkipAssignment, leader)
	}
	h.sync("c", r.MemberID, 1, nil)
	h.synced("c", 0, "2")
	// The old incarnation is fenced everywhere.
	if got := h.g.Heartbeat(h.now, m2, "inst-2", 1); got != kerr.FencedInstanceID.Code {
		t.Fatalf("old heartbeat = %d", got)
	}
	if got := h.g.CommitCheck(h.now, m2, "inst-2", 1); got != kerr.FencedInstanceID.Code {
		t.Fatalf("old commit = %d", got)
	}
	h.join("old", m2, "inst-2", true, "range")
	h.joined("old", kerr.FencedInstanceID.Code)
	if got := h.g.Leave(h.now, "", "inst-2"); got != 0 {
		t.Fatalf("leave by instance = %d", got)
	}
	h.state(PreparingRebalance, 1)
}

func TestSnapshotRestore(t *testing.T) {
	h, a, b := twoMembers(t)
	g2, err := Restore("g", h.g.cfg, h.g.Snapshot(), h.now)
	if err != nil {
		t.Fatal(err)
	}
	if g2.State() != Stable || g2.Generation() != 1 {
		t.Fatalf("restored %s/%d", g2.State(), g2.Generation())
	}
	if got := g2.Heartbeat(h.now, a, "", 1); got != 0 {
		t.Fatalf("heartbeat after restore = %d", got)
	}
	var sr SyncResult
	g2.Sync(h.now, SyncRequest{MemberID: b, Generation: 1}, func(r SyncResult) { sr = r })
	if sr.Err != 0 || string(sr.Assignment) != "B" {
		t.Fatalf("sync after restore = %+v", sr)
	}
	// Mid-rebalance snapshots rebalance again after restore.
	h.join("a2", a, "", true, "range", "roundrobin")
	h.parked("a2")
	g3, _ := Restore("g", h.g.cfg, h.g.Snapshot(), h.now)
	if g3.State() != PreparingRebalance {
		t.Fatalf("restored mid-rebalance group in %s", g3.State())
	}
	if _, err := Restore("g", h.g.cfg, []byte("{"), h.now); err == nil {
		t.Fatal("garbage snapshot restored")
	}
}

func TestAbandon(t *testing.T) {
	h := newHarness(t)
	h.join("a", "", "", false, "range")
	h.g.Abandon(kerr.NotCoordinator)
	h.joined("a", kerr.NotCoordinator.Code)
}
