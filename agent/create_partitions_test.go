package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
)

// TestCreatePartitionsAssignment: CreatePartitions ignored manual
// assignments, so a list for the wrong number of new partitions, naming
// unknown brokers, a broker twice or only departed ones, or lists of
// different lengths, all added partitions. They are checked now as
// Kafka's controller checks them, by the checks CreateTopics uses
// (checkReplicaList), with Kafka's codes and words; a topic named twice is
// INVALID_REQUEST, answered once. Nothing refused changes the topic.
func TestCreatePartitionsAssignment(t *testing.T) {
	t.Parallel()
	a, hs := handlerAgent(t)
	ctx := context.Background()
	self := a.liveAgents()[0]
	self.ID = a.id // the agent was never started: no registered identity
	peer := metadata.Agent{ID: "peer", NodeID: self.NodeID + 1, Host: "127.0.0.1", Port: 1}
	gone := self.NodeID + 2
	a.viewMu.Lock()
	a.live = []metadata.Agent{self, peer}
	a.departed = map[int32]time.Time{gone: time.Now()}
	a.viewMu.Unlock()
	s, p := self.NodeID, peer.NodeID
	if _, err := hs.Store.CreateTopic(ctx, "cp", 2, nil); err != nil {
		t.Fatal(err)
	}
	partitions := func() int32 {
		t.Helper()
		tp, err := hs.Store.Topic(ctx, "cp")
		if err != nil {
			t.Fatal(err)
		}
		return tp.Partitions
	}
	type topic struct {
		name       string
		count      int32
		assignment [][]int32 // nil: null
	}
	send := func(validateOnly bool, ts ...topic) []kmsg.CreatePartitionsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version, req.TimeoutMillis, req.ValidateOnly = 3, 10_000, validateOnly
		for _, tt := range ts {
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = tt.name, tt.count
			if tt.assignment != nil {
				rt.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{}
				for _, rs := range tt.assignment {
					as := kmsg.NewCreatePartitionsRequestTopicAssignment()
					as.Replicas = rs
					rt.Assignment = append(rt.Assignment, as)
				}
			}
			req.Topics = append(req.Topics, rt)
		}
		return a.mustHandle(t, req).(*kmsg.CreatePartitionsResponse).Topics
	}

	for _, tc := range []struct {
		what       string
		count      int32
		assignment [][]int32
		code       *kerr.Error
		msg        string
	}{
		{"same count", 2, nil, kerr.InvalidPartitions, "Topic already has 2 partition(s)."},
		{"fewer", 1, [][]int32{}, kerr.InvalidPartitions, "The topic cp currently has 2 partition(s); 1 would not be an increase."},
		{"too few lists", 4, [][]int32{{s}}, kerr.InvalidReplicaAssignment,
			"Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."},
		{"too many lists", 3, [][]int32{{s}, {p}}, kerr.InvalidReplicaAssignment,
			"Attempted to add 1 additional partition(s), but only 2 assignment(s) were specified."},
		{"empty, not null", 3, [][]int32{}, kerr.InvalidReplicaAssignment,
			"Attempted to add 1 additional partition(s), but only 0 assignment(s) were specified."},
		{"empty list", 3, [][]int32{{}}, kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list."},
		{"unknown broker", 3, [][]int32{{s, 99}}, kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes broker 99, but no such broker is registered."},
		{"lowest unknown named", 3, [][]int32{{98, 97}}, kerr.InvalidReplicaAssignment, "includes broker 97, but"},
		{"broker twice", 3, [][]int32{{p, s, p}}, kerr.InvalidReplicaAssignment,
			fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", p)},
		{"replica counts differ", 4, [][]int32{{s}, {s, p}}, kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes a partition with 2 replica(s), but this is not consistent with previous partitions, which have 1 replica(s)."},
		{"only departed", 4, [][]int32{{s}, {gone}}, kerr.InvalidReplicaAssignment,
			"All brokers specified in the manual partition assignment for partition 3 are fenced or in controlled shutdown."},
	} {
		for _, validateOnly := range []bool{true, false} {
			st := send(validateOnly, topic{"cp", tc.count, tc.assignment})
			if len(st) != 1 {
				t.Fatalf("%s: %d answers", tc.what, len(st))
			}
			wantCode(t, tc.what, st[0].ErrorCode, tc.code)
			if !strings.Contains(deref(st[0].ErrorMessage), tc.msg) {
				t.Errorf("%s: message %q, want %q", tc.what, deref(st[0].ErrorMessage), tc.msg)
			}
			if n := partitions(); n != 2 {
				t.Fatalf("%s: the topic has %d partitions after a refusal", tc.what, n)
			}
		}
	}

	// Valid lists (a departed agent beside a live one is fine, as a fenced
	// broker beside an active one is in Kafka): validate-only changes
	// nothing, the request adds them.
	ok := topic{"cp", 4, [][]int32{{s, gone}, {p, s}}}
	wantCode(t, "validate-only", send(true, ok)[0].ErrorCode, nil)
	if n := partitions(); n != 2 {
		t.Fatalf("validate-only: %d partitions", n)
	}
	wantCode(t, "valid assignment", send(false, ok)[0].ErrorCode, nil)
	if n := partitions(); n != 4 {
		t.Fatalf("after a valid assignment: %d partitions, want 4", n)
	}
	wantCode(t, "null assignment", send(false, topic{"cp", 5, nil})[0].ErrorCode, nil)

	// A topic named twice: one INVALID_REQUEST answer for it, at its first
	// mention; the others are handled.
	if _, err := hs.Store.CreateTopic(ctx, "other", 1, nil); err != nil {
		t.Fatal(err)
	}
	st := send(false, topic{"cp", 9, nil}, topic{"other", 2, nil}, topic{"cp", 10, nil})
	if len(st) != 2 || st[0].Topic != "cp" || st[1].Topic != "other" {
		t.Fatalf("answers %+v, want cp then other", st)
	}
	wantCode(t, "duplicate", st[0].ErrorCode, kerr.InvalidRequest)
	if deref(st[0].ErrorMessage) != "Duplicate topic name." {
		t.Errorf("duplicate: message %q", deref(st[0].ErrorMessage))
	}
	wantCode(t, "beside a duplicate", st[1].ErrorCode, nil)
	if n := partitions(); n != 5 {
		t.Fatalf("after a duplicate: %d partitions, want 5", n)
	}
}
