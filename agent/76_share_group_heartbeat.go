package agent

// ShareGroupHeartbeat (key 76), versions 0–1: membership of a KIP-932
// share group.
//
// Coordinated like a KIP-848 group (coordinator.go: one agent per group by
// lease, the state saved in the store on every change), with the share
// group's own state machine (agent/group/share.go): members bring their own
// id (at most 36 characters), join at epoch 0, leave at -1, and are told
// their assignment — every subscribed partition goes to at least one
// member, and several members share a partition when there are more of
// them than partitions. A group id of a classic or consumer group in use
// answers GROUP_ID_NOT_FOUND, as Kafka does. The heartbeat interval
// answered and the session timeout applied are the group's configs
// (share.heartbeat.interval.ms, share.session.timeout.ms) where it sets
// them, else the agent's KIP-848 defaults.

import (
	"context"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/group"
	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.ShareGroupHeartbeat), AdvertisedMin: 0, HandledMin: 0, Max: 1})
}

func (a *Agent) handleShareGroupHeartbeat(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ShareGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	fail := func(e *kerr.Error) (kmsg.Response, error) {
		resp.ErrorCode = e.Code
		msg := e.Message
		resp.ErrorMessage = &msg
		return resp, nil
	}
	if strings.TrimSpace(req.GroupID) == "" {
		return fail(kerr.InvalidRequest)
	}
	if e := a.memberAccess(r, req.GroupID, req.SubscribedTopicNames); e != nil {
		return fail(e)
	}
	switch {
	case req.MemberID == "" || len(req.MemberID) > 36, req.MemberEpoch < -1,
		req.RackID != nil && strings.TrimSpace(*req.RackID) == "",
		req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return fail(kerr.InvalidRequest)
	}
	byName, _, err := a.topics.snapshot(ctx)
	if err != nil {
		return fail(kerr.CoordinatorNotAvailable)
	}
	counts := partitionCounts(byName)
	hr := group.ShareHeartbeatRequest{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch, RackID: deref(req.RackID),
		ClientID: r.clientID(), ClientHost: r.c.clientHost(), Subscribed: req.SubscribedTopicNames}
	res, code := a.memberBeat(ctx, req.GroupID, func(e *groupEntry, now time.Time) group.HeartbeatResult {
		if !a.coord.asShareGroup(ctx, e, now) {
			return group.HeartbeatResult{Err: kerr.GroupIDNotFound.Code}
		}
		cfg := a.coord.shareConfig(a.coord.liveConfigs(ctx, e, now))
		e.sg.Configure(cfg)
		resp.HeartbeatIntervalMillis = int32(cfg.HeartbeatInterval / time.Millisecond)
		res := e.sg.Heartbeat(now, hr, counts)
		if res.Err == 0 && req.MemberEpoch == -1 {
			a.coord.releaseShareMembers(ctx, e.id, []string{req.MemberID})
		}
		return res
	})
	if code != nil {
		return fail(code)
	}
	resp.MemberID, resp.MemberEpoch = &res.MemberID, res.MemberEpoch
	if res.Assignment != nil {
		as := kmsg.NewShareGroupHeartbeatResponseAssignment()
		as.TopicPartitions = assignedTopics(byName, res.Assignment, func(id metadata.TopicID, parts []int32) kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition {
			at := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			at.TopicID, at.Partitions = id, parts
			return at
		})
		resp.Assignment = &as
	}
	return resp, nil
}
