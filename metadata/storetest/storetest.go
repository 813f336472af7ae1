// Package storetest is the conformance suite every metadata.Store
// implementation must pass: the SQLite and PostgreSQL stores run the same
// Run from their own tests. It checks exact results (every offset, every
// index field), the error sentinels, and the concurrency guarantees of
// CommitObject. It contains no store of its own.
package storetest

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"floe/metadata"
)

// Run runs the whole suite. open must return a new, empty store for each
// call and close it in t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) metadata.Store) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s metadata.Store)
	}{
		{"CreateTopic", testCreateTopic},
		{"CreateTopicErrors", testCreateTopicErrors},
		{"Topics", testTopics},
		{"TopicTotals", testTopicTotals},
		{"DeleteTopic", testDeleteTopic},
		{"TopicConfigs", testTopicConfigs},
		{"UpdateTopicConfigs", testUpdateTopicConfigs},
		{"PartitionSizes", testPartitionSizes},
		{"PartitionProducers", testPartitionProducers},
		{"CreatePartitions", testCreatePartitions},
		{"PartitionUnknown", testPartitionUnknown},
		{"CommitDenseOffsets", testCommitDenseOffsets},
		{"CommitSeveralPartitions", testCommitSeveralPartitions},
		{"CommitUnknownPartitionFailsAlone", testCommitUnknownPartition},
		{"CommitTwoRunsOnePartition", testCommitTwoRunsOnePartition},
		{"CommitEmptyAndAllUnknown", testCommitEmptyAndAllUnknown},
		{"CommitFailureCommitsNothing", testCommitFailureCommitsNothing},
		{"CommitInvalid", testCommitInvalid},
		{"CommitCount", testCommitCount},
		{"Lookup", testLookup},
		{"LookupErrors", testLookupErrors},
		{"LookupTimestamp", testLookupTimestamp},
		{"LookupMaxTimestamp", testLookupMaxTimestamp},
		{"ConcurrentCommits", testConcurrentCommits},
		{"CommitQueuedOrder", testCommitQueuedOrder},
		{"ConcurrentProducerCommits", testConcurrentProducerCommits},
		{"ConcurrentFencing", testConcurrentFencing},
		{"InitProducerID", testInitProducerID},
		{"ProducerSequences", testProducerSequences},
		{"TxnRecords", testTxnRecords},
		{"TxnCommitChecks", testTxnCommitChecks},
		{"TxnOffsets", testTxnOffsets},
		{"TxnOffsetsChunked", testTxnOffsetsChunked},
		{"ShareStates", testShareStates},
		{"ShareLockExpiry", testShareLockExpiry},
		{"ShareConcurrentAcquire", testShareConcurrentAcquire},
		{"Agents", testAgents},
		{"AgentNodeIDReuse", testAgentNodeIDReuse},
		{"AgentExpiry", testAgentExpiry},
		{"ConcurrentRegister", testConcurrentRegister},
		{"ReplaceRowsMerge", testReplaceRowsMerge},
		{"ReplaceRowsPartial", testReplaceRowsPartial},
		{"ReplaceRowsConflict", testReplaceRowsConflict},
		{"ReplaceRowsAroundARow", testReplaceRowsAroundARow},
		{"ReplaceRowsConcurrent", testReplaceRowsConcurrent},
		{"AdvanceLogStart", testAdvanceLogStart},
		{"DeleteTopicUnreferences", testDeleteTopicUnreferences},
		{"Leases", testLeases},
		{"GroupOffsets", testGroupOffsets},
		{"GroupOffsetsChunked", testGroupOffsetsChunked},
		{"GroupRecords", testGroupRecords},
		{"GroupConfigs", testGroupConfigs},
		{"ClusterConfigs", testClusterConfigs},
		{"ScramCredentials", testScramCredentials},
		{"ClusterSecret", testClusterSecret},
		{"ACLs", testACLs},
		{"ACLsConcurrent", testACLsConcurrent},
		{"ClientQuotas", testClientQuotas},
		{"ClientQuotasConcurrent", testClientQuotasConcurrent},
		{"ExpireOffsets", testExpireOffsets},
		{"CoordinatorLeases", testCoordinatorLeases},
		{"LeaseRace", testLeaseRace},
		{"Schemas", testSchemas},
		{"SchemaVersions", testSchemaVersions},
		{"SchemaSettings", testSchemaSettings},
		{"SchemasConcurrent", testSchemasConcurrent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustCreate(t *testing.T, s metadata.Store, name string, partitions int32) metadata.Topic {
	t.Helper()
	tp, err := s.CreateTopic(ctxT(t), name, partitions, nil)
	if err != nil {
		t.Fatalf("CreateTopic(%s, %d): %v", name, partitions, err)
	}
	return tp
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

func sameTopic(t *testing.T, what string, got, want metadata.Topic) {
	t.Helper()
	if got.ID != want.ID || got.Name != want.Name || got.Partitions != want.Partitions ||
		!maps.Equal(got.Configs, want.Configs) || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("%s: got %+v, want %+v", what, got, want)
	}
}

func partition(t *testing.T, s metadata.Store, id metadata.TopicID, p int32) metadata.PartitionState {
	t.Helper()
	st, err := s.Partition(ctxT(t), id, p)
	if err != nil {
		t.Fatalf("Partition(%d): %v", p, err)
	}
	return st
}

// run builds a RunCommit whose fields are derived from the arguments so
// that index entries can be checked field by field.
func run(id metadata.TopicID, p int32, records int64, byteOffset, byteLength int64, minTS, maxTS int64) metadata.RunCommit {
	return metadata.RunCommit{
		TopicID: id, Partition: p,
		ByteOffset: byteOffset, ByteLength: byteLength,
		Batches: int32(records%3) + 1, Records: records,
		MinTimestamp: minTS, MaxTimestamp: maxTS,
	}
}

func commit(t *testing.T, s metadata.Store, key string, runs ...metadata.RunCommit) []metadata.RunResult {
	t.Helper()
	res, err := s.CommitObject(ctxT(t), metadata.ObjectCommit{Key: key, Size: 1 << 20, AgentID: "agent-1", Runs: runs})
	if err != nil {
		t.Fatalf("CommitObject(%s): %v", key, err)
	}
	if len(res) != len(runs) {
		t.Fatalf("CommitObject(%s): %d results for %d runs", key, len(res), len(runs))
	}
	return res
}

// entryOf is the index entry a successful run must produce.
func entryOf(key string, r metadata.RunCommit, base int64) metadata.IndexEntry {
	return metadata.IndexEntry{
		TopicID: r.TopicID, Partition: r.Partition,
		BaseOffset: base, EndOffset: base + r.Records,
		ObjectKey: key, ByteOffset: r.ByteOffset, ByteLength: r.ByteLength,
		Batches: r.Batches, MinTimestamp: r.MinTimestamp, MaxTimestamp: r.MaxTimestamp,
	}
}

func sameEntries(t *testing.T, what string, got, want []metadata.IndexEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d:\ngot  %+v\nwant %+v", what, len(got), len(want), got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: entry %d\ngot  %+v\nwant %+v", what, i, got[i], want[i])
		}
	}
}
