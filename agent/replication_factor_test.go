package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
)

// TestCreateTopicsReplicationFactor: CreateTopics accepted any replication
// factor, 11 on one agent included (kafka-python, confluent-kafka-python and
// confluent-kafka-go create "brokers + 10" and expect
// INVALID_REPLICATION_FACTOR). floe's policy: -1 and 1 up to 3 (or the live
// agents, if more) are accepted and answered 1; 0, below -1 and beyond are
// refused; a manual assignment is checked as Kafka checks it. Checked in
// Kafka's order: assignment or factor, partition count, placement.
func TestCreateTopicsReplicationFactor(t *testing.T) {
	t.Parallel()
	a, hs := handlerAgent(t)
	self := a.liveAgents()[0].NodeID
	type assign = map[int32][]int32
	for i, tc := range []struct {
		name       string
		partitions int32
		rf         int16
		assignment assign
		want       *kerr.Error
		parts      int32 // partitions created when accepted
	}{
		{"default factor", 2, -1, nil, nil, 2},
		{"factor 1", 1, 1, nil, nil, 1},
		{"factor 2", 1, 2, nil, nil, 1},
		{"factor 3 on one agent", 3, 3, nil, nil, 3},
		{"factor 4 on one agent", 1, 4, nil, kerr.InvalidReplicationFactor, 0},
		{"brokers + 10", 1, 11, nil, kerr.InvalidReplicationFactor, 0},
		{"largest int16", 1, 32767, nil, kerr.InvalidReplicationFactor, 0},
		{"factor 0", 1, 0, nil, kerr.InvalidReplicationFactor, 0},
		{"factor -2", 1, -2, nil, kerr.InvalidReplicationFactor, 0},
		{"smallest int16", 1, -32768, nil, kerr.InvalidReplicationFactor, 0},
		{"factor before partition count", 0, 0, nil, kerr.InvalidReplicationFactor, 0},
		{"partition count before placement", 0, 11, nil, kerr.InvalidPartitions, 0},
		{"assignment", -1, -1, assign{0: {self}, 1: {self}}, nil, 2},
		{"assignment with a factor", -1, 3, assign{0: {self}}, kerr.InvalidRequest, 0},
		{"assignment with a partition count", 1, -1, assign{0: {self}}, kerr.InvalidRequest, 0},
		{"assignment to an unknown broker", -1, -1, assign{0: {self + 100}}, kerr.InvalidReplicaAssignment, 0},
		{"assignment naming a broker twice", -1, -1, assign{0: {self, self}}, kerr.InvalidReplicaAssignment, 0},
		{"assignment with an empty list", -1, -1, assign{0: {}}, kerr.InvalidReplicaAssignment, 0},
		{"assignment with a gap", -1, -1, assign{0: {self}, 2: {self}}, kerr.InvalidReplicaAssignment, 0},
	} {
		for _, validateOnly := range []bool{true, false} {
			name := fmt.Sprintf("rf-%02d", i)
			req := kmsg.NewPtrCreateTopicsRequest()
			req.Version, req.TimeoutMillis, req.ValidateOnly = 7, 10_000, validateOnly
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, tc.partitions, tc.rf
			for p := range int32(4) {
				if rs, ok := tc.assignment[p]; ok {
					ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
					ra.Partition, ra.Replicas = p, rs
					rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
				}
			}
			req.Topics = append(req.Topics, rt)
			st := a.mustHandle(t, req).(*kmsg.CreateTopicsResponse).Topics[0]
			if got := kerr.ErrorForCode(st.ErrorCode); got != errOrNil(tc.want) {
				t.Errorf("%s (validate only %v): %v, want %v", tc.name, validateOnly, got, tc.want)
				continue
			}
			if tc.want != nil {
				if st.ErrorMessage == nil || *st.ErrorMessage == "" {
					t.Errorf("%s: %v without a message", tc.name, tc.want)
				}
				if st.ReplicationFactor != -1 || st.NumPartitions != -1 {
					t.Errorf("%s: refused topic answered %d partitions, factor %d; want -1, -1", tc.name, st.NumPartitions, st.ReplicationFactor)
				}
			} else if st.ReplicationFactor != 1 || st.NumPartitions != tc.parts {
				t.Errorf("%s: answered %d partitions, factor %d; want %d, 1", tc.name, st.NumPartitions, st.ReplicationFactor, tc.parts)
			}
			_, err := hs.Store.Topic(context.Background(), name)
			if created := err == nil; created != (tc.want == nil && !validateOnly) {
				t.Errorf("%s (validate only %v): topic created: %v", tc.name, validateOnly, created)
			}
		}
	}

	// Metadata reports what CreateTopics answered: one replica, the leader,
	// in sync, for the topic created with factor 3 as for the others.
	resp := a.mustHandle(t, metadataReq(false, "rf-03")).(*kmsg.MetadataResponse) // "factor 3 on one agent"
	mt := resp.Topics[0]
	if mt.ErrorCode != 0 || len(mt.Partitions) != 3 {
		t.Fatalf("Metadata of the factor-3 topic: %v, %d partitions", kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions))
	}
	for _, p := range mt.Partitions {
		if len(p.Replicas) != 1 || len(p.ISR) != 1 || p.Replicas[0] != p.Leader || p.ISR[0] != p.Leader || len(p.OfflineReplicas) != 0 {
			t.Errorf("partition %d: leader %d replicas %v isr %v offline %v; want the leader alone", p.Partition, p.Leader, p.Replicas, p.ISR, p.OfflineReplicas)
		}
	}
}

// TestCreateTopicsReplicationFactorLiveAgents: beyond 3, a replication
// factor is accepted up to the number of live agents, as Kafka accepts one
// up to its number of brokers; still answered 1.
func TestCreateTopicsReplicationFactorLiveAgents(t *testing.T) {
	t.Parallel()
	a, _ := handlerAgent(t)
	self := a.liveAgents()[0]
	self.ID = a.id // the agent was never started: no registered identity
	live := []metadata.Agent{self}
	for i := range int32(4) {
		live = append(live, metadata.Agent{ID: fmt.Sprint("other-", i), NodeID: self.NodeID + 1 + i, Host: "127.0.0.1", Port: 1})
	}
	a.viewMu.Lock()
	a.live = live
	a.viewMu.Unlock()
	for rf, want := range map[int16]*kerr.Error{3: nil, 5: nil, 6: kerr.InvalidReplicationFactor} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = 7, 10_000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprint("five-agents-", rf), 1, rf
		req.Topics = append(req.Topics, rt)
		st := a.mustHandle(t, req).(*kmsg.CreateTopicsResponse).Topics[0]
		if got := kerr.ErrorForCode(st.ErrorCode); got != errOrNil(want) {
			t.Errorf("factor %d on 5 agents: %v, want %v", rf, got, want)
		} else if want == nil && st.ReplicationFactor != 1 {
			t.Errorf("factor %d on 5 agents answered factor %d, want 1", rf, st.ReplicationFactor)
		}
	}
}
