package group

// JoinGroup: the checks in Kafka's order, then new, pending, static and
// existing members joining.

import (
	"bytes"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// supportsProtocols reports whether a joiner can be in the group: a
// protocol type and at least one protocol, the group's protocol type, and at
// least one protocol every other member (and the joiner) supports. except
// is the joiner's own member id, whose current protocols do not count.
func (g *Group) supportsProtocols(protocolType string, ps []Protocol, except string) bool {
	if protocolType == "" || len(ps) == 0 {
		return false
	}
	if len(g.members) == 0 || (len(g.members) == 1 && g.members[except] != nil) {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range ps {
		all := true
		for id, m := range g.members {
			if id != except && m.metadataFor(p.Name) == nil && !hasProtocol(m.Protocols, p.Name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func hasProtocol(ps []Protocol, name string) bool {
	return slices.ContainsFunc(ps, func(p Protocol) bool { return p.Name == name })
}

func sameProtocols(a, b []Protocol) bool {
	return slices.EqualFunc(a, b, func(x, y Protocol) bool { return x.Name == y.Name && bytes.Equal(x.Metadata, y.Metadata) })
}

// Join handles a JoinGroup. reply is called exactly once, now or when the
// rebalance completes.
//
// The checks run in Kafka's order (GroupCoordinatorService.joinGroup, then
// GroupMetadataManager.classicGroupJoinToClassicGroup and its
// classicGroupJoinNewMember / classicGroupJoinExistingMember): the session
// timeout (INVALID_SESSION_TIMEOUT); a member id naming a group that does
// not exist (UNKNOWN_MEMBER_ID); the group size (GROUP_MAX_SIZE_REACHED);
// the protocol type and protocols (INCONSISTENT_GROUP_PROTOCOL, empty ones
// included); then, for a member id, a pending id is admitted, and the
// instance id (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) and member id
// (UNKNOWN_MEMBER_ID) must match a member. The rebalance timeout is not
// checked, as in Kafka: one of 0 or less completes the join at once.
func (g *Group) Join(now time.Time, r JoinRequest, reply func(JoinResult)) {
	fail := func(err *kerr.Error) { reply(JoinResult{Err: err.Code, MemberID: r.MemberID, Generation: -1}) }
	if err := g.cfg.CheckSessionTimeout(r.SessionTimeout); err != nil {
		fail(err)
		return
	}
	if r.MemberID != "" && !g.exists {
		fail(kerr.UnknownMemberID)
		return
	}
	g.exists = true // a join without a member id creates the group
	if !g.acceptsJoin(r.MemberID) {
		if _, ok := g.members[r.MemberID]; ok {
			g.removeMember(r.MemberID)
			g.memberGone(now)
		}
		delete(g.pending, r.MemberID)
		reply(JoinResult{Err: kerr.GroupMaxSizeReached.Code, Generation: -1})
		return
	}
	// Whose current protocols do not count against the joiner's: its own
	// member's, or, for a static member rejoining without its id, those of
	// the member it replaces.
	self := r.MemberID
	old, static := "", false
	if r.MemberID == "" && r.InstanceID != "" {
		old, static = g.statics[r.InstanceID]
		self = old
	}
	if !g.supportsProtocols(r.ProtocolType, r.Protocols, self) {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	if r.MemberID == "" {
		if static {
			g.rejoinStatic(now, old, r, reply)
			return
		}
		id := g.cfg.NewMemberID(r.ClientID)
		if r.RequireKnownMemberID && r.InstanceID == "" {
			g.pending[id] = now.Add(r.SessionTimeout)
			reply(JoinResult{Err: kerr.MemberIDRequired.Code, MemberID: id, Generation: -1})
			return
		}
		g.addMember(now, id, r, reply)
		return
	}
	if _, pend := g.pending[r.MemberID]; pend && r.InstanceID == "" {
		delete(g.pending, r.MemberID)
		g.addMember(now, r.MemberID, r, reply)
		return
	}
	m, err := g.checkMember(r.MemberID, r.InstanceID)
	if err != nil {
		fail(err)
		return
	}
	unchanged := sameProtocols(m.Protocols, r.Protocols)
	g.updateMember(now, m, r)
	switch g.state {
	case PreparingRebalance:
		g.park(m, reply)
		g.tryCompleteJoin(now)
	case CompletingRebalance:
		if unchanged {
			reply(g.joinResult(m, false))
			return
		}
		g.park(m, reply)
		g.prepareRebalance(now)
	case Stable:
		if unchanged && m.ID != g.leader {
			reply(g.joinResult(m, false))
			return
		}
		g.park(m, reply)
		g.prepareRebalance(now)
	default: // Empty with a member cannot happen; rebalance to be safe.
		g.park(m, reply)
		g.prepareRebalance(now)
	}
}

// acceptsJoin reports whether the group has room for the joiner, as
// Kafka's acceptJoiningMember decides: an empty group takes anyone; while
// members rejoin, a member already parked is taken, and others while fewer
// than MaxSize are parked (so a lowered MaxSize sheds the last rejoiners);
// otherwise a member is taken, and others while the group has fewer than
// MaxSize members.
func (g *Group) acceptsJoin(memberID string) bool {
	if g.cfg.MaxSize <= 0 || g.state == Empty {
		return true
	}
	m, member := g.members[memberID]
	if g.state == PreparingRebalance {
		if member && m.joinReply != nil {
			return true
		}
		parked := 0
		for _, o := range g.members {
			if o.joinReply != nil {
				parked++
			}
		}
		return parked < g.cfg.MaxSize
	}
	return member || len(g.members) < g.cfg.MaxSize
}

func (g *Group) park(m *member, reply func(JoinResult)) {
	if m.joinReply != nil {
		// A second join while one is parked: the older one is superseded.
		m.joinReply(JoinResult{Err: kerr.UnknownMemberID.Code, MemberID: m.ID, Generation: -1})
	}
	m.joinReply = reply
	m.joined = true
}

func (g *Group) updateMember(now time.Time, m *member, r JoinRequest) {
	m.ClientID, m.ClientHost = r.ClientID, r.ClientHost
	m.SessionTimeout, m.RebalanceTimeout = r.SessionTimeout, r.RebalanceTimeout
	m.ProtocolType, m.Protocols = r.ProtocolType, r.Protocols
	m.deadline = now.Add(r.SessionTimeout)
	g.changed = true
}

func (g *Group) addMember(now time.Time, id string, r JoinRequest, reply func(JoinResult)) {
	m := &member{ID: id, InstanceID: r.InstanceID}
	g.updateMember(now, m, r)
	if len(g.members) == 0 {
		g.protocolType = r.ProtocolType
	}
	g.members[id] = m
	if r.InstanceID != "" {
		g.statics[r.InstanceID] = id
	}
	g.park(m, reply)
	if g.state == PreparingRebalance {
		g.addedInDelay = g.addedInDelay || !g.delayUntil.IsZero()
		g.tryCompleteJoin(now)
		return
	}
	g.prepareRebalance(now)
}

// rejoinStatic replaces a static member's id (the old id is fenced). A
// stable group whose member rejoins with the same protocols does not
// rebalance: the member gets the current generation back. Join has checked
// the protocols.
func (g *Group) rejoinStatic(now time.Time, oldID string, r JoinRequest, reply func(JoinResult)) {
	old := g.members[oldID]
	if old.joinReply != nil {
		old.joinReply(JoinResult{Err: kerr.FencedInstanceID.Code, MemberID: oldID, Generation: -1})
		old.joinReply = nil
	}
	if old.syncReply != nil {
		old.syncReply(SyncResult{Err: kerr.FencedInstanceID.Code})
		old.syncReply = nil
	}
	unchanged := sameProtocols(old.Protocols, r.Protocols)
	id := g.cfg.NewMemberID(r.ClientID)
	delete(g.members, oldID)
	old.ID = id
	g.members[id] = old
	g.statics[r.InstanceID] = id
	wasLeader := g.leader == oldID
	if wasLeader {
		g.leader = id
	}
	g.updateMember(now, old, r)
	if g.state == Stable && unchanged {
		reply(g.joinResult(old, wasLeader))
		return
	}
	g.park(old, reply)
	if g.state == PreparingRebalance {
		g.tryCompleteJoin(now)
		return
	}
	g.prepareRebalance(now)
}
