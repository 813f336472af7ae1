// Package ring places keys on agents by rendezvous (highest random
// weight) hashing: group and transaction coordinators (the agent's
// coordinatorFor) and the ranges of the zone's shared read cache
// (agent/internal/peercache).
package ring

import (
	"hash/fnv"
	"strconv"

	"floe/metadata"
)

// Rendezvous picks the agent of agents that owns key by rendezvous
// (highest random weight) hashing: the highest weight of (key, node id).
// Adding or losing an agent moves only the keys it gains or owned, about
// 1/n of them. agents must not be empty. Group and transaction coordinator
// placement and the zone's shared read cache both place keys with it.
func Rendezvous(key string, agents []metadata.Agent) metadata.Agent {
	best, bestW := agents[0], uint64(0)
	for i, l := range agents {
		if w := weight(key, l.NodeID); i == 0 || w > bestW {
			best, bestW = l, w
		}
	}
	return best
}

// weight is FNV-1a of (key, 0, node id in decimal) through murmur3's
// 64-bit finaliser. FNV alone mixes its last bytes into the high bits
// poorly, and the node id comes last: compared raw, the weights of node
// ids that differ in one digit are ordered almost independently of the
// key, and 10 agents gave one of them half of all keys.
func weight(key string, nodeID int32) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(int(nodeID))))
	v := h.Sum64()
	v ^= v >> 33
	v *= 0xff51afd7ed558ccd
	v ^= v >> 33
	v *= 0xc4ceb9fe1a85ec53
	v ^= v >> 33
	return v
}
