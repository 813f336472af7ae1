package metadata

import (
	"context"
	"errors"
	"time"
)

// Errors of the GroupStore.
var (
	// ErrLeaseHeld is returned by AcquireCoordinatorLease when another owner holds an
	// unexpired lease.
	ErrLeaseHeld = errors.New("metadata: lease held by another owner")
)

// GroupOffset is one committed offset of a consumer group.
type GroupOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32 // -1 if the client sent none
	Metadata    string
	// CommitTime is set by the store (its clock) when the offset is written.
	CommitTime time.Time
}

// TopicPartition names one partition of a topic by name.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// GroupRecord is the durable state of one group: what a coordinator needs to
// take a group over after the previous coordinator died. State is opaque to
// the store (the coordinator's own encoding of generation, protocol, members
// and assignments).
type GroupRecord struct {
	Group        string
	ProtocolType string // "consumer", "connect", "" for offsets-only groups
	// StateName is the group state for listings (Empty, Stable, …).
	StateName string
	// Empty reports that the group has no members; empty groups' offsets
	// expire after the retention period.
	Empty bool
	State []byte
	// UpdatedAt is set by the store when the record is written.
	UpdatedAt time.Time
}

// CoordinatorLease is an exclusive, expiring claim on a coordinator name (a group's,
// later a transaction coordinator's) by one owner (an agent id).
type CoordinatorLease struct {
	Name    string
	Owner   string
	Expires time.Time // by the store's clock
	// Epoch grows by one each time the lease changes owner (a fencing token).
	Epoch int64
}

// GroupStore is the part of the Store that holds consumer groups: committed
// offsets and the state a group coordinator needs to take over, and the
// leases that make one agent the coordinator of a group.
type GroupStore interface {
	// CommitOffsets upserts offsets of a group, OffsetChunk rows per
	// transaction, stamping them with the store's clock.
	CommitOffsets(ctx context.Context, group string, offsets []GroupOffset) error
	// FetchOffsets returns a group's committed offsets sorted by topic and
	// partition (none for an unknown group).
	FetchOffsets(ctx context.Context, group string) ([]GroupOffset, error)
	// DeleteOffsets removes the given partitions' offsets of a group.
	DeleteOffsets(ctx context.Context, group string, parts []TopicPartition) error

	// SaveGroup upserts a group's record.
	SaveGroup(ctx context.Context, g GroupRecord) error
	// LoadGroup returns a group's record; ErrNotFound if it has none.
	LoadGroup(ctx context.Context, group string) (GroupRecord, error)
	// Groups returns every group that has a record or committed offsets,
	// sorted by name. Groups with offsets only get a record with Empty set,
	// no State and StateName "Empty".
	Groups(ctx context.Context) ([]GroupRecord, error)
	// DeleteGroup removes a group's record and offsets; ErrNotFound if it
	// has neither.
	DeleteGroup(ctx context.Context, group string) error
	// ExpireOffsets applies offsets.retention.minutes: it deletes the
	// offsets committed before now-retention of groups without members —
	// groups with no record, or whose record has Empty set and was last
	// saved (became empty) before now-retention too, as Kafka counts from
	// the moment a group became empty — and the records of empty groups
	// left without offsets once older than now-retention. It returns the
	// names of the groups whose offsets or records were removed.
	ExpireOffsets(ctx context.Context, retention time.Duration) ([]string, error)

	// GroupConfigs returns the configs set on a group (Kafka's GROUP
	// config resource: consumer.session.timeout.ms, …): never nil, empty
	// for a group with none. Configs belong to the group's name, not to
	// its record: they may be set before the group exists, and DeleteGroup
	// and ExpireOffsets leave them, as Kafka keeps a group's configs until
	// they are deleted.
	GroupConfigs(ctx context.Context, group string) (map[string]string, error)
	// UpdateGroupConfigs changes a group's configs in one transaction, as
	// UpdateTopicConfigs changes a topic's: update gets the stored configs
	// (never nil, the callee's to change) and returns the configs to store
	// (none left removes the group's configs). An error from update is
	// returned (wrapped) and nothing is stored. Concurrent updates of one
	// group apply one after the other, each seeing what the previous one
	// stored, the first ones of a group that had none included.
	UpdateGroupConfigs(ctx context.Context, group string, update func(configs map[string]string) (map[string]string, error)) error

	// AcquireCoordinatorLease takes or extends the lease name for owner until now+ttl,
	// unless another owner holds it unexpired (ErrLeaseHeld, with the
	// current holder returned).
	AcquireCoordinatorLease(ctx context.Context, name, owner string, ttl time.Duration) (CoordinatorLease, error)
	// RenewCoordinatorLeases extends every unexpired lease of owner to now+ttl and
	// returns them; leases that expired meanwhile are not renewed (another
	// owner may hold them already).
	RenewCoordinatorLeases(ctx context.Context, owner string, ttl time.Duration) ([]CoordinatorLease, error)
	// ReleaseCoordinatorLease drops owner's lease on name; releasing a lease one does
	// not hold is not an error.
	ReleaseCoordinatorLease(ctx context.Context, name, owner string) error
}

// GroupLeaseName is the lease name of a group's coordinator.
func GroupLeaseName(group string) string { return "group/" + group }
