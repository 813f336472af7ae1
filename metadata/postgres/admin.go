package postgres

// What the admin APIs need beyond the data path: read-modify-write of a
// topic's configs (IncrementalAlterConfigs), partition sizes from the
// object index (DescribeLogDirs) and the producers a partition remembers
// (DescribeProducers). The SQL is the SQLite store's, in PostgreSQL's
// dialect.

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

// UpdateTopicConfigs implements metadata.Store. The topic row is locked
// (FOR UPDATE) from the read on, so concurrent updates apply one after
// the other.
func (s *Store) UpdateTopicConfigs(ctx context.Context, name string, update func(map[string]string) (map[string]string, error)) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var raw string
		err := tx.QueryRow(ctx, `SELECT configs::text FROM topics WHERE name = $1 FOR UPDATE`, name).Scan(&raw)
		if errors.Is(err, pgx.ErrNoRows) {
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
		_, err = tx.Exec(ctx, `UPDATE topics SET configs = $2::text::jsonb WHERE name = $1`, name, cfg)
		return err
	})
	if err != nil {
		return fmt.Errorf("update configs %s: %w", name, err)
	}
	return nil
}

// PartitionSizes implements metadata.Store.
func (s *Store) PartitionSizes(ctx context.Context, topic metadata.TopicID) (map[int32]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT i.part, sum(i.byte_length)::bigint FROM object_index i
		JOIN partitions p ON p.topic_id = i.topic_id AND p.part = i.part
		WHERE i.topic_id = $1 AND i.end_offset > p.log_start_offset GROUP BY i.part`, topic[:])
	if err != nil {
		return nil, fmt.Errorf("partition sizes of %x: %w", topic, err)
	}
	sizes := map[int32]int64{}
	var (
		p    int32
		size int64
	)
	_, err = pgx.ForEachRow(rows, []any{&p, &size}, func() error {
		sizes[p] = size
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("partition sizes of %x: %w", topic, err)
	}
	return sizes, nil
}

// PartitionProducers implements metadata.ProducerStore.
func (s *Store) PartitionProducers(ctx context.Context, topic metadata.TopicID, partition int32) ([]metadata.ProducerInfo, error) {
	rows, err := s.pool.Query(ctx, `SELECT s.producer_id, s.epoch, s.batches,
			(extract(epoch FROM s.updated_at) * 1000)::bigint, coalesce(t.first_offset, -1)
		FROM producer_state s LEFT JOIN txn_partitions t
			ON t.topic_id = s.topic_id AND t.part = s.part AND t.producer_id = s.producer_id
		WHERE s.topic_id = $1 AND s.part = $2 ORDER BY s.producer_id`, topic[:], partition)
	if err != nil {
		return nil, fmt.Errorf("producers of %x/%d: %w", topic, partition, err)
	}
	ps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (metadata.ProducerInfo, error) {
		var (
			id, updated, start int64
			epoch              int16
			raw                string
		)
		if err := row.Scan(&id, &epoch, &raw, &updated, &start); err != nil {
			return metadata.ProducerInfo{}, err
		}
		return sqlutil.ProducerInfo(id, epoch, raw, updated, start)
	})
	if err != nil {
		return nil, fmt.Errorf("producers of %x/%d: %w", topic, partition, err)
	}
	return ps, nil
}
