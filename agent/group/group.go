package group

import (
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
	// timeouts (group.min/max.session.timeout.ms); 0 leaves that side
	// unbounded.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// MaxSize bounds a group's members (group.max.size); 0 means no limit,
	// Kafka's default in effect (Integer.MAX_VALUE).
	MaxSize int
	// NewMemberID returns a fresh unique member id for a client id.
	NewMemberID func(clientID string) string
}

// CheckSessionTimeout is INVALID_SESSION_TIMEOUT for a session timeout
// outside [MinSessionTimeout, MaxSessionTimeout], else nil. Kafka checks it
// before looking at the group (GroupCoordinatorService.joinGroup), so the
// JoinGroup handler calls it before finding the coordinator; Join checks it
// again, first, for callers that did not.
func (c Config) CheckSessionTimeout(session time.Duration) *kerr.Error {
	if (c.MinSessionTimeout > 0 && session < c.MinSessionTimeout) || (c.MaxSessionTimeout > 0 && session > c.MaxSessionTimeout) {
		return kerr.InvalidSessionTimeout
	}
	return nil
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
	// delayUntil holds a new group's first rebalance open for more joiners;
	// a member added meanwhile (addedInDelay) holds it open one delay more,
	// up to the join deadline (Kafka's InitialDelayedJoin).
	joinDeadline time.Time
	delayUntil   time.Time
	addedInDelay bool
	// syncDeadline ends the wait for the leader's assignment.
	syncDeadline time.Time

	// exists is whether Kafka would know the group: restored from the
	// store, marked by the coordinator (it has committed offsets), or
	// joined once without a member id (which creates it). A join naming a
	// member id of a group that does not exist is UNKNOWN_MEMBER_ID before
	// anything else is checked.
	exists bool

	changed bool
}

// New returns an empty group that does not exist yet (see MarkExists).
func New(id string, cfg Config) *Group {
	return &Group{cfg: cfg, id: id, state: Empty, members: map[string]*member{},
		statics: map[string]string{}, pending: map[string]time.Time{}}
}

// MarkExists records that the group exists although it has no state of its
// own: it is known to the store, or has committed offsets (Kafka keeps an
// empty classic group for those).
func (g *Group) MarkExists() { g.exists = true }

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
		g.delayUntil, g.addedInDelay = time.Time{}, false
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
		if !g.delayUntil.IsZero() && !now.Before(g.delayUntil) && g.addedInDelay {
			// Members are still arriving: wait one delay more, counted
			// from the end of this one (as Kafka's timer is).
			g.addedInDelay = false
			g.delayUntil = g.delayUntil.Add(g.cfg.InitialRebalanceDelay)
			if g.delayUntil.After(g.joinDeadline) {
				g.delayUntil = g.joinDeadline
			}
		}
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

// checkMember validates a member's identity as Kafka's validateMember
// does: an instance id no member holds is UNKNOWN_MEMBER_ID, one held by
// another member id FENCED_INSTANCE_ID; then the member id must be a
// member's (UNKNOWN_MEMBER_ID).
func (g *Group) checkMember(memberID, instanceID string) (*member, *kerr.Error) {
	if instanceID != "" {
		cur, ok := g.statics[instanceID]
		if !ok {
			return nil, kerr.UnknownMemberID
		}
		if cur != memberID {
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
