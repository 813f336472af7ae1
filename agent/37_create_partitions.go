package agent

// CreatePartitions (key 37), versions 0–3. Only the count matters; replica
// assignments are the object store's business and are ignored.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.CreatePartitions), AdvertisedMin: 0, HandledMin: 0, Max: 3})
}

func (a *Agent) handleCreatePartitions(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		t, ok, err := a.topics.get(ctx, rt.Topic)
		var code *kerr.Error
		switch {
		case err != nil:
			code = kerr.UnknownServerError
		case !ok:
			code = kerr.UnknownTopicOrPartition
		case rt.Count <= t.Partitions:
			code = kerr.InvalidPartitions
		case req.ValidateOnly:
		default:
			err := a.store.CreatePartitions(ctx, rt.Topic, rt.Count)
			switch {
			case errors.Is(err, metadata.ErrUnknownTopic):
				code = kerr.UnknownTopicOrPartition
			case errors.Is(err, metadata.ErrInvalidPartitions):
				code = kerr.InvalidPartitions
			case err != nil:
				a.log.Warn("create partitions failed", "topic", rt.Topic, "err", err)
				code = kerr.UnknownServerError
			}
		}
		if code != nil {
			st.ErrorCode = code.Code
		}
		resp.Topics = append(resp.Topics, st)
	}
	a.topics.invalidate()
	return resp, nil
}
