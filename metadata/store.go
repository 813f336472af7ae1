// Package metadata owns floe's durable state outside object storage: topics
// and their configs, partitions with their offsets, the index of flushed
// objects and their lifecycle (live, then replaced by compaction and deleted
// after a grace period), the registry of live agents, consumer groups and
// their committed offsets (GroupStore), producer ids and per-partition
// sequence state for idempotent produce (ProducerStore), transactions and the
// aborted ranges read_committed fetches skip (TxnStore), and the compactor's
// job leases, index swaps and object bookkeeping (CompactionStore, JobLease),
// and the schema registry's schemas, subjects and settings (SchemaStore).
// Store is all of these. The commit's decisions — which batches of a run are
// appended, duplicates or refused, and what a transactional run opens or ends
// — are pure functions both stores share (PlanRun, PlanTxnRun), as is the
// check every commit starts with (ObjectCommit.Validate).
//
// One Store interface, one PostgreSQL and one SQLite implementation
// (subpackages postgres and sqlite, whose plain reads and writes are
// written once in internal/sqlstore), one conformance suite (storetest)
// that both pass; storeurl opens either from a URL.
//
// metadata never imports storage or kafkaproto, and never talks to the object
// store: it records what the agents tell it about objects they wrote.
package metadata

import (
	"context"
	"errors"
	"time"
)

// Errors returned (possibly wrapped) by every Store implementation.
var (
	ErrTopicExists       = errors.New("metadata: topic already exists")
	ErrUnknownTopic      = errors.New("metadata: unknown topic or partition")
	ErrInvalidPartitions = errors.New("metadata: invalid partition count")
	ErrOffsetOutOfRange  = errors.New("metadata: offset out of range")
	ErrNotFound          = errors.New("metadata: not found")
)

// TopicID is a Kafka topic id: 16 random bytes, never all zero.
type TopicID [16]byte

// Topic is a topic as stored.
type Topic struct {
	ID         TopicID
	Name       string
	Partitions int32
	// Configs holds only the configs set explicitly at creation (or later);
	// defaults are applied by the agent.
	Configs   map[string]string
	CreatedAt time.Time
}

// PartitionState is the offset state of one partition.
type PartitionState struct {
	Partition      int32
	LogStartOffset int64
	// NextOffset is the high watermark: the offset the next committed record gets.
	NextOffset int64
	// MaxTimestamp is the largest batch max timestamp committed so far (-1 if none).
	MaxTimestamp int64
}

// RunCommit is one (object, partition) run handed to CommitObject: the
// partition's batches inside the object, back to back.
type RunCommit struct {
	TopicID      TopicID
	Partition    int32
	ByteOffset   int64 // position of the run in the object
	ByteLength   int64
	Batches      int32
	Records      int64 // offsets the run occupies (sum of lastOffsetDelta+1)
	MinTimestamp int64
	MaxTimestamp int64
	// BatchList optionally lists the run's batches; when given, producer
	// sequences are checked per batch (RunResult.Batches), duplicates and
	// rejected batches get no offsets, and the run may become several index
	// rows.
	BatchList []BatchCommit
}

// ObjectCommit describes one flushed object: one PUT, committed in one
// transaction.
type ObjectCommit struct {
	Key     string
	Size    int64
	AgentID string
	Runs    []RunCommit
}

// RunResult is the outcome of one run of a commit, in the order of the runs.
// Err is nil or ErrUnknownTopic (the topic was deleted, or the partition does
// not exist); such a run gets no offsets and no index row.
type RunResult struct {
	BaseOffset int64
	Err        error
	// Batches holds one result per BatchList entry, when the run had one.
	Batches []BatchResult
}

// IndexEntry locates the offsets [BaseOffset, EndOffset) of a partition in an object.
type IndexEntry struct {
	TopicID      TopicID
	Partition    int32
	BaseOffset   int64
	EndOffset    int64 // exclusive
	ObjectKey    string
	ByteOffset   int64
	ByteLength   int64
	Batches      int32
	MinTimestamp int64
	MaxTimestamp int64
}

// Agent is one registered agent process.
type Agent struct {
	ID     string // unique per process start
	NodeID int32  // Kafka broker id; assigned by the store at registration
	Host   string
	Port   int32
	Zone   string
	// HTTPAddr is the host:port other agents reach this one's HTTP
	// listener at (the zone's shared read cache, agent/peer_cache.go);
	// empty when it has none.
	HTTPAddr string
	// Listeners are the advertised host:port of each of the agent's
	// Kafka listeners, by listener name (Metadata answers a client with
	// the addresses of the listener it came in on); Host and Port are
	// those of the first.
	Listeners map[string]string
	// LastHeartbeat is set by the store, from the store's clock.
	LastHeartbeat time.Time
}

// OffsetChunk is the most offsets CommitOffsets and PutTxnOffsets write in
// one statement and transaction. A commit naming more is written in
// several, one after the other, so that it never holds the store's write
// lock (SQLite) or its row locks (PostgreSQL) for long: flush commits,
// heartbeats and other groups' commits get their turn in between. Kafka
// does not promise that the partitions of one OffsetCommit are applied
// atomically (its consumers commit the same offsets again on failure), so
// a commit that fails part way may leave its first chunks applied; the
// upserts are idempotent, and a retried commit converges. Transactional
// offsets only become the group's when the transaction commits, and a
// producer whose TxnOffsetCommit failed retries it or aborts.
const OffsetChunk = 1000

// Store is the metadata store. Every method is safe for concurrent use.
type Store interface {
	GroupStore
	CredentialStore
	ACLStore
	QuotaStore
	CompactionStore
	ProducerStore
	TxnStore
	ShareStore
	SchemaStore
	ClusterConfigStore

	// CreateTopic creates a topic with a fresh random id and partitions
	// 0..partitions-1 at offset 0. ErrTopicExists if the name is taken;
	// ErrInvalidPartitions if partitions < 1.
	CreateTopic(ctx context.Context, name string, partitions int32, configs map[string]string) (Topic, error)
	// DeleteTopic removes a topic, its partitions and its index entries
	// (objects become unreferenced garbage). ErrUnknownTopic if absent.
	DeleteTopic(ctx context.Context, name string) error
	// Topic returns one topic by name; ErrUnknownTopic if absent.
	Topic(ctx context.Context, name string) (Topic, error)
	// TopicByID returns one topic by id; ErrUnknownTopic if absent.
	TopicByID(ctx context.Context, id TopicID) (Topic, error)
	// Topics returns all topics sorted by name.
	Topics(ctx context.Context) ([]Topic, error)
	// TopicTotals returns how many topics there are and their partitions
	// in all: what the agents' cluster-wide limits count. One aggregate
	// over the topic rows; no partition row is read.
	TopicTotals(ctx context.Context) (topics int, partitions int64, err error)
	// CreatePartitions raises a topic's partition count to total.
	// ErrInvalidPartitions if total is not larger than the current count.
	CreatePartitions(ctx context.Context, name string, total int32) error
	// SetTopicConfigs replaces the explicitly set configs of a topic.
	SetTopicConfigs(ctx context.Context, name string, configs map[string]string) error
	// UpdateTopicConfigs changes the explicitly set configs of a topic in
	// one transaction: update gets the stored configs (never nil, the
	// callee's to change) and returns the configs to store. An error from
	// update is returned (wrapped) and nothing is stored. Concurrent
	// updates of one topic apply one after the other, each seeing what the
	// previous one stored, so read-modify-write changes (AlterConfigs'
	// APPEND) never lose one another. ErrUnknownTopic if absent.
	UpdateTopicConfigs(ctx context.Context, name string, update func(configs map[string]string) (map[string]string, error)) error

	// Partitions returns the offset state of every partition of a topic,
	// sorted by partition. ErrUnknownTopic if absent.
	Partitions(ctx context.Context, topic TopicID) ([]PartitionState, error)
	// Partition returns the offset state of one partition.
	Partition(ctx context.Context, topic TopicID, partition int32) (PartitionState, error)

	// CommitObject assigns offsets to every run of a flushed object and
	// records one index row per run, all in ONE transaction: partition rows
	// are locked in sorted (topic id, partition) order, each run's base
	// offset is the partition's next offset, which then advances by the run's
	// Records. Runs of unknown topics/partitions fail alone (RunResult.Err)
	// without failing the others. A returned error means nothing was
	// committed.
	CommitObject(ctx context.Context, obj ObjectCommit) ([]RunResult, error)
	// CommitCount returns how many CommitObject calls have committed (for
	// the one-commit-per-flush invariant and metrics): one per object, also
	// where a store commits overlapping calls in one transaction (group
	// commit, metadata/internal/groupcommit).
	CommitCount(ctx context.Context) (int64, error)

	// Lookup returns index entries of a partition in offset order, starting
	// with the entry that contains offset, until their byte lengths add up to
	// at least maxBytes (always at least one entry if any covers offset) or
	// limit entries. An offset at the high watermark returns no entries;
	// below the log start or above the high watermark returns
	// ErrOffsetOutOfRange.
	Lookup(ctx context.Context, topic TopicID, partition int32, offset int64, maxBytes int64, limit int) ([]IndexEntry, error)
	// LookupTimestamp returns the first entry (in offset order) whose
	// MaxTimestamp >= ts, or ErrNotFound.
	LookupTimestamp(ctx context.Context, topic TopicID, partition int32, ts int64) (IndexEntry, error)
	// PartitionSizes returns, per partition of a topic, the bytes of the
	// index rows that hold offsets at or above the log start: what the
	// partition's records take in object storage, whole rows counted (as
	// Kafka counts whole segments). Partitions without such rows are
	// absent; an unknown topic has none.
	PartitionSizes(ctx context.Context, topic TopicID) (map[int32]int64, error)
	// LookupMaxTimestamp returns the earliest entry holding the partition's
	// largest timestamp, or ErrNotFound if the partition is empty.
	LookupMaxTimestamp(ctx context.Context, topic TopicID, partition int32) (IndexEntry, error)

	// RegisterAgent registers (or refreshes) an agent and returns it with
	// its NodeID. A new ID gets a node id no live agent has.
	RegisterAgent(ctx context.Context, a Agent) (Agent, error)
	// Heartbeat refreshes an agent's LastHeartbeat; ErrNotFound if it was
	// removed (expired or deregistered), in which case it must register again.
	Heartbeat(ctx context.Context, id string) error
	// DeregisterAgent removes an agent.
	DeregisterAgent(ctx context.Context, id string) error
	// LiveAgents returns agents whose last heartbeat is younger than ttl,
	// sorted by NodeID; it also deletes agents older than ttl.
	LiveAgents(ctx context.Context, ttl time.Duration) ([]Agent, error)

	// Close releases the store's connections.
	Close() error
}
