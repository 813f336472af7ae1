package agent

// OffsetDelete (key 47), version 0.
//
// Deletes committed offsets of partitions the group's members are not
// subscribed to (GROUP_SUBSCRIBED_TO_TOPIC otherwise, per partition);
// GROUP_ID_NOT_FOUND for a group without state or offsets.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.OffsetDelete), AdvertisedMin: 0, HandledMin: 0, Max: 0})
}

func (a *Agent) handleOffsetDelete(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	// DELETE on the group, then READ on each topic, as in Kafka.
	if !a.authorize(r, opDelete, resGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if code := a.coord.with(ctx, req.Group, func(e *groupEntry, _ time.Time) {
		if !e.exists {
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			return
		}
		subscribed := e.subscribedTopics()
		var del []metadata.TopicPartition
		for i, t := range req.Topics {
			readOK := a.authorize(r, opRead, resTopic, t.Topic)
			for j, p := range t.Partitions {
				if !readOK {
					resp.Topics[i].Partitions[j].ErrorCode = kerr.TopicAuthorizationFailed.Code
					continue
				}
				if subscribed[t.Topic] {
					resp.Topics[i].Partitions[j].ErrorCode = kerr.GroupSubscribedToTopic.Code
					continue
				}
				del = append(del, metadata.TopicPartition{Topic: t.Topic, Partition: p.Partition})
			}
		}
		if err := a.store.DeleteOffsets(ctx, req.Group, del); err != nil {
			a.log.Warn("delete offsets failed", "group", req.Group, "err", err)
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		}
	}); code != nil {
		resp.ErrorCode = code.Code
	}
	return resp, nil
}
