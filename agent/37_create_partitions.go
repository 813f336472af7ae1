package agent

// CreatePartitions (key 37), versions 0–3. Only the count changes what
// floe does; a partition's one copy is in object storage, whichever agents
// an assignment names.
//
// Checked as Kafka's controller checks it (ControllerApis.createPartitions,
// ReplicationControlManager.createPartitions), in its order: a topic named
// more than once is INVALID_REQUEST, answered once; an unknown topic
// UNKNOWN_TOPIC_OR_PARTITION; a count that is not an increase
// INVALID_PARTITIONS. A manual assignment (null means none) must give one
// replica list per new partition, each checked as CreateTopics checks its
// lists (checkReplicaList: non-empty, registered node ids, none twice, all
// as long as the first, a live agent in each), else
// INVALID_REPLICA_ASSIGNMENT, in Kafka's words. Kafka wants each
// list as long as the topic's existing partitions' replica lists; floe's
// topics all report one replica however many their creator asked for (see
// 19_create_topics.go), so the lists need only agree with each other, as
// CreateTopics' lists do.
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
	seen := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		switch seen[rt.Topic] {
		case 0: // a duplicate already answered
			continue
		case 1:
		default: // a duplicate: answered once, at its first mention, as Kafka does
			seen[rt.Topic] = 0
			st.ErrorCode = kerr.InvalidRequest.Code
			st.ErrorMessage = kmsg.StringPtr("Duplicate topic name.")
			resp.Topics = append(resp.Topics, st)
			continue
		}
		if !a.authorize(r, opAlter, resTopic, rt.Topic) {
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			st.ErrorMessage = kmsg.StringPtr(kerr.TopicAuthorizationFailed.Message)
			resp.Topics = append(resp.Topics, st)
			continue
		}
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
	case rt.Count == t.Partitions:
		return kerr.InvalidPartitions, fmt.Sprintf("Topic already has %d partition(s).", t.Partitions)
	case rt.Count < t.Partitions:
		return kerr.InvalidPartitions, fmt.Sprintf("The topic %s currently has %d partition(s); %d would not be an increase.",
			rt.Topic, t.Partitions, rt.Count)
	}
	if rt.Assignment != nil {
		if code, msg := a.checkNewPartitionAssignment(rt, rt.Count-t.Partitions); code != nil {
			return code, msg
		}
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

// checkNewPartitionAssignment checks a CreatePartitions manual assignment
// of additional new partitions: one list per new partition, each checked
// by checkReplicaList against the first.
func (a *Agent) checkNewPartitionAssignment(rt kmsg.CreatePartitionsRequestTopic, additional int32) (*kerr.Error, string) {
	if int64(len(rt.Assignment)) != int64(additional) {
		return kerr.InvalidReplicaAssignment, fmt.Sprintf("Attempted to add %d additional partition(s), but only %d assignment(s) were specified.",
			additional, len(rt.Assignment))
	}
	brokers := a.registeredBrokers()
	for i, as := range rt.Assignment {
		if code, msg := checkReplicaList(brokers, rt.Count-additional+int32(i), as.Replicas, len(rt.Assignment[0].Replicas)); code != nil {
			return code, msg
		}
	}
	return nil, ""
}
