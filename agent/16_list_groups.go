package agent

// ListGroups (key 16), versions 0–5.
//
// As in Kafka, each broker lists the groups it coordinates; clients (kadm,
// kcat -L, the Java admin) ask every broker and merge. Here that is every
// group in the store whose rendezvous owner is this agent, with the live
// state for groups loaded here and the stored state otherwise. v4+ filter
// by state (case-insensitive), v5+ by type ("classic", "consumer" or
// "share").

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.ListGroups), AdvertisedMin: 0, HandledMin: 0, Max: 5})
}

func (a *Agent) handleListGroups(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	recs, err := a.store.Groups(ctx)
	if err != nil {
		a.log.Warn("list groups failed", "err", err)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	match := func(filter []string, v string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, v) {
				return true
			}
		}
		return false
	}
	// DESCRIBE on the cluster lists every group, else those with
	// DESCRIBE on the group.
	allGroups := a.authorizeCluster(r, opDescribe)
	for _, rec := range recs {
		if !a.coord.isOwner(rec.Group) {
			continue
		}
		if !allGroups && !a.authorize(r, opDescribe, resGroup, rec.Group) {
			continue
		}
		state, ptype, gtype := rec.StateName, rec.ProtocolType, a.coord.groupType(rec.ProtocolType)
		if s, pt, gt, ok := a.coord.liveState(rec.Group); ok {
			state, ptype, gtype = s, pt, gt
		}
		if !match(req.StatesFilter, state) || !match(req.TypesFilter, gtype) {
			continue
		}
		if ptype == consumerProtocolType848 {
			ptype = "consumer"
		}
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.ProtocolType, g.GroupState, g.GroupType = rec.Group, ptype, state, gtype
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

// groupType is KIP-848's group type of a stored protocol type.
func (c *coordinator) groupType(protocolType string) string {
	switch protocolType {
	case consumerProtocolType848:
		return "consumer"
	case shareProtocolType:
		return "share"
	}
	return "classic"
}

// liveState reports a loaded group's current state, protocol type and
// group type, without waiting for a busy group.
func (c *coordinator) liveState(id string) (state, protocolType, groupType string, ok bool) {
	c.mu.Lock()
	e := c.groups[id]
	c.mu.Unlock()
	if e == nil || !e.TryLock() {
		return "", "", "", false
	}
	defer e.Unlock()
	if e.g == nil {
		return "", "", "", false
	}
	return e.stateName(), e.protocolType(), c.groupType(e.protocolType()), true
}
