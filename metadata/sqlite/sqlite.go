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
// a commit neither compiles SQL nor copies the WAL back. The plain reads and
// writes are metadata/internal/sqlstore's, in SQLite's dialect (shared.go),
// their reads prepared once on the reader pool too. Times are unix
// milliseconds of the host's clock (the commit's from time.Now, the shared
// queries' from SQLite's unixepoch): the store's clock, because an SQLite
// file is used by one host.
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
	"sync"
	"sync/atomic"
	"time"

	msqlite "modernc.org/sqlite" // also registers the "sqlite" database/sql driver

	"floe/metadata"
	"floe/metadata/internal/groupcommit"
	"floe/metadata/internal/sqlstore"
	"floe/metadata/internal/sqlutil"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// busyTimeoutMillis bounds how long a statement waits for another process's
// lock on the file before failing with SQLITE_BUSY.
const busyTimeoutMillis = 10000

// Store is the SQLite metadata store.
type Store struct {
	// Store holds the queries written once for both stores (sqlstore).
	*sqlstore.Store
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
	// readStmts maps the text of a shared read to its statement prepared
	// on r (readStmt); nReadStmts counts them.
	readStmts  sync.Map
	nReadStmts atomic.Int64
	// ckpt checkpoints the WAL in the background; nil during migrations.
	ckpt *checkpointer
	// group commits overlapping CommitObject calls together.
	group *groupcommit.Committer
	// now is the commit path's clock (objects, producer states, group
	// offsets); the shared queries read the same host clock in SQL
	// (dialect.Now).
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
	s.Store = sqlstore.New(sqlDB{s}, dialect{}, batches{s})
	s.group = groupcommit.New(s.commitObjects, groupcommit.MaxObjects, groupcommit.MaxRuns)
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
