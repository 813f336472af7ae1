package agent

// Heartbeat (key 12), versions 0–4.
//
// Keeps a classic member's session alive; REBALANCE_IN_PROGRESS tells it to
// rejoin. v3+ carry the instance id (FENCED_INSTANCE_ID for a replaced
// static member). An empty group id is INVALID_GROUP_ID before the
// coordinator is looked for, as in Kafka (GroupCoordinatorService.heartbeat).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.Heartbeat), AdvertisedMin: 0, HandledMin: 0, Max: 4})
}

func (a *Agent) handleHeartbeat(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if resp.ErrorCode = a.classicGroupCheck(r, req.Group); resp.ErrorCode != 0 {
		return resp, nil
	}
	if code := a.coord.with(ctx, req.Group, func(e *groupEntry, now time.Time) {
		resp.ErrorCode = e.g.Heartbeat(now, req.MemberID, deref(req.InstanceID), req.Generation)
	}); code != nil {
		resp.ErrorCode = code.Code
	}
	return resp, nil
}

// classicGroupCheck is what the classic group APIs answer before they look
// for the coordinator: GROUP_AUTHORIZATION_FAILED without READ on the
// group, then INVALID_GROUP_ID for an empty group id; 0 when both pass.
func (a *Agent) classicGroupCheck(r *request, groupID string) int16 {
	if !a.authorize(r, opRead, resGroup, groupID) {
		return kerr.GroupAuthorizationFailed.Code
	}
	if groupID == "" {
		return kerr.InvalidGroupID.Code
	}
	return 0
}
