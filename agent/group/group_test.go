package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// harness drives one Group (for the tables of join_order_test.go; the
// scenarios are scripts in testdata/classic) through scripted steps with a fake clock and
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

// TestRestoreGarbage: a snapshot that does not decode is an error, not a
// group (the scripts in testdata restore good ones).
func TestRestoreGarbage(t *testing.T) {
	if _, err := Restore("g", Config{}, []byte("{"), time.Now()); err == nil {
		t.Error("garbage classic snapshot restored")
	}
	if _, err := RestoreConsumerGroup("g", ConsumerConfig{}, []byte("{"), time.Now()); err == nil {
		t.Error("garbage consumer snapshot restored")
	}
}
