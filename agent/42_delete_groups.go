package agent

// DeleteGroups (key 42), versions 0–2.
//
// Removes an empty group's state and offsets: NON_EMPTY_GROUP while it has
// members, GROUP_ID_NOT_FOUND if the store knows nothing of it.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/group"
	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DeleteGroups), AdvertisedMin: 0, HandledMin: 0, Max: 2})
}

func (a *Agent) handleDeleteGroups(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		if !a.authorize(r, opDelete, resGroup, id) {
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if code := a.coord.with(ctx, id, func(e *groupEntry, _ time.Time) {
			if !e.isEmpty() {
				rg.ErrorCode = kerr.NonEmptyGroup.Code
				return
			}
			err := a.store.DeleteGroup(ctx, id)
			if err == nil && e.sg != nil {
				err = a.store.DeleteShareStates(ctx, id, nil)
			}
			switch {
			case errors.Is(err, metadata.ErrNotFound):
				rg.ErrorCode = kerr.GroupIDNotFound.Code
			case err != nil:
				a.log.Warn("delete group failed", "group", id, "err", err)
				rg.ErrorCode = kerr.CoordinatorNotAvailable.Code
			default:
				e.reset(group.New(id, a.coord.gcfg))
			}
		}); code != nil {
			rg.ErrorCode = code.Code
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
