package agent

// SyncGroup (key 14), versions 0–5.
//
// The leader's SyncGroup carries every member's assignment; followers'
// answers are parked until it arrives. v3+ carry the instance id, v5+ the
// protocol type and name (checked against the group's).
//
// As in Kafka (KafkaApis.handleSyncGroupRequest, then
// GroupCoordinatorService.syncGroup), a v5+ request without its protocol
// type or name is INCONSISTENT_GROUP_PROTOCOL, then an empty group id
// INVALID_GROUP_ID, before the coordinator is looked for.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/group"
	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.SyncGroup), AdvertisedMin: 0, HandledMin: 0, Max: 5})
}

func (a *Agent) handleSyncGroup(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	if req.Version >= 5 && (req.ProtocolType == nil || req.Protocol == nil) {
		resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
		return resp, nil
	}
	if resp.ErrorCode = a.classicGroupCheck(r, req.Group); resp.ErrorCode != 0 {
		return resp, nil
	}
	sr := group.SyncRequest{
		MemberID: req.MemberID, InstanceID: deref(req.InstanceID), Generation: req.Generation,
		ProtocolType: deref(req.ProtocolType), Protocol: deref(req.Protocol),
	}
	if len(req.GroupAssignment) > 0 {
		sr.Assignments = make(map[string][]byte, len(req.GroupAssignment))
		for _, as := range req.GroupAssignment {
			sr.Assignments[as.MemberID] = as.MemberAssignment
		}
	}
	res, code := awaitGroup(ctx, a, req.Group, func(e *groupEntry, now time.Time, done func(group.SyncResult)) {
		e.g.Sync(now, sr, done)
	})
	if code != nil {
		resp.ErrorCode = code.Code
		return resp, nil
	}
	resp.ErrorCode = res.Err
	if res.Err == 0 {
		pt, p := res.ProtocolType, res.Protocol
		resp.ProtocolType, resp.Protocol = &pt, &p
		resp.MemberAssignment = res.Assignment
		if resp.MemberAssignment == nil {
			resp.MemberAssignment = []byte{}
		}
	}
	return resp, nil
}
