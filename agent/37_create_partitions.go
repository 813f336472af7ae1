package agent

// CreatePartitions (key 37), versions 0–3. Only the count matters; replica
// assignments are the object store's business and are ignored.
//
// A count above MaxPartitionsPerTopic is INVALID_PARTITIONS; new
// partitions that would take the cluster past MaxPartitions are
// POLICY_VIOLATION. Validate-only requests are checked the same way. The
// request's TimeoutMillis bounds the store calls: topics not done by then
// are REQUEST_TIMED_OUT.

import (
	"context"
	"errors"
	"fmt"

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
	ctx, cancel := adminContext(ctx, req.TimeoutMillis)
	defer cancel()
	budget := &clusterBudget{a: a}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		if code, msg := a.createPartitions(ctx, rt, req.ValidateOnly, budget); code != nil {
			st.ErrorCode = code.Code
			if msg != "" {
				st.ErrorMessage = &msg
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	a.topics.invalidate()
	return resp, nil
}

func (a *Agent) createPartitions(ctx context.Context, rt kmsg.CreatePartitionsRequestTopic, validateOnly bool, budget *clusterBudget) (*kerr.Error, string) {
	if ctx.Err() != nil {
		return kerr.RequestTimedOut, "the request's timeout passed before the partitions were created"
	}
	t, ok, err := a.topics.get(ctx, rt.Topic)
	switch {
	case err != nil:
		return a.adminStoreError(ctx, "create partitions: look up topic", rt.Topic, err)
	case !ok:
		return kerr.UnknownTopicOrPartition, ""
	case rt.Count <= t.Partitions:
		return kerr.InvalidPartitions, fmt.Sprintf("topic has %d partitions, %d is not more", t.Partitions, rt.Count)
	}
	if code, msg := a.checkPartitionsPerTopic(rt.Topic, rt.Count); code != nil {
		return code, msg
	}
	more := int64(rt.Count - t.Partitions)
	if code, msg := budget.check(ctx, 0, more); code != nil {
		return code, msg
	}
	if !validateOnly {
		err := a.store.CreatePartitions(ctx, rt.Topic, rt.Count)
		switch {
		case errors.Is(err, metadata.ErrUnknownTopic):
			return kerr.UnknownTopicOrPartition, ""
		case errors.Is(err, metadata.ErrInvalidPartitions):
			return kerr.InvalidPartitions, err.Error()
		case err != nil:
			return a.adminStoreError(ctx, "create partitions", rt.Topic, err)
		}
	}
	budget.add(0, more)
	return nil, ""
}
