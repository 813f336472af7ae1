package agent

// LeaveGroup (key 13), versions 0–5.
//
// v0–v2 name one member; v3+ a batch of members, each by member id and/or
// instance id (an admin removing static members names only the instance),
// each with its own error code. An empty group id is INVALID_GROUP_ID for
// the whole request, with no member answers, before the coordinator is
// looked for, as in Kafka (GroupCoordinatorService.leaveGroup).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.LeaveGroup), AdvertisedMin: 0, HandledMin: 0, Max: 5})
}

func (a *Agent) handleLeaveGroup(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if resp.ErrorCode = a.classicGroupCheck(r, req.Group); resp.ErrorCode != 0 {
		return resp, nil
	}
	if code := a.coord.with(ctx, req.Group, func(e *groupEntry, now time.Time) {
		if req.Version < 3 {
			resp.ErrorCode = e.g.Leave(now, req.MemberID, "")
			return
		}
		for _, m := range req.Members {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
			rm.ErrorCode = e.g.Leave(now, m.MemberID, deref(m.InstanceID))
			resp.Members = append(resp.Members, rm)
		}
	}); code != nil {
		resp.ErrorCode = code.Code
	}
	return resp, nil
}
