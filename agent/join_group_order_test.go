package agent

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestJoinGroupSessionTimeoutBeforeProtocols: a JoinGroup with a 3 s session
// timeout and no protocols (kafka-go's own suite sends it and expects
// INVALID_SESSION_TIMEOUT) was answered INCONSISTENT_GROUP_PROTOCOL by the
// coordinator and NOT_COORDINATOR by other agents. As in Kafka's
// GroupCoordinatorService.joinGroup, the group id and then the session
// timeout (against group.min/max.session.timeout.ms, 6 s and 30 min by
// default) are checked by any agent before the coordinator is looked for;
// then the coordinator checks the protocols.
func TestJoinGroupSessionTimeoutBeforeProtocols(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	agents := twoAgents(t, ctx)
	const g = "join-order"
	owner, other := agents[0], agents[1]
	if owner.coord.ownerOf(g).ID != owner.id {
		owner, other = other, owner
	}
	join := func(to *Agent, version int16, group string, session int32, protocols bool) int16 {
		t.Helper()
		cl := pinnedClient(t, int16(kmsg.JoinGroup), version, owner.KafkaAddr(), other.KafkaAddr())
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = version
		req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = group, session, 10_000
		if protocols {
			req.ProtocolType = "consumer"
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
			req.Protocols = append(req.Protocols, p)
		}
		resp, err := req.RequestWith(ctx, cl.Broker(int(to.NodeID())))
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	for _, tc := range []struct {
		name      string
		to        *Agent
		version   int16
		group     string
		session   int32
		protocols bool
		want      *kerr.Error
	}{
		{"kafka-go's v1 join of zeros", owner, 1, g, 0, false, kerr.InvalidSessionTimeout},
		{"3 s without protocols, coordinator", owner, 5, g, 3000, false, kerr.InvalidSessionTimeout},
		{"3 s without protocols, other agent", other, 5, g, 3000, false, kerr.InvalidSessionTimeout},
		{"31 min, other agent", other, 9, g, 31 * 60_000, true, kerr.InvalidSessionTimeout},
		{"empty group id before the session timeout", other, 5, "", 0, false, kerr.InvalidGroupID},
		{"6 s without protocols, coordinator", owner, 5, g, 6000, false, kerr.InconsistentGroupProtocol},
		{"6 s, other agent", other, 5, g, 6000, true, kerr.NotCoordinator},
		{"6 s, coordinator", owner, 5, g, 6000, true, kerr.MemberIDRequired},
	} {
		if got := join(tc.to, tc.version, tc.group, tc.session, tc.protocols); got != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(got), tc.want)
		}
	}
}

// TestGroupSettingsFromConfig: the group settings were constants (a 1 s
// minimum session timeout, a 500 ms initial rebalance delay, a 1 s KIP-848
// heartbeat interval); they come from the agent's Config now, with Kafka's
// defaults.
func TestGroupSettingsFromConfig(t *testing.T) {
	def := DefaultConfig()
	if def.GroupMinSessionTimeout != 6*time.Second || def.GroupMaxSessionTimeout != 30*time.Minute ||
		def.GroupInitialRebalanceDelay != 3*time.Second || def.GroupMaxSize != 0 ||
		def.ConsumerGroupSessionTimeout != 45*time.Second || def.ConsumerGroupHeartbeatInterval != 5*time.Second {
		t.Errorf("DefaultConfig group settings are not Kafka's: %+v", def)
	}
	ta := newTestAgent(t, nil, func(c *Config) {
		c.GroupMinSessionTimeout, c.GroupMaxSessionTimeout = 2*time.Second, 4*time.Second
		c.GroupInitialRebalanceDelay = 0
		c.GroupMaxSize = 1
		c.ConsumerGroupHeartbeatInterval = 1500 * time.Millisecond
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := pinnedClient(t, int16(kmsg.JoinGroup), 2, ta.KafkaAddr()) // no MEMBER_ID_REQUIRED round trip
	join := func(group string, session int32) *kmsg.JoinGroupResponse {
		t.Helper()
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 2
		req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = group, session, 10_000, "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		req.Protocols = append(req.Protocols, p)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, session := range []int32{1999, 4001} {
		if r := join("bounds", session); r.ErrorCode != kerr.InvalidSessionTimeout.Code {
			t.Errorf("session %d ms: %v, want INVALID_SESSION_TIMEOUT", session, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	// No initial delay: the first member's generation is answered at once.
	start := time.Now()
	if r := join("sized", 3000); r.ErrorCode != 0 || r.Generation != 1 {
		t.Fatalf("first join = %v generation %d", kerr.ErrorForCode(r.ErrorCode), r.Generation)
	} else if d := time.Since(start); d > 2*time.Second {
		t.Errorf("first generation took %v with no initial rebalance delay", d)
	}
	if r := join("sized", 3000); r.ErrorCode != kerr.GroupMaxSizeReached.Code || r.MemberID != "" {
		t.Errorf("second member of a group of at most 1: %v %q", kerr.ErrorForCode(r.ErrorCode), r.MemberID)
	}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "kip848", "member-1", 0, 10_000
	hb.SubscribedTopicNames, hb.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	hr, err := hb.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if hr.ErrorCode != 0 || hr.HeartbeatIntervalMillis != 1500 {
		t.Errorf("ConsumerGroupHeartbeat: %v, interval %d ms, want 1500", kerr.ErrorForCode(hr.ErrorCode), hr.HeartbeatIntervalMillis)
	}
}

// pinnedClient is a client that sends API key at version (franz-go sends a
// raw request at the highest version both sides speak otherwise).
func pinnedClient(t *testing.T, key, version int16, seeds ...string) *kgo.Client {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(key, version)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.MaxVersions(vs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestSyncGroupMandatoryFieldsAndGroupID: a v5 SyncGroup without its
// protocol type or name, or one naming the empty group, was taken to the
// coordinator; Kafka answers INCONSISTENT_GROUP_PROTOCOL for the first
// (KafkaApis, before anything else) and INVALID_GROUP_ID for the second.
func TestSyncGroupMandatoryFieldsAndGroupID(t *testing.T) {
	ta := newParallelAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name         string
		version      int16
		group        string
		ptype, pname *string
		want         *kerr.Error
	}{
		{"v5 without protocol type", 5, "g", nil, kmsg.StringPtr("range"), kerr.InconsistentGroupProtocol},
		{"v5 without protocol name", 5, "g", kmsg.StringPtr("consumer"), nil, kerr.InconsistentGroupProtocol},
		{"v5 without both, empty group", 5, "", nil, nil, kerr.InconsistentGroupProtocol},
		{"v4 empty group", 4, "", nil, nil, kerr.InvalidGroupID},
		{"v5 empty group", 5, "", kmsg.StringPtr("consumer"), kmsg.StringPtr("range"), kerr.InvalidGroupID},
		{"v5 unknown member", 5, "g", kmsg.StringPtr("consumer"), kmsg.StringPtr("range"), kerr.UnknownMemberID},
	} {
		cl := pinnedClient(t, int16(kmsg.SyncGroup), tc.version, ta.KafkaAddr())
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version, req.Group, req.MemberID, req.Generation = tc.version, tc.group, "m", 1
		req.ProtocolType, req.Protocol = tc.ptype, tc.pname
		resp, err := req.RequestWith(ctx, cl.Broker(int(ta.NodeID()))) // no FindCoordinator of ""
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(resp.ErrorCode), tc.want)
		}
	}
}

// TestHeartbeatLeaveGroupEmptyGroupID: a Heartbeat or LeaveGroup naming the
// empty group went to the coordinator (the empty name hashed like any
// other), which answered UNKNOWN_MEMBER_ID, and other agents
// NOT_COORDINATOR; Kafka's GroupCoordinatorService answers INVALID_GROUP_ID
// first, on any broker, at every version. A named group still reaches the
// coordinator.
func TestHeartbeatLeaveGroupEmptyGroupID(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	agents := twoAgents(t, ctx)
	owner, other := agents[0], agents[1]
	if owner.coord.ownerOf("").ID != owner.id {
		owner, other = other, owner
	}
	heartbeat := func(cl *kgo.Client, to *Agent, group string) (int16, error) {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = group, "m", 1
		resp, err := req.RequestWith(ctx, cl.Broker(int(to.NodeID())))
		if err != nil {
			return 0, err
		}
		return resp.ErrorCode, nil
	}
	leave := func(cl *kgo.Client, to *Agent, group string) (int16, error) {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group, req.MemberID = group, "m"
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = "m"
		req.Members = append(req.Members, m)
		resp, err := req.RequestWith(ctx, cl.Broker(int(to.NodeID())))
		if err != nil {
			return 0, err
		}
		if resp.ErrorCode == kerr.InvalidGroupID.Code && len(resp.Members) != 0 {
			t.Errorf("LeaveGroup v%d of the empty group answered members %+v", resp.Version, resp.Members)
		}
		if resp.ErrorCode == 0 && len(resp.Members) == 1 {
			return resp.Members[0].ErrorCode, nil // v3+: the member's answer
		}
		return resp.ErrorCode, nil
	}
	for _, api := range []struct {
		name string
		key  kmsg.Key
		max  int16
		call func(*kgo.Client, *Agent, string) (int16, error)
	}{
		{"Heartbeat", kmsg.Heartbeat, 4, heartbeat},
		{"LeaveGroup", kmsg.LeaveGroup, 5, leave},
	} {
		for v := int16(0); v <= api.max; v++ {
			cl := pinnedClient(t, int16(api.key), v, owner.KafkaAddr(), other.KafkaAddr())
			for _, tc := range []struct {
				what  string
				to    *Agent
				group string
				want  *kerr.Error
			}{
				{"empty group, its hash's coordinator", owner, "", kerr.InvalidGroupID},
				{"empty group, other agent", other, "", kerr.InvalidGroupID},
				{"named group, unknown member", agentFor(owner, other, "named"), "named", kerr.UnknownMemberID},
			} {
				got, err := api.call(cl, tc.to, tc.group)
				if err != nil {
					t.Fatalf("%s v%d, %s: %v", api.name, v, tc.what, err)
				}
				if got != tc.want.Code {
					t.Errorf("%s v%d, %s: %v, want %v", api.name, v, tc.what, kerr.ErrorForCode(got), tc.want)
				}
			}
		}
	}
}

// agentFor is whichever of a and b coordinates group.
func agentFor(a, b *Agent, group string) *Agent {
	if a.coord.ownerOf(group).ID == a.id {
		return a
	}
	return b
}
