package group

// The KIP-932 share group: members heartbeat with their subscription; the
// coordinator assigns partitions with a server-side assignor that, like
// Kafka's SimpleAssignor, gives every subscribed partition to at least one
// member and lets several members share a partition when a topic has more
// subscribers than partitions. Share partitions have no single owner (the
// records, not the partitions, are locked: metadata.SharePartitionState),
// so there is no revocation: a member's new assignment applies at once.
//
// Assignments are by topic name here; the agent translates to topic ids.

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ShareAssignor is the name share groups report as their assignor.
const ShareAssignor = "simple"

// ShareHeartbeatRequest is a ShareGroupHeartbeat, topics by name.
type ShareHeartbeatRequest struct {
	MemberID    string
	MemberEpoch int32
	RackID      string
	ClientID    string
	ClientHost  string
	Subscribed  []string // nil: unchanged
}

// smember is one share-group member; exported fields are durable.
type smember struct {
	ID, RackID, ClientID, ClientHost string
	Epoch, PrevEpoch                 int32 // what the member was last told, and before
	Subscribed                       []string
	Assigned                         Assignment

	deadline time.Time
	sent     bool // the member was told its current assignment
}

// ShareGroup is one KIP-932 share group. Not safe for concurrent use.
type ShareGroup struct {
	cfg     ConsumerConfig
	id      string
	epoch   int32
	members map[string]*smember
	topics  map[string]int32 // partition counts the assignment was computed with
	changed bool
}

// NewShareGroup returns an empty share group.
func NewShareGroup(id string, cfg ConsumerConfig) *ShareGroup {
	return &ShareGroup{cfg: cfg, id: id, members: map[string]*smember{}, topics: map[string]int32{}}
}

// Configure replaces the group's session timeout and heartbeat interval
// (share.session.timeout.ms, share.heartbeat.interval.ms).
func (g *ShareGroup) Configure(cfg ConsumerConfig) { g.cfg = cfg }

// TakeChanged reports whether durable state changed since the last call.
func (g *ShareGroup) TakeChanged() bool {
	c := g.changed
	g.changed = false
	return c
}

// IsEmpty reports whether the group has no members.
func (g *ShareGroup) IsEmpty() bool { return len(g.members) == 0 }

// StateName is the group state as ShareGroupDescribe and ListGroups show
// it: Empty or Stable (assignments apply at once).
func (g *ShareGroup) StateName() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// Subscribed returns every topic some member subscribes to.
func (g *ShareGroup) Subscribed() map[string]bool {
	out := map[string]bool{}
	for _, m := range g.members {
		for _, t := range m.Subscribed {
			out[t] = true
		}
	}
	return out
}

func (g *ShareGroup) memberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Heartbeat handles a ShareGroupHeartbeat; topics are the partition counts
// of the existing topics.
func (g *ShareGroup) Heartbeat(now time.Time, r ShareHeartbeatRequest, topics map[string]int32) HeartbeatResult {
	switch {
	case r.MemberEpoch == -1:
		if _, ok := g.members[r.MemberID]; !ok {
			return HeartbeatResult{Err: kerr.UnknownMemberID.Code}
		}
		delete(g.members, r.MemberID)
		g.assign(topics)
		return HeartbeatResult{MemberID: r.MemberID, MemberEpoch: -1}
	case r.MemberEpoch < -1:
		return HeartbeatResult{Err: kerr.InvalidRequest.Code}
	}
	m, ok := g.members[r.MemberID]
	if r.MemberEpoch == 0 {
		if r.Subscribed == nil {
			return HeartbeatResult{Err: kerr.InvalidRequest.Code}
		}
		if !ok {
			m = &smember{ID: r.MemberID, Assigned: Assignment{}}
			g.members[r.MemberID] = m
			g.changed = true
		}
		m.sent = false // a (re)joining member is told everything
	} else {
		if !ok {
			return HeartbeatResult{Err: kerr.UnknownMemberID.Code}
		}
		// A member that missed our last answer may use its previous
		// epoch.
		if r.MemberEpoch != m.Epoch && r.MemberEpoch != m.PrevEpoch {
			return HeartbeatResult{Err: kerr.FencedMemberEpoch.Code}
		}
	}
	m.deadline = now.Add(g.cfg.SessionTimeout)
	m.ClientID, m.ClientHost = r.ClientID, r.ClientHost
	if r.RackID != "" {
		m.RackID = r.RackID
	}
	subsChanged := false
	if r.Subscribed != nil {
		s := slices.Clone(r.Subscribed)
		sort.Strings(s)
		s = slices.Compact(s)
		if !slices.Equal(s, m.Subscribed) {
			m.Subscribed, subsChanged = s, true
		}
	}
	if subsChanged || r.MemberEpoch == 0 || !sameCounts(g.topics, topics, g.Subscribed()) {
		g.assign(topics)
	}
	if m.Epoch != g.epoch {
		m.PrevEpoch, m.Epoch = m.Epoch, g.epoch
		g.changed = true
	}
	res := HeartbeatResult{MemberID: m.ID, MemberEpoch: m.Epoch}
	if !m.sent || r.Subscribed != nil {
		res.Assignment = m.Assigned.clone()
		m.sent = true
	}
	return res
}

// assign starts a new group epoch and computes every member's assignment:
// per topic, its subscribers (sorted) take its partitions round robin; a
// topic with more subscribers than partitions has each partition shared
// by about subscribers/partitions members, every subscriber getting one.
// Members whose assignment changed are told at their next heartbeat,
// which moves each member to the new epoch.
func (g *ShareGroup) assign(topics map[string]int32) {
	g.epoch++
	g.changed = true
	g.topics = map[string]int32{}
	subs := map[string][]string{}
	for _, id := range g.memberIDs() {
		for _, t := range g.members[id].Subscribed {
			if n, ok := topics[t]; ok && n > 0 {
				subs[t] = append(subs[t], id)
				g.topics[t] = n
			}
		}
	}
	next := map[string]Assignment{}
	for _, id := range g.memberIDs() {
		next[id] = Assignment{}
	}
	for t, ids := range subs {
		n := int(g.topics[t])
		slots := max(n, len(ids))
		for i := range slots {
			next[ids[i%len(ids)]].add(t, int32(i%n))
		}
	}
	for id, m := range g.members {
		if !m.Assigned.equal(next[id]) {
			m.Assigned, m.sent = next[id], false
		}
	}
}

// Tick removes members whose session expired and returns their ids.
func (g *ShareGroup) Tick(now time.Time, topics map[string]int32) []string {
	var gone []string
	for _, id := range g.memberIDs() {
		if !now.Before(g.members[id].deadline) {
			delete(g.members, id)
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		g.assign(topics)
	}
	return gone
}

// ShareMemberDescription is one member in ShareGroupDescribe.
type ShareMemberDescription struct {
	MemberID, RackID, ClientID, ClientHost string
	Epoch                                  int32
	Subscribed                             []string
	Assignment                             Assignment
}

// ShareDescription is a group as ShareGroupDescribe shows it.
type ShareDescription struct {
	State   string
	Epoch   int32
	Members []ShareMemberDescription
}

// Describe returns the group for ShareGroupDescribe.
func (g *ShareGroup) Describe() ShareDescription {
	d := ShareDescription{State: g.StateName(), Epoch: g.epoch}
	for _, id := range g.memberIDs() {
		m := g.members[id]
		d.Members = append(d.Members, ShareMemberDescription{MemberID: id, RackID: m.RackID, ClientID: m.ClientID,
			ClientHost: m.ClientHost, Epoch: m.Epoch, Subscribed: m.Subscribed, Assignment: m.Assigned.clone()})
	}
	return d
}

type shareSnapshot struct {
	Epoch   int32            `json:"epoch"`
	Members []*smember       `json:"members"`
	Topics  map[string]int32 `json:"topics"`
}

// Snapshot encodes the group for a coordinator taking it over.
func (g *ShareGroup) Snapshot() []byte {
	s := shareSnapshot{Epoch: g.epoch, Topics: g.topics}
	for _, id := range g.memberIDs() {
		s.Members = append(s.Members, g.members[id])
	}
	b, _ := json.Marshal(s) // plain data: cannot fail
	return b
}

// RestoreShareGroup rebuilds a group from Snapshot; every member gets a
// full session from now and is told its assignment again.
func RestoreShareGroup(id string, cfg ConsumerConfig, b []byte, now time.Time) (*ShareGroup, error) {
	var s shareSnapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("restore share group %s: %w", id, err)
	}
	g := NewShareGroup(id, cfg)
	g.epoch = s.Epoch
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
		m.deadline = now.Add(cfg.SessionTimeout)
		g.members[m.ID] = m
	}
	return g, nil
}

// MarkChanged has the group saved (it exists from now on, without
// members: AlterShareGroupOffsets).
func (g *ShareGroup) MarkChanged() { g.changed = true }
