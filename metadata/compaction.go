package metadata

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrConflict is returned by ReplaceRows when a source row it was asked to
// replace no longer exists exactly as given (retention, DeleteRecords, a
// topic deletion or another compactor changed it meanwhile). Nothing was
// changed; the caller drops its new object and plans again.
var ErrConflict = errors.New("metadata: index changed concurrently")

// Object states. An object is live while index rows may point into it;
// replaced once it is unreferenced and waiting out its grace period, after
// which the compactor deletes it from the bucket and forgets it.
const (
	ObjectLive     = "live"
	ObjectReplaced = "replaced"
)

// ObjectInfo is one object the store knows.
type ObjectInfo struct {
	Key  string
	Size int64
	// Level is 0 for objects written by agent flushes and n+1 for an object
	// merged from level-n objects.
	Level     int
	CreatedAt time.Time
	State     string
	// DeleteAfter is when a replaced object may be deleted (zero while live).
	DeleteAfter time.Time
}

// Replacement is one atomic index swap: the rows Sources are replaced by the
// rows of the new object Key (already PUT by the caller).
type Replacement struct {
	// Sources are the index rows being replaced, exactly as read (every
	// field is compared).
	Sources []IndexEntry
	// Key, Size and Level describe the new object; it is recorded live.
	Key   string
	Size  int64
	Level int
	// Rows are the index rows of the new object. They must cover only
	// offsets the sources covered; gaps are allowed (key compaction).
	Rows []IndexEntry
	// Grace is how long an object left without rows by the swap stays in
	// the bucket, so fetches that already read its rows still succeed.
	Grace time.Duration
}

// Lease is one compactor job lease.
type Lease struct {
	Name    string
	Owner   string
	Expires time.Time
}

// CompactionStore is the part of the Store the compactor works through:
// object listing by level, atomic index swaps, retention, object garbage
// collection bookkeeping and job leases.
type CompactionStore interface {
	// Objects returns the objects in state (ObjectLive or ObjectReplaced),
	// oldest first (by CreatedAt, then key).
	Objects(ctx context.Context, state string) ([]ObjectInfo, error)
	// ObjectRows returns the index rows that point into any of keys, sorted
	// by (topic id, partition, base offset).
	ObjectRows(ctx context.Context, keys []string) ([]IndexEntry, error)
	// CountIndexRows returns the number of index rows (for metrics).
	CountIndexRows(ctx context.Context) (int64, error)
	// PartitionRows returns every index row of a partition below end
	// (EndOffset <= end), in offset order. ErrUnknownTopic if the
	// partition does not exist.
	PartitionRows(ctx context.Context, topic TopicID, partition int32, end int64) ([]IndexEntry, error)
	// ReplaceRows performs r in one transaction: if every source row still
	// exists unchanged, they are deleted, the new object and its rows are
	// inserted, and each source object left without rows becomes
	// ObjectReplaced with DeleteAfter = now + r.Grace. Otherwise it returns
	// ErrConflict and changes nothing. Rows below a partition's log start
	// offset are dropped instead of inserted.
	ReplaceRows(ctx context.Context, r Replacement) error

	// AdvanceLogStart raises a partition's log start offset to offset,
	// clamped to the high watermark; it never moves it backwards. Index
	// rows wholly below the new log start are deleted (their objects are
	// then found by MarkUnreferenced). It returns the resulting state;
	// ErrUnknownTopic if the partition does not exist.
	AdvanceLogStart(ctx context.Context, topic TopicID, partition int32, offset int64) (PartitionState, error)
	// MarkUnreferenced turns every live object that no index row points
	// into and that is older than minAge into ObjectReplaced, deletable
	// after now + grace. It returns how many it marked. (Objects lose
	// their rows through retention and topic deletion too, not only
	// through ReplaceRows.)
	MarkUnreferenced(ctx context.Context, minAge, grace time.Duration) (int, error)
	// DeletableObjects returns replaced objects whose DeleteAfter has
	// passed, oldest first, at most limit.
	DeletableObjects(ctx context.Context, limit int) ([]ObjectInfo, error)
	// ForgetObjects removes objects (deleted from the bucket by the caller)
	// from the store. Only replaced objects are removed; live keys are
	// ignored.
	ForgetObjects(ctx context.Context, keys []string) error
	// KnownObjects returns the subset of keys the store has a record of, in
	// any state. A bucket key it does not know, older than the grace
	// period, is an orphan: PUT by a process that died before committing.
	KnownObjects(ctx context.Context, keys []string) (map[string]bool, error)

	// AcquireLease takes (or renews, for the same owner) the lease name for
	// ttl from now, store clock. It returns false if another owner holds an
	// unexpired lease.
	AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error)
	// ReleaseLease gives up a lease held by owner; releasing a lease owned
	// by someone else (or expired and taken) does nothing.
	ReleaseLease(ctx context.Context, name, owner string) error
	// Leases returns the unexpired leases, sorted by name.
	Leases(ctx context.Context) ([]Lease, error)
}

// Validate reports whether r is well formed: a key, at least one source,
// rows with non-empty offset ranges that lie within the offsets of the
// sources of their partition. Both stores call it before writing anything.
func (r Replacement) Validate() error {
	if r.Key == "" || r.Size < 0 || r.Level < 0 || len(r.Sources) == 0 {
		return fmt.Errorf("%w: replacement %q: key, size %d, level %d, %d sources",
			ErrInvalidCommit, r.Key, r.Size, r.Level, len(r.Sources))
	}
	type part struct {
		topic TopicID
		part  int32
	}
	type span struct{ lo, hi int64 }
	spans := map[part]span{}
	for _, s := range r.Sources {
		k := part{s.TopicID, s.Partition}
		sp, ok := spans[k]
		if !ok {
			sp = span{s.BaseOffset, s.EndOffset}
		}
		spans[k] = span{min(sp.lo, s.BaseOffset), max(sp.hi, s.EndOffset)}
	}
	for i, e := range r.Rows {
		sp, ok := spans[part{e.TopicID, e.Partition}]
		if !ok || e.BaseOffset >= e.EndOffset || e.BaseOffset < sp.lo || e.EndOffset > sp.hi ||
			e.ByteOffset < 0 || e.ByteLength < 0 || e.Batches < 0 {
			return fmt.Errorf("%w: replacement %s row %d %+v outside its sources or malformed", ErrInvalidCommit, r.Key, i, e)
		}
	}
	return nil
}

// SourceKeys returns the distinct object keys of the sources, in first-seen
// order.
func (r Replacement) SourceKeys() []string {
	seen := map[string]bool{}
	var keys []string
	for _, s := range r.Sources {
		if !seen[s.ObjectKey] {
			seen[s.ObjectKey] = true
			keys = append(keys, s.ObjectKey)
		}
	}
	return keys
}
