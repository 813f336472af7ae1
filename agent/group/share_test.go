package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestShareGroupAssignAndEpochs(t *testing.T) {
	now := time.Unix(1000, 0)
	cfg := ConsumerConfig{SessionTimeout: 10 * time.Second, HeartbeatInterval: time.Second}
	g := NewShareGroup("g", cfg)
	topics := map[string]int32{"a": 2, "b": 1}
	join := func(id string, subs ...string) HeartbeatResult {
		t.Helper()
		r := g.Heartbeat(now, ShareHeartbeatRequest{MemberID: id, Subscribed: subs}, topics)
		if r.Err != 0 {
			t.Fatalf("join %s: %d", id, r.Err)
		}
		return r
	}
	r1 := join("m1", "a", "b")
	if r1.MemberEpoch != 1 || r1.Assignment.size() != 3 {
		t.Fatalf("first member: %+v, want epoch 1 and all 3 partitions", r1)
	}
	r2 := join("m2", "a", "b")
	r3 := join("m3", "a")
	// m1 is told its smaller share at its next heartbeat, with the new epoch.
	hb := g.Heartbeat(now, ShareHeartbeatRequest{MemberID: "m1", MemberEpoch: r1.MemberEpoch}, topics)
	if hb.Err != 0 || hb.MemberEpoch != 3 || hb.Assignment == nil {
		t.Fatalf("m1 heartbeat: %+v, want epoch 3 with an assignment", hb)
	}
	all := Assignment{}
	for _, as := range []Assignment{hb.Assignment, g.members["m2"].Assigned, g.members["m3"].Assigned} {
		if as.size() == 0 {
			t.Fatalf("a member has nothing: %+v", g.Describe())
		}
		for tp, ps := range as {
			for _, p := range ps {
				all.add(tp, p)
			}
		}
	}
	if all.size() != 3 {
		t.Fatalf("partitions covered %v, want all 3", all)
	}
	// Three subscribers of a's two partitions: one is shared.
	if got := len(g.members["m3"].Assigned["a"]); got != 1 {
		t.Fatalf("m3 holds %d partitions of a, want 1", got)
	}
	// An unknown epoch is fenced; the previous one is still taken.
	if r := g.Heartbeat(now, ShareHeartbeatRequest{MemberID: "m2", MemberEpoch: 7}, topics); r.Err != kerr.FencedMemberEpoch.Code {
		t.Fatalf("bad epoch: %+v", r)
	}
	if r := g.Heartbeat(now, ShareHeartbeatRequest{MemberID: "m2", MemberEpoch: r2.MemberEpoch}, topics); r.Err != 0 {
		t.Fatalf("m2 at its epoch: %+v", r)
	}
	_ = r3
	// Restored on another agent, the group keeps its members and epoch.
	rg, err := RestoreShareGroup("g", cfg, g.Snapshot(), now)
	if err != nil {
		t.Fatal(err)
	}
	if rg.epoch != g.epoch || len(rg.members) != 3 || !rg.members["m1"].Assigned.equal(g.members["m1"].Assigned) {
		t.Fatalf("restored %+v, want %+v", rg.Describe(), g.Describe())
	}
	// Sessions end: members that stop heartbeating are removed.
	g.Tick(now.Add(11*time.Second), topics)
	if !g.IsEmpty() || g.StateName() != "Empty" {
		t.Fatalf("after the session timeout: %+v", g.Describe())
	}
	if r := g.Heartbeat(now, ShareHeartbeatRequest{MemberID: "m1", MemberEpoch: -1}, topics); r.Err != kerr.UnknownMemberID.Code {
		t.Fatalf("leave of a removed member: %+v", r)
	}
}
