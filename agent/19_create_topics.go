package agent

// CreateTopics (key 19), versions 0–7.
//
// Partition count -1 means the agent default. Replication is the object
// store's business, so any replication factor (or -1) is accepted and
// reported as 1; manual replica assignments are accepted and ignored beyond
// their partition count. Configs are stored as given; validate-only checks
// everything and creates nothing. v7 answers carry the topic id.
//
// Limits: a topic of more than MaxPartitionsPerTopic partitions is
// INVALID_PARTITIONS; one that would take the cluster past MaxTopics or
// MaxPartitions is POLICY_VIOLATION, Kafka's answer to a topic its create
// policy refuses. Validate-only requests are checked the same way. The
// request's TimeoutMillis bounds the store calls; topics not created by
// then are REQUEST_TIMED_OUT. Each topic is created in a transaction of its
// own, so the writers of other requests get their turn between topics.
// The topics of one request are not limited in number: the frame size
// bounds the request, the limits above its outcome, and its timeout the
// time it takes. (Kafka's KRaft controller refuses a request of more than
// 10,000 partitions in all with POLICY_VIOLATION, because it builds one
// metadata batch for the whole request; floe builds none.)

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.CreateTopics), AdvertisedMin: 0, HandledMin: 0, Max: 7})
}

func (a *Agent) handleCreateTopics(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	ctx, cancel := adminContext(ctx, req.TimeoutMillis)
	defer cancel()
	seen := make(map[string]int)
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	budget := &clusterBudget{a: a}
	created := false
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		code, msg := a.createTopic(ctx, req.ValidateOnly, rt, seen[rt.Topic] > 1, budget, &st)
		if code != nil {
			st.ErrorCode = code.Code
			if msg != "" {
				st.ErrorMessage = &msg
			}
		} else if !req.ValidateOnly {
			created = true
		}
		resp.Topics = append(resp.Topics, st)
	}
	if created {
		a.topics.invalidate()
	}
	return resp, nil
}

func (a *Agent) createTopic(ctx context.Context, validateOnly bool, rt kmsg.CreateTopicsRequestTopic, dup bool,
	budget *clusterBudget, st *kmsg.CreateTopicsResponseTopic) (*kerr.Error, string) {
	if dup {
		return kerr.InvalidRequest, "topic named more than once in the request"
	}
	if err := validTopicName(rt.Topic); err != nil {
		return kerr.InvalidTopicException, err.Error()
	}
	partitions := rt.NumPartitions
	if len(rt.ReplicaAssignment) > 0 {
		if partitions != -1 {
			return kerr.InvalidRequest, "both partition count and replica assignment given"
		}
		partitions = int32(min(len(rt.ReplicaAssignment), 1<<31-1))
	}
	if partitions == -1 {
		partitions = a.cfg.DefaultPartitions
	}
	if partitions < 1 {
		return kerr.InvalidPartitions, "number of partitions must be larger than 0"
	}
	if code, msg := a.checkPartitionsPerTopic(rt.Topic, partitions); code != nil {
		return code, msg
	}
	if rt.ReplicationFactor == 0 || rt.ReplicationFactor < -1 {
		return kerr.InvalidReplicationFactor, "replication factor must be larger than 0"
	}
	configs := make(map[string]string, len(rt.Configs))
	for _, c := range rt.Configs {
		if c.Value == nil {
			continue
		}
		if err := validTopicConfig(c.Name, *c.Value); err != nil {
			return kerr.InvalidConfig, err.Error()
		}
		configs[c.Name] = *c.Value
	}
	if ctx.Err() != nil {
		return kerr.RequestTimedOut, "the request's timeout passed before the topic was created"
	}
	exists := func() (*kerr.Error, string) {
		if _, ok, err := a.topics.get(ctx, rt.Topic); err != nil {
			return a.adminStoreError(ctx, "look up topic", rt.Topic, err)
		} else if ok {
			return kerr.TopicAlreadyExists, fmt.Sprintf("topic %q already exists", rt.Topic)
		}
		return nil, ""
	}
	if validateOnly {
		if code, msg := exists(); code != nil {
			return code, msg
		}
	}
	if code, msg := budget.load(ctx); code != nil {
		return code, msg
	}
	if limit, _ := budget.refusal(1, int64(partitions)); limit != "" && !validateOnly {
		// An existing topic is TOPIC_ALREADY_EXISTS, full cluster or not.
		if code, msg := exists(); code != nil {
			return code, msg
		}
	}
	if code, msg := budget.check(ctx, 1, int64(partitions)); code != nil {
		return code, msg
	}
	var t metadata.Topic
	if validateOnly {
		t = metadata.Topic{Name: rt.Topic, Partitions: partitions, Configs: configs}
	} else {
		var err error
		t, err = a.store.CreateTopic(ctx, rt.Topic, partitions, configs)
		if errors.Is(err, metadata.ErrTopicExists) {
			return kerr.TopicAlreadyExists, fmt.Sprintf("topic %q already exists", rt.Topic)
		}
		if err != nil {
			return a.adminStoreError(ctx, "create topic", rt.Topic, err)
		}
		a.log.Info("topic created", "topic", rt.Topic, "partitions", partitions)
	}
	budget.add(1, int64(partitions))
	st.TopicID = t.ID
	st.NumPartitions = t.Partitions
	st.ReplicationFactor = 1
	for _, name := range sortedConfigNames(t) {
		v, explicit := topicConfig(t, name)
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name = name
		c.Value = &v
		c.Source = int8(kmsg.ConfigSourceDefaultConfig)
		if explicit {
			c.Source = int8(kmsg.ConfigSourceDynamicTopicConfig)
		}
		st.Configs = append(st.Configs, c)
	}
	return nil, ""
}

// adminStoreError is the answer to a failed store call of an admin
// request: REQUEST_TIMED_OUT once the request's deadline has passed (the
// change may or may not have been made, as with Kafka's timeouts), else
// UNKNOWN_SERVER_ERROR, logged.
func (a *Agent) adminStoreError(ctx context.Context, what, topic string, err error) (*kerr.Error, string) {
	if ctx.Err() != nil {
		return kerr.RequestTimedOut, "the request's timeout passed before the store answered"
	}
	a.log.Warn(what+" failed", "topic", topic, "err", err)
	return kerr.UnknownServerError, ""
}

// validTopicName applies Kafka's topic name rules.
func validTopicName(name string) error {
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("topic name %q is illegal", name)
	}
	if len(name) > 249 {
		return fmt.Errorf("topic name is longer than 249 characters")
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %q contains characters other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// validTopicConfig checks numeric topic configs that floe itself enforces.
func validTopicConfig(name, value string) error {
	switch name {
	case "max.message.bytes":
		var n int64
		if _, err := fmt.Sscan(value, &n); err != nil || n < 0 {
			return fmt.Errorf("invalid value %q for %s", value, name)
		}
	case "cleanup.policy":
		for _, p := range strings.Split(value, ",") {
			if p := strings.TrimSpace(p); p != "delete" && p != "compact" {
				return fmt.Errorf("invalid value %q for %s", value, name)
			}
		}
	}
	return nil
}
