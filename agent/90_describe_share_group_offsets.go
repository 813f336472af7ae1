package agent

// DescribeShareGroupOffsets (key 90), versions 0–1 (v1: Lag, KIP-1226):
// per partition the share-partition start offset and, v1, the lag — the
// high watermark less the start offset less the offsets already
// acknowledged or archived in the window. Partitions without share state
// answer start offset -1. Topics nil describes every partition the group
// has state for (skipping topics the client may not DESCRIBE); a topic
// named without partitions, all of its partitions. Answered
// by the group's coordinator; DESCRIBE on the group and its topics.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DescribeShareGroupOffsets), AdvertisedMin: 0, HandledMin: 0, Max: 1})
}

func (a *Agent) handleDescribeShareGroupOffsets(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	byName, byID, err := a.topics.snapshot(ctx)
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		if !a.authorize(r, opDescribe, resGroup, rg.GroupID) {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if err != nil {
			g.ErrorCode = kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		var states []metadata.SharePartitionState
		var serr error
		if code := a.coord.with(ctx, rg.GroupID, func(e *groupEntry, _ time.Time) {
			states, serr = a.store.GroupShareStates(ctx, rg.GroupID)
		}); code != nil {
			g.ErrorCode = code.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if serr != nil {
			a.log.Warn("describe share group offsets failed", "group", rg.GroupID, "err", serr)
			g.ErrorCode = kerr.KafkaStorageError.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		have := map[metadata.ShareKey]*metadata.SharePartitionState{}
		for i := range states {
			have[states[i].ShareKey] = &states[i]
		}
		type topicReq struct {
			name  string
			parts []int32
		}
		var reqs []topicReq
		all := rg.Topics == nil
		if all {
			byTopic := map[string][]int32{}
			for _, st := range states {
				if t, ok := byID[st.Topic]; ok {
					byTopic[t.Name] = append(byTopic[t.Name], st.Partition)
				}
			}
			for _, name := range sortedKeys(byTopic) {
				reqs = append(reqs, topicReq{name, byTopic[name]})
			}
		} else {
			for _, rt := range rg.Topics {
				parts := rt.Partitions
				if t, ok := byName[rt.Topic]; ok && len(parts) == 0 {
					// A topic without partitions named: all of them.
					for p := range t.Partitions {
						parts = append(parts, p)
					}
				}
				reqs = append(reqs, topicReq{rt.Topic, parts})
			}
		}
		for _, tr := range reqs {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = tr.name
			t, known := byName[tr.name]
			denied := !a.authorize(r, opDescribe, resTopic, tr.name)
			if denied && all {
				continue
			}
			var pss []metadata.PartitionState
			if known && !denied {
				rt.TopicID = t.ID
				pss, _ = a.store.Partitions(ctx, t.ID)
			}
			for _, p := range tr.parts {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.Lag = p, -1, -1
				switch {
				case denied:
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case !known || p < 0 || int(p) >= len(pss):
				default:
					rp.LeaderEpoch = 0
					if st := have[metadata.ShareKey{Topic: t.ID, Partition: p}]; st != nil {
						rp.StartOffset = st.StartOffset
						rp.Lag = max(0, pss[p].NextOffset-st.StartOffset-st.Done())
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			g.Topics = append(g.Topics, rt)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
