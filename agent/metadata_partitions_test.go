package agent

import (
	"hash/fnv"
	"testing"

	"floe/metadata"
)

// metadataAgents are three live agents in two zones.
var metadataAgents = []metadata.Agent{{NodeID: 1, Zone: "a"}, {NodeID: 2, Zone: "b"}, {NodeID: 3, Zone: "a"}}

// TestMetadataTopicPartitions: every partition of a topic is described, in
// order, led by the agent at (FNV-1a of the topic + partition) mod n among
// the client's zone's agents,
// with that agent as its only replica and in-sync replica.
func TestMetadataTopicPartitions(t *testing.T) {
	t.Parallel()
	a := &Agent{}
	topic := metadata.Topic{Name: "many", Partitions: 1000}
	for _, zone := range []string{"", "a", "b", "c"} {
		mt := a.metadataTopic(topic, metadataAgents, zone)
		if mt.Topic == nil || *mt.Topic != "many" || len(mt.Partitions) != 1000 {
			t.Fatalf("zone %q: topic %v with %d partitions", zone, mt.Topic, len(mt.Partitions))
		}
		candidates := zoneAgents(metadataAgents, zone)
		for i, p := range mt.Partitions {
			h := fnv.New32a()
			h.Write([]byte("many"))
			want := candidates[(int(h.Sum32())+i)%len(candidates)].NodeID
			if p.Partition != int32(i) || p.Leader != want || p.LeaderEpoch != 0 ||
				len(p.Replicas) != 1 || p.Replicas[0] != want || len(p.ISR) != 1 || p.ISR[0] != want {
				t.Fatalf("zone %q partition %d: %+v, want leader %d", zone, i, p, want)
			}
		}
	}
	// Consecutive partitions go to consecutive agents.
	mt := a.metadataTopic(topic, metadataAgents, "")
	for i := 1; i < len(mt.Partitions); i++ {
		prev, cur := mt.Partitions[i-1].Leader, mt.Partitions[i].Leader
		if cur != prev%3+1 {
			t.Fatalf("partition %d led by %d after %d", i, cur, prev)
		}
	}
}

// BenchmarkMetadataTopic10k: describing a topic of 10,000 partitions, the
// per-request cost of a Metadata that names it (docs/scale.md).
func BenchmarkMetadataTopic10k(b *testing.B) {
	a := &Agent{}
	topic := metadata.Topic{Name: "many", Partitions: 10_000}
	b.ReportAllocs()
	for b.Loop() {
		a.metadataTopic(topic, metadataAgents, "")
	}
}
