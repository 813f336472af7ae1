package agent

// ShareGroupDescribe (key 77), versions 0–1: the members of share groups,
// their epochs, subscriptions and assignments, from the group's
// coordinator. A group id of a classic or consumer group answers
// GROUP_ID_NOT_FOUND, an unknown one state Dead. DESCRIBE on the group.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/group"
	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.ShareGroupDescribe), AdvertisedMin: 0, HandledMin: 0, Max: 1})
}

func (a *Agent) handleShareGroupDescribe(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	byName, _, err := a.topics.snapshot(ctx)
	for _, id := range req.GroupIDs {
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID = id
		rg.ErrorCode, rg.AuthorizedOperations = a.describeMemberGroup(ctx, r, id, req.IncludeAuthorizedOperations, err, func(e *groupEntry) int16 {
			switch {
			case e.sg == nil && e.cg == nil && !e.exists && e.g.IsEmpty():
				rg.GroupState = "Dead"
				msg := "group " + id + " not found"
				rg.ErrorMessage = &msg
				return kerr.GroupIDNotFound.Code
			case e.sg == nil:
				msg := "group " + id + " is not a share group"
				rg.ErrorMessage = &msg
				return kerr.GroupIDNotFound.Code
			default:
				d := e.sg.Describe()
				rg.GroupState, rg.GroupEpoch, rg.AssignmentEpoch, rg.Assignor = d.State, d.Epoch, d.Epoch, group.ShareAssignor
				for _, m := range d.Members {
					rm := kmsg.NewShareGroupDescribeResponseGroupMember()
					rm.MemberID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = m.MemberID, m.Epoch, m.ClientID, m.ClientHost
					rm.SubscribedTopicNames = m.Subscribed
					if m.RackID != "" {
						rack := m.RackID
						rm.RackID = &rack
					}
					for _, name := range sortedKeys(m.Assignment) {
						tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
						tp.Topic, tp.Partitions = name, m.Assignment[name]
						if t, ok := byName[name]; ok {
							tp.TopicID = t.ID
						}
						rm.Assignment.TopicPartitions = append(rm.Assignment.TopicPartitions, tp)
					}
					rg.Members = append(rg.Members, rm)
				}
			}
			return 0
		})
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
