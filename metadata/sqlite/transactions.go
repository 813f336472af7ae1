package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

var _ metadata.TxnStore = (*Store)(nil)

const txnColumns = `txn_id, producer_id, epoch, timed_out_epoch, state, timeout_ms, members, started_at, updated_at`

func scanTxn(row interface{ Scan(...any) error }) (metadata.Transaction, error) {
	var (
		t                           metadata.Transaction
		state, members              string
		timeoutMs, started, updated int64
	)
	if err := row.Scan(&t.ID, &t.ProducerID, &t.ProducerEpoch, &t.TimedOutEpoch, &state, &timeoutMs, &members, &started, &updated); err != nil {
		return t, err
	}
	t.State, t.Timeout = metadata.TxnState(state), time.Duration(timeoutMs)*time.Millisecond
	if started != 0 {
		t.StartedAt = time.UnixMilli(started)
	}
	t.UpdatedAt = time.UnixMilli(updated)
	return t, sqlutil.DecodeTxnMembers(members, &t)
}

// LoadTxn implements metadata.TxnStore.
func (s *Store) LoadTxn(ctx context.Context, id string) (metadata.Transaction, error) {
	t, err := scanTxn(s.r.QueryRowContext(ctx, `SELECT `+txnColumns+` FROM transactions WHERE txn_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = metadata.ErrNotFound
	}
	if err != nil {
		return t, fmt.Errorf("load transaction %s: %w", id, err)
	}
	return t, nil
}

// SaveTxn implements metadata.TxnStore.
func (s *Store) SaveTxn(ctx context.Context, t metadata.Transaction) error {
	members, err := sqlutil.EncodeTxnMembers(t)
	if err != nil {
		return err
	}
	var started int64
	if !t.StartedAt.IsZero() {
		started = t.StartedAt.UnixMilli()
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO transactions (`+txnColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (txn_id) DO UPDATE SET producer_id = excluded.producer_id, epoch = excluded.epoch, timed_out_epoch = excluded.timed_out_epoch,
		state = excluded.state, timeout_ms = excluded.timeout_ms, members = excluded.members,
		started_at = excluded.started_at, updated_at = excluded.updated_at`,
		t.ID, t.ProducerID, t.ProducerEpoch, t.TimedOutEpoch, string(t.State), t.Timeout.Milliseconds(), members, started, s.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("save transaction %s: %w", t.ID, err)
	}
	return nil
}

// Transactions implements metadata.TxnStore.
func (s *Store) Transactions(ctx context.Context) ([]metadata.Transaction, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+txnColumns+` FROM transactions ORDER BY txn_id`)
	if err != nil {
		return nil, fmt.Errorf("list transactions: %w", err)
	}
	defer rows.Close()
	var out []metadata.Transaction
	for rows.Next() {
		t, err := scanTxn(rows)
		if err != nil {
			return nil, fmt.Errorf("list transactions: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list transactions: %w", err)
	}
	return out, nil
}

// AddTxnPartitions implements metadata.TxnStore. A row left open by the
// same producer keeps its first offset.
func (s *Store) AddTxnPartitions(ctx context.Context, producerID int64, epoch int16, parts []metadata.TopicIDPartition) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		for _, p := range parts {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM partitions WHERE topic_id = ? AND part = ?`,
				p.Topic[:], p.Partition).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return metadata.ErrUnknownTopic
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO txn_partitions (topic_id, part, producer_id, epoch) VALUES (?, ?, ?, ?)
				ON CONFLICT (topic_id, part, producer_id) DO UPDATE SET epoch = excluded.epoch`,
				p.Topic[:], p.Partition, producerID, epoch); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add partitions to transaction of %d: %w", producerID, err)
	}
	return nil
}

// FirstOpenOffsets implements metadata.TxnStore.
func (s *Store) FirstOpenOffsets(ctx context.Context, topic metadata.TopicID) (map[int32]int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT part, min(first_offset) FROM txn_partitions
		WHERE topic_id = ? AND first_offset IS NOT NULL GROUP BY part`, topic[:])
	if err != nil {
		return nil, fmt.Errorf("open transactions of %x: %w", topic, err)
	}
	defer rows.Close()
	out := map[int32]int64{}
	for rows.Next() {
		var p int32
		var off int64
		if err := rows.Scan(&p, &off); err != nil {
			return nil, fmt.Errorf("open transactions of %x: %w", topic, err)
		}
		out[p] = off
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("open transactions of %x: %w", topic, err)
	}
	return out, nil
}

// AbortedTxns implements metadata.TxnStore.
func (s *Store) AbortedTxns(ctx context.Context, topic metadata.TopicID, partition int32, from, to int64) ([]metadata.AbortedTxn, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT producer_id, first_offset, last_offset FROM txn_aborted
		WHERE topic_id = ? AND part = ? AND last_offset >= ? AND first_offset < ? ORDER BY first_offset, producer_id`,
		topic[:], partition, from, to)
	if err != nil {
		return nil, fmt.Errorf("aborted transactions of %x/%d: %w", topic, partition, err)
	}
	defer rows.Close()
	var out []metadata.AbortedTxn
	for rows.Next() {
		var a metadata.AbortedTxn
		if err := rows.Scan(&a.ProducerID, &a.FirstOffset, &a.LastOffset); err != nil {
			return nil, fmt.Errorf("aborted transactions of %x/%d: %w", topic, partition, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("aborted transactions of %x/%d: %w", topic, partition, err)
	}
	return out, nil
}

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

// TxnOffsets implements metadata.TxnStore.
func (s *Store) TxnOffsets(ctx context.Context, txnID string) (map[string][]metadata.GroupOffset, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT group_id, topic, part, committed, leader_epoch, metadata
		FROM txn_offsets WHERE txn_id = ? ORDER BY group_id, topic, part`, txnID)
	if err != nil {
		return nil, fmt.Errorf("transactional offsets of %s: %w", txnID, err)
	}
	defer rows.Close()
	out := map[string][]metadata.GroupOffset{}
	for rows.Next() {
		var g string
		var o metadata.GroupOffset
		if err := rows.Scan(&g, &o.Topic, &o.Partition, &o.Offset, &o.LeaderEpoch, &o.Metadata); err != nil {
			return nil, fmt.Errorf("transactional offsets of %s: %w", txnID, err)
		}
		out[g] = append(out[g], o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("transactional offsets of %s: %w", txnID, err)
	}
	return out, nil
}

// DeleteTxnOffsets implements metadata.TxnStore.
func (s *Store) DeleteTxnOffsets(ctx context.Context, txnID string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM txn_offsets WHERE txn_id = ?`, txnID); err != nil {
		return fmt.Errorf("delete transactional offsets of %s: %w", txnID, err)
	}
	return nil
}

// PendingTxnPartitions implements metadata.TxnStore.
func (s *Store) PendingTxnPartitions(ctx context.Context, group string) ([]metadata.TopicPartition, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT topic, part FROM txn_offsets WHERE group_id = ? ORDER BY topic, part`, group)
	if err != nil {
		return nil, fmt.Errorf("pending offsets of %s: %w", group, err)
	}
	defer rows.Close()
	var out []metadata.TopicPartition
	for rows.Next() {
		var tp metadata.TopicPartition
		if err := rows.Scan(&tp.Topic, &tp.Partition); err != nil {
			return nil, fmt.Errorf("pending offsets of %s: %w", group, err)
		}
		out = append(out, tp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending offsets of %s: %w", group, err)
	}
	return out, nil
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
