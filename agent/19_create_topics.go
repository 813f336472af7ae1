package agent

// CreateTopics (key 19), versions 0–7.
//
// Partition count -1 means the agent default. Configs are checked as
// AlterConfigs and IncrementalAlterConfigs check them, by the one table of
// topic configs (topicconfig.CheckAll): a name that is no Kafka
// (or floe.*) topic config, a value of the wrong type or range, a fixed
// config's other values and a null value are INVALID_CONFIG in Kafka's
// words; the rest are stored as given. Validate-only checks everything
// and creates nothing. v7 answers carry the topic id.
//
// Replication factor (docs/compatibility.md): a partition's one copy is in
// object storage and no agent holds a replica, so every topic has
// replication factor 1: one replica, its leader, always in sync, reported
// alike here, in Metadata and in DescribeConfigs (default.replication.factor,
// min.insync.replicas). A requested factor is accepted, and answered as 1,
// from 1 up to maxReplicationFactor (3, or the number of live agents if
// more), so that applications creating topics for a 3-broker Kafka run
// unchanged on one agent; -1 means the default (1). 0, below -1 and beyond
// that bound are INVALID_REPLICATION_FACTOR, as Kafka answers a factor it
// cannot place (kafka-python, confluent-kafka-python and confluent-kafka-go
// create one of "brokers + 10" and expect it). A manual replica assignment
// is checked as Kafka's ReplicationControlManager checks it (factor and
// partition count -1, partitions 0…n-1 each named once, non-empty lists of
// distinct listed node ids, one length for all, a live agent in each:
// INVALID_REQUEST or INVALID_REPLICA_ASSIGNMENT, in Kafka's words; the
// list checks are checkReplicaList, which CreatePartitions and
// AlterPartitionReassignments share) and then gives only the partition
// count.
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
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
	"floe/topicconfig"
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
	// CREATE on the cluster, or else on each topic, as Kafka checks it:
	// after duplicates, before anything else about the topic.
	clusterCreate := a.authorizeCluster(r, opCreate)
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		var code *kerr.Error
		var msg string
		if seen[rt.Topic] == 1 && !clusterCreate && !a.authorize(r, opCreate, resTopic, rt.Topic) {
			code, msg = kerr.TopicAuthorizationFailed, "Authorization failed."
		} else {
			code, msg = a.createTopic(ctx, req.ValidateOnly, rt, seen[rt.Topic] > 1, budget, &st)
		}
		if code == nil && !a.authorize(r, opDescribeConfigs, resTopic, rt.Topic) {
			// The topic is created, but its configs are not told (v5+).
			st.Configs, st.ConfigErrorCode = nil, kerr.TopicAuthorizationFailed.Code
		}
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
	// Kafka's order (ReplicationControlManager.createTopic): the manual
	// assignment, or the factor, then the partition count, then whether
	// the factor can be placed.
	partitions := rt.NumPartitions
	if len(rt.ReplicaAssignment) > 0 {
		if code, msg := a.checkReplicaAssignment(rt); code != nil {
			return code, msg
		}
		partitions = int32(min(len(rt.ReplicaAssignment), 1<<31-1))
	} else if rt.ReplicationFactor == 0 || rt.ReplicationFactor < -1 {
		return kerr.InvalidReplicationFactor, "replication factor must be larger than 0, or -1 to use the default value"
	}
	if partitions == -1 {
		partitions = a.cfg.DefaultPartitions
	}
	if partitions < 1 {
		return kerr.InvalidPartitions, "number of partitions must be larger than 0"
	}
	if most := a.maxReplicationFactor(); int(rt.ReplicationFactor) > most {
		return kerr.InvalidReplicationFactor, fmt.Sprintf("replication factor %d is more than %d: floe keeps each partition's one copy "+
			"in object storage and accepts a replication factor of at most %d, or the number of live agents if more",
			rt.ReplicationFactor, most, replicationFactorFloor)
	}
	if code, msg := a.checkPartitionsPerTopic(rt.Topic, partitions); code != nil {
		return code, msg
	}
	// Checked as AlterConfigs checks them (topicconfig); a repeated name takes its last value, as in Kafka.
	configs := make(map[string]string, len(rt.Configs))
	var nulls []string
	for _, c := range rt.Configs {
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		configs[c.Name] = *c.Value
	}
	if len(nulls) > 0 {
		return kerr.InvalidConfig, "Null value not supported for topic configs: " + strings.Join(nulls, ",")
	}
	if why := topicconfig.CheckAll(configs); why != "" {
		return kerr.InvalidConfig, why
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
		v, explicit := a.topicConfig(t, name)
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

// replicationFactorFloor is the largest replication factor accepted
// whatever the number of agents: 3, what production topics ask for, so an
// application written for a 3-broker Kafka runs unchanged on one agent.
const replicationFactorFloor = 3

// maxReplicationFactor is the largest replication factor CreateTopics
// accepts: replicationFactorFloor, or the number of live agents if more,
// as Kafka accepts one up to its number of brokers.
func (a *Agent) maxReplicationFactor() int {
	return max(replicationFactorFloor, len(a.liveAgents()))
}

// checkReplicaAssignment applies Kafka's checks of a manual assignment
// (ReplicationControlManager.createTopic), in Kafka's words: replication
// factor and partition count -1; each partition named once, 0…n-1; each
// list checked by checkReplicaList, as long as the first.
func (a *Agent) checkReplicaAssignment(rt kmsg.CreateTopicsRequestTopic) (*kerr.Error, string) {
	if rt.ReplicationFactor != -1 {
		return kerr.InvalidRequest, "A manual partition assignment was specified, but replication factor was not set to -1."
	}
	if rt.NumPartitions != -1 {
		return kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1."
	}
	brokers := a.registeredBrokers()
	seen := make(map[int32]bool, len(rt.ReplicaAssignment))
	for _, ra := range rt.ReplicaAssignment {
		if seen[ra.Partition] {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("Found multiple manual partition assignments for partition %d", ra.Partition)
		}
		seen[ra.Partition] = true
		if code, msg := checkReplicaList(brokers, ra.Partition, ra.Replicas, len(rt.ReplicaAssignment[0].Replicas)); code != nil {
			return code, msg
		}
	}
	for p := range int32(min(len(rt.ReplicaAssignment), 1<<31-1)) {
		if !seen[p] {
			return kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence"
		}
	}
	return nil, ""
}

// registeredBrokers maps the node ids a manual assignment may name to
// whether the agent is live: the brokers this agent lists, live agents
// and recently departed ones (false), as Kafka accepts any registered
// broker and tells fenced ones apart.
func (a *Agent) registeredBrokers() map[int32]bool {
	live := a.liveAgents()
	brokers := make(map[int32]bool)
	for _, d := range a.departedBrokers(live, "") {
		brokers[d.NodeID] = false
	}
	for _, l := range live {
		brokers[l.NodeID] = true
	}
	return brokers
}

// checkReplicaList applies Kafka's checks of one partition's manual
// assignment (ReplicationControlManager.validateManualPartitionAssignment
// and the live-replica check after it), in Kafka's words, for
// CreateTopics, CreatePartitions and AlterPartitionReassignments: a
// non-empty list of registered brokers (brokers, see registeredBrokers),
// none twice, of want replicas (any number when want < 0), at least one of
// them live. Like Kafka it looks at the ids in ascending order, so the
// lowest offending id is named.
func checkReplicaList(brokers map[int32]bool, partition int32, replicas []int32, want int) (*kerr.Error, string) {
	if len(replicas) == 0 {
		return kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list."
	}
	sorted := slices.Sorted(slices.Values(replicas))
	live := false
	for i, id := range sorted {
		up, ok := brokers[id]
		if !ok {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", id)
		}
		live = live || up
	}
	if want >= 0 && len(replicas) != want {
		return kerr.InvalidReplicaAssignment, fmt.Sprintf("The manual partition assignment includes a partition with %d replica(s), "+
			"but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), want)
	}
	if !live {
		return kerr.InvalidReplicaAssignment, fmt.Sprintf("All brokers specified in the manual partition assignment for partition %d "+
			"are fenced or in controlled shutdown.", partition)
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
