// Package group is the classic (JoinGroup/SyncGroup) consumer group state
// machine: generations, member ids and the MEMBER_ID_REQUIRED round trip,
// static membership, session and rebalance timeouts, protocol selection and
// leader election, with the error codes a Java broker returns.
//
// It is pure: no I/O, no goroutines, no clock. Every call takes the current
// time; Tick applies timeouts. Requests that Kafka parks (JoinGroup until
// the rebalance completes, SyncGroup until the leader assigns) take a reply
// callback that is called exactly once, possibly during a later call. The
// caller serializes all calls on one Group (one mutex per group in the
// coordinator) and persists Snapshot whenever TakeChanged reports a change.
package group

import (
	"bytes"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is a classic group's state, named as Kafka names it.
type State string

// The group states.
const (
	Empty               State = "Empty"
	PreparingRebalance  State = "PreparingRebalance"
	CompletingRebalance State = "CompletingRebalance"
	Stable              State = "Stable"
)

// Config holds the coordinator-wide settings of groups.
type Config struct {
	// InitialRebalanceDelay lets more members join a new (empty) group
	// before its first generation (group.initial.rebalance.delay.ms).
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound members' session
	// timeouts (group.min/max.session.timeout.ms).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// NewMemberID returns a fresh unique member id for a client id.
	NewMemberID func(clientID string) string
}

// Protocol is one (name, metadata) a joining member supports, in its order
// of preference.
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinRequest is a JoinGroup request.
type JoinRequest struct {
	MemberID         string
	InstanceID       string // "" for dynamic members
	ClientID         string
	ClientHost       string
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	ProtocolType     string
	Protocols        []Protocol
	// RequireKnownMemberID is true for JoinGroup v4+: a member without an id
	// is first given one with MEMBER_ID_REQUIRED (KIP-394).
	RequireKnownMemberID bool
	Reason               string
}

// MemberMeta is one member as handed to the leader in a JoinGroup answer.
type MemberMeta struct {
	MemberID   string
	InstanceID string
	Metadata   []byte
}

// JoinResult is a JoinGroup answer.
type JoinResult struct {
	Err            int16
	Generation     int32
	ProtocolType   string
	Protocol       string
	Leader         string
	MemberID       string
	SkipAssignment bool
	Members        []MemberMeta // only for the leader
}

// SyncRequest is a SyncGroup request.
type SyncRequest struct {
	MemberID     string
	InstanceID   string
	Generation   int32
	ProtocolType string // "" when the client sent none (before v5)
	Protocol     string
	Assignments  map[string][]byte // only from the leader
}

// SyncResult is a SyncGroup answer.
type SyncResult struct {
	Err          int16
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// member is one member of the group. Fields below the blank line are
// volatile: not part of Snapshot.
type member struct {
	ID               string
	InstanceID       string
	ClientID         string
	ClientHost       string
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	ProtocolType     string
	Protocols        []Protocol
	Assignment       []byte

	deadline  time.Time // session expiry
	joinReply func(JoinResult)
	syncReply func(SyncResult)
	joined    bool // rejoined during the current rebalance
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.Protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// Group is one classic group. Not safe for concurrent use.
type Group struct {
	cfg Config
	id  string

	state        State
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	statics      map[string]string    // instance id -> member id
	pending      map[string]time.Time // ids given with MEMBER_ID_REQUIRED -> expiry

	// joinDeadline ends the wait for members to rejoin (PreparingRebalance);
	// delayUntil holds a new group's first rebalance open for more joiners.
	joinDeadline time.Time
	delayUntil   time.Time
	// syncDeadline ends the wait for the leader's assignment.
	syncDeadline time.Time

	changed bool
}

// New returns an empty group.
func New(id string, cfg Config) *Group {
	return &Group{cfg: cfg, id: id, state: Empty, members: map[string]*member{},
		statics: map[string]string{}, pending: map[string]time.Time{}}
}

// ID is the group id.
func (g *Group) ID() string { return g.id }

// State is the current state.
func (g *Group) State() State { return g.state }

// Generation is the current generation.
func (g *Group) Generation() int32 { return g.generation }

// ProtocolType is the protocol type of the members ("" for an empty group
// that never had any).
func (g *Group) ProtocolType() string { return g.protocolType }

// IsEmpty reports whether the group has no members.
func (g *Group) IsEmpty() bool { return len(g.members) == 0 }

// TakeChanged reports whether the durable state changed since the last call.
func (g *Group) TakeChanged() bool {
	c := g.changed
	g.changed = false
	return c
}

func (g *Group) validTimeouts(session, rebalance time.Duration) bool {
	if g.cfg.MinSessionTimeout > 0 && session < g.cfg.MinSessionTimeout {
		return false
	}
	if g.cfg.MaxSessionTimeout > 0 && session > g.cfg.MaxSessionTimeout {
		return false
	}
	return rebalance > 0
}

// supportsProtocols reports whether a joiner can be in the group: same
// protocol type, and at least one protocol every member (and the joiner)
// supports.
func (g *Group) supportsProtocols(protocolType string, ps []Protocol, except string) bool {
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
func (g *Group) Join(now time.Time, r JoinRequest, reply func(JoinResult)) {
	fail := func(err *kerr.Error) { reply(JoinResult{Err: err.Code, MemberID: r.MemberID, Generation: -1}) }
	if r.ProtocolType == "" || len(r.Protocols) == 0 {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	if !g.validTimeouts(r.SessionTimeout, r.RebalanceTimeout) {
		fail(kerr.InvalidSessionTimeout)
		return
	}
	if r.MemberID == "" {
		if r.InstanceID != "" {
			if old, ok := g.statics[r.InstanceID]; ok {
				g.rejoinStatic(now, old, r, reply)
				return
			}
		}
		if !g.supportsProtocols(r.ProtocolType, r.Protocols, "") {
			fail(kerr.InconsistentGroupProtocol)
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
	if r.InstanceID != "" {
		cur, ok := g.statics[r.InstanceID]
		if ok && cur != r.MemberID {
			fail(kerr.FencedInstanceID)
			return
		}
	}
	m, ok := g.members[r.MemberID]
	if !ok {
		if _, pend := g.pending[r.MemberID]; pend {
			if !g.supportsProtocols(r.ProtocolType, r.Protocols, "") {
				fail(kerr.InconsistentGroupProtocol)
				return
			}
			delete(g.pending, r.MemberID)
			g.addMember(now, r.MemberID, r, reply)
			return
		}
		fail(kerr.UnknownMemberID)
		return
	}
	if !g.supportsProtocols(r.ProtocolType, r.Protocols, m.ID) {
		fail(kerr.InconsistentGroupProtocol)
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
		g.tryCompleteJoin(now)
		return
	}
	g.prepareRebalance(now)
}

// rejoinStatic replaces a static member's id (the old id is fenced). A
// stable group whose member rejoins with the same protocols does not
// rebalance: the member gets the current generation back.
func (g *Group) rejoinStatic(now time.Time, oldID string, r JoinRequest, reply func(JoinResult)) {
	old := g.members[oldID]
	if !g.supportsProtocols(r.ProtocolType, r.Protocols, oldID) {
		reply(JoinResult{Err: kerr.InconsistentGroupProtocol.Code, Generation: -1})
		return
	}
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

// joinResult is m's answer for the current generation. skip marks a static
// leader rejoining a stable group: it must not reassign (KIP-814).
func (g *Group) joinResult(m *member, skip bool) JoinResult {
	res := JoinResult{Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol,
		Leader: g.leader, MemberID: m.ID, SkipAssignment: skip}
	if m.ID == g.leader {
		for _, id := range g.memberIDs() {
			o := g.members[id]
			res.Members = append(res.Members, MemberMeta{MemberID: o.ID, InstanceID: o.InstanceID, Metadata: o.metadataFor(g.protocol)})
		}
	}
	return res
}

func (g *Group) memberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (g *Group) prepareRebalance(now time.Time) {
	if g.state == CompletingRebalance {
		g.answerSyncs(kerr.RebalanceInProgress)
	}
	if g.state != PreparingRebalance {
		var longest time.Duration
		for _, m := range g.members {
			longest = max(longest, m.RebalanceTimeout)
		}
		g.joinDeadline = now.Add(longest)
		g.delayUntil = time.Time{}
		if g.state == Empty && g.cfg.InitialRebalanceDelay > 0 {
			g.delayUntil = now.Add(min(g.cfg.InitialRebalanceDelay, longest))
		}
		for _, m := range g.members {
			if m.joinReply == nil {
				m.joined = false
			}
		}
		g.state = PreparingRebalance
		g.changed = true
	}
	g.tryCompleteJoin(now)
}

func (g *Group) answerSyncs(err *kerr.Error) {
	for _, m := range g.members {
		if m.syncReply != nil {
			m.syncReply(SyncResult{Err: err.Code})
			m.syncReply = nil
		}
	}
}

// tryCompleteJoin completes the rebalance once every member (and every
// member id handed out with MEMBER_ID_REQUIRED) has joined, or the rebalance
// timeout has passed.
func (g *Group) tryCompleteJoin(now time.Time) {
	if g.state != PreparingRebalance {
		return
	}
	timedOut := !now.Before(g.joinDeadline)
	if !timedOut {
		if now.Before(g.delayUntil) || len(g.pending) > 0 {
			return
		}
		for _, m := range g.members {
			if m.joinReply == nil {
				return
			}
		}
	}
	// Dynamic members that did not rejoin leave; static ones stay until
	// their session times out (KIP-345).
	for _, id := range g.memberIDs() {
		if m := g.members[id]; m.joinReply == nil && m.InstanceID == "" {
			g.removeMember(id)
		}
	}
	g.generation++
	g.changed = true
	g.syncDeadline = time.Time{}
	if len(g.members) == 0 {
		g.state, g.protocol, g.leader = Empty, "", ""
		return
	}
	g.protocol = g.selectProtocol()
	if _, ok := g.members[g.leader]; !ok || g.members[g.leader].joinReply == nil {
		g.leader = ""
		for _, id := range g.memberIDs() {
			if g.members[id].joinReply != nil {
				g.leader = id
				break
			}
		}
		if g.leader == "" {
			g.leader = g.memberIDs()[0]
		}
	}
	g.state = CompletingRebalance
	var longest time.Duration
	for _, m := range g.members {
		m.Assignment = nil
		longest = max(longest, m.RebalanceTimeout)
	}
	g.syncDeadline = now.Add(longest)
	for _, id := range g.memberIDs() {
		m := g.members[id]
		m.joined = false
		if m.joinReply != nil {
			reply := m.joinReply
			m.joinReply = nil
			m.deadline = now.Add(m.SessionTimeout)
			reply(g.joinResult(m, false))
		}
	}
}

// selectProtocol picks the protocol every member supports with the most
// votes, each member voting for its most preferred supported one; ties go
// to the first candidate in the leader-independent sorted member order.
func (g *Group) selectProtocol() string {
	ids := g.memberIDs()
	var candidates []string
	for _, p := range g.members[ids[0]].Protocols {
		all := true
		for _, id := range ids {
			if !hasProtocol(g.members[id].Protocols, p.Name) {
				all = false
				break
			}
		}
		if all {
			candidates = append(candidates, p.Name)
		}
	}
	votes := map[string]int{}
	for _, id := range ids {
		for _, p := range g.members[id].Protocols {
			if slices.Contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, c := range candidates {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

func (g *Group) removeMember(id string) {
	m, ok := g.members[id]
	if !ok {
		return
	}
	if m.joinReply != nil {
		m.joinReply(JoinResult{Err: kerr.UnknownMemberID.Code, MemberID: id, Generation: -1})
	}
	if m.syncReply != nil {
		m.syncReply(SyncResult{Err: kerr.UnknownMemberID.Code})
	}
	delete(g.members, id)
	if m.InstanceID != "" && g.statics[m.InstanceID] == id {
		delete(g.statics, m.InstanceID)
	}
	if g.leader == id {
		g.leader = ""
	}
	g.changed = true
}

// checkMember validates a member's identity: FENCED_INSTANCE_ID for an
// instance id now held by another member id, UNKNOWN_MEMBER_ID otherwise.
func (g *Group) checkMember(memberID, instanceID string) (*member, *kerr.Error) {
	if instanceID != "" {
		if cur, ok := g.statics[instanceID]; ok && cur != memberID {
			return nil, kerr.FencedInstanceID
		}
	}
	m, ok := g.members[memberID]
	if !ok {
		return nil, kerr.UnknownMemberID
	}
	return m, nil
}

// Sync handles a SyncGroup; reply is called now or when the leader's
// assignment arrives.
func (g *Group) Sync(now time.Time, r SyncRequest, reply func(SyncResult)) {
	m, err := g.checkMember(r.MemberID, r.InstanceID)
	if err != nil {
		reply(SyncResult{Err: err.Code})
		return
	}
	if r.Generation != g.generation {
		reply(SyncResult{Err: kerr.IllegalGeneration.Code})
		return
	}
	if (r.ProtocolType != "" && r.ProtocolType != g.protocolType) || (r.Protocol != "" && r.Protocol != g.protocol) {
		reply(SyncResult{Err: kerr.InconsistentGroupProtocol.Code})
		return
	}
	m.deadline = now.Add(m.SessionTimeout)
	switch g.state {
	case PreparingRebalance:
		reply(SyncResult{Err: kerr.RebalanceInProgress.Code})
	case Stable:
		reply(SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.Assignment})
	case CompletingRebalance:
		if m.syncReply != nil {
			m.syncReply(SyncResult{Err: kerr.RebalanceInProgress.Code})
		}
		m.syncReply = reply
		if m.ID != g.leader {
			return
		}
		for id, o := range g.members {
			o.Assignment = r.Assignments[id]
		}
		g.state = Stable
		g.syncDeadline = time.Time{}
		g.changed = true
		for _, o := range g.members {
			if o.syncReply != nil {
				rep := o.syncReply
				o.syncReply = nil
				rep(SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: o.Assignment})
			}
		}
	default:
		reply(SyncResult{Err: kerr.UnknownMemberID.Code})
	}
}

// Heartbeat handles a Heartbeat and returns its error code.
func (g *Group) Heartbeat(now time.Time, memberID, instanceID string, generation int32) int16 {
	m, err := g.checkMember(memberID, instanceID)
	if err != nil {
		return err.Code
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	m.deadline = now.Add(m.SessionTimeout)
	if g.state == PreparingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// Leave removes a member (by member id, or by instance id alone for
// LeaveGroup v3+ batches) and returns the error code for it.
func (g *Group) Leave(now time.Time, memberID, instanceID string) int16 {
	if memberID == "" && instanceID != "" {
		cur, ok := g.statics[instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		memberID = cur
	}
	if _, err := g.checkMember(memberID, instanceID); err != nil {
		return err.Code
	}
	g.removeMember(memberID)
	g.memberGone(now)
	return 0
}

func (g *Group) memberGone(now time.Time) {
	switch g.state {
	case Stable, CompletingRebalance:
		g.prepareRebalance(now)
	case PreparingRebalance:
		g.tryCompleteJoin(now)
	}
}

// CommitCheck validates an OffsetCommit against the group and returns its
// error code. A commit with generation < 0 and no member id is an admin (or
// simple consumer) commit, allowed only while the group has no members.
func (g *Group) CommitCheck(now time.Time, memberID, instanceID string, generation int32) int16 {
	if generation < 0 && memberID == "" {
		if len(g.members) == 0 {
			return 0
		}
		return kerr.UnknownMemberID.Code
	}
	m, err := g.checkMember(memberID, instanceID)
	if err != nil {
		return err.Code
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	if g.state == CompletingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	m.deadline = now.Add(m.SessionTimeout)
	return 0
}

// Tick applies timeouts: expired sessions and MEMBER_ID_REQUIRED ids, the
// end of the join wait, a leader that never synced. It returns the next
// time Tick has something to do (zero if nothing is scheduled).
func (g *Group) Tick(now time.Time) time.Time {
	for id, exp := range g.pending {
		if !now.Before(exp) {
			delete(g.pending, id)
		}
	}
	gone := false
	for _, id := range g.memberIDs() {
		m := g.members[id]
		// A member parked in JoinGroup or SyncGroup cannot heartbeat; the
		// rebalance and sync deadlines bound those waits instead.
		if m.joinReply == nil && m.syncReply == nil && !now.Before(m.deadline) {
			g.removeMember(id)
			gone = true
		}
	}
	if gone {
		g.memberGone(now)
	}
	switch g.state {
	case PreparingRebalance:
		g.tryCompleteJoin(now)
	case CompletingRebalance:
		if !now.Before(g.syncDeadline) {
			// Members that did not sync in time are removed, as Kafka does.
			for _, id := range g.memberIDs() {
				if m := g.members[id]; m.syncReply == nil {
					g.removeMember(id)
				}
			}
			g.prepareRebalance(now)
		}
	}
	return g.nextDeadline()
}

func (g *Group) nextDeadline() time.Time {
	var next time.Time
	upd := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, exp := range g.pending {
		upd(exp)
	}
	for _, m := range g.members {
		if m.joinReply == nil && m.syncReply == nil {
			upd(m.deadline)
		}
	}
	switch g.state {
	case PreparingRebalance:
		upd(g.joinDeadline)
		if now := g.delayUntil; !now.IsZero() {
			upd(now)
		}
	case CompletingRebalance:
		upd(g.syncDeadline)
	}
	return next
}

// Abandon answers every parked request with err (NOT_COORDINATOR when this
// agent stops coordinating the group), so clients look for the new one.
func (g *Group) Abandon(err *kerr.Error) {
	for _, m := range g.members {
		if m.joinReply != nil {
			m.joinReply(JoinResult{Err: err.Code, MemberID: m.ID, Generation: -1})
			m.joinReply = nil
		}
		if m.syncReply != nil {
			m.syncReply(SyncResult{Err: err.Code})
			m.syncReply = nil
		}
	}
}
