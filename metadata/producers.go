package metadata

import (
	"context"
	"errors"
	"math"
	"time"
)

// Errors of producer sequence checks, per batch (BatchResult.Err).
var (
	// ErrOutOfOrderSequence: the batch's first sequence does not follow the
	// producer's last one in this partition.
	ErrOutOfOrderSequence = errors.New("metadata: out of order sequence number")
	// ErrInvalidProducerEpoch: the batch's epoch is older than the one this
	// partition has seen from the producer.
	ErrInvalidProducerEpoch = errors.New("metadata: invalid producer epoch")
)

// ProducerStore hands out producer ids (InitProducerId) for idempotent
// producers. The sequence checks themselves happen inside CommitObject, in
// the transaction that assigns offsets.
type ProducerStore interface {
	// InitProducerID returns a producer id and epoch for an idempotent
	// producer. With producerID -1 it allocates a fresh id at epoch 0. With
	// an existing id and its current epoch (KIP-360 recovery) it bumps the
	// epoch, or allocates a fresh id when the epoch is exhausted; a
	// mismatched epoch or unknown id is ErrInvalidProducerEpoch.
	InitProducerID(ctx context.Context, producerID int64, epoch int16) (int64, int16, error)
	// PartitionProducers returns what a partition remembers of each
	// producer that wrote to it, sorted by producer id (DescribeProducers).
	// An unknown partition has none.
	PartitionProducers(ctx context.Context, topic TopicID, partition int32) ([]ProducerInfo, error)
}

// ProducerInfo is one producer's state in one partition.
type ProducerInfo struct {
	ProducerID int64
	Epoch      int16
	// LastSequence is the last sequence number of its newest batch here
	// (-1 if none is remembered).
	LastSequence int32
	// LastCommit is when its last batch here was committed.
	LastCommit time.Time
	// TxnStartOffset is the first offset of its open transaction in this
	// partition, or -1 without one (or before the transaction's first
	// batch landed here).
	TxnStartOffset int64
}

// BatchCommit is one batch of a run, in run order, with the producer
// fields CommitObject checks. Batches lie back to back from the run's
// ByteOffset.
type BatchCommit struct {
	ByteLength    int64
	Records       int64 // offsets the batch occupies (lastOffsetDelta+1)
	MinTimestamp  int64
	MaxTimestamp  int64
	ProducerID    int64 // -1: not idempotent, never checked
	ProducerEpoch int16
	BaseSequence  int32
	// Transactional marks a batch of a transaction (PlanTxnRun checks it
	// belongs to one); Marker marks a control batch written by a
	// transaction coordinator.
	Transactional bool
	Marker        Marker
}

// BatchResult is the outcome of one batch of a run that listed its batches.
// A duplicate (a retry of a batch already committed) is answered with the
// original offset and takes no offsets: its bytes are left out of the index,
// so they are never served.
type BatchResult struct {
	BaseOffset int64
	Duplicate  bool
	Err        error // nil, ErrOutOfOrderSequence or ErrInvalidProducerEpoch
}

// SeqEntry remembers one committed batch of a producer in a partition.
type SeqEntry struct {
	FirstSeq   int32
	LastSeq    int32
	BaseOffset int64
}

// ProducerState is what a partition remembers of one producer: its epoch
// and its last few batches (newest last), enough to recognise retries of
// the in-flight window a Kafka producer may have (5 requests).
type ProducerState struct {
	Epoch   int16
	Batches []SeqEntry
}

// dedupWindow is how many batches per producer and partition are kept.
const dedupWindow = 5

// Segment is one index row a run produces: a stretch of accepted batches.
type Segment struct {
	ByteOffset   int64 // in the object
	ByteLength   int64
	BaseOffset   int64
	EndOffset    int64
	Batches      int32
	MinTimestamp int64
	MaxTimestamp int64
}

// PlanRun assigns offsets to the batches of one run starting at next, checks
// producer sequences against states (updated in place, new producers added),
// and returns the per-batch results, the index rows to write and the new next
// offset. Runs without a batch list are one segment, unchecked. It is the
// pure heart of CommitObject, shared by every Store implementation.
func PlanRun(next int64, r RunCommit, states map[int64]*ProducerState) ([]BatchResult, []Segment, int64) {
	return planRun(next, r, func(b BatchCommit, offset int64) BatchResult { return checkSequence(b, offset, states) })
}

// planRun is PlanRun with the per-batch decision check.
func planRun(next int64, r RunCommit, check func(b BatchCommit, offset int64) BatchResult) ([]BatchResult, []Segment, int64) {
	if len(r.BatchList) == 0 {
		seg := Segment{ByteOffset: r.ByteOffset, ByteLength: r.ByteLength, BaseOffset: next,
			EndOffset: next + r.Records, Batches: r.Batches, MinTimestamp: r.MinTimestamp, MaxTimestamp: r.MaxTimestamp}
		return nil, []Segment{seg}, seg.EndOffset
	}
	results := make([]BatchResult, len(r.BatchList))
	var segs []Segment
	var cur *Segment
	pos := r.ByteOffset
	for i, b := range r.BatchList {
		start := pos
		pos += b.ByteLength
		res := check(b, next)
		results[i] = res
		if res.Err != nil || res.Duplicate {
			cur = nil // the next accepted batch starts a new index row
			continue
		}
		if cur == nil {
			segs = append(segs, Segment{ByteOffset: start, BaseOffset: next, EndOffset: next,
				MinTimestamp: b.MinTimestamp, MaxTimestamp: b.MaxTimestamp})
			cur = &segs[len(segs)-1]
		}
		cur.ByteLength += b.ByteLength
		cur.EndOffset += b.Records
		cur.Batches++
		cur.MinTimestamp = min(cur.MinTimestamp, b.MinTimestamp)
		cur.MaxTimestamp = max(cur.MaxTimestamp, b.MaxTimestamp)
		next += b.Records
	}
	return results, segs, next
}

// checkSequence decides one batch as a Kafka partition leader does, and
// records it in states when accepted.
func checkSequence(b BatchCommit, offset int64, states map[int64]*ProducerState) BatchResult {
	if b.ProducerID < 0 {
		return BatchResult{BaseOffset: offset}
	}
	lastSeq := addSeq(b.BaseSequence, int32(b.Records-1))
	st := states[b.ProducerID]
	switch {
	case st == nil || b.ProducerEpoch > st.Epoch:
		// A producer unknown here (new, or its state expired) or a bumped
		// epoch: Kafka accepts any first sequence then (franz-go relies on
		// it after KIP-360 recovery).
		st = &ProducerState{Epoch: b.ProducerEpoch}
		states[b.ProducerID] = st
	case b.ProducerEpoch < st.Epoch:
		return BatchResult{BaseOffset: -1, Err: ErrInvalidProducerEpoch}
	default:
		for _, e := range st.Batches {
			if e.FirstSeq == b.BaseSequence && e.LastSeq == lastSeq {
				return BatchResult{BaseOffset: e.BaseOffset, Duplicate: true}
			}
		}
		if n := len(st.Batches); n > 0 && b.BaseSequence != addSeq(st.Batches[n-1].LastSeq, 1) {
			return BatchResult{BaseOffset: -1, Err: ErrOutOfOrderSequence}
		}
	}
	st.Batches = append(st.Batches, SeqEntry{FirstSeq: b.BaseSequence, LastSeq: lastSeq, BaseOffset: offset})
	if len(st.Batches) > dedupWindow {
		st.Batches = append(st.Batches[:0], st.Batches[len(st.Batches)-dedupWindow:]...)
	}
	return BatchResult{BaseOffset: offset}
}

// addSeq adds to a sequence number, wrapping past MaxInt32 to 0 as Kafka does.
func addSeq(seq, n int32) int32 {
	if int64(seq)+int64(n) > math.MaxInt32 {
		return int32(int64(seq) + int64(n) - math.MaxInt32 - 1)
	}
	return seq + n
}

// Idempotent reports whether any batch of the commit carries a producer id.
func (obj ObjectCommit) Idempotent() bool {
	for _, r := range obj.Runs {
		for _, b := range r.BatchList {
			if b.ProducerID >= 0 {
				return true
			}
		}
	}
	return false
}
