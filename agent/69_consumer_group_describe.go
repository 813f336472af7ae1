package agent

// ConsumerGroupDescribe (key 69), versions 0–1.
//
// Describes KIP-848 groups: state, group and assignment epochs, the
// assignor, and each member's current and target assignment. A classic
// group answers GROUP_ID_NOT_FOUND; a group nobody knows is "Dead".

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/group"
	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.ConsumerGroupDescribe), AdvertisedMin: 0, HandledMin: 0, Max: 1})
}

func (a *Agent) handleConsumerGroupDescribe(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	byName, _, err := a.topics.snapshot(ctx)
	for _, id := range req.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group = id
		rg.ErrorCode, rg.AuthorizedOperations = a.describeMemberGroup(ctx, r, id, req.IncludeAuthorizedOperations, err, func(e *groupEntry) int16 {
			switch {
			case e.cg == nil && !e.exists && e.g.IsEmpty():
				rg.State = "Dead"
			case e.cg == nil:
				msg := "group " + id + " is not a consumer group"
				rg.ErrorMessage = &msg
				return kerr.GroupIDNotFound.Code
			default:
				d := e.cg.Describe()
				rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName = d.State, d.Epoch, d.AssignmentEpoch, d.Assignor
				for _, m := range d.Members {
					rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
					rm.MemberID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = m.MemberID, m.Epoch, m.ClientID, m.ClientHost
					rm.SubscribedTopics = m.Subscribed
					if m.Regex != "" {
						re := m.Regex
						rm.SubscribedTopicRegex = &re
					}
					rm.MemberType = 1 // consumer protocol
					if m.InstanceID != "" {
						iid := m.InstanceID
						rm.InstanceID = &iid
					}
					if m.RackID != "" {
						rack := m.RackID
						rm.RackID = &rack
					}
					rm.Assignment = describeAssignment(m.Assignment, byName)
					rm.TargetAssignment = describeAssignment(m.Target, byName)
					rg.Members = append(rg.Members, rm)
				}
			}
			return 0
		})
		if !a.describableAssignments(r, rg.Members) {
			// As Kafka: the group is not described to a client that may
			// not DESCRIBE every topic its members are assigned.
			rg = kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = id, kerr.TopicAuthorizationFailed.Code
			rg.ErrorMessage = kmsg.StringPtr("The group has described topic(s) that the client is not authorized to describe.")
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// describeMemberGroup answers one group of ConsumerGroupDescribe or
// ShareGroupDescribe: DESCRIBE on the group (and its authorized operations
// when asked), the topic view (viewErr: COORDINATOR_NOT_AVAILABLE), then
// describe under the group's coordinator, which fills in the group and
// returns its error code.
func (a *Agent) describeMemberGroup(ctx context.Context, r *request, id string, ops bool, viewErr error,
	describe func(e *groupEntry) int16) (code int16, authorized int32) {
	if code, authorized = a.describeGroupAccess(r, id, ops); code != 0 {
		return code, authorized
	}
	if viewErr != nil {
		return kerr.CoordinatorNotAvailable.Code, authorized
	}
	if c := a.coord.with(ctx, id, func(e *groupEntry, _ time.Time) { code = describe(e) }); c != nil {
		return c.Code, authorized
	}
	return code, authorized
}

// describableAssignments reports whether r may DESCRIBE every topic of
// the members' current and target assignments.
func (a *Agent) describableAssignments(r *request, members []kmsg.ConsumerGroupDescribeResponseGroupMember) bool {
	for _, m := range members {
		for _, as := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range as.TopicPartitions {
				if !a.authorize(r, opDescribe, resTopic, tp.Topic) {
					return false
				}
			}
		}
	}
	return true
}

func describeAssignment(as group.Assignment, byName map[string]metadata.Topic) kmsg.Assignment {
	out := kmsg.NewAssignment()
	for _, name := range sortedKeys(as) {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.Topic, tp.Partitions = name, as[name]
		if t, ok := byName[name]; ok {
			tp.TopicID = t.ID
		}
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}
