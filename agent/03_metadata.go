package agent

// Metadata (key 3), versions 0–12.
//
// Brokers are the live agents, then for a while the node ids of departed
// agents at live agents' addresses (departed.go). Any agent can serve any
// partition; each partition's "leader" is picked by hashing the topic and
// partition over the live agents (over those in the client's zone when its
// client id names one with floe_az=ZONE), which spreads clients'
// connections. Every partition has leader epoch 0 and its leader as sole
// replica and ISR: replication factor 1, the policy CreateTopics answers
// (19_create_topics.go).
//
// Unknown topics are created when the agent allows auto-creation and the
// request does (v4+ AllowAutoTopicCreation; always below v4, as in Kafka).
// A topic this request created (or found created meanwhile) is answered
// LEADER_NOT_AVAILABLE with no partitions, as a Kafka broker that creates it
// in place answers (DefaultAutoTopicCreationManager.createTopicsInZk maps a
// created or already existing topic to LEADER_NOT_AVAILABLE): clients retry
// it, and the next Metadata lists the topic. A deleted topic is an unknown
// one: named again with auto-creation on, it is created anew, with a new
// topic id and empty partitions. v10+ carry real non-zero topic ids.
//
// Auto-creation is bounded: the agent creates at most AutoCreateRate topics
// a second (a token bucket with bursts of as many), within the cluster's
// MaxTopics and MaxPartitions, and within storeTimeout per request. Topics
// beyond, and those the store failed to create, are answered
// UNKNOWN_TOPIC_OR_PARTITION, which clients retry, so they are created on a
// later request: what a Kafka broker answers for a topic whose creation it
// has forwarded to the controller, or is already creating. A request naming
// 10,000 unknown topics is answered at once, not after 10,000 creations,
// and costs a bounded number of store look-ups (missLookups).

import (
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.Metadata), AdvertisedMin: 0, HandledMin: 0, Max: 12})
}

// clusterID is reported in Metadata and DescribeCluster.
const clusterID = "floe"

func (a *Agent) handleMetadata(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	live := a.liveAgents()
	// Live agents, then departed agents' node ids at live agents'
	// addresses (departed.go).
	for _, l := range append(slices.Clip(live), a.departedBrokers(live, r.c.zone)...) {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID = l.NodeID
		b.Host, b.Port = brokerAddr(l, r.c.listenerName())
		if l.Zone != "" {
			z := l.Zone
			b.Rack = &z
		}
		resp.Brokers = append(resp.Brokers, b)
	}
	cid := clusterID
	resp.ClusterID = &cid
	resp.ControllerID = live[0].NodeID
	resp.AuthorizedOperations = -2147483648
	if req.IncludeClusterAuthorizedOperations { // v8–10
		resp.AuthorizedOperations = a.authorizedOps(r, resCluster, clusterName)
	}

	all, err := a.topics.all(ctx)
	if err != nil {
		// The store cannot be read: answer from the last view, as a Kafka
		// broker answers from its cached metadata. Closing the connection
		// instead made franz-go's transactional producers fail
		// InitProducerId for good while PostgreSQL was down (the proof's
		// runs). With no view at all, the client retries elsewhere.
		last, ok := a.topics.lastView()
		if !ok {
			return nil, err
		}
		a.log.Warn("metadata: topics unreadable, answering from the last view", "err", err)
		all = last
	}
	var topics []metadata.Topic
	var missing []kmsg.MetadataResponseTopic
	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		for _, t := range all {
			if a.authorize(r, opDescribe, resTopic, t.Name) { // others are left out, as Kafka does
				topics = append(topics, t)
			}
		}
		sort.Slice(topics, func(i, j int) bool { return topics[i].Name < topics[j].Name })
	}
	autoCreate := a.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	look := newLookups()
	var unknown []kmsg.MetadataRequestTopic // by name, to auto-create
	for _, rt := range req.Topics {
		// A name needs DESCRIBE before its existence is disclosed; a
		// topic id is resolved first, and its name is then not told.
		denied := rt.Topic != nil && !a.authorize(r, opDescribe, resTopic, *rt.Topic)
		var t metadata.Topic
		var ok bool
		code := kerr.TopicAuthorizationFailed
		if !denied {
			t, ok, code = a.resolveMetadataTopic(ctx, rt, all, look)
			if ok && rt.Topic == nil && !a.authorize(r, opDescribe, resTopic, t.Name) {
				ok, code = false, kerr.TopicAuthorizationFailed
			}
		}
		if ok {
			topics = append(topics, t)
			continue
		}
		if autoCreate && code == kerr.UnknownTopicOrPartition && rt.Topic != nil {
			// Auto-creation needs CREATE on the cluster or the topic.
			if !a.authorizeCluster(r, opCreate) && !a.authorize(r, opCreate, resTopic, *rt.Topic) {
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic, mt.ErrorCode, mt.IsInternal = rt.Topic, kerr.TopicAuthorizationFailed.Code, isInternalTopic(*rt.Topic)
				missing = append(missing, mt)
				continue
			}
			unknown = append(unknown, rt)
			continue
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic, mt.TopicID, mt.ErrorCode = rt.Topic, rt.TopicID, code.Code
		missing = append(missing, mt)
	}
	if len(unknown) > 0 {
		codes := a.autoCreateTopics(ctx, unknown)
		for i, rt := range unknown {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.ErrorCode, mt.IsInternal = rt.Topic, codes[i].Code, isInternalTopic(*rt.Topic)
			missing = append(missing, mt)
		}
	}
	for _, t := range topics {
		mt := a.metadataTopic(t, live, r.c.zone)
		if req.IncludeTopicAuthorizedOperations {
			mt.AuthorizedOperations = a.authorizedOps(r, resTopic, t.Name)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	resp.Topics = append(resp.Topics, missing...)
	return resp, nil
}

// resolveMetadataTopic finds a requested topic, asking the store about
// those missing from all while look allows. An unknown name is
// UNKNOWN_TOPIC_OR_PARTITION (or INVALID_TOPIC_EXCEPTION when it cannot
// name a topic).
func (a *Agent) resolveMetadataTopic(ctx context.Context, rt kmsg.MetadataRequestTopic, all map[string]metadata.Topic, look *lookups) (metadata.Topic, bool, *kerr.Error) {
	if rt.Topic == nil {
		t, ok, err := a.topics.findID(ctx, metadata.TopicID(rt.TopicID), look)
		if err != nil {
			return t, false, kerr.UnknownServerError
		}
		if !ok {
			return t, false, kerr.UnknownTopicID
		}
		return t, true, nil
	}
	name := *rt.Topic
	if t, ok := all[name]; ok {
		return t, true, nil
	}
	t, ok, err := a.topics.find(ctx, name, look)
	if err != nil {
		return t, false, kerr.UnknownServerError
	}
	if ok {
		return t, true, nil
	}
	if validTopicName(name) != nil {
		return t, false, kerr.InvalidTopicException
	}
	return t, false, kerr.UnknownTopicOrPartition
}

// autoCreateTopics creates the named unknown topics as far as the
// auto-creation rate, the cluster limits and storeTimeout allow, and
// returns per name the code to answer: LEADER_NOT_AVAILABLE for a topic
// created, or found created meanwhile; UNKNOWN_TOPIC_OR_PARTITION for one
// not created (yet).
func (a *Agent) autoCreateTopics(ctx context.Context, rts []kmsg.MetadataRequestTopic) []*kerr.Error {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	codes := make([]*kerr.Error, len(rts))
	done := make(map[string]*kerr.Error, len(rts)) // a name asked twice is created once
	budget := &clusterBudget{a: a}
	created := false
	for i, rt := range rts {
		name := *rt.Topic
		if code, ok := done[name]; ok {
			codes[i] = code
			continue
		}
		code := a.autoCreateTopic(ctx, name, budget)
		created = created || code == kerr.LeaderNotAvailable
		codes[i], done[name] = code, code
	}
	if created {
		a.topics.invalidate() // the next Metadata lists them
	}
	return codes
}

func (a *Agent) autoCreateTopic(ctx context.Context, name string, budget *clusterBudget) *kerr.Error {
	if ctx.Err() != nil {
		return kerr.UnknownTopicOrPartition
	}
	if !a.topics.allowAutoCreate(a.cfg.AutoCreateRate) {
		a.limitHit("auto.create.rate", "topic", name, "rate", a.cfg.AutoCreateRate)
		return kerr.UnknownTopicOrPartition
	}
	if code, _ := budget.check(ctx, 1, int64(a.cfg.DefaultPartitions)); code != nil {
		return kerr.UnknownTopicOrPartition
	}
	t, err := a.store.CreateTopic(ctx, name, a.cfg.DefaultPartitions, nil)
	if errors.Is(err, metadata.ErrTopicExists) {
		return kerr.LeaderNotAvailable // created concurrently elsewhere
	}
	if err != nil {
		a.log.Warn("auto-create topic failed", "topic", name, "err", err)
		return kerr.UnknownTopicOrPartition
	}
	budget.add(1, int64(t.Partitions))
	a.log.Info("topic auto-created", "topic", name, "partitions", t.Partitions)
	return kerr.LeaderNotAvailable
}

func (a *Agent) metadataTopic(t metadata.Topic, live []metadata.Agent, zone string) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(name)
	mt.AuthorizedOperations = -2147483648
	candidates := zoneAgents(live, zone)
	// A topic may have 10,000 partitions: one slice of partitions, the
	// topic hashed once, and each partition's replica and ISR lists (its
	// leader alone) sliced out of one array, instead of allocations per
	// partition (20,000 of them and 4.3 MB for 10,000 partitions).
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, t.Partitions)
	ids := make([]int32, 2*t.Partitions)
	h := topicHash(t.Name)
	for p := range t.Partitions {
		mp := &mt.Partitions[p]
		mp.Default()
		mp.Partition = p
		mp.Leader = candidates[leaderIndex(h, p, len(candidates))].NodeID
		mp.LeaderEpoch = 0
		ids[2*p], ids[2*p+1] = mp.Leader, mp.Leader
		mp.Replicas = ids[2*p : 2*p+1 : 2*p+1]
		mp.ISR = ids[2*p+1 : 2*p+2 : 2*p+2]
	}
	return mt
}

// zoneAgents returns the agents in zone, or all of them when none is (or no
// zone was named).
func zoneAgents(live []metadata.Agent, zone string) []metadata.Agent {
	if zone == "" {
		return live
	}
	var in []metadata.Agent
	for _, l := range live {
		if l.Zone == zone {
			in = append(in, l)
		}
	}
	if len(in) == 0 {
		return live
	}
	return in
}

// topicHash is where a topic's leaders start: partitions are spread over
// agents so that consecutive partitions of a topic land on consecutive
// agents, starting at a per-topic hash (leaderIndex).
func topicHash(topic string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(topic))
	return h.Sum32()
}

// leaderIndex is the index among n agents of the leader of partition, for
// a topic of hash h.
func leaderIndex(h uint32, partition int32, n int) int {
	return int((uint64(h) + uint64(partition)) % uint64(n))
}
