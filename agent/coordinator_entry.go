package agent

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/group"
)

// consumerProtocolType848 is the stored protocol type of KIP-848 groups;
// classic groups store their JoinGroup protocol type ("consumer", …).
const consumerProtocolType848 = "consumer-848"

// shareProtocolType is the stored protocol type of share groups (KIP-932),
// also their protocol and group type in ListGroups.
const shareProtocolType = "share"

// The helpers below read or replace a loaded entry's state; e is locked.

func (e *groupEntry) stateName() string {
	if e.sg != nil {
		return e.sg.StateName()
	}
	if e.cg != nil {
		return e.cg.StateName()
	}
	return string(e.g.State())
}

// protocolType is the stored protocol type (consumerProtocolType848 for
// KIP-848 groups).
func (e *groupEntry) protocolType() string {
	if e.sg != nil {
		return shareProtocolType
	}
	if e.cg != nil {
		return consumerProtocolType848
	}
	return e.g.ProtocolType()
}

func (e *groupEntry) isEmpty() bool {
	return e.g.IsEmpty() && (e.cg == nil || e.cg.IsEmpty()) && (e.sg == nil || e.sg.IsEmpty())
}

// reset replaces the state after the group was deleted.
func (e *groupEntry) reset(g *group.Group) {
	e.g.Abandon(kerr.GroupIDNotFound)
	e.g, e.cg, e.sg, e.exists = g, nil, nil, false
}

// subscribedTopics decodes the members' consumer-protocol subscriptions.
func (e *groupEntry) subscribedTopics() map[string]bool {
	if e.sg != nil {
		return e.sg.Subscribed()
	}
	if e.cg != nil {
		return e.cg.Subscribed()
	}
	out := map[string]bool{}
	if e.g.ProtocolType() != "consumer" {
		return out
	}
	for _, md := range e.g.MemberMetadata() {
		var m kmsg.ConsumerMemberMetadata
		if err := m.ReadFrom(md); err != nil {
			continue // undecodable metadata subscribes to nothing we can name
		}
		for _, t := range m.Topics {
			out[t] = true
		}
	}
	return out
}

// topicCounts returns every topic's partition count, for KIP-848 target
// assignments.
func (c *coordinator) topicCounts(ctx context.Context) (map[string]int32, error) {
	all, err := c.a.topics.all(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int32, len(all))
	for name, t := range all {
		out[name] = t.Partitions
	}
	return out, nil
}
