package sqlite

import (
	"database/sql"
	"errors"

	"floe/metadata"
)

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
