package metadata

import (
	"context"
	"errors"
	"time"
)

// ErrInvalidTxnState is a per-batch commit error (BatchResult.Err): a
// transactional batch for a partition that is not part of its producer's
// ongoing transaction (never added, or its marker was already written).
var ErrInvalidTxnState = errors.New("metadata: invalid transaction state")

// TxnState is the state of a transactional id, named as Kafka's
// DescribeTransactions and ListTransactions name it.
type TxnState string

// Transaction states. Prepare* are written before the markers and survive a
// coordinator crash, so the next coordinator finishes writing them.
const (
	TxnEmpty          TxnState = "Empty"
	TxnOngoing        TxnState = "Ongoing"
	TxnPrepareCommit  TxnState = "PrepareCommit"
	TxnPrepareAbort   TxnState = "PrepareAbort"
	TxnCompleteCommit TxnState = "CompleteCommit"
	TxnCompleteAbort  TxnState = "CompleteAbort"
)

// Transaction is the durable state of one transactional id: everything its
// coordinator needs, so another agent can take over after a crash.
type Transaction struct {
	ID            string
	ProducerID    int64
	ProducerEpoch int16
	// TimedOutEpoch is the epoch the coordinator bumped away from when it
	// aborted a timed-out transaction, -1 otherwise: that producer may
	// still recover its id with InitProducerId (KIP-588) instead of being
	// fenced.
	TimedOutEpoch int16
	State         TxnState
	Timeout       time.Duration
	// Partitions are the partitions added to the current (or last)
	// transaction, in the order they were added; markers go to each.
	Partitions []TopicPartition
	// Groups are the consumer groups added by AddOffsetsToTxn.
	Groups []string
	// StartedAt is when the current transaction began (the coordinator's
	// clock); zero when none is ongoing.
	StartedAt time.Time
	// UpdatedAt is set by the store when the record is written.
	UpdatedAt time.Time
}

// TopicIDPartition names one partition by topic id.
type TopicIDPartition struct {
	Topic     TopicID
	Partition int32
}

// AbortedTxn is one aborted transaction in a partition: its producer, its
// first offset and the offset of its abort marker.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// TxnStore is the part of the Store that holds transactions: coordinator
// records, the partitions added to each producer's ongoing transaction
// (checked in the commit transaction, and the source of the last stable
// offset), aborted transactions for read_committed fetches, and
// transactional offset commits waiting for their transaction's end.
type TxnStore interface {
	// LoadTxn returns a transactional id's record; ErrNotFound if none.
	LoadTxn(ctx context.Context, id string) (Transaction, error)
	// SaveTxn upserts a transactional id's record.
	SaveTxn(ctx context.Context, t Transaction) error
	// Transactions returns every record sorted by id.
	Transactions(ctx context.Context) ([]Transaction, error)

	// AddTxnPartitions records that producerID at epoch added parts to its
	// ongoing transaction: from now on CommitObject accepts its
	// transactional batches there, until a marker closes the transaction.
	// ErrUnknownTopic if a partition does not exist (nothing is added).
	AddTxnPartitions(ctx context.Context, producerID int64, epoch int16, parts []TopicIDPartition) error
	// FirstOpenOffsets returns, per partition of topic with an open
	// transaction holding data, the first offset of the oldest one: the
	// partition's last stable offset.
	FirstOpenOffsets(ctx context.Context, topic TopicID) (map[int32]int64, error)
	// AbortedTxns returns the aborted transactions of a partition that
	// overlap [from, to), sorted by first offset.
	AbortedTxns(ctx context.Context, topic TopicID, partition int32, from, to int64) ([]AbortedTxn, error)

	// PutTxnOffsets stores offsets of group committed inside transaction
	// txnID (TxnOffsetCommit); they become the group's committed offsets
	// only when the transaction commits.
	PutTxnOffsets(ctx context.Context, txnID, group string, offsets []GroupOffset) error
	// TxnOffsets returns the pending offsets of a transaction by group.
	TxnOffsets(ctx context.Context, txnID string) (map[string][]GroupOffset, error)
	// DeleteTxnOffsets drops the pending offsets of a transaction.
	DeleteTxnOffsets(ctx context.Context, txnID string) error
	// PendingTxnPartitions returns the partitions of group with offsets
	// pending in an open transaction, sorted: OffsetFetch with
	// RequireStable answers UNSTABLE_OFFSET_COMMIT for them (KIP-447).
	PendingTxnPartitions(ctx context.Context, group string) ([]TopicPartition, error)
}

// TxnLeaseName is the lease name of a transactional id's coordinator.
func TxnLeaseName(id string) string { return "txn/" + id }

// Marker is the kind of a control batch: none, abort or commit.
type Marker int8

// Marker kinds.
const (
	MarkerNone Marker = iota
	MarkerAbort
	MarkerCommit
)

// PartitionTxn is one producer's open transaction in one partition, as the
// commit transaction sees it.
type PartitionTxn struct {
	Epoch int16 // the epoch that added the partition
	// FirstOffset is the offset of the transaction's first batch here, -1
	// while it has none (it does not hold the last stable offset back).
	FirstOffset int64
	// Closed is set by PlanTxnRun when a marker ends the transaction: the
	// store deletes it.
	Closed bool
	// Changed is set by PlanTxnRun when FirstOffset was set.
	Changed bool
}

// PlanTxnRun is PlanRun with transactions: txns holds the open transactions
// of the run's partition by producer id (updated in place). Transactional
// batches are accepted only inside their producer's open transaction at the
// same epoch, and the first one sets its first offset; a marker (a control
// batch the coordinator wrote) checks only the epoch, closes the
// transaction, and for an abort adds an AbortedTxn to the returned list.
func PlanTxnRun(next int64, r RunCommit, states map[int64]*ProducerState, txns map[int64]*PartitionTxn) ([]BatchResult, []Segment, int64, []AbortedTxn) {
	var aborted []AbortedTxn
	check := func(b BatchCommit, offset int64) BatchResult {
		t := txns[b.ProducerID]
		switch {
		case b.Marker != MarkerNone:
			if st := states[b.ProducerID]; st != nil && b.ProducerEpoch < st.Epoch {
				return BatchResult{BaseOffset: -1, Err: ErrInvalidProducerEpoch}
			}
			if t != nil && !t.Closed && b.ProducerEpoch < t.Epoch {
				return BatchResult{BaseOffset: -1, Err: ErrInvalidProducerEpoch}
			}
			if st := states[b.ProducerID]; st == nil || b.ProducerEpoch > st.Epoch {
				// A bumped epoch restarts the producer's sequences.
				states[b.ProducerID] = &ProducerState{Epoch: b.ProducerEpoch}
			}
			if t != nil && !t.Closed {
				if b.Marker == MarkerAbort && t.FirstOffset >= 0 {
					aborted = append(aborted, AbortedTxn{ProducerID: b.ProducerID, FirstOffset: t.FirstOffset, LastOffset: offset})
				}
				t.Closed = true
			}
			return BatchResult{BaseOffset: offset}
		case b.Transactional:
			if st := states[b.ProducerID]; st != nil && b.ProducerEpoch < st.Epoch {
				return BatchResult{BaseOffset: -1, Err: ErrInvalidProducerEpoch} // fenced
			}
			if t == nil || t.Closed {
				return BatchResult{BaseOffset: -1, Err: ErrInvalidTxnState}
			}
			if b.ProducerEpoch < t.Epoch {
				return BatchResult{BaseOffset: -1, Err: ErrInvalidProducerEpoch}
			}
			if b.ProducerEpoch > t.Epoch {
				return BatchResult{BaseOffset: -1, Err: ErrInvalidTxnState}
			}
			res := checkSequence(b, offset, states)
			if res.Err == nil && !res.Duplicate && t.FirstOffset < 0 {
				t.FirstOffset, t.Changed = offset, true
			}
			return res
		default:
			return checkSequence(b, offset, states)
		}
	}
	res, segs, n := planRun(next, r, check)
	return res, segs, n, aborted
}

// Transactional reports whether any batch of the run is transactional or a
// marker, so the store must load the run's open transactions.
func (r RunCommit) Transactional() bool {
	for _, b := range r.BatchList {
		if b.Transactional || b.Marker != MarkerNone {
			return true
		}
	}
	return false
}
