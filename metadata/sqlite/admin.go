package sqlite

// What the admin APIs need beyond the data path: read-modify-write of a
// topic's configs (IncrementalAlterConfigs), partition sizes from the
// object index (DescribeLogDirs) and the producers a partition remembers
// (DescribeProducers). The SQL is the PostgreSQL store's, in SQLite's
// dialect.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

// UpdateTopicConfigs implements metadata.Store. The write transaction
// (BEGIN IMMEDIATE) holds the database's write lock from the read on, so
// concurrent updates apply one after the other.
func (s *Store) UpdateTopicConfigs(ctx context.Context, name string, update func(map[string]string) (map[string]string, error)) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var raw string
		err := tx.QueryRowContext(ctx, `SELECT configs FROM topics WHERE name = ?`, name).Scan(&raw)
		if errors.Is(err, sql.ErrNoRows) {
			return metadata.ErrUnknownTopic
		}
		if err != nil {
			return err
		}
		cur, err := sqlutil.DecodeConfigs(raw)
		if err != nil {
			return err
		}
		next, err := update(cur)
		if err != nil {
			return err
		}
		cfg, err := sqlutil.EncodeConfigs(next)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE topics SET configs = ? WHERE name = ?`, cfg, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("update configs %s: %w", name, err)
	}
	return nil
}

// PartitionSizes implements metadata.Store.
func (s *Store) PartitionSizes(ctx context.Context, topic metadata.TopicID) (map[int32]int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT i.part, sum(i.byte_length) FROM object_index i
		JOIN partitions p ON p.topic_id = i.topic_id AND p.part = i.part
		WHERE i.topic_id = ? AND i.end_offset > p.log_start_offset GROUP BY i.part`, topic[:])
	if err != nil {
		return nil, fmt.Errorf("partition sizes of %x: %w", topic, err)
	}
	defer rows.Close()
	sizes := map[int32]int64{}
	for rows.Next() {
		var (
			p    int32
			size int64
		)
		if err := rows.Scan(&p, &size); err != nil {
			return nil, fmt.Errorf("partition sizes of %x: %w", topic, err)
		}
		sizes[p] = size
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("partition sizes of %x: %w", topic, err)
	}
	return sizes, nil
}

// PartitionProducers implements metadata.ProducerStore.
func (s *Store) PartitionProducers(ctx context.Context, topic metadata.TopicID, partition int32) ([]metadata.ProducerInfo, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT s.producer_id, s.epoch, s.batches, s.updated_at, coalesce(t.first_offset, -1)
		FROM producer_state s LEFT JOIN txn_partitions t
			ON t.topic_id = s.topic_id AND t.part = s.part AND t.producer_id = s.producer_id
		WHERE s.topic_id = ? AND s.part = ? ORDER BY s.producer_id`, topic[:], partition)
	if err != nil {
		return nil, fmt.Errorf("producers of %x/%d: %w", topic, partition, err)
	}
	defer rows.Close()
	var ps []metadata.ProducerInfo
	for rows.Next() {
		var (
			id, updated, start int64
			epoch              int16
			raw                string
		)
		if err := rows.Scan(&id, &epoch, &raw, &updated, &start); err != nil {
			return nil, fmt.Errorf("producers of %x/%d: %w", topic, partition, err)
		}
		p, err := sqlutil.ProducerInfo(id, epoch, raw, updated, start)
		if err != nil {
			return nil, fmt.Errorf("producers of %x/%d: %w", topic, partition, err)
		}
		ps = append(ps, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("producers of %x/%d: %w", topic, partition, err)
	}
	return ps, nil
}
