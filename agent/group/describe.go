package group

// Describing a classic group, and its durable form (Snapshot/Restore).

import (
	"encoding/json"
	"fmt"
	"time"
)

// MemberDescription is one member in DescribeGroups.
type MemberDescription struct {
	MemberID, InstanceID, ClientID, ClientHost string
	Metadata, Assignment                       []byte
}

// Description is a group as DescribeGroups shows it.
type Description struct {
	State        State
	ProtocolType string
	Protocol     string
	Members      []MemberDescription
}

// Describe returns the group for DescribeGroups.
func (g *Group) Describe() Description {
	d := Description{State: g.state, ProtocolType: g.protocolType}
	if g.state == Stable {
		d.Protocol = g.protocol
	}
	for _, id := range g.memberIDs() {
		m := g.members[id]
		md := MemberDescription{MemberID: id, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost}
		if g.state == Stable {
			md.Metadata, md.Assignment = m.metadataFor(g.protocol), m.Assignment
		}
		d.Members = append(d.Members, md)
	}
	return d
}

// snapshot is the durable form of a group.
type snapshot struct {
	State        State     `json:"state"`
	Generation   int32     `json:"generation"`
	ProtocolType string    `json:"protocol_type"`
	Protocol     string    `json:"protocol"`
	Leader       string    `json:"leader"`
	Members      []*member `json:"members"`
}

// Snapshot encodes what a new coordinator needs to take the group over.
func (g *Group) Snapshot() []byte {
	s := snapshot{State: g.state, Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol, Leader: g.leader}
	for _, id := range g.memberIDs() {
		s.Members = append(s.Members, g.members[id])
	}
	b, _ := json.Marshal(s) // plain data: cannot fail
	return b
}

// Restore rebuilds a group from Snapshot. Members get a full session from
// now, so those still alive keep their generation by heartbeating the new
// coordinator. A group caught mid-rebalance rebalances again.
func Restore(id string, cfg Config, b []byte, now time.Time) (*Group, error) {
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("restore group %s: %w", id, err)
	}
	g := New(id, cfg)
	g.exists = true
	g.generation, g.protocolType, g.protocol, g.leader = s.Generation, s.ProtocolType, s.Protocol, s.Leader
	for _, m := range s.Members {
		if m == nil || m.ID == "" {
			continue
		}
		m.deadline = now.Add(m.SessionTimeout)
		g.members[m.ID] = m
		if m.InstanceID != "" {
			g.statics[m.InstanceID] = m.ID
		}
	}
	switch {
	case len(g.members) == 0:
		g.state = Empty
	case s.State == Stable:
		g.state = Stable
	default:
		g.state = Stable // so that prepareRebalance starts a fresh join wait
		g.prepareRebalance(now)
	}
	g.changed = false
	return g, nil
}

// MemberMetadata returns every member's metadata for the group's protocol
// (its most preferred one before the first generation), for callers that
// decode subscriptions.
func (g *Group) MemberMetadata() [][]byte {
	var out [][]byte
	for _, id := range g.memberIDs() {
		m := g.members[id]
		md := m.metadataFor(g.protocol)
		if md == nil && len(m.Protocols) > 0 {
			md = m.Protocols[0].Metadata
		}
		out = append(out, md)
	}
	return out
}
