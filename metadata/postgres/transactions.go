package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

var _ metadata.TxnStore = (*Store)(nil)

const txnColumns = `txn_id, producer_id, epoch, timed_out_epoch, state, timeout_ms, members, started_at, updated_at`

func scanTxn(row pgx.Row) (metadata.Transaction, error) {
	var (
		t                  metadata.Transaction
		state, members     string
		timeoutMs, started int64
	)
	if err := row.Scan(&t.ID, &t.ProducerID, &t.ProducerEpoch, &t.TimedOutEpoch, &state, &timeoutMs, &members, &started, &t.UpdatedAt); err != nil {
		return t, err
	}
	t.State, t.Timeout = metadata.TxnState(state), time.Duration(timeoutMs)*time.Millisecond
	if started != 0 {
		t.StartedAt = time.UnixMilli(started)
	}
	return t, sqlutil.DecodeTxnMembers(members, &t)
}

// LoadTxn implements metadata.TxnStore.
func (s *Store) LoadTxn(ctx context.Context, id string) (metadata.Transaction, error) {
	t, err := scanTxn(s.pool.QueryRow(ctx, `SELECT `+txnColumns+` FROM transactions WHERE txn_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
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
	_, err = s.pool.Exec(ctx, `INSERT INTO transactions (`+txnColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now())
		ON CONFLICT (txn_id) DO UPDATE SET producer_id = excluded.producer_id, epoch = excluded.epoch, timed_out_epoch = excluded.timed_out_epoch,
		state = excluded.state, timeout_ms = excluded.timeout_ms, members = excluded.members,
		started_at = excluded.started_at, updated_at = excluded.updated_at`,
		t.ID, t.ProducerID, t.ProducerEpoch, t.TimedOutEpoch, string(t.State), t.Timeout.Milliseconds(), members, started)
	if err != nil {
		return fmt.Errorf("save transaction %s: %w", t.ID, err)
	}
	return nil
}

// Transactions implements metadata.TxnStore.
func (s *Store) Transactions(ctx context.Context) ([]metadata.Transaction, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+txnColumns+` FROM transactions ORDER BY txn_id`)
	if err != nil {
		return nil, fmt.Errorf("list transactions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (metadata.Transaction, error) { return scanTxn(row) })
	if err != nil {
		return nil, fmt.Errorf("list transactions: %w", err)
	}
	return out, nil
}

// AddTxnPartitions implements metadata.TxnStore. A row left open by the
// same producer keeps its first offset.
func (s *Store) AddTxnPartitions(ctx context.Context, producerID int64, epoch int16, parts []metadata.TopicIDPartition) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, p := range parts {
			tag, err := tx.Exec(ctx, `INSERT INTO txn_partitions (topic_id, part, producer_id, epoch)
				SELECT topic_id, part, $3, $4 FROM partitions WHERE topic_id = $1 AND part = $2
				ON CONFLICT (topic_id, part, producer_id) DO UPDATE SET epoch = excluded.epoch`,
				p.Topic[:], p.Partition, producerID, epoch)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return metadata.ErrUnknownTopic
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
	rows, err := s.pool.Query(ctx, `SELECT part, min(first_offset) FROM txn_partitions
		WHERE topic_id = $1 AND first_offset IS NOT NULL GROUP BY part`, topic[:])
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
	rows, err := s.pool.Query(ctx, `SELECT producer_id, first_offset, last_offset FROM txn_aborted
		WHERE topic_id = $1 AND part = $2 AND last_offset >= $3 AND first_offset < $4 ORDER BY first_offset, producer_id`,
		topic[:], partition, from, to)
	if err != nil {
		return nil, fmt.Errorf("aborted transactions of %x/%d: %w", topic, partition, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (metadata.AbortedTxn, error) {
		var a metadata.AbortedTxn
		err := row.Scan(&a.ProducerID, &a.FirstOffset, &a.LastOffset)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("aborted transactions of %x/%d: %w", topic, partition, err)
	}
	return out, nil
}

// PutTxnOffsets implements metadata.TxnStore, one statement per
// metadata.OffsetChunk offsets, shaped as CommitOffsets.
func (s *Store) PutTxnOffsets(ctx context.Context, txnID, group string, offsets []metadata.GroupOffset) error {
	for chunk := range slices.Chunk(offsets, metadata.OffsetChunk) {
		c := newOffsetColumns(chunk)
		metas := make([]string, len(chunk)) // txn_offsets.metadata is text
		for i, o := range chunk {
			metas[i] = o.Metadata
		}
		_, err := s.pool.Exec(ctx, `INSERT INTO txn_offsets (txn_id, group_id, topic, part, committed, leader_epoch, metadata)
			SELECT DISTINCT ON (t, p) $1, $2, t, p, o, e, m
			  FROM unnest($3::text[], $4::int[], $5::bigint[], $6::int[], $7::text[]) WITH ORDINALITY AS u(t, p, o, e, m, n)
			 ORDER BY t, p, n DESC
			ON CONFLICT (txn_id, group_id, topic, part) DO UPDATE SET committed = EXCLUDED.committed,
			  leader_epoch = EXCLUDED.leader_epoch, metadata = EXCLUDED.metadata`,
			txnID, group, c.topics, c.parts, c.offsets, c.epochs, metas)
		if err != nil {
			return fmt.Errorf("transactional offsets of %s: %w", txnID, err)
		}
	}
	return nil
}

// TxnOffsets implements metadata.TxnStore.
func (s *Store) TxnOffsets(ctx context.Context, txnID string) (map[string][]metadata.GroupOffset, error) {
	rows, err := s.pool.Query(ctx, `SELECT group_id, topic, part, committed, leader_epoch, metadata
		FROM txn_offsets WHERE txn_id = $1 ORDER BY group_id, topic, part`, txnID)
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
	if _, err := s.pool.Exec(ctx, `DELETE FROM txn_offsets WHERE txn_id = $1`, txnID); err != nil {
		return fmt.Errorf("delete transactional offsets of %s: %w", txnID, err)
	}
	return nil
}

// PendingTxnPartitions implements metadata.TxnStore.
func (s *Store) PendingTxnPartitions(ctx context.Context, group string) ([]metadata.TopicPartition, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT topic, part FROM txn_offsets WHERE group_id = $1 ORDER BY topic, part`, group)
	if err != nil {
		return nil, fmt.Errorf("pending offsets of %s: %w", group, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (metadata.TopicPartition, error) {
		var tp metadata.TopicPartition
		err := row.Scan(&tp.Topic, &tp.Partition)
		return tp, err
	})
	if err != nil {
		return nil, fmt.Errorf("pending offsets of %s: %w", group, err)
	}
	return out, nil
}
