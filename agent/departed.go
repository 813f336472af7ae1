package agent

// Departed agents' node ids stay in Metadata for a while, at a live
// agent's address.
//
// Clients cache coordinators by node id. franz-go in particular keeps a
// transactional id's coordinator until a coordinator request answers
// NOT_COORDINATOR (or a non-sharded one fails to dial), and its
// AddPartitionsToTxn is sharded: the coordinator's node id is resolved
// against the broker list once to build the request and once more to send
// it. When the coordinator's agent dies, every AddPartitionsToTxn fails to
// dial and is retried at once, each failure triggering a metadata refresh;
// when a refresh drops the dead node id between those two look-ups, the
// second one fails with "unknown broker", which franz-go treats as fatal
// for the producer id (kgo sink.go drain: only retryable broker errors and
// dial errors are retried). Kafka drops a fenced broker from Metadata just
// the same, but its brokers hold partitions; floe's agents are
// interchangeable, so the dead node id can instead go on resolving, to a
// live agent that serves every partition and answers NOT_COORDINATOR (or
// serves the id, being its new coordinator) like any other. Leaders and
// coordinators are only ever live agents; a node id taken by a new agent
// is that agent again.
//
// The record is in memory: an agent knows the node ids that left its own
// live view while it was running.

import (
	"slices"
	"time"

	"floe/metadata"
)

// departedAliasTTL is how long a departed agent's node id stays listed.
// Clients that still name it as a coordinator by then (franz-go moves off
// it on the first NOT_COORDINATOR) see it go away at their next metadata
// refresh, as they would see a fenced Kafka broker.
const departedAliasTTL = 5 * time.Minute

// noteDepartedLocked (viewMu held) records the node ids of old that live no
// longer has, and forgets those listed too long or live again.
func (a *Agent) noteDepartedLocked(old, live []metadata.Agent, now time.Time) {
	isLive := func(id int32) bool {
		return slices.ContainsFunc(live, func(l metadata.Agent) bool { return l.NodeID == id })
	}
	for _, o := range old {
		if o.ID != a.id && !isLive(o.NodeID) {
			if a.departed == nil {
				a.departed = map[int32]time.Time{}
			}
			if _, ok := a.departed[o.NodeID]; !ok {
				a.departed[o.NodeID] = now
			}
		}
	}
	for id, at := range a.departed {
		if isLive(id) || now.Sub(at) > departedAliasTTL {
			delete(a.departed, id)
		}
	}
}

// departedBrokers returns, sorted by node id, a broker for each recently
// departed node id that live does not hold, at the address of a live agent
// (one in zone when there is one; each id on a fixed agent of the view, so
// that every agent with the same view names the same one).
func (a *Agent) departedBrokers(live []metadata.Agent, zone string) []metadata.Agent {
	a.viewMu.Lock()
	var ids []int32
	now := time.Now()
	for id, at := range a.departed {
		if now.Sub(at) <= departedAliasTTL &&
			!slices.ContainsFunc(live, func(l metadata.Agent) bool { return l.NodeID == id }) {
			ids = append(ids, id)
		}
	}
	a.viewMu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	targets := zoneAgents(live, zone)
	out := make([]metadata.Agent, 0, len(ids))
	for _, id := range ids {
		t := targets[int(uint32(id)%uint32(len(targets)))]
		out = append(out, metadata.Agent{ID: t.ID, NodeID: id, Host: t.Host, Port: t.Port, Zone: t.Zone, Listeners: t.Listeners})
	}
	return out
}
