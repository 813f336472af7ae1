package agent

// JoinGroup (key 11), versions 0–9.
//
// Served by the group's coordinator (see coordinator.go); the state
// machine is agent/group. The answer is parked until the rebalance
// completes. v4+ joiners without a member id first get MEMBER_ID_REQUIRED
// and an id (KIP-394); below v4 they get an id at once, as kafka-go needs.
// v5+ carry group.instance.id (static membership); v0 has no rebalance
// timeout (the session timeout is used); v9 answers SkipAssignment to a
// static leader rejoining a stable group.
//
// Validation follows Kafka's order (GroupCoordinatorService.joinGroup, then
// GroupMetadataManager.classicGroupJoin*): an empty group id is
// INVALID_GROUP_ID, a session timeout outside the agent's
// GroupMin/MaxSessionTimeout INVALID_SESSION_TIMEOUT, both answered by any
// agent before the coordinator is looked for; then, on the coordinator, a
// KIP-848 group with members INCONSISTENT_GROUP_PROTOCOL, and the state
// machine's checks (agent/group Join: unknown group, size, protocols,
// member).

import (
	"context"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/group"
	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.JoinGroup), AdvertisedMin: 0, HandledMin: 0, Max: 9})
}

func (a *Agent) handleJoinGroup(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.Generation = -1
	resp.MemberID = req.MemberID
	if resp.ErrorCode = a.classicGroupCheck(r, req.Group); resp.ErrorCode != 0 {
		return resp, nil
	}
	if err := a.coord.gcfg.CheckSessionTimeout(time.Duration(req.SessionTimeoutMillis) * time.Millisecond); err != nil {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	jr := group.JoinRequest{
		MemberID:             req.MemberID,
		InstanceID:           deref(req.InstanceID),
		ClientID:             r.clientID(),
		ClientHost:           r.c.clientHost(),
		SessionTimeout:       time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout:     time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		ProtocolType:         req.ProtocolType,
		RequireKnownMemberID: req.Version >= 4,
		Reason:               deref(req.Reason),
	}
	if req.Version == 0 {
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	res, code := awaitGroup(ctx, a, req.Group, func(e *groupEntry, now time.Time, done func(group.JoinResult)) {
		if (e.cg != nil && !e.cg.IsEmpty()) || e.sg != nil {
			// A KIP-848 group with members, or a share group, takes no
			// classic members.
			done(group.JoinResult{Err: kerr.InconsistentGroupProtocol.Code, MemberID: jr.MemberID, Generation: -1})
			return
		}
		e.cg = nil
		e.g.Join(now, jr, done)
	})
	if code != nil {
		resp.ErrorCode = code.Code
		return resp, nil
	}
	resp.ErrorCode = res.Err
	resp.Generation = res.Generation
	resp.MemberID = res.MemberID
	if res.Err != 0 {
		return resp, nil
	}
	pt, proto := res.ProtocolType, res.Protocol
	resp.ProtocolType, resp.Protocol = &pt, &proto
	resp.LeaderID = res.Leader
	resp.SkipAssignment = res.SkipAssignment
	for _, m := range res.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.ProtocolMetadata = m.MemberID, m.Metadata
		if m.InstanceID != "" {
			id := m.InstanceID
			rm.InstanceID = &id
		}
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}

// awaitGroup runs start on a group as coordinator.with does and waits for
// the result start hands to done (a JoinGroup's or SyncGroup's, which may
// come only when the rebalance completes); it returns it once the group's
// state it reports is saved. code is with's refusal, or NOT_COORDINATOR
// should the agent stop first.
func awaitGroup[R any](ctx context.Context, a *Agent, groupID string, start func(e *groupEntry, now time.Time, done func(R))) (res R, code *kerr.Error) {
	ch := make(chan R, 1)
	var ent *groupEntry
	if code := a.coord.with(ctx, groupID, func(e *groupEntry, now time.Time) {
		ent = e
		start(e, now, func(r R) { ch <- r })
	}); code != nil {
		return res, code
	}
	select {
	case res = <-ch:
	case <-a.stopping:
		return res, kerr.NotCoordinator
	}
	ent.waitPersisted()
	return res, nil
}

// waitPersisted returns once the call that answered a parked request has
// saved the group: that call holds e locked until its store write is done, so
// an answer is never sent before the state it reports is durable.
func (e *groupEntry) waitPersisted() {
	e.Lock()
	//lint:ignore SA2001 the empty critical section is the point: it waits for the holder
	e.Unlock()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (r *request) clientID() string { return deref(r.hdr.ClientID) }

// clientHost is the client's address as Kafka shows it ("/127.0.0.1").
func (c *conn) clientHost() string {
	host, _, err := net.SplitHostPort(c.nc.RemoteAddr().String())
	if err != nil {
		return "/" + c.nc.RemoteAddr().String()
	}
	return "/" + host
}
