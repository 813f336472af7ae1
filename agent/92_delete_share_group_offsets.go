package agent

// DeleteShareGroupOffsets (key 92), version 0: removes a share group's
// state of whole topics (the next fetch starts them again by
// share.auto.offset.reset). A group with members answers NON_EMPTY_GROUP,
// one that is no share group GROUP_ID_NOT_FOUND. Answered by the group's
// coordinator; DELETE on the group, READ on every topic.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DeleteShareGroupOffsets), AdvertisedMin: 0, HandledMin: 0, Max: 0})
}

func (a *Agent) handleDeleteShareGroupOffsets(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	fail := func(e *kerr.Error) (kmsg.Response, error) {
		resp.ErrorCode = e.Code
		return resp, nil
	}
	byName, e := a.shareOffsetsAdmin(ctx, r, opDelete, req.GroupID)
	if e != nil {
		return fail(e)
	}
	var ids []metadata.TopicID
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		st.Topic = rt.Topic
		t, ok := byName[rt.Topic]
		switch {
		case !a.authorize(r, opRead, resTopic, rt.Topic):
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case !ok:
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			st.TopicID = t.ID
			ids = append(ids, t.ID)
		}
		resp.Topics = append(resp.Topics, st)
	}
	var groupErr *kerr.Error
	if code := a.coord.with(ctx, req.GroupID, func(e *groupEntry, _ time.Time) {
		switch {
		case e.sg == nil:
			groupErr = kerr.GroupIDNotFound
		case !e.sg.IsEmpty():
			groupErr = kerr.NonEmptyGroup
		case len(ids) > 0:
			if err := a.store.DeleteShareStates(ctx, req.GroupID, ids); err != nil {
				a.log.Warn("delete share group offsets failed", "group", req.GroupID, "err", err)
				groupErr = shareStoreError(ctx, err)
			}
		}
	}); code != nil {
		return fail(code)
	}
	if groupErr != nil {
		resp.Topics = nil
		return fail(groupErr)
	}
	return resp, nil
}

// shareOffsetsAdmin is how AlterShareGroupOffsets and
// DeleteShareGroupOffsets begin, as Kafka's do: op on the group (READ to
// alter, DELETE to delete), a group id, then the topics by name.
func (a *Agent) shareOffsetsAdmin(ctx context.Context, r *request, op kmsg.ACLOperation, group string) (map[string]metadata.Topic, *kerr.Error) {
	if !a.authorize(r, op, resGroup, group) {
		return nil, kerr.GroupAuthorizationFailed
	}
	if group == "" {
		return nil, kerr.InvalidGroupID
	}
	byName, _, err := a.topics.snapshot(ctx)
	if err != nil {
		return nil, kerr.CoordinatorNotAvailable
	}
	return byName, nil
}
