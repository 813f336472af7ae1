package agent

// AlterShareGroupOffsets (key 91), version 0: sets the share-partition
// start offset of partitions of a share group without members, dropping
// their in-flight state (kafka-share-groups.sh --reset-offsets). A group
// with members answers NON_EMPTY_GROUP, a classic or consumer group
// GROUP_ID_NOT_FOUND; the group becomes a share group if it was none. All
// partitions are written in one store transaction. Answered by the group's
// coordinator; READ on the group and on every topic.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.AlterShareGroupOffsets), AdvertisedMin: 0, HandledMin: 0, Max: 0})
}

func (a *Agent) handleAlterShareGroupOffsets(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	fail := func(e *kerr.Error) (kmsg.Response, error) {
		resp.ErrorCode = e.Code
		return resp, nil
	}
	byName, e := a.shareOffsetsAdmin(ctx, r, opRead, req.GroupID)
	if e != nil {
		return fail(e)
	}
	type target struct {
		rp  *kmsg.AlterShareGroupOffsetsResponseTopicPartition
		key metadata.ShareKey
		at  int64
	}
	var targets []target
	for _, rt := range req.Topics {
		st := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		st.Topic = rt.Topic
		t, ok := byName[rt.Topic]
		denied := !a.authorize(r, opRead, resTopic, rt.Topic)
		if ok && !denied {
			st.TopicID = t.ID
		}
		for _, p := range rt.Partitions {
			sp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			sp.Partition = p.Partition
			switch {
			case denied:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !ok || p.Partition < 0 || p.Partition >= t.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.StartOffset < -1:
				sp.ErrorCode = kerr.InvalidRequest.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	for i, rt := range req.Topics {
		for j, p := range rt.Partitions {
			sp := &resp.Topics[i].Partitions[j]
			if sp.ErrorCode == 0 {
				targets = append(targets, target{sp, metadata.ShareKey{Topic: byName[rt.Topic].ID, Partition: p.Partition}, p.StartOffset})
			}
		}
	}
	var groupErr *kerr.Error
	if code := a.coord.with(ctx, req.GroupID, func(e *groupEntry, now time.Time) {
		if !a.coord.asShareGroup(ctx, e, now) {
			groupErr = kerr.GroupIDNotFound
			return
		}
		if !e.sg.IsEmpty() {
			groupErr = kerr.NonEmptyGroup
			return
		}
		e.sg.MarkChanged() // the group exists from now on
		keys := make([]metadata.ShareKey, 0, len(targets))
		for _, t := range targets {
			keys = append(keys, t.key)
		}
		// -1 is "latest": the partition's high watermark.
		ends := map[metadata.ShareKey]int64{}
		for _, t := range targets {
			if t.at == -1 {
				ps, err := a.store.Partition(ctx, t.key.Topic, t.key.Partition)
				if err != nil {
					t.rp.ErrorCode = kerr.KafkaStorageError.Code
					continue
				}
				ends[t.key] = ps.NextOffset
			}
		}
		err := a.store.UpdateShares(ctx, req.GroupID, keys, func(_ time.Time, states map[metadata.ShareKey]*metadata.SharePartitionState) error {
			for _, t := range targets {
				if t.rp.ErrorCode != 0 {
					continue
				}
				st := states[t.key]
				if st == nil {
					st = &metadata.SharePartitionState{ShareKey: t.key}
					states[t.key] = st
				} else {
					st.StateEpoch++
				}
				at := t.at
				if at == -1 {
					at = ends[t.key]
				}
				st.Reset(at)
			}
			return nil
		})
		if err != nil {
			a.log.Warn("alter share group offsets failed", "group", req.GroupID, "err", err)
			groupErr = shareStoreError(ctx, err)
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
