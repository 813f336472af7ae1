package agent

// DescribeGroups (key 15), versions 0–5.
//
// Each group is described by its coordinator (others answer
// NOT_COORDINATOR for it). A group nobody knows is "Dead" with no error, as
// in Kafka. Member metadata and assignments are shown only when Stable.
// KIP-848 groups are shown in the classic shape (protocol type "consumer",
// the assignor as protocol, consumer-protocol metadata and assignments) so
// that tools computing lag from DescribeGroups (kadm) work on them too.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/group"
	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DescribeGroups), AdvertisedMin: 0, HandledMin: 0, Max: 5})
}

func (a *Agent) handleDescribeGroups(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		rg.ErrorCode, rg.AuthorizedOperations = a.describeGroupAccess(r, id, req.IncludeAuthorizedOperations)
		if rg.ErrorCode != 0 {
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if code := a.coord.with(ctx, id, func(e *groupEntry, _ time.Time) {
			if !e.exists && e.g.IsEmpty() {
				rg.State = "Dead"
				return
			}
			if e.sg != nil {
				// As Kafka: a share group is described by ShareGroupDescribe only.
				rg.ErrorCode = kerr.GroupIDNotFound.Code
				msg := "group " + id + " is not a classic group"
				rg.ErrorMessage = &msg
				return
			}
			if e.cg != nil {
				describe848Classic(e.cg, &rg)
				return
			}
			d := e.g.Describe()
			rg.State, rg.ProtocolType, rg.Protocol = string(d.State), d.ProtocolType, d.Protocol
			for _, m := range d.Members {
				rm := kmsg.NewDescribeGroupsResponseGroupMember()
				rm.MemberID, rm.ClientID, rm.ClientHost = m.MemberID, m.ClientID, m.ClientHost
				rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
				if m.InstanceID != "" {
					iid := m.InstanceID
					rm.InstanceID = &iid
				}
				rg.Members = append(rg.Members, rm)
			}
		}); code != nil {
			rg.ErrorCode = code.Code
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

func describe848Classic(cg *group.ConsumerGroup, rg *kmsg.DescribeGroupsResponseGroup) {
	d := cg.Describe()
	rg.State, rg.ProtocolType, rg.Protocol = d.State, "consumer", d.Assignor
	for _, m := range d.Members {
		rm := kmsg.NewDescribeGroupsResponseGroupMember()
		rm.MemberID, rm.ClientID, rm.ClientHost = m.MemberID, m.ClientID, m.ClientHost
		if m.InstanceID != "" {
			iid := m.InstanceID
			rm.InstanceID = &iid
		}
		md := kmsg.NewConsumerMemberMetadata()
		md.Topics = m.Subscribed
		rm.ProtocolMetadata = md.AppendTo(nil)
		as := kmsg.NewConsumerMemberAssignment()
		for _, t := range sortedKeys(m.Assignment) {
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic, at.Partitions = t, m.Assignment[t]
			as.Topics = append(as.Topics, at)
		}
		rm.MemberAssignment = as.AppendTo(nil)
		rg.Members = append(rg.Members, rm)
	}
}
