package agent

// DeleteTopics (key 20), versions 0–6. v6 may name topics by id.
//
// A deleted topic's index rows go with it; its objects become garbage for the
// compactor. Produces in flight to it fail with UNKNOWN_TOPIC_OR_PARTITION at
// commit. The request's TimeoutMillis bounds the store calls: topics not
// deleted by then are REQUEST_TIMED_OUT.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DeleteTopics), AdvertisedMin: 0, HandledMin: 0, Max: 6})
}

func (a *Agent) handleDeleteTopics(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	ctx, cancel := adminContext(ctx, req.TimeoutMillis)
	defer cancel()
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if req.Version >= 6 {
		for _, t := range req.Topics {
			targets = append(targets, target{t.Topic, t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			targets = append(targets, target{name: &n})
		}
	}
	for _, tg := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = tg.name, tg.id
		name := ""
		switch {
		case ctx.Err() != nil:
			st.ErrorCode = kerr.RequestTimedOut.Code
		case tg.name != nil:
			name = *tg.name
		default:
			t, ok, err := a.topics.getID(ctx, metadata.TopicID(tg.id))
			switch {
			case err != nil && ctx.Err() != nil:
				st.ErrorCode = kerr.RequestTimedOut.Code
			case err != nil:
				st.ErrorCode = kerr.UnknownServerError.Code
			case !ok:
				st.ErrorCode = kerr.UnknownTopicID.Code
			default:
				name = t.Name
				st.Topic = &t.Name
			}
		}
		// A topic named by id needs DESCRIBE before its name is told, then
		// DELETE, checked before its existence.
		if st.ErrorCode == 0 && tg.name == nil && !a.authorize(r, opDescribe, resTopic, name) {
			st.ErrorCode, st.Topic = kerr.TopicAuthorizationFailed.Code, nil
		} else if st.ErrorCode == 0 && !a.authorize(r, opDelete, resTopic, name) {
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
		}
		if st.ErrorCode == 0 && isInternalTopic(name) {
			// floe recreates it at every agent start; deleting it
			// would only break regex consumers meanwhile.
			st.ErrorCode = kerr.InvalidTopicException.Code
			msg := "internal topic " + name + " cannot be deleted"
			st.ErrorMessage = &msg
		}
		if st.ErrorCode == 0 {
			err := a.store.DeleteTopic(ctx, name)
			switch {
			case errors.Is(err, metadata.ErrUnknownTopic):
				st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case err != nil:
				code, _ := a.adminStoreError(ctx, "delete topic", name, err)
				st.ErrorCode = code.Code
			default:
				a.log.Info("topic deleted", "topic", name)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	a.topics.invalidate()
	return resp, nil
}
