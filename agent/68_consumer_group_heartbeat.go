package agent

// ConsumerGroupHeartbeat (key 68), versions 0–1: the KIP-848 consumer
// group protocol.
//
// The coordinator assigns partitions itself (server-side "uniform" or
// "range" assignor, see agent/group/consumer.go) and reconciles members
// through these heartbeats. v0 members get their id from us on joining; v1
// members bring their own. Topic ids in requests and assignments are
// translated to names for the state machine. A classic group with members
// answers GROUP_ID_NOT_FOUND, as Kafka does without a migration policy.
// Regex subscriptions (v1 SubscribedTopicRegex) are resolved here, against
// every topic including internal ones, as Kafka does; a regex Go's RE2 cannot
// compile is INVALID_REGULAR_EXPRESSION. A static leave (epoch -2) without
// the instance id is INVALID_REQUEST, as in Kafka. The heartbeat interval
// answered and the session timeout applied are the group's configs
// (consumer.heartbeat.interval.ms, consumer.session.timeout.ms;
// group_configs.go) where it sets them, else the agent's.

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/group"
	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.ConsumerGroupHeartbeat), AdvertisedMin: 0, HandledMin: 0, Max: 1})
}

func (a *Agent) handleConsumerGroupHeartbeat(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.HeartbeatIntervalMillis = int32(a.coord.ccfg.HeartbeatInterval / time.Millisecond)
	failMsg := func(e *kerr.Error, msg string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = e.Code, &msg
		return resp, nil
	}
	fail := func(e *kerr.Error) (kmsg.Response, error) { return failMsg(e, e.Message) }
	if e := a.memberAccess(r, req.Group, req.SubscribedTopicNames); e != nil {
		return fail(e)
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID)
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := group.CompileTopicRegex(*req.SubscribedTopicRegex); err != nil {
			return failMsg(kerr.InvalidRegularExpression, err.Error())
		}
	}
	if req.Version >= 1 && req.MemberID == "" {
		return fail(kerr.InvalidRequest) // v1 members bring their own id
	}
	// As Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid: an instance
	// id may be absent but not blank (Java's trim), and a static member's
	// leave for now (epoch -2) must name it: it is how the member is found.
	if req.InstanceID != nil && strings.TrimFunc(*req.InstanceID, func(r rune) bool { return r <= ' ' }) == "" {
		return failMsg(kerr.InvalidRequest, "InstanceId can't be empty.")
	}
	if req.MemberEpoch == -2 && req.InstanceID == nil {
		return failMsg(kerr.InvalidRequest, "InstanceId can't be null.")
	}
	byName, byID, err := a.topics.snapshot(ctx)
	if err != nil {
		return fail(kerr.CoordinatorNotAvailable)
	}
	counts := partitionCounts(byName)
	hr := group.HeartbeatRequest{
		MemberID: req.MemberID, MemberEpoch: req.MemberEpoch, InstanceID: deref(req.InstanceID), RackID: deref(req.RackID),
		ClientID: r.clientID(), ClientHost: r.c.clientHost(), Assignor: deref(req.ServerAssignor),
		RebalanceTimeout: time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		Subscribed:       req.SubscribedTopicNames,
		Regex:            req.SubscribedTopicRegex,
	}
	if req.RebalanceTimeoutMillis < 0 {
		hr.RebalanceTimeout = -1
	}
	if req.Topics != nil {
		hr.Owned = group.Assignment{}
		for _, t := range req.Topics {
			// Partitions of a deleted topic are owned by nobody we know.
			if tp, ok := byID[metadata.TopicID(t.TopicID)]; ok {
				hr.Owned[tp.Name] = append(hr.Owned[tp.Name], t.Partitions...)
				slices.Sort(hr.Owned[tp.Name])
			}
		}
	}
	res, code := a.memberBeat(ctx, req.Group, func(e *groupEntry, now time.Time) group.HeartbeatResult {
		if e.cg == nil {
			if !e.g.IsEmpty() || e.sg != nil {
				return group.HeartbeatResult{Err: kerr.GroupIDNotFound.Code} // a classic group in use, or a share group
			}
			e.cg = group.NewConsumerGroup(e.id, a.coord.ccfg)
		}
		cfg := a.coord.consumerConfig(ctx, e, now)
		e.cg.Configure(cfg)
		resp.HeartbeatIntervalMillis = int32(cfg.HeartbeatInterval / time.Millisecond)
		return e.cg.Heartbeat(now, hr, counts)
	})
	if code != nil {
		return fail(code)
	}
	resp.MemberID, resp.MemberEpoch = &res.MemberID, res.MemberEpoch
	if res.Assignment != nil {
		as := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		as.Topics = assignedTopics(byName, res.Assignment, func(id metadata.TopicID, parts []int32) kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic {
			at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			at.TopicID, at.Partitions = id, parts
			return at
		})
		resp.Assignment = &as
	}
	return resp, nil
}

// memberAccess is what a group heartbeat answers when r may not READ the
// group or DESCRIBE a topic subscribed by name; nil when it may.
func (a *Agent) memberAccess(r *request, groupID string, topics []string) *kerr.Error {
	if !a.authorize(r, opRead, resGroup, groupID) {
		return kerr.GroupAuthorizationFailed
	}
	for _, t := range topics {
		if !a.authorize(r, opDescribe, resTopic, t) {
			return kerr.TopicAuthorizationFailed
		}
	}
	return nil
}

// partitionCounts is the topics' partition counts by name, for the group
// state machines.
func partitionCounts(byName map[string]metadata.Topic) map[string]int32 {
	counts := make(map[string]int32, len(byName))
	for n, t := range byName {
		counts[n] = t.Partitions
	}
	return counts
}

// memberBeat runs beat, a member's heartbeat on its group's state machine,
// under the group's coordinator: the member's state, or what to answer
// (the coordinator's error, as NOT_COORDINATOR, or the group's).
func (a *Agent) memberBeat(ctx context.Context, groupID string, beat func(e *groupEntry, now time.Time) group.HeartbeatResult) (group.HeartbeatResult, *kerr.Error) {
	var res group.HeartbeatResult
	if code := a.coord.with(ctx, groupID, func(e *groupEntry, now time.Time) { res = beat(e, now) }); code != nil {
		return res, code
	}
	return res, kerr.TypedErrorForCode(res.Err)
}

// assignedTopics is an assignment by topic name as a heartbeat answer's
// topic list, by topic id in name order (mk builds one entry); topics
// deleted meanwhile are left out. Never nil: an empty assignment is sent
// as an empty list, not as none.
func assignedTopics[T any](byName map[string]metadata.Topic, assignment map[string][]int32, mk func(id metadata.TopicID, parts []int32) T) []T {
	out := []T{}
	for _, name := range sortedKeys(assignment) {
		if tp, ok := byName[name]; ok {
			out = append(out, mk(tp.ID, assignment[name]))
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
