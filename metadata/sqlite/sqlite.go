// Package sqlite is the embedded metadata.Store on SQLite (the pure-Go
// modernc.org/sqlite driver), used by `floe dev` and single-agent setups.
//
// All writes go through one connection and run as BEGIN IMMEDIATE
// transactions, so they are serialized inside the process and, through the
// file lock and busy_timeout, against any other process sharing the file.
// Reads use a separate pool of query-only connections; WAL mode lets them run
// beside the writer and see only committed state. The flush commit's
// statements are prepared once on the writer connection (stmts.go), and a
// third connection checkpoints the WAL in the background (checkpoint.go), so
// a commit neither compiles SQL nor copies the WAL back. Times come from the Go
// clock of the process (unix milliseconds), which is the store's clock because
// an SQLite file is used by one host.
//
// The package never talks to object storage.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	msqlite "modernc.org/sqlite" // also registers the "sqlite" database/sql driver

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// busyTimeoutMillis bounds how long a statement waits for another process's
// lock on the file before failing with SQLITE_BUSY.
const busyTimeoutMillis = 10000

// Store is the SQLite metadata store.
type Store struct {
	// w is the single writer connection (SetMaxOpenConns(1)); every write
	// transaction starts with BEGIN IMMEDIATE (the _txlock DSN option), so a
	// transaction that reads then writes can never fail on lock upgrade.
	w *sql.DB
	// r holds query-only connections for reads that need no write lock.
	r *sql.DB
	// stmts are the commit path's statements, prepared on w (stmts.go).
	stmts [numStmts]*sql.Stmt
	// rstmts are the fetch path's statements, prepared on r (stmts.go).
	rstmts [numReadStmts]*sql.Stmt
	// ckpt checkpoints the WAL in the background; nil during migrations.
	ckpt *checkpointer
	// now is the store's clock; tests of this package may replace it.
	now func() time.Time
}

var _ metadata.Store = (*Store)(nil)

// Open opens (creating if needed) the database file at path and applies the
// embedded migrations that are not applied yet.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("open sqlite %q: path must be non-empty and contain no '?' or '#'", path)
	}
	// fdatasync(2) makes a commit as durable as fsync(2) but skips the
	// timestamp update fsync forces through the ext4 journal; SQLite's own
	// Linux builds use it, modernc's transpiled one must be told to.
	// The switch is process-wide; where it is unavailable fsync stays.
	msqlite.Fdatasync(true)
	common := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)", busyTimeoutMillis)
	// synchronous(FULL): a commit acknowledged to a producer must survive a
	// power loss, which WAL's usual NORMAL does not promise (it syncs the
	// WAL only at checkpoints): the acknowledged object is synced to the
	// bucket, and losing its index rows would lose acked records. With
	// fdatasync and checkpoints off the commit path (checkpoint.go) a
	// commit syncs only its own WAL frames (about 32 for a 16-partition
	// flush); NORMAL would save about 0.3 ms of a 1 ms commit.
	w, err := sql.Open("sqlite", "file:"+path+"?"+common+"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"+
		fmt.Sprintf("&_pragma=wal_autocheckpoint(%d)", backstopCheckpointPages)+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &Store{w: w, now: time.Now}
	if err := s.migrate(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", "file:"+path+"?"+common+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	if err := r.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	s.r = r
	if err := s.prepare(ctx); err != nil { // closes what it prepared on failure
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	// The checkpointer's own connection: a checkpoint writes the database
	// file, which the query-only readers may not, and must not wait for
	// the writer's connection. synchronous(FULL) syncs the WAL before
	// copying it back and the database file after.
	c, err := sql.Open("sqlite", "file:"+path+"?"+common+"&_pragma=synchronous(FULL)")
	if err == nil {
		c.SetMaxOpenConns(1)
		err = c.PingContext(ctx)
		if err != nil {
			c.Close()
		}
	}
	if err != nil {
		s.closeStmts()
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	s.ckpt = startCheckpointer(c)
	return s, nil
}

// Close stops the background checkpoints and closes the connection pools.
func (s *Store) Close() error {
	return errors.Join(s.ckpt.close(), s.r.Close(), s.closeStmts(), s.w.Close())
}

// migrate applies the embedded migrations in order, each in its own
// IMMEDIATE transaction that re-checks schema_migrations, so two processes
// opening a new file at once apply each migration exactly once.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := sqlutil.LoadMigrations(migrationFS, "migrations")
	if err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	for _, m := range ms {
		err := s.writeTx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, s.now().UnixMilli())
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// writeTx runs fn in one write transaction, committing if fn returns nil.
func (s *Store) writeTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if s.ckpt != nil {
		s.ckpt.writes.Add(1)
	}
	return nil
}

// readTx runs fn in one read transaction, so its queries see one snapshot.
func (s *Store) readTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(tx)
}

// queryer is what *sql.DB and *sql.Tx share.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// CreateTopic implements metadata.Store.
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
	created := s.now().UnixMilli()
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM topics WHERE name = ?`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return metadata.ErrTopicExists
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO topics (id, name, partitions, configs, created_at) VALUES (?, ?, ?, ?, ?)`,
			id[:], name, partitions, cfg, created); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n + 1 < ?)
			INSERT INTO partitions (topic_id, part) SELECT ?, n FROM g`, partitions, id[:])
		return err
	})
	if err != nil {
		return metadata.Topic{}, fmt.Errorf("create topic %s: %w", name, err)
	}
	c, _ := sqlutil.DecodeConfigs(cfg)
	return metadata.Topic{ID: id, Name: name, Partitions: partitions, Configs: c, CreatedAt: time.UnixMilli(created)}, nil
}

// DeleteTopic implements metadata.Store.
func (s *Store) DeleteTopic(ctx context.Context, name string) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var id []byte
		err := tx.QueryRowContext(ctx, `DELETE FROM topics WHERE name = ? RETURNING id`, name).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return metadata.ErrUnknownTopic
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM partitions WHERE topic_id = ?`, id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM object_index WHERE topic_id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", name, err)
	}
	return nil
}

const topicColumns = `id, name, partitions, configs, created_at`

func scanTopic(row interface{ Scan(...any) error }) (metadata.Topic, error) {
	var (
		t       metadata.Topic
		id      []byte
		cfg     string
		created int64
	)
	if err := row.Scan(&id, &t.Name, &t.Partitions, &cfg, &created); err != nil {
		return t, err
	}
	var err error
	if t.ID, err = sqlutil.TopicIDFromBytes(id); err != nil {
		return t, err
	}
	if t.Configs, err = sqlutil.DecodeConfigs(cfg); err != nil {
		return t, err
	}
	t.CreatedAt = time.UnixMilli(created)
	return t, nil
}

// Topic implements metadata.Store.
func (s *Store) Topic(ctx context.Context, name string) (metadata.Topic, error) {
	t, err := scanTopic(s.r.QueryRowContext(ctx, `SELECT `+topicColumns+` FROM topics WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		err = metadata.ErrUnknownTopic
	}
	if err != nil {
		return metadata.Topic{}, fmt.Errorf("topic %s: %w", name, err)
	}
	return t, nil
}

// TopicByID implements metadata.Store.
func (s *Store) TopicByID(ctx context.Context, id metadata.TopicID) (metadata.Topic, error) {
	t, err := scanTopic(s.r.QueryRowContext(ctx, `SELECT `+topicColumns+` FROM topics WHERE id = ?`, id[:]))
	if errors.Is(err, sql.ErrNoRows) {
		err = metadata.ErrUnknownTopic
	}
	if err != nil {
		return metadata.Topic{}, fmt.Errorf("topic %x: %w", id, err)
	}
	return t, nil
}

// Topics implements metadata.Store.
func (s *Store) Topics(ctx context.Context) ([]metadata.Topic, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+topicColumns+` FROM topics ORDER BY name`)
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
	if err := s.r.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(partitions), 0) FROM topics`).Scan(&topics, &partitions); err != nil {
		return 0, 0, fmt.Errorf("topic totals: %w", err)
	}
	return topics, partitions, nil
}

// CreatePartitions implements metadata.Store.
func (s *Store) CreatePartitions(ctx context.Context, name string, total int32) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var (
			id  []byte
			cur int32
		)
		err := tx.QueryRowContext(ctx, `SELECT id, partitions FROM topics WHERE name = ?`, name).Scan(&id, &cur)
		if errors.Is(err, sql.ErrNoRows) {
			return metadata.ErrUnknownTopic
		}
		if err != nil {
			return err
		}
		if total <= cur {
			return fmt.Errorf("%w: %d partitions requested, topic has %d", metadata.ErrInvalidPartitions, total, cur)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE topics SET partitions = ? WHERE id = ?`, total, id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `WITH RECURSIVE g(n) AS (SELECT ? UNION ALL SELECT n + 1 FROM g WHERE n + 1 < ?)
			INSERT INTO partitions (topic_id, part) SELECT ?, n FROM g`, cur, total, id)
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
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE topics SET configs = ? WHERE name = ?`, cfg, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return metadata.ErrUnknownTopic
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("set configs %s: %w", name, err)
	}
	return nil
}

// Partitions implements metadata.Store.
func (s *Store) Partitions(ctx context.Context, topic metadata.TopicID) ([]metadata.PartitionState, error) {
	var ps []metadata.PartitionState
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.StmtContext(ctx, s.rstmts[rsTopicExists]).QueryRowContext(ctx, topic[:]).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return metadata.ErrUnknownTopic
		}
		rows, err := tx.StmtContext(ctx, s.rstmts[rsPartitionsOf]).QueryContext(ctx, topic[:])
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p metadata.PartitionState
			if err := rows.Scan(&p.Partition, &p.LogStartOffset, &p.NextOffset, &p.MaxTimestamp); err != nil {
				return err
			}
			ps = append(ps, p)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("partitions of %x: %w", topic, err)
	}
	return ps, nil
}

// Partition implements metadata.Store; ErrUnknownTopic if the topic or the
// partition does not exist.
func (s *Store) Partition(ctx context.Context, topic metadata.TopicID, partition int32) (metadata.PartitionState, error) {
	p, err := partitionState(ctx, s.r, topic, partition)
	if err != nil {
		return p, fmt.Errorf("partition %x/%d: %w", topic, partition, err)
	}
	return p, nil
}

func partitionState(ctx context.Context, q queryer, topic metadata.TopicID, partition int32) (metadata.PartitionState, error) {
	p := metadata.PartitionState{Partition: partition}
	err := q.QueryRowContext(ctx, `SELECT log_start_offset, next_offset, max_timestamp
		FROM partitions WHERE topic_id = ? AND part = ?`, topic[:], partition).
		Scan(&p.LogStartOffset, &p.NextOffset, &p.MaxTimestamp)
	if errors.Is(err, sql.ErrNoRows) {
		err = metadata.ErrUnknownTopic
	}
	return p, err
}
