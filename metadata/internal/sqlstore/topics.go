package sqlstore

import (
	"context"
	"fmt"
	"time"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

// insertPartitions adds partitions [$2, $3) to topic $1.
func (s *Store) insertPartitions() string {
	return `INSERT INTO partitions (topic_id, part) SELECT $1, g.n FROM ` + s.d.Series("$2", "$3")
}

// CreateTopic implements metadata.Store in one write transaction.
func (s *Store) CreateTopic(ctx context.Context, name string, partitions int32, configs map[string]string) (metadata.Topic, error) {
	if partitions < 1 {
		return metadata.Topic{}, fmt.Errorf("create topic %s: %w: %d", name, metadata.ErrInvalidPartitions, partitions)
	}
	cfg, err := sqlutil.EncodeConfigs(configs)
	if err != nil {
		return metadata.Topic{}, fmt.Errorf("create topic %s: %w", name, err)
	}
	id, err := sqlutil.NewTopicID()
	if err != nil {
		return metadata.Topic{}, fmt.Errorf("create topic %s: %w", name, err)
	}
	t := metadata.Topic{ID: id, Name: name, Partitions: partitions}
	err = s.db.WriteTx(ctx, func(q Querier) error {
		err := q.QueryRow(ctx, `INSERT INTO topics (id, name, partitions, configs, created_at)
			VALUES ($1, $2, $3, `+s.d.JSON("$4")+`, `+s.d.Now()+`)
			ON CONFLICT (name) DO NOTHING RETURNING created_at`, id[:], name, partitions, cfg).Scan(Time(&t.CreatedAt))
		if err := noRows(err, metadata.ErrTopicExists); err != nil {
			return err
		}
		_, err = q.Exec(ctx, s.insertPartitions(), id[:], 0, partitions)
		return err
	})
	if err != nil {
		return metadata.Topic{}, fmt.Errorf("create topic %s: %w", name, err)
	}
	t.Configs, _ = sqlutil.DecodeConfigs(cfg)
	return t, nil
}

// DeleteTopic implements metadata.Store. The topic row goes first (its
// partitions cascade, waiting on PostgreSQL for commits that hold their
// locks); the index rows are deleted by a later statement, whose fresh
// snapshot includes the rows of those commits.
func (s *Store) DeleteTopic(ctx context.Context, name string) error {
	err := s.db.WriteTx(ctx, func(q Querier) error {
		var id []byte
		err := q.QueryRow(ctx, `DELETE FROM topics WHERE name = $1 RETURNING id`, name).Scan(&id)
		if err := noRows(err, metadata.ErrUnknownTopic); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `DELETE FROM partitions WHERE topic_id = $1`, id); err != nil {
			return err
		}
		_, err = q.Exec(ctx, `DELETE FROM object_index WHERE topic_id = $1`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", name, err)
	}
	return nil
}

func (s *Store) topicColumns() string {
	return `id, name, partitions, ` + s.d.JSONText("configs") + `, created_at`
}

func scanTopic(row Row) (metadata.Topic, error) {
	var (
		t   metadata.Topic
		id  []byte
		cfg string
	)
	if err := row.Scan(&id, &t.Name, &t.Partitions, &cfg, Time(&t.CreatedAt)); err != nil {
		return t, err
	}
	var err error
	if t.ID, err = sqlutil.TopicIDFromBytes(id); err != nil {
		return t, err
	}
	t.Configs, err = sqlutil.DecodeConfigs(cfg)
	return t, err
}

// Topic implements metadata.Store.
func (s *Store) Topic(ctx context.Context, name string) (metadata.Topic, error) {
	t, err := scanTopic(s.db.Read().QueryRow(ctx, `SELECT `+s.topicColumns()+` FROM topics WHERE name = $1`, name))
	if err := noRows(err, metadata.ErrUnknownTopic); err != nil {
		return metadata.Topic{}, fmt.Errorf("topic %s: %w", name, err)
	}
	return t, nil
}

// TopicByID implements metadata.Store.
func (s *Store) TopicByID(ctx context.Context, id metadata.TopicID) (metadata.Topic, error) {
	t, err := scanTopic(s.db.Read().QueryRow(ctx, `SELECT `+s.topicColumns()+` FROM topics WHERE id = $1`, id[:]))
	if err := noRows(err, metadata.ErrUnknownTopic); err != nil {
		return metadata.Topic{}, fmt.Errorf("topic %x: %w", id, err)
	}
	return t, nil
}

// Topics implements metadata.Store. Names sort bytewise in every store,
// whatever the database's collation.
func (s *Store) Topics(ctx context.Context) ([]metadata.Topic, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+s.topicColumns()+` FROM topics ORDER BY name`+s.d.Bytewise())
	ts, err := collect(rows, err, scanTopic)
	if err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	return ts, nil
}

// TopicTotals implements metadata.Store.
func (s *Store) TopicTotals(ctx context.Context) (int, int64, error) {
	var (
		topics     int
		partitions int64
	)
	if err := s.db.Read().QueryRow(ctx, `SELECT count(*), CAST(coalesce(sum(partitions), 0) AS bigint) FROM topics`).
		Scan(&topics, &partitions); err != nil {
		return 0, 0, fmt.Errorf("topic totals: %w", err)
	}
	return topics, partitions, nil
}

// CreatePartitions implements metadata.Store. The topic row is locked first
// so concurrent calls for one topic apply one after the other.
func (s *Store) CreatePartitions(ctx context.Context, name string, total int32) error {
	err := s.db.WriteTx(ctx, func(q Querier) error {
		var (
			id  []byte
			cur int32
		)
		err := q.QueryRow(ctx, `SELECT id, partitions FROM topics WHERE name = $1`+s.d.ForUpdate(), name).Scan(&id, &cur)
		if err := noRows(err, metadata.ErrUnknownTopic); err != nil {
			return err
		}
		if total <= cur {
			return fmt.Errorf("%w: %d partitions requested, topic has %d", metadata.ErrInvalidPartitions, total, cur)
		}
		if _, err := q.Exec(ctx, `UPDATE topics SET partitions = $1 WHERE id = $2`, total, id); err != nil {
			return err
		}
		_, err = q.Exec(ctx, s.insertPartitions(), id, cur, total)
		return err
	})
	if err != nil {
		return fmt.Errorf("create partitions %s: %w", name, err)
	}
	return nil
}

// SetTopicConfigs implements metadata.Store.
func (s *Store) SetTopicConfigs(ctx context.Context, name string, configs map[string]string) error {
	cfg, err := sqlutil.EncodeConfigs(configs)
	if err != nil {
		return fmt.Errorf("set configs %s: %w", name, err)
	}
	n, err := s.db.Write().Exec(ctx, `UPDATE topics SET configs = `+s.d.JSON("$2")+` WHERE name = $1`, name, cfg)
	if err := affected(n, err, metadata.ErrUnknownTopic); err != nil {
		return fmt.Errorf("set configs %s: %w", name, err)
	}
	return nil
}

// UpdateTopicConfigs implements metadata.Store. The topic row is locked
// from the read on (FOR UPDATE; SQLite's write transaction holds the
// database's write lock), so concurrent updates apply one after the other.
func (s *Store) UpdateTopicConfigs(ctx context.Context, name string, update func(map[string]string) (map[string]string, error)) error {
	err := s.db.WriteTx(ctx, func(q Querier) error {
		var raw string
		err := q.QueryRow(ctx, `SELECT `+s.d.JSONText("configs")+` FROM topics WHERE name = $1`+s.d.ForUpdate(), name).Scan(&raw)
		if err := noRows(err, metadata.ErrUnknownTopic); err != nil {
			return err
		}
		cfg, _, err := updateConfigs(raw, update)
		if err != nil {
			return err
		}
		_, err = q.Exec(ctx, `UPDATE topics SET configs = `+s.d.JSON("$2")+` WHERE name = $1`, name, cfg)
		return err
	})
	if err != nil {
		return fmt.Errorf("update configs %s: %w", name, err)
	}
	return nil
}

// Partitions implements metadata.Store. A topic always has at least one
// partition row, so no rows means no topic.
func (s *Store) Partitions(ctx context.Context, topic metadata.TopicID) ([]metadata.PartitionState, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT part, `+partitionColumns+`
		FROM partitions WHERE topic_id = $1 ORDER BY part`, topic[:])
	ps, err := collect(rows, err, func(r Row) (metadata.PartitionState, error) {
		var p metadata.PartitionState
		err := r.Scan(&p.Partition, &p.LogStartOffset, &p.NextOffset, &p.MaxTimestamp)
		return p, err
	})
	if err == nil && len(ps) == 0 {
		err = metadata.ErrUnknownTopic
	}
	if err != nil {
		return nil, fmt.Errorf("partitions of %x: %w", topic, err)
	}
	return ps, nil
}

// Partition implements metadata.Store; ErrUnknownTopic if the topic or the
// partition does not exist.
func (s *Store) Partition(ctx context.Context, topic metadata.TopicID, partition int32) (metadata.PartitionState, error) {
	p, err := ScanPartition(s.db.Read().QueryRow(ctx, PartitionQuery, topic[:], partition), partition)
	if err != nil {
		return p, fmt.Errorf("partition %x/%d: %w", topic, partition, err)
	}
	return p, nil
}

// PartitionSizes implements metadata.Store.
func (s *Store) PartitionSizes(ctx context.Context, topic metadata.TopicID) (map[int32]int64, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT i.part, CAST(sum(i.byte_length) AS bigint) FROM object_index i
		JOIN partitions p ON p.topic_id = i.topic_id AND p.part = i.part
		WHERE i.topic_id = $1 AND i.end_offset > p.log_start_offset GROUP BY i.part`, topic[:])
	sizes, err := partitionValues(rows, err)
	if err != nil {
		return nil, fmt.Errorf("partition sizes of %x: %w", topic, err)
	}
	return sizes, nil
}

// PartitionProducers implements metadata.ProducerStore.
func (s *Store) PartitionProducers(ctx context.Context, topic metadata.TopicID, partition int32) ([]metadata.ProducerInfo, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT s.producer_id, s.epoch, s.batches, s.updated_at, coalesce(t.first_offset, -1)
		FROM producer_state s LEFT JOIN txn_partitions t
			ON t.topic_id = s.topic_id AND t.part = s.part AND t.producer_id = s.producer_id
		WHERE s.topic_id = $1 AND s.part = $2 ORDER BY s.producer_id`, topic[:], partition)
	ps, err := collect(rows, err, func(r Row) (metadata.ProducerInfo, error) {
		var (
			id, start int64
			epoch     int16
			raw       string
			updated   time.Time
		)
		if err := r.Scan(&id, &epoch, &raw, Time(&updated), &start); err != nil {
			return metadata.ProducerInfo{}, err
		}
		return sqlutil.ProducerInfo(id, epoch, raw, updated.UnixMilli(), start)
	})
	if err != nil {
		return nil, fmt.Errorf("producers of %x/%d: %w", topic, partition, err)
	}
	return ps, nil
}

// updateConfigs decodes raw, lets update change the configs and encodes
// what it returns, with how many configs that is.
func updateConfigs(raw string, update func(map[string]string) (map[string]string, error)) (string, int, error) {
	cur, err := sqlutil.DecodeConfigs(raw)
	if err != nil {
		return "", 0, err
	}
	next, err := update(cur)
	if err != nil {
		return "", 0, err
	}
	cfg, err := sqlutil.EncodeConfigs(next)
	return cfg, len(next), err
}
