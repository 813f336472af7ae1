package agent

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

// apis is filled by each API file's init with the versions it serves;
// ApiVersions answers from it, so what is advertised is what is handled.
var apis kafkaproto.Table

// handle is the one dispatch switch: every Kafka API the agent serves
// appears here once. A returned error closes the connection; Kafka failures
// are error codes inside the response.
func (a *Agent) handle(ctx context.Context, r *request) (kmsg.Response, error) {
	switch kmsg.Key(r.hdr.APIKey) {
	case kmsg.Produce:
		return a.handleProduce(ctx, r)
	case kmsg.Fetch:
		return a.handleFetch(ctx, r)
	case kmsg.ListOffsets:
		return a.handleListOffsets(ctx, r)
	case kmsg.Metadata:
		return a.handleMetadata(ctx, r)
	case kmsg.ApiVersions:
		return a.handleApiVersions(ctx, r)
	case kmsg.CreateTopics:
		return a.handleCreateTopics(ctx, r)
	case kmsg.DeleteTopics:
		return a.handleDeleteTopics(ctx, r)
	case kmsg.OffsetForLeaderEpoch:
		return a.handleOffsetForLeaderEpoch(ctx, r)
	case kmsg.DescribeConfigs:
		return a.handleDescribeConfigs(ctx, r)
	case kmsg.AlterConfigs:
		return a.handleAlterConfigs(ctx, r)
	case kmsg.IncrementalAlterConfigs:
		return a.handleIncrementalAlterConfigs(ctx, r)
	case kmsg.DescribeLogDirs:
		return a.handleDescribeLogDirs(ctx, r)
	case kmsg.DescribeProducers:
		return a.handleDescribeProducers(ctx, r)
	case kmsg.DescribeTopicPartitions:
		return a.handleDescribeTopicPartitions(ctx, r)
	case kmsg.ElectLeaders:
		return a.handleElectLeaders(ctx, r)
	case kmsg.AlterPartitionAssignments:
		return a.handleAlterPartitionReassignments(ctx, r)
	case kmsg.ListPartitionReassignments:
		return a.handleListPartitionReassignments(ctx, r)
	case kmsg.UpdateFeatures:
		return a.handleUpdateFeatures(ctx, r)
	case kmsg.DescribeClientQuotas:
		return a.handleDescribeClientQuotas(ctx, r)
	case kmsg.AlterClientQuotas:
		return a.handleAlterClientQuotas(ctx, r)
	case kmsg.CreatePartitions:
		return a.handleCreatePartitions(ctx, r)
	case kmsg.InitProducerID:
		return a.handleInitProducerID(ctx, r)
	case kmsg.AddPartitionsToTxn:
		return a.handleAddPartitionsToTxn(ctx, r)
	case kmsg.AddOffsetsToTxn:
		return a.handleAddOffsetsToTxn(ctx, r)
	case kmsg.EndTxn:
		return a.handleEndTxn(ctx, r)
	case kmsg.TxnOffsetCommit:
		return a.handleTxnOffsetCommit(ctx, r)
	case kmsg.DescribeTransactions:
		return a.handleDescribeTransactions(ctx, r)
	case kmsg.ListTransactions:
		return a.handleListTransactions(ctx, r)
	case kmsg.DeleteRecords:
		return a.handleDeleteRecords(ctx, r)
	case kmsg.SASLHandshake:
		return a.handleSaslHandshake(ctx, r)
	case kmsg.SASLAuthenticate:
		return a.handleSaslAuthenticate(ctx, r)
	case kmsg.DescribeUserSCRAMCredentials:
		return a.handleDescribeUserScramCredentials(ctx, r)
	case kmsg.AlterUserSCRAMCredentials:
		return a.handleAlterUserScramCredentials(ctx, r)
	case kmsg.DescribeCluster:
		return a.handleDescribeCluster(ctx, r)
	case kmsg.OffsetCommit:
		return a.handleOffsetCommit(ctx, r)
	case kmsg.OffsetFetch:
		return a.handleOffsetFetch(ctx, r)
	case kmsg.FindCoordinator:
		return a.handleFindCoordinator(ctx, r)
	case kmsg.JoinGroup:
		return a.handleJoinGroup(ctx, r)
	case kmsg.Heartbeat:
		return a.handleHeartbeat(ctx, r)
	case kmsg.LeaveGroup:
		return a.handleLeaveGroup(ctx, r)
	case kmsg.SyncGroup:
		return a.handleSyncGroup(ctx, r)
	case kmsg.DescribeGroups:
		return a.handleDescribeGroups(ctx, r)
	case kmsg.ListGroups:
		return a.handleListGroups(ctx, r)
	case kmsg.DeleteGroups:
		return a.handleDeleteGroups(ctx, r)
	case kmsg.OffsetDelete:
		return a.handleOffsetDelete(ctx, r)
	case kmsg.ConsumerGroupHeartbeat:
		return a.handleConsumerGroupHeartbeat(ctx, r)
	case kmsg.ConsumerGroupDescribe:
		return a.handleConsumerGroupDescribe(ctx, r)
	case kmsg.ShareGroupHeartbeat:
		return a.handleShareGroupHeartbeat(ctx, r)
	case kmsg.ShareGroupDescribe:
		return a.handleShareGroupDescribe(ctx, r)
	case kmsg.ShareFetch:
		return a.handleShareFetch(ctx, r)
	case kmsg.ShareAcknowledge:
		return a.handleShareAcknowledge(ctx, r)
	case kmsg.DescribeShareGroupOffsets:
		return a.handleDescribeShareGroupOffsets(ctx, r)
	case kmsg.AlterShareGroupOffsets:
		return a.handleAlterShareGroupOffsets(ctx, r)
	case kmsg.DeleteShareGroupOffsets:
		return a.handleDeleteShareGroupOffsets(ctx, r)
	case kmsg.DescribeACLs:
		return a.handleDescribeACLs(ctx, r)
	case kmsg.CreateACLs:
		return a.handleCreateACLs(ctx, r)
	case kmsg.DeleteACLs:
		return a.handleDeleteACLs(ctx, r)
	default:
		return nil, fmt.Errorf("no handler for api key %d", r.hdr.APIKey)
	}
}
