package agent

// OffsetFetch (key 9), versions 0–9.
//
// Committed offsets are read from the store, so any coordinator sees what
// every earlier one committed. The group's coordinator answers; others say
// NOT_COORDINATOR. A partition without a commit gets offset -1. Null topics
// (v2+) mean every committed partition. v8+ ask for several groups at once,
// each answered (or refused) on its own. With RequireStable (v7+), a
// partition whose offsets a transaction has committed but not yet ended
// gets UNSTABLE_OFFSET_COMMIT, as in Kafka, so a consumer taking it over
// waits instead of re-reading what the transaction consumed.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.OffsetFetch), AdvertisedMin: 0, HandledMin: 0, Max: 9})
}

// fetchedPartition is one partition's answer.
type fetchedPartition struct {
	partition   int32
	offset      int64
	leaderEpoch int32
	metadata    string
	code        int16
}

type fetchedTopic struct {
	topic string
	parts []fetchedPartition
}

// fetchGroupOffsets returns the offsets asked for (all committed when
// topics is nil), or a group-level error.
func (a *Agent) fetchGroupOffsets(ctx context.Context, r *request, groupID string, topics map[string][]int32, order []string, requireStable bool) ([]fetchedTopic, *kerr.Error) {
	// DESCRIBE on the group, then on each topic: topics not allowed are
	// left out of a fetch of all offsets and TOPIC_AUTHORIZATION_FAILED
	// when named, as in Kafka.
	if !a.authorize(r, opDescribe, resGroup, groupID) {
		return nil, kerr.GroupAuthorizationFailed
	}
	if !a.coord.isOwner(groupID) {
		return nil, kerr.NotCoordinator
	}
	offs, err := a.store.FetchOffsets(ctx, groupID)
	if err != nil {
		a.log.Warn("fetch offsets failed", "group", groupID, "err", err)
		return nil, kerr.CoordinatorNotAvailable
	}
	unstable := map[metadata.TopicPartition]bool{}
	if requireStable {
		pending, err := a.store.PendingTxnPartitions(ctx, groupID)
		if err != nil {
			a.log.Warn("fetch pending transactional offsets failed", "group", groupID, "err", err)
			return nil, kerr.CoordinatorNotAvailable
		}
		for _, tp := range pending {
			unstable[tp] = true
		}
	}
	mark := func(t string, fp *fetchedPartition) {
		if unstable[metadata.TopicPartition{Topic: t, Partition: fp.partition}] {
			fp.offset, fp.leaderEpoch, fp.metadata = -1, -1, ""
			fp.code = kerr.UnstableOffsetCommit.Code
		}
	}
	byTP := make(map[metadata.TopicPartition]metadata.GroupOffset, len(offs))
	for _, o := range offs {
		byTP[metadata.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o
	}
	var out []fetchedTopic
	if topics == nil {
		for _, o := range offs {
			if !a.authorize(r, opDescribe, resTopic, o.Topic) {
				continue
			}
			if len(out) == 0 || out[len(out)-1].topic != o.Topic {
				out = append(out, fetchedTopic{topic: o.Topic})
			}
			ft := &out[len(out)-1]
			fp := fetchedPartition{partition: o.Partition, offset: o.Offset, leaderEpoch: o.LeaderEpoch, metadata: o.Metadata}
			mark(o.Topic, &fp)
			ft.parts = append(ft.parts, fp)
		}
		return out, nil
	}
	for _, t := range order {
		ft := fetchedTopic{topic: t}
		denied := !a.authorize(r, opDescribe, resTopic, t)
		for _, p := range topics[t] {
			fp := fetchedPartition{partition: p, offset: -1, leaderEpoch: -1}
			if denied {
				fp.code = kerr.TopicAuthorizationFailed.Code
				ft.parts = append(ft.parts, fp)
				continue
			}
			if o, ok := byTP[metadata.TopicPartition{Topic: t, Partition: p}]; ok {
				fp.offset, fp.leaderEpoch, fp.metadata = o.Offset, o.LeaderEpoch, o.Metadata
			}
			mark(t, &fp)
			ft.parts = append(ft.parts, fp)
		}
		out = append(out, ft)
	}
	return out, nil
}

func (a *Agent) handleOffsetFetch(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, g := range req.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = g.Group
			var topics map[string][]int32
			var order []string
			if g.Topics != nil {
				topics = map[string][]int32{}
				for _, t := range g.Topics {
					if _, seen := topics[t.Topic]; !seen {
						order = append(order, t.Topic)
					}
					topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
				}
			}
			fts, err := a.fetchGroupOffsets(ctx, r, g.Group, topics, order, req.RequireStable)
			if err != nil {
				rg.ErrorCode = err.Code
			}
			for _, ft := range fts {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = ft.topic
				for _, fp := range ft.parts {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					md := fp.metadata
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = fp.partition, fp.offset, fp.leaderEpoch, &md
					rp.ErrorCode = fp.code
					rt.Partitions = append(rt.Partitions, rp)
				}
				rg.Topics = append(rg.Topics, rt)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
	var topics map[string][]int32
	var order []string
	if req.Topics != nil || req.Version < 2 {
		topics = map[string][]int32{}
		for _, t := range req.Topics {
			if _, seen := topics[t.Topic]; !seen {
				order = append(order, t.Topic)
			}
			topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
		}
	}
	fts, err := a.fetchGroupOffsets(ctx, r, req.Group, topics, order, req.Version >= 7 && req.RequireStable)
	if err != nil {
		if req.Version >= 2 {
			resp.ErrorCode = err.Code
			return resp, nil
		}
		// v0–v1 have no group-level error: every partition carries it.
		for _, t := range order {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t
			for _, p := range topics[t] {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, err.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	for _, ft := range fts {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = ft.topic
		for _, fp := range ft.parts {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			md := fp.metadata
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = fp.partition, fp.offset, fp.leaderEpoch, &md
			rp.ErrorCode = fp.code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
