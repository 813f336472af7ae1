// Package postgres is the production metadata.Store on PostgreSQL (pgx/v5).
//
// Every agent of a cluster shares one database. The hot path, CommitObject,
// is one call of the plpgsql function floe_commit_object (see
// migrations/0001_init.sql): one statement, one transaction, one round trip
// per flush. Reads that need two queries send them as one pgx batch. Times
// (created_at, heartbeats) come from the database clock, now(), so agents
// with skewed clocks agree on liveness.
//
// The package never talks to object storage.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLockKey is the pg_advisory_lock key that serializes migrations of
// agents starting at the same time ("floe" in ASCII, then 1).
const migrationLockKey int64 = 0x666c6f65_00000001

// Store is the PostgreSQL metadata store. It holds only a connection pool;
// all state lives in the database.
type Store struct {
	pool *pgxpool.Pool
}

var _ metadata.Store = (*Store)(nil)

// Open connects to the database at url (postgres://…) and applies the
// embedded migrations that are not applied yet.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	return &Store{pool: pool}, nil
}

// Close closes the pool, waiting for acquired connections to be released.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// migrate applies the embedded migrations under a session advisory lock, so
// agents starting together apply each migration exactly once; each migration
// runs in its own transaction with its schema_migrations row.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := sqlutil.LoadMigrations(migrationFS, "migrations")
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	defer func() {
		// A lost unlock (cancelled ctx) would leave the lock on a pooled
		// connection; closing that connection releases it instead.
		if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, migrationLockKey); err != nil {
			conn.Conn().Close(context.Background())
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer     PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	for _, m := range ms {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var applied bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, m.Version).Scan(&applied); err != nil {
				return err
			}
			if applied {
				return nil
			}
			// No arguments: pgx uses the simple protocol, which runs a
			// multi-statement script.
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// isUniqueViolation reports whether err is a unique_violation on constraint
// (any constraint when constraint is "").
func isUniqueViolation(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && (constraint == "" || pe.ConstraintName == constraint)
}

// CreateTopic implements metadata.Store in one statement.
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
	err = s.pool.QueryRow(ctx, `WITH t AS (
			INSERT INTO topics (id, name, partitions, configs) VALUES ($1, $2, $3::integer, $4::text::jsonb)
			ON CONFLICT (name) DO NOTHING
			RETURNING id, created_at),
		p AS (INSERT INTO partitions (topic_id, part) SELECT t.id, g FROM t, generate_series(0, $3::integer - 1) g)
		SELECT created_at FROM t`, id[:], name, partitions, cfg).Scan(&t.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		err = metadata.ErrTopicExists
	}
	if err != nil {
		return metadata.Topic{}, fmt.Errorf("create topic %s: %w", name, err)
	}
	t.Configs, _ = sqlutil.DecodeConfigs(cfg)
	return t, nil
}

// DeleteTopic implements metadata.Store. The topic row goes first (its
// partitions cascade, waiting for commits that hold their locks); the index
// rows are deleted by a later statement, whose fresh snapshot includes the
// rows of those commits.
func (s *Store) DeleteTopic(ctx context.Context, name string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id []byte
		err := tx.QueryRow(ctx, `DELETE FROM topics WHERE name = $1 RETURNING id`, name).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return metadata.ErrUnknownTopic
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM partitions WHERE topic_id = $1`, id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM object_index WHERE topic_id = $1`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", name, err)
	}
	return nil
}

const topicColumns = `id, name, partitions, configs::text, created_at`

func scanTopic(row pgx.Row) (metadata.Topic, error) {
	var (
		t   metadata.Topic
		id  []byte
		cfg string
	)
	if err := row.Scan(&id, &t.Name, &t.Partitions, &cfg, &t.CreatedAt); err != nil {
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
	t, err := scanTopic(s.pool.QueryRow(ctx, `SELECT `+topicColumns+` FROM topics WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		err = metadata.ErrUnknownTopic
	}
	if err != nil {
		return metadata.Topic{}, fmt.Errorf("topic %s: %w", name, err)
	}
	return t, nil
}

// TopicByID implements metadata.Store.
func (s *Store) TopicByID(ctx context.Context, id metadata.TopicID) (metadata.Topic, error) {
	t, err := scanTopic(s.pool.QueryRow(ctx, `SELECT `+topicColumns+` FROM topics WHERE id = $1`, id[:]))
	if errors.Is(err, pgx.ErrNoRows) {
		err = metadata.ErrUnknownTopic
	}
	if err != nil {
		return metadata.Topic{}, fmt.Errorf("topic %x: %w", id, err)
	}
	return t, nil
}

// Topics implements metadata.Store. Names sort bytewise (COLLATE "C"), as
// in the SQLite store, whatever the database's collation.
func (s *Store) Topics(ctx context.Context) ([]metadata.Topic, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+topicColumns+` FROM topics ORDER BY name COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	defer rows.Close()
	var ts []metadata.Topic
	for rows.Next() {
		t, err := scanTopic(rows)
		if err != nil {
			return nil, fmt.Errorf("topics: %w", err)
		}
		ts = append(ts, t)
	}
	if err := rows.Err(); err != nil {
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
	if err := s.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(partitions), 0) FROM topics`).Scan(&topics, &partitions); err != nil {
		return 0, 0, fmt.Errorf("topic totals: %w", err)
	}
	return topics, partitions, nil
}

// CreatePartitions implements metadata.Store. The topic row is locked first
// so concurrent calls for one topic apply one after the other.
func (s *Store) CreatePartitions(ctx context.Context, name string, total int32) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			id  []byte
			cur int32
		)
		err := tx.QueryRow(ctx, `SELECT id, partitions FROM topics WHERE name = $1 FOR UPDATE`, name).Scan(&id, &cur)
		if errors.Is(err, pgx.ErrNoRows) {
			return metadata.ErrUnknownTopic
		}
		if err != nil {
			return err
		}
		if total <= cur {
			return fmt.Errorf("%w: %d partitions requested, topic has %d", metadata.ErrInvalidPartitions, total, cur)
		}
		_, err = tx.Exec(ctx, `WITH u AS (UPDATE topics SET partitions = $3 WHERE id = $1)
			INSERT INTO partitions (topic_id, part) SELECT $1, g FROM generate_series($2::integer, $3::integer - 1) g`,
			id, cur, total)
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
	tag, err := s.pool.Exec(ctx, `UPDATE topics SET configs = $2::text::jsonb WHERE name = $1`, name, cfg)
	if err == nil && tag.RowsAffected() == 0 {
		err = metadata.ErrUnknownTopic
	}
	if err != nil {
		return fmt.Errorf("set configs %s: %w", name, err)
	}
	return nil
}

// Partitions implements metadata.Store. A topic always has at least one
// partition row, so no rows means no topic.
func (s *Store) Partitions(ctx context.Context, topic metadata.TopicID) ([]metadata.PartitionState, error) {
	rows, err := s.pool.Query(ctx, `SELECT part, log_start_offset, next_offset, max_timestamp
		FROM partitions WHERE topic_id = $1 ORDER BY part`, topic[:])
	if err != nil {
		return nil, fmt.Errorf("partitions of %x: %w", topic, err)
	}
	ps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (metadata.PartitionState, error) {
		var p metadata.PartitionState
		err := row.Scan(&p.Partition, &p.LogStartOffset, &p.NextOffset, &p.MaxTimestamp)
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

const partitionQuery = `SELECT log_start_offset, next_offset, max_timestamp FROM partitions WHERE topic_id = $1 AND part = $2`

func scanPartition(row pgx.Row, partition int32) (metadata.PartitionState, error) {
	p := metadata.PartitionState{Partition: partition}
	err := row.Scan(&p.LogStartOffset, &p.NextOffset, &p.MaxTimestamp)
	if errors.Is(err, pgx.ErrNoRows) {
		err = metadata.ErrUnknownTopic
	}
	return p, err
}

// Partition implements metadata.Store; ErrUnknownTopic if the topic or the
// partition does not exist.
func (s *Store) Partition(ctx context.Context, topic metadata.TopicID, partition int32) (metadata.PartitionState, error) {
	p, err := scanPartition(s.pool.QueryRow(ctx, partitionQuery, topic[:], partition), partition)
	if err != nil {
		return p, fmt.Errorf("partition %x/%d: %w", topic, partition, err)
	}
	return p, nil
}
