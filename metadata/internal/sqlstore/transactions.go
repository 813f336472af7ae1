package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

// The transaction store's reads and writes; the commit's reads and writes
// of txn_partitions and txn_aborted are the commit's, in each store.

// PutTxnOffsets implements metadata.TxnStore, metadata.OffsetChunk offsets
// per transaction, as CommitOffsets.
func (s *Store) PutTxnOffsets(ctx context.Context, txnID, group string, offsets []metadata.GroupOffset) error {
	for chunk := range slices.Chunk(offsets, metadata.OffsetChunk) {
		if err := s.b.UpsertTxnOffsets(ctx, txnID, group, chunk); err != nil {
			return fmt.Errorf("transactional offsets of %s: %w", txnID, err)
		}
	}
	return nil
}

// InitProducerID implements metadata.ProducerStore.
func (s *Store) InitProducerID(ctx context.Context, producerID int64, epoch int16) (int64, int16, error) {
	if producerID >= 0 {
		// Bump only from the current epoch: the update matches nothing
		// otherwise, and the id is unknown or fenced.
		var ep int16
		err := s.db.Write().QueryRow(ctx, `UPDATE producer_ids SET epoch = epoch + 1
			WHERE producer_id = $1 AND epoch = $2 AND epoch < $3 RETURNING epoch`,
			producerID, epoch, int16(math.MaxInt16-1)).Scan(&ep)
		if err == nil {
			return producerID, ep, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return -1, -1, fmt.Errorf("init producer id: %w", err)
		}
		var cur int16
		err = s.db.Read().QueryRow(ctx, `SELECT epoch FROM producer_ids WHERE producer_id = $1`, producerID).Scan(&cur)
		if err != nil || cur != epoch {
			return -1, -1, fmt.Errorf("init producer id %d epoch %d: %w", producerID, epoch, metadata.ErrInvalidProducerEpoch)
		}
		// Epoch exhausted: a fresh id, as Kafka does.
	}
	var id int64
	if err := s.db.Write().QueryRow(ctx, `INSERT INTO producer_ids (epoch, created_at) VALUES (0, `+s.d.Now()+`)
		RETURNING producer_id`).Scan(&id); err != nil {
		return -1, -1, fmt.Errorf("init producer id: %w", err)
	}
	return id, 0, nil
}

const txnColumns = `txn_id, producer_id, epoch, timed_out_epoch, state, timeout_ms, members, started_at, updated_at`

func scanTxn(row Row) (metadata.Transaction, error) {
	var (
		t                  metadata.Transaction
		state, members     string
		timeoutMs, started int64
	)
	if err := row.Scan(&t.ID, &t.ProducerID, &t.ProducerEpoch, &t.TimedOutEpoch, &state, &timeoutMs, &members, &started, Time(&t.UpdatedAt)); err != nil {
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
	t, err := scanTxn(s.db.Read().QueryRow(ctx, `SELECT `+txnColumns+` FROM transactions WHERE txn_id = $1`, id))
	if err := noRows(err, metadata.ErrNotFound); err != nil {
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
	var started int64 // unix ms, 0 for none, in both stores
	if !t.StartedAt.IsZero() {
		started = t.StartedAt.UnixMilli()
	}
	_, err = s.db.Write().Exec(ctx, `INSERT INTO transactions (`+txnColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, `+s.d.Now()+`)
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
	rows, err := s.db.Read().Query(ctx, `SELECT `+txnColumns+` FROM transactions ORDER BY txn_id`)
	out, err := collect(rows, err, scanTxn)
	if err != nil {
		return nil, fmt.Errorf("list transactions: %w", err)
	}
	return out, nil
}

// AddTxnPartitions implements metadata.TxnStore. A row left open by the
// same producer keeps its first offset.
func (s *Store) AddTxnPartitions(ctx context.Context, producerID int64, epoch int16, parts []metadata.TopicIDPartition) error {
	err := s.db.WriteTx(ctx, func(q Querier) error {
		for _, p := range parts {
			// The WHERE clause also settles SQLite's parse of
			// INSERT … SELECT … ON CONFLICT.
			n, err := q.Exec(ctx, `INSERT INTO txn_partitions (topic_id, part, producer_id, epoch)
				SELECT topic_id, part, $3, $4 FROM partitions WHERE topic_id = $1 AND part = $2
				ON CONFLICT (topic_id, part, producer_id) DO UPDATE SET epoch = excluded.epoch`,
				p.Topic[:], p.Partition, producerID, epoch)
			if err := affected(n, err, metadata.ErrUnknownTopic); err != nil {
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
	rows, err := s.db.Read().Query(ctx, `SELECT part, min(first_offset) FROM txn_partitions
		WHERE topic_id = $1 AND first_offset IS NOT NULL GROUP BY part`, topic[:])
	out, err := partitionValues(rows, err)
	if err != nil {
		return nil, fmt.Errorf("open transactions of %x: %w", topic, err)
	}
	return out, nil
}

// AbortedTxns implements metadata.TxnStore.
func (s *Store) AbortedTxns(ctx context.Context, topic metadata.TopicID, partition int32, from, to int64) ([]metadata.AbortedTxn, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT producer_id, first_offset, last_offset FROM txn_aborted
		WHERE topic_id = $1 AND part = $2 AND last_offset >= $3 AND first_offset < $4 ORDER BY first_offset, producer_id`,
		topic[:], partition, from, to)
	out, err := collect(rows, err, func(r Row) (a metadata.AbortedTxn, err error) {
		return a, r.Scan(&a.ProducerID, &a.FirstOffset, &a.LastOffset)
	})
	if err != nil {
		return nil, fmt.Errorf("aborted transactions of %x/%d: %w", topic, partition, err)
	}
	return out, nil
}

// TxnOffsets implements metadata.TxnStore.
func (s *Store) TxnOffsets(ctx context.Context, txnID string) (map[string][]metadata.GroupOffset, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT group_id, topic, part, committed, leader_epoch, metadata
		FROM txn_offsets WHERE txn_id = $1 ORDER BY group_id, topic, part`, txnID)
	type groupOffset struct {
		group string
		o     metadata.GroupOffset
	}
	gos, err := collect(rows, err, func(r Row) (g groupOffset, err error) {
		return g, r.Scan(&g.group, &g.o.Topic, &g.o.Partition, &g.o.Offset, &g.o.LeaderEpoch, &g.o.Metadata)
	})
	if err != nil {
		return nil, fmt.Errorf("transactional offsets of %s: %w", txnID, err)
	}
	out := map[string][]metadata.GroupOffset{}
	for _, g := range gos {
		out[g.group] = append(out[g.group], g.o)
	}
	return out, nil
}

// DeleteTxnOffsets implements metadata.TxnStore.
func (s *Store) DeleteTxnOffsets(ctx context.Context, txnID string) error {
	if _, err := s.db.Write().Exec(ctx, `DELETE FROM txn_offsets WHERE txn_id = $1`, txnID); err != nil {
		return fmt.Errorf("delete transactional offsets of %s: %w", txnID, err)
	}
	return nil
}

// PendingTxnPartitions implements metadata.TxnStore.
func (s *Store) PendingTxnPartitions(ctx context.Context, group string) ([]metadata.TopicPartition, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT DISTINCT topic, part FROM txn_offsets WHERE group_id = $1 ORDER BY topic, part`, group)
	out, err := collect(rows, err, func(r Row) (tp metadata.TopicPartition, err error) { return tp, r.Scan(&tp.Topic, &tp.Partition) })
	if err != nil {
		return nil, fmt.Errorf("pending offsets of %s: %w", group, err)
	}
	return out, nil
}
