package agent

// OffsetForLeaderEpoch (key 23), versions 0–4.
//
// floe has one leader epoch, 0, for every partition (Metadata reports it and
// Fetch stamps it on every batch), so the end offset of epoch 0 is the high
// watermark. A current epoch above 0 is UNKNOWN_LEADER_EPOCH, and asking for a
// later epoch gets the undefined epoch and offset, as Kafka answers.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.OffsetForLeaderEpoch), AdvertisedMin: 0, HandledMin: 0, Max: 4})
}

func (a *Agent) handleOffsetForLeaderEpoch(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		t, ok, err := a.topics.get(ctx, rt.Topic)
		denied := !a.authorize(r, opDescribe, resTopic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			var code *kerr.Error
			switch {
			case denied:
				code = kerr.TopicAuthorizationFailed
			case err != nil:
				code = kerr.UnknownServerError
			case !ok || rp.Partition < 0 || rp.Partition >= t.Partitions:
				code = kerr.UnknownTopicOrPartition
			case rp.CurrentLeaderEpoch > 0:
				code = kerr.UnknownLeaderEpoch
			case rp.LeaderEpoch > 0:
				// No such epoch yet: Kafka answers with undefined epoch and offset.
			default:
				st, err := a.store.Partition(ctx, t.ID, rp.Partition)
				switch {
				case errors.Is(err, metadata.ErrUnknownTopic):
					code = kerr.UnknownTopicOrPartition
				case err != nil:
					code = kerr.KafkaStorageError
				default:
					sp.LeaderEpoch, sp.EndOffset = 0, st.NextOffset
				}
			}
			if code != nil {
				sp.ErrorCode = code.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
