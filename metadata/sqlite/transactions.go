package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"floe/metadata"
)

// PutTxnOffsets implements metadata.TxnStore, metadata.OffsetChunk offsets
// per transaction.
func (s *Store) PutTxnOffsets(ctx context.Context, txnID, group string, offsets []metadata.GroupOffset) error {
	for chunk := range slices.Chunk(offsets, metadata.OffsetChunk) {
		err := s.writeStmtTx(ctx, func(t *wtx) error {
			for _, o := range chunk {
				if err := t.exec(stUpsertTxnOffset, txnID, group, o.Topic, o.Partition, o.Offset, o.LeaderEpoch, o.Metadata); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("transactional offsets of %s: %w", txnID, err)
		}
	}
	return nil
}

// loadTxns reads the open transactions of r's partition for the producers
// of its transactional batches and markers (nil if it has none).
func loadTxns(t *wtx, r metadata.RunCommit) (map[int64]*metadata.PartitionTxn, error) {
	if !r.Transactional() {
		return nil, nil
	}
	txns := map[int64]*metadata.PartitionTxn{}
	for _, b := range r.BatchList {
		if (!b.Transactional && b.Marker == metadata.MarkerNone) || txns[b.ProducerID] != nil {
			continue
		}
		var epoch int16
		var first sql.NullInt64
		err := t.stmt(stTxnPartition).QueryRowContext(t.ctx, r.TopicID[:], r.Partition, b.ProducerID).Scan(&epoch, &first)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		pt := &metadata.PartitionTxn{Epoch: epoch, FirstOffset: -1}
		if first.Valid {
			pt.FirstOffset = first.Int64
		}
		txns[b.ProducerID] = pt
	}
	return txns, nil
}

// saveTxns writes back what PlanTxnRun changed.
func saveTxns(t *wtx, r metadata.RunCommit, txns map[int64]*metadata.PartitionTxn, aborted []metadata.AbortedTxn) error {
	for pid, pt := range txns {
		var err error
		switch {
		case pt.Closed:
			err = t.exec(stDeleteTxnPartition, r.TopicID[:], r.Partition, pid)
		case pt.Changed:
			err = t.exec(stUpdateTxnPartition, pt.FirstOffset, r.TopicID[:], r.Partition, pid)
		}
		if err != nil {
			return err
		}
	}
	for _, a := range aborted {
		if err := t.exec(stInsertTxnAborted, r.TopicID[:], r.Partition, a.FirstOffset, a.ProducerID, a.LastOffset); err != nil {
			return err
		}
	}
	return nil
}
