package agent

// AlterPartitionReassignments (key 45), versions 0–1 (KIP-455; v1 adds
// AllowReplicationFactorChange, KIP-860).
//
// floe does not place replicas: object storage holds every partition and
// each partition's one reported replica is its leader, computed from the
// live agents (Agent.metadataTopic), so there is never a reassignment to
// run or to cancel. Each partition is answered as Kafka's controller
// answers one that has no reassignment under way:
//   - unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION;
//   - Replicas null (cancel): NO_REASSIGNMENT_IN_PROGRESS;
//   - a target Kafka would refuse (empty, a broker twice, a broker that is
//     no live agent): INVALID_REPLICA_ASSIGNMENT with Kafka's message;
//   - v1 with AllowReplicationFactorChange false and a target of another
//     size: INVALID_REPLICATION_FACTOR;
//   - the replicas the partition already reports (to this client, whose
//     zone picks its leader): success, nothing to do, as in Kafka;
//   - any other target: INVALID_REPLICA_ASSIGNMENT, saying that floe
//     places partitions itself. Accepting it would report a reassignment
//     that never happens.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.AlterPartitionAssignments), AdvertisedMin: 0, HandledMin: 0, Max: 1})
}

func (a *Agent) handleAlterPartitionReassignments(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	if !a.authorizeCluster(r, opAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
		return resp, nil
	}
	ctx, cancel := adminContext(ctx, req.TimeoutMillis)
	defer cancel()
	live := a.liveAgents()
	look := newLookups()
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		t, ok, err := a.topics.find(ctx, rt.Topic, look)
		var mt kmsg.MetadataResponseTopic
		if ok {
			mt = a.metadataTopic(t, live, r.c.zone)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			var code *kerr.Error
			var msg string
			switch {
			case err != nil:
				code, msg = kerr.UnknownServerError, kerr.UnknownServerError.Message
			case !ok:
				code, msg = kerr.UnknownTopicOrPartition, fmt.Sprintf("Unable to find a topic named %s.", rt.Topic)
			case rp.Partition < 0 || rp.Partition >= t.Partitions:
				code, msg = kerr.UnknownTopicOrPartition, fmt.Sprintf("Unable to find partition %s:%d.", rt.Topic, rp.Partition)
			default:
				code, msg = reassignment(rp.Partition, mt.Partitions[rp.Partition].Replicas, rp.Replicas, live,
					req.Version >= 1 && !req.AllowReplicationFactorChange)
			}
			if code != nil {
				sp.ErrorCode = code.Code
				sp.ErrorMessage = &msg
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// reassignment answers a request to move a partition whose replicas are
// current to target (nil: cancel): nil when there is nothing to do. The
// target is checked as CreateTopics checks a list (checkReplicaList)
// against the live agents.
func reassignment(partition int32, current, target []int32, live []metadata.Agent, keepRF bool) (*kerr.Error, string) {
	if target == nil {
		return kerr.NoReassignmentInProgress, kerr.NoReassignmentInProgress.Message
	}
	brokers := make(map[int32]bool, len(live))
	for _, l := range live {
		brokers[l.NodeID] = true
	}
	if code, msg := checkReplicaList(brokers, partition, target, -1); code != nil {
		return code, msg
	}
	if keepRF && len(target) != len(current) {
		return kerr.InvalidReplicationFactor, fmt.Sprintf("The replication factor is changed from %d to %d but allowReplicationFactorChange is false", len(current), len(target))
	}
	if slices.Equal(target, current) {
		return nil, ""
	}
	return kerr.InvalidReplicaAssignment, fmt.Sprintf("floe places partitions itself: object storage holds every partition and its leader is computed from the live agents, so replicas %v cannot be assigned (the partition reports %v)", target, current)
}
