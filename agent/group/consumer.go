package group

// The KIP-848 consumer group: members heartbeat with their subscription and
// owned partitions; the coordinator computes a target assignment with a
// server-side assignor (uniform or range) whenever the group epoch moves,
// and reconciles each member towards it: partitions are first revoked from
// their current owner (the member epoch stays until it confirms) and only
// then handed to their new owner, so no partition has two owners.
//
// Assignments are by topic name here; the agent translates to topic ids.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Server-side assignors.
const (
	UniformAssignor = "uniform"
	RangeAssignor   = "range"
)

// Assignment maps topic names to sorted partitions.
type Assignment map[string][]int32

func (a Assignment) clone() Assignment {
	out := make(Assignment, len(a))
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	return out
}

func (a Assignment) has(t string, p int32) bool { return slices.Contains(a[t], p) }

func (a Assignment) add(t string, p int32) {
	if !a.has(t, p) {
		a[t] = append(a[t], p)
		slices.Sort(a[t])
	}
}

// minus returns the partitions of a not in b.
func (a Assignment) minus(b Assignment) Assignment {
	out := Assignment{}
	for t, ps := range a {
		for _, p := range ps {
			if !b.has(t, p) {
				out.add(t, p)
			}
		}
	}
	return out
}

func (a Assignment) intersect(b Assignment) Assignment {
	out := Assignment{}
	for t, ps := range a {
		for _, p := range ps {
			if b.has(t, p) {
				out.add(t, p)
			}
		}
	}
	return out
}

func (a Assignment) size() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

func (a Assignment) equal(b Assignment) bool { return a.minus(b).size() == 0 && b.minus(a).size() == 0 }

// ConsumerConfig holds the KIP-848 group settings: the coordinator's
// defaults, or what the group's own configs (consumer.session.timeout.ms,
// consumer.heartbeat.interval.ms) make of them.
type ConsumerConfig struct {
	SessionTimeout    time.Duration // group.consumer.session.timeout.ms
	HeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms
	NewMemberID       func() string
}

// HeartbeatRequest is a ConsumerGroupHeartbeat, topics translated to names.
type HeartbeatRequest struct {
	MemberID         string
	MemberEpoch      int32
	InstanceID       string
	RackID           string
	ClientID         string
	ClientHost       string
	RebalanceTimeout time.Duration // < 0: unchanged
	Subscribed       []string      // nil: unchanged
	Regex            *string       // nil: unchanged; "": none (KIP-848 SubscribedTopicRegex)
	Assignor         string        // "": unchanged
	Owned            Assignment    // nil: unchanged
}

// HeartbeatResult is a ConsumerGroupHeartbeat answer.
type HeartbeatResult struct {
	Err         int16
	MemberID    string
	MemberEpoch int32
	Assignment  Assignment // nil: no change to send
}

// cmember is one KIP-848 member; exported fields are its durable state.
type cmember struct {
	ID, InstanceID, RackID, ClientID, ClientHost string
	Epoch, PrevEpoch                             int32
	RebalanceTimeout                             time.Duration
	Subscribed                                   []string
	Regex                                        string   `json:",omitempty"`
	Matched                                      []string `json:",omitempty"` // topics Regex matched, sorted
	Assignor                                     string
	Assigned                                     Assignment // what the member was told it owns
	Revoking                                     Assignment // told to give up, not yet confirmed

	deadline       time.Time
	revokeDeadline time.Time
}

// ConsumerGroup is one KIP-848 group. Not safe for concurrent use.
type ConsumerGroup struct {
	cfg ConsumerConfig
	id  string

	epoch           int32
	assignmentEpoch int32
	assignor        string
	members         map[string]*cmember
	targets         map[string]Assignment
	topics          map[string]int32 // partition counts the targets were computed with
	regexps         map[string]*regexp.Regexp

	changed bool
}

// NewConsumerGroup returns an empty KIP-848 group.
func NewConsumerGroup(id string, cfg ConsumerConfig) *ConsumerGroup {
	return &ConsumerGroup{cfg: cfg, id: id, assignor: UniformAssignor, members: map[string]*cmember{},
		targets: map[string]Assignment{}, topics: map[string]int32{}}
}

// Configure replaces the group's settings. As in Kafka, a new session
// timeout applies to each member from its next heartbeat on: the deadline
// a member already has stands.
func (g *ConsumerGroup) Configure(cfg ConsumerConfig) { g.cfg = cfg }

// Config is the group's settings.
func (g *ConsumerGroup) Config() ConsumerConfig { return g.cfg }

// TakeChanged reports whether durable state changed since the last call.
func (g *ConsumerGroup) TakeChanged() bool {
	c := g.changed
	g.changed = false
	return c
}

// IsEmpty reports whether the group has no members.
func (g *ConsumerGroup) IsEmpty() bool { return len(g.members) == 0 }

// Epoch is the group epoch.
func (g *ConsumerGroup) Epoch() int32 { return g.epoch }

// StateName is the group state as ConsumerGroupDescribe and ListGroups
// show it.
func (g *ConsumerGroup) StateName() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	if g.assignmentEpoch != g.epoch {
		return "Assigning"
	}
	for _, m := range g.members {
		if m.Epoch != g.assignmentEpoch || m.Revoking.size() > 0 || !m.Assigned.equal(g.targets[m.ID]) {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (g *ConsumerGroup) memberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Heartbeat handles a ConsumerGroupHeartbeat. topics are the partition
// counts of the existing topics, used for the target assignment.
func (g *ConsumerGroup) Heartbeat(now time.Time, r HeartbeatRequest, topics map[string]int32) HeartbeatResult {
	if r.Assignor != "" && r.Assignor != UniformAssignor && r.Assignor != RangeAssignor {
		return HeartbeatResult{Err: kerr.UnsupportedAssignor.Code}
	}
	switch {
	case r.MemberEpoch == leaveEpoch || r.MemberEpoch == staticLeaveEpoch:
		return g.leave(r, topics)
	case r.MemberEpoch == 0:
		return g.join(now, r, topics)
	case r.MemberEpoch < staticLeaveEpoch:
		return HeartbeatResult{Err: kerr.InvalidRequest.Code}
	}
	m, err := g.member(r.MemberID, r.InstanceID)
	if err != nil {
		return HeartbeatResult{Err: err.Code}
	}
	// A newer epoch than the member's is fenced (one that left
	// temporarily has none); an older one too, unless the member missed
	// our last answer: it may use its previous epoch, as long as it owns
	// nothing it was not given.
	if r.MemberEpoch > m.Epoch || (r.MemberEpoch < m.Epoch &&
		(r.MemberEpoch != m.PrevEpoch || r.Owned == nil || r.Owned.minus(m.Assigned.clone()).size() > 0)) {
		return HeartbeatResult{Err: kerr.FencedMemberEpoch.Code}
	}
	m.deadline = now.Add(g.cfg.SessionTimeout)
	full := r.Subscribed != nil || r.Regex != nil
	changed := g.update(m, r)
	if g.resolve(topics) {
		changed = true
	}
	if changed || !sameCounts(g.topics, topics, g.subscribedTopics()) {
		g.bump(topics)
	}
	sent := g.reconcile(now, m, r.Owned)
	res := HeartbeatResult{MemberID: m.ID, MemberEpoch: m.Epoch}
	if sent || full {
		res.Assignment = m.Assigned.clone()
	}
	return res
}

// The member epochs of a leaving member: -1 leaves, -2 (a static member
// only) leaves for now, keeping its place and assignment until its session
// expires, so that it can restart without a rebalance.
const (
	leaveEpoch       = -1
	staticLeaveEpoch = -2
)

// member finds the member a heartbeat names, as Kafka does: a static
// member by its instance id (UNKNOWN_MEMBER_ID when no member holds it,
// FENCED_INSTANCE_ID when another member id does), others by member id.
func (g *ConsumerGroup) member(id, instanceID string) (*cmember, *kerr.Error) {
	if instanceID == "" {
		if m, ok := g.members[id]; ok {
			return m, nil
		}
		return nil, kerr.UnknownMemberID
	}
	m := g.static(instanceID)
	switch {
	case m == nil:
		return nil, kerr.UnknownMemberID
	case m.ID != id:
		return nil, kerr.FencedInstanceID
	}
	return m, nil
}

// static is the member holding instance id, or nil.
func (g *ConsumerGroup) static(instanceID string) *cmember {
	for _, m := range g.members {
		if m.InstanceID == instanceID {
			return m
		}
	}
	return nil
}

// leave handles a heartbeat with epoch -1 or -2. A static member leaving
// with -2 stays, its epoch -2, keeping its assignment (what it was
// revoking is released) until its session expires or it restarts: no
// new group epoch. Otherwise the member is removed.
func (g *ConsumerGroup) leave(r HeartbeatRequest, topics map[string]int32) HeartbeatResult {
	m, err := g.member(r.MemberID, r.InstanceID)
	if err != nil {
		return HeartbeatResult{Err: err.Code}
	}
	if r.InstanceID != "" && r.MemberEpoch == staticLeaveEpoch {
		if m.Epoch != staticLeaveEpoch {
			m.PrevEpoch, m.Epoch = m.Epoch, staticLeaveEpoch
		}
		m.Revoking, m.revokeDeadline = Assignment{}, time.Time{}
		g.changed = true
	} else {
		g.remove(m.ID)
		g.bump(topics)
	}
	return HeartbeatResult{MemberID: r.MemberID, MemberEpoch: r.MemberEpoch}
}

func (g *ConsumerGroup) join(now time.Time, r HeartbeatRequest, topics map[string]int32) HeartbeatResult {
	if r.Owned != nil && r.Owned.size() > 0 {
		return HeartbeatResult{Err: kerr.InvalidRequest.Code}
	}
	if (r.Subscribed == nil && r.Regex == nil) || r.RebalanceTimeout < 0 {
		return HeartbeatResult{Err: kerr.InvalidRequest.Code}
	}
	id := r.MemberID
	if id == "" {
		id = g.cfg.NewMemberID()
	}
	m := &cmember{ID: id, InstanceID: r.InstanceID, Assigned: Assignment{}, Revoking: Assignment{}}
	var prevSubs []string
	takeover := false
	if old := g.static(r.InstanceID); r.InstanceID != "" && old != nil {
		// A static member restarting takes over its predecessor's
		// assignment and epoch (the one it had before it left): no
		// rebalance. Only once the predecessor left with epoch -2, as
		// in Kafka; until then the instance id is still in use.
		if old.Epoch != staticLeaveEpoch {
			return HeartbeatResult{Err: kerr.UnreleasedInstanceID.Code}
		}
		tgt := g.targets[old.ID]
		g.remove(old.ID)
		m.Epoch, m.PrevEpoch, m.Assigned = old.PrevEpoch, old.PrevEpoch, old.Assigned
		m.Subscribed, m.Assignor, prevSubs, takeover = old.Subscribed, old.Assignor, old.Subscribed, true
		m.Regex, m.Matched = old.Regex, old.Matched
		g.targets[id] = tgt
	}
	if _, ok := g.members[id]; ok {
		// Rejoin with a known id at epoch 0: the member lost its state.
		g.remove(id)
	}
	g.members[id] = m
	m.deadline = now.Add(g.cfg.SessionTimeout)
	subsChanged := g.update(m, r)
	if g.resolve(topics) {
		subsChanged = true
	}
	if !takeover || subsChanged || !slices.Equal(prevSubs, m.Subscribed) || !sameCounts(g.topics, topics, g.subscribedTopics()) {
		g.bump(topics)
	}
	g.changed = true
	g.reconcile(now, m, Assignment{})
	return HeartbeatResult{MemberID: id, MemberEpoch: m.Epoch, Assignment: m.Assigned.clone()}
}

// update applies the request's changed fields; it reports whether the
// subscription or assignor changed (a new group epoch).
func (g *ConsumerGroup) update(m *cmember, r HeartbeatRequest) bool {
	changed := false
	m.ClientID, m.ClientHost = r.ClientID, r.ClientHost
	if r.RackID != "" {
		m.RackID = r.RackID
	}
	if r.RebalanceTimeout >= 0 {
		m.RebalanceTimeout = r.RebalanceTimeout
	}
	if r.Subscribed != nil {
		s := slices.Clone(r.Subscribed)
		sort.Strings(s)
		s = slices.Compact(s)
		if !slices.Equal(s, m.Subscribed) {
			m.Subscribed, changed = s, true
		}
	}
	if r.Regex != nil && *r.Regex != m.Regex {
		m.Regex, changed = *r.Regex, true
	}
	if r.Assignor != "" && r.Assignor != m.Assignor {
		m.Assignor, changed = r.Assignor, true
	}
	if changed {
		g.changed = true
	}
	return changed
}

func (g *ConsumerGroup) remove(id string) {
	delete(g.members, id)
	delete(g.targets, id)
	g.changed = true
}

func (g *ConsumerGroup) subscribedTopics() map[string]bool {
	out := map[string]bool{}
	for _, m := range g.members {
		for _, t := range m.Subscribed {
			out[t] = true
		}
		for _, t := range m.Matched {
			out[t] = true
		}
	}
	return out
}

// subscribes reports whether m subscribes to topic, by name or by regex.
func (m *cmember) subscribes(topic string) bool {
	_, byName := slices.BinarySearch(m.Subscribed, topic)
	_, byRegex := slices.BinarySearch(m.Matched, topic)
	return byName || byRegex
}

// resolve matches the members' regexes against the existing topics, as
// Kafka resolves KIP-848 regex subscriptions on the broker: the whole topic
// name must match, and internal topics are not skipped. It reports whether
// any member's matched topics changed (a new group epoch). Each distinct
// regex is compiled once per group.
func (g *ConsumerGroup) resolve(topics map[string]int32) bool {
	changed := false
	var names []string
	for _, id := range g.memberIDs() {
		m := g.members[id]
		var matched []string
		if m.Regex != "" {
			re, ok := g.regexps[m.Regex]
			if !ok {
				if len(g.regexps) >= 64 {
					g.regexps = nil // members changing regexes: do not grow without bound
				}
				re, _ = CompileTopicRegex(m.Regex) // validated on the way in; nil matches nothing
				if g.regexps == nil {
					g.regexps = map[string]*regexp.Regexp{}
				}
				g.regexps[m.Regex] = re
			}
			if re != nil {
				if names == nil {
					names = sortedTopics(topics)
				}
				for _, t := range names {
					if re.MatchString(t) {
						matched = append(matched, t)
					}
				}
			}
		}
		if !slices.Equal(matched, m.Matched) {
			m.Matched, changed = matched, true
		}
	}
	if changed {
		g.changed = true
	}
	return changed
}

// CompileTopicRegex compiles a KIP-848 subscription regex so that it must
// match a whole topic name (Kafka uses RE2/J, whose syntax Go's regexp
// shares).
func CompileTopicRegex(expr string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + expr + ")$")
}

// sameCounts reports whether the subscribed topics' partition counts are
// what the targets were computed with.
func sameCounts(old, cur map[string]int32, subscribed map[string]bool) bool {
	for t := range subscribed {
		if old[t] != cur[t] {
			return false
		}
	}
	return true
}

// bump starts a new group epoch and computes its target assignment.
func (g *ConsumerGroup) bump(topics map[string]int32) {
	g.resolve(topics)
	g.epoch++
	g.topics = map[string]int32{}
	for t := range g.subscribedTopics() {
		if n, ok := topics[t]; ok {
			g.topics[t] = n
		}
	}
	// The most common assignor among members wins (uniform by default).
	votes := map[string]int{}
	for _, m := range g.members {
		if m.Assignor != "" {
			votes[m.Assignor]++
		}
	}
	switch {
	case votes[RangeAssignor] > votes[UniformAssignor]:
		g.assignor = RangeAssignor
	case votes[UniformAssignor] > 0:
		g.assignor = UniformAssignor
	} // no votes (no members, or none named one): keep the last
	if g.assignor == RangeAssignor {
		g.targets = assignRange(g.members, g.topics)
	} else {
		g.targets = assignUniform(g.members, g.topics, g.targets)
	}
	g.assignmentEpoch = g.epoch
	g.changed = true
}

// reconcile moves m towards its target. It reports whether m's assignment
// changed (and so must be sent).
func (g *ConsumerGroup) reconcile(now time.Time, m *cmember, owned Assignment) bool {
	target := g.targets[m.ID]
	if target == nil {
		target = Assignment{}
	}
	if m.Revoking.size() > 0 {
		if owned == nil || owned.intersect(m.Revoking).size() > 0 {
			return false // still revoking
		}
		m.Revoking = Assignment{}
		m.revokeDeadline = time.Time{}
		g.changed = true
	}
	changed := false
	if revoke := m.Assigned.minus(target); revoke.size() > 0 {
		m.Assigned = m.Assigned.intersect(target)
		m.Revoking = revoke
		m.revokeDeadline = now.Add(m.RebalanceTimeout)
		g.changed = true
		return true
	}
	// Hand out target partitions nobody else still holds.
	held := Assignment{}
	for _, o := range g.members {
		if o.ID == m.ID {
			continue
		}
		for t, ps := range o.Assigned {
			for _, p := range ps {
				held.add(t, p)
			}
		}
		for t, ps := range o.Revoking {
			for _, p := range ps {
				held.add(t, p)
			}
		}
	}
	for t, ps := range target.minus(m.Assigned) {
		for _, p := range ps {
			if !held.has(t, p) {
				m.Assigned.add(t, p)
				changed = true
			}
		}
	}
	if m.Epoch != g.assignmentEpoch {
		m.PrevEpoch, m.Epoch = m.Epoch, g.assignmentEpoch
		changed = true
	}
	if changed {
		g.changed = true
	}
	return changed
}

// Tick removes members whose session expired or that did not revoke in
// time.
func (g *ConsumerGroup) Tick(now time.Time, topics map[string]int32) {
	gone := false
	for _, id := range g.memberIDs() {
		m := g.members[id]
		if !now.Before(m.deadline) || (!m.revokeDeadline.IsZero() && !now.Before(m.revokeDeadline)) {
			g.remove(id)
			gone = true
		}
	}
	if gone {
		g.bump(topics)
	}
}

// CommitCheck validates an OffsetCommit from a member of this group: the
// member epoch must not be newer than the member's (FENCED otherwise); an
// older one is accepted, the member still owning what it commits until
// it is told otherwise.
func (g *ConsumerGroup) CommitCheck(memberID string, epoch int32) int16 {
	if epoch < 0 && memberID == "" {
		if len(g.members) == 0 {
			return 0
		}
		return kerr.UnknownMemberID.Code
	}
	m, ok := g.members[memberID]
	if !ok {
		return kerr.UnknownMemberID.Code
	}
	if epoch > m.Epoch {
		return kerr.FencedMemberEpoch.Code
	}
	return 0
}

// ConsumerMemberDescription is one member in ConsumerGroupDescribe.
type ConsumerMemberDescription struct {
	MemberID, InstanceID, RackID, ClientID, ClientHost string
	Epoch                                              int32
	Subscribed                                         []string
	Regex                                              string
	Assignment, Target                                 Assignment
}

// ConsumerDescription is a group as ConsumerGroupDescribe shows it.
type ConsumerDescription struct {
	State                  string
	Epoch, AssignmentEpoch int32
	Assignor               string
	Members                []ConsumerMemberDescription
}

// Describe returns the group for ConsumerGroupDescribe.
func (g *ConsumerGroup) Describe() ConsumerDescription {
	d := ConsumerDescription{State: g.StateName(), Epoch: g.epoch, AssignmentEpoch: g.assignmentEpoch, Assignor: g.assignor}
	for _, id := range g.memberIDs() {
		m := g.members[id]
		d.Members = append(d.Members, ConsumerMemberDescription{MemberID: id, InstanceID: m.InstanceID, RackID: m.RackID,
			ClientID: m.ClientID, ClientHost: m.ClientHost, Epoch: m.Epoch, Subscribed: m.Subscribed, Regex: m.Regex,
			Assignment: m.Assigned.clone(), Target: g.targets[id].clone()})
	}
	return d
}

// Subscribed returns every topic some member subscribes to.
func (g *ConsumerGroup) Subscribed() map[string]bool { return g.subscribedTopics() }

type consumerSnapshot struct {
	Epoch           int32                 `json:"epoch"`
	AssignmentEpoch int32                 `json:"assignment_epoch"`
	Assignor        string                `json:"assignor"`
	Members         []*cmember            `json:"members"`
	Targets         map[string]Assignment `json:"targets"`
	Topics          map[string]int32      `json:"topics"`
}

// Snapshot encodes the group for a coordinator taking it over.
func (g *ConsumerGroup) Snapshot() []byte {
	s := consumerSnapshot{Epoch: g.epoch, AssignmentEpoch: g.assignmentEpoch, Assignor: g.assignor, Targets: g.targets, Topics: g.topics}
	for _, id := range g.memberIDs() {
		s.Members = append(s.Members, g.members[id])
	}
	b, _ := json.Marshal(s) // plain data: cannot fail
	return b
}

// RestoreConsumerGroup rebuilds a group from Snapshot; every member gets a
// full session from now.
func RestoreConsumerGroup(id string, cfg ConsumerConfig, b []byte, now time.Time) (*ConsumerGroup, error) {
	var s consumerSnapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("restore consumer group %s: %w", id, err)
	}
	g := NewConsumerGroup(id, cfg)
	g.epoch, g.assignmentEpoch = s.Epoch, s.AssignmentEpoch
	if s.Assignor != "" {
		g.assignor = s.Assignor
	}
	if s.Targets != nil {
		g.targets = s.Targets
	}
	if s.Topics != nil {
		g.topics = s.Topics
	}
	for _, m := range s.Members {
		if m == nil || m.ID == "" {
			continue
		}
		if m.Assigned == nil {
			m.Assigned = Assignment{}
		}
		if m.Revoking == nil {
			m.Revoking = Assignment{}
		}
		m.deadline = now.Add(cfg.SessionTimeout)
		if m.Revoking.size() > 0 {
			m.revokeDeadline = now.Add(m.RebalanceTimeout)
		}
		g.members[m.ID] = m
	}
	return g, nil
}
