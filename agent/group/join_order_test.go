package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestJoinValidationOrder: Join checked empty protocols before the session
// timeout, where Kafka answers INVALID_SESSION_TIMEOUT (kafka-go's own suite
// joins with a 3 s session timeout and no protocols and expects it). Each
// case breaks several rules at once; the answer must be the first broken in
// Kafka's order (GroupCoordinatorService.joinGroup, then
// GroupMetadataManager.classicGroupJoinToClassicGroup and
// classicGroupJoinNewMember / classicGroupJoinExistingMember): session
// timeout, member id of a group that does not exist, group size, protocol
// type and protocols, then instance id and member id.
func TestJoinValidationOrder(t *testing.T) {
	const (
		ok       = int16(0)
		tooShort = 500 * time.Millisecond // below the harness's 1 s minimum
		tooLong  = 2 * time.Hour          // above its 1 h maximum
		fine     = 10 * time.Second
	)
	// Groups to join: a new one; a stable one of a (leader) and b, without
	// and with MaxSize 2 (full); a stable one whose member a holds inst-1.
	type setup func(t *testing.T) (h *harness, a, b string)
	newGroup := func(t *testing.T) (*harness, string, string) { return newHarness(t), "", "" }
	stable := func(t *testing.T) (*harness, string, string) { return twoMembers(t) }
	full := func(t *testing.T) (*harness, string, string) {
		h, a, b := twoMembers(t)
		h.g.cfg.MaxSize = 2
		return h, a, b
	}
	static := func(t *testing.T) (*harness, string, string) {
		h := newHarness(t)
		h.join("s", "", "inst-1", true, "range")
		h.advance(100 * time.Millisecond)
		s := h.joined("s", ok).MemberID
		h.sync("ss", s, 1, map[string][]byte{s: []byte("S")})
		h.state(Stable, 1)
		return h, s, ""
	}
	for _, tc := range []struct {
		name     string
		setup    setup
		member   string // "a"/"b" name the setup's members
		instance string
		session  time.Duration
		rebal    time.Duration
		ptype    string
		protos   []string
		v4       bool
		want     int16
	}{
		{"session below min before empty protocols", newGroup, "", "", tooShort, fine, "", nil, true, kerr.InvalidSessionTimeout.Code},
		{"session above max before empty protocols", newGroup, "", "", tooLong, fine, "", nil, true, kerr.InvalidSessionTimeout.Code},
		{"session before unknown member", newGroup, "stranger", "", tooShort, fine, "consumer", []string{"range"}, true, kerr.InvalidSessionTimeout.Code},
		{"session before group size", full, "", "", tooShort, fine, "consumer", []string{"range"}, true, kerr.InvalidSessionTimeout.Code},
		{"zero session timeout", newGroup, "", "", 0, fine, "consumer", []string{"range"}, false, kerr.InvalidSessionTimeout.Code},
		{"unknown member of a new group before empty protocols", newGroup, "stranger", "", fine, fine, "", nil, true, kerr.UnknownMemberID.Code},
		{"group size before empty protocols", full, "", "", fine, fine, "", nil, true, kerr.GroupMaxSizeReached.Code},
		{"group size before MEMBER_ID_REQUIRED", full, "", "", fine, fine, "consumer", []string{"range"}, true, kerr.GroupMaxSizeReached.Code},
		{"a full group still takes its members", full, "b", "", fine, fine, "consumer", []string{"range"}, true, ok},
		{"empty protocol type", newGroup, "", "", fine, fine, "", []string{"range"}, true, kerr.InconsistentGroupProtocol.Code},
		{"no protocols", newGroup, "", "", fine, fine, "consumer", nil, true, kerr.InconsistentGroupProtocol.Code},
		{"protocols before unknown member", stable, "stranger", "", fine, fine, "consumer", nil, true, kerr.InconsistentGroupProtocol.Code},
		{"protocol type of the group", stable, "", "", fine, fine, "connect", []string{"range"}, true, kerr.InconsistentGroupProtocol.Code},
		{"group size before unknown member", full, "stranger", "", fine, fine, "consumer", nil, true, kerr.GroupMaxSizeReached.Code},
		{"unknown member of a known group", stable, "stranger", "", fine, fine, "consumer", []string{"range"}, true, kerr.UnknownMemberID.Code},
		{"protocols before fenced instance", static, "stale", "inst-1", fine, fine, "consumer", []string{"sticky"}, true, kerr.InconsistentGroupProtocol.Code},
		{"fenced instance", static, "stale", "inst-1", fine, fine, "consumer", []string{"range"}, true, kerr.FencedInstanceID.Code},
		{"unknown instance", static, "a", "inst-9", fine, fine, "consumer", []string{"range"}, true, kerr.UnknownMemberID.Code},
		{"rebalance timeout not checked", newGroup, "", "", fine, 0, "consumer", []string{"range"}, false, ok},
		{"new v4 member", newGroup, "", "", fine, fine, "consumer", []string{"range"}, true, kerr.MemberIDRequired.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, a, b := tc.setup(t)
			member := map[string]string{"a": a, "b": b}[tc.member]
			if member == "" {
				member = tc.member
			}
			if member == "a" || member == "b" {
				t.Fatalf("setup has no member %s", tc.member)
			}
			var got *JoinResult
			h.g.Join(h.now, JoinRequest{MemberID: member, InstanceID: tc.instance, ClientID: "c", SessionTimeout: tc.session,
				RebalanceTimeout: tc.rebal, ProtocolType: tc.ptype, Protocols: protos(tc.protos...), RequireKnownMemberID: tc.v4},
				func(r JoinResult) { got = &r })
			if got == nil {
				h.advance(time.Second) // a join that was taken waits for the rebalance
			}
			if got == nil {
				t.Fatal("join not answered")
			}
			if got.Err != tc.want {
				t.Fatalf("error %v, want %v", kerr.ErrorForCode(got.Err), kerr.ErrorForCode(tc.want))
			}
			if tc.want != ok && tc.want != kerr.MemberIDRequired.Code && got.Generation != -1 {
				t.Errorf("failed join answered generation %d, want -1", got.Generation)
			}
		})
	}
}

// TestJoinGroupMaxSize: a group of MaxSize members refuses a new member
// with GROUP_MAX_SIZE_REACHED and no member id, and keeps its generation; a
// rebalance of more members than MaxSize (the limit was lowered) takes the
// first MaxSize rejoiners and removes the others, as Kafka's
// acceptJoiningMember does.
func TestJoinGroupMaxSize(t *testing.T) {
	h, a, b := twoMembers(t)
	h.g.cfg.MaxSize = 2
	h.join("c", "", "", false, "range")
	if r := h.joined("c", kerr.GroupMaxSizeReached.Code); r.MemberID != "" {
		t.Fatalf("refused member given id %q", r.MemberID)
	}
	h.state(Stable, 1)

	// The limit drops to 1: a rejoins first and is taken, b is shed.
	h.g.cfg.MaxSize = 1
	h.join("a2", a, "", true, "range", "roundrobin")
	h.parked("a2")
	h.join("b2", b, "", true, "range")
	h.joined("b2", kerr.GroupMaxSizeReached.Code)
	r := h.joined("a2", 0)
	if r.Generation != 2 || len(r.Members) != 1 || r.Members[0].MemberID != a {
		t.Fatalf("rebalance after shedding b = %+v", r)
	}
	if got := h.g.Heartbeat(h.now, b, "", 1); got != kerr.UnknownMemberID.Code {
		t.Fatalf("shed member's heartbeat = %v", kerr.ErrorForCode(got))
	}
}

// TestJoinUnknownGroupMember: a member id joining a group the coordinator
// does not know is UNKNOWN_MEMBER_ID even with protocols the group would
// refuse; a restored group, or one MarkExists names (committed offsets),
// is known, so the same join is INCONSISTENT_GROUP_PROTOCOL there.
func TestJoinUnknownGroupMember(t *testing.T) {
	join := func(g *Group) int16 {
		var code int16 = -1
		g.Join(time.Unix(1000, 0), JoinRequest{MemberID: "m", ClientID: "c", SessionTimeout: 10 * time.Second,
			RebalanceTimeout: time.Second}, func(r JoinResult) { code = r.Err })
		return code
	}
	cfg := Config{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Hour, NewMemberID: func(c string) string { return c }}
	if got := join(New("g", cfg)); got != kerr.UnknownMemberID.Code {
		t.Errorf("unknown group: %v", kerr.ErrorForCode(got))
	}
	offsetsOnly := New("g", cfg)
	offsetsOnly.MarkExists()
	if got := join(offsetsOnly); got != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("group with offsets: %v", kerr.ErrorForCode(got))
	}
	h, _, _ := twoMembers(t)
	restored, err := Restore("g", cfg, h.g.Snapshot(), h.now)
	if err != nil {
		t.Fatal(err)
	}
	if got := join(restored); got != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("restored group: %v", kerr.ErrorForCode(got))
	}
	// A join without a member id creates the group, even when refused
	// for its protocols: the member id it is then given is only unknown.
	g := New("g", cfg)
	g.Join(time.Unix(1000, 0), JoinRequest{ClientID: "c", SessionTimeout: 10 * time.Second, RebalanceTimeout: time.Second},
		func(JoinResult) {})
	if got := join(g); got != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("group created by a refused join: %v", kerr.ErrorForCode(got))
	}
}

// TestInitialRebalanceDelayExtends: group.initial.rebalance.delay.ms held a
// new group's first generation for one delay only; as in Kafka
// (InitialDelayedJoin), each delay in which a member joined adds another,
// bounded by the rebalance timeout.
func TestInitialRebalanceDelayExtends(t *testing.T) {
	const delay = 100 * time.Millisecond
	for _, tc := range []struct {
		name      string
		rebalance time.Duration
		joins     []time.Duration // when each member joins, from the first
		want      time.Duration   // when the first generation is answered
	}{
		{"alone", time.Minute, []time.Duration{0}, delay},
		{"together", time.Minute, []time.Duration{0, 0, 0}, 2 * delay},
		{"one per delay", time.Minute, []time.Duration{0, 50 * time.Millisecond, 150 * time.Millisecond, 250 * time.Millisecond}, 4 * delay},
		{"a joiner after the delay is late", time.Minute, []time.Duration{0, 120 * time.Millisecond}, delay},
		{"bounded by the rebalance timeout", 250 * time.Millisecond, []time.Duration{0, 50 * time.Millisecond, 150 * time.Millisecond, 240 * time.Millisecond}, 250 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			start := h.now
			step := 10 * time.Millisecond
			next := 0
			var answered time.Duration = -1
			for at := time.Duration(0); at <= 2*time.Second && answered < 0; at += step {
				h.now = start.Add(at)
				for next < len(tc.joins) && tc.joins[next] <= at {
					tag := fmt.Sprint("m", next)
					h.joins[tag] = nil
					h.g.Join(h.now, JoinRequest{ClientID: "c", SessionTimeout: 10 * time.Second, RebalanceTimeout: tc.rebalance,
						ProtocolType: "consumer", Protocols: protos("range")}, func(r JoinResult) { h.joins[tag] = &r })
					next++
				}
				h.g.Tick(h.now)
				if h.joins["m0"] != nil {
					answered = at
				}
			}
			if answered != tc.want {
				t.Fatalf("first generation answered after %v, want %v", answered, tc.want)
			}
			if r := h.joined("m0", 0); r.Generation != 1 || len(r.Members) != next {
				t.Fatalf("first generation %+v, want %d members", r, next)
			}
		})
	}
}
