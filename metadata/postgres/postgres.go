// Package postgres is the production metadata.Store on PostgreSQL (pgx/v5).
//
// Every agent of a cluster shares one database. The plain reads and writes
// are metadata/internal/sqlstore's, run on the pgx pool natively in
// PostgreSQL's dialect (shared.go); what is this package's own is the
// commit, the fetch path's look-ups, the offset batches and the
// migrations. A commit without producer ids is one call of the plpgsql
// function floe_commit_objects (see migrations/0013_group_commit.sql): one
// statement, one transaction, one round trip per flush; an idempotent or
// transactional one is a transaction of two round trips driven from Go
// (commitChecked). Flushes of one agent committing at the same time share
// one transaction (group commit, metadata/internal/groupcommit). The
// look-ups send their two queries as one pgx batch. Times (created_at,
// heartbeats, leases) come from the database clock, now(), so agents with
// skewed clocks agree on liveness.
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
	"floe/metadata/internal/groupcommit"
	"floe/metadata/internal/sqlstore"
	"floe/metadata/internal/sqlutil"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLockKey is the pg_advisory_lock key that serializes migrations of
// agents starting at the same time ("floe" in ASCII, then 1).
const migrationLockKey int64 = 0x666c6f65_00000001

// Store is the PostgreSQL metadata store. It holds only a connection pool
// (the shared queries run on it too); all state lives in the database.
type Store struct {
	// Store holds the queries written once for both stores (sqlstore).
	*sqlstore.Store
	pool  *pgxpool.Pool
	group *groupcommit.Committer // CommitObject's group commit
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
	s := &Store{Store: sqlstore.New(sqlDB{pool}, dialect{}, batches{pool}), pool: pool}
	s.group = groupcommit.New(s.commitObjects, groupcommit.MaxObjects, groupcommit.MaxRuns)
	return s, nil
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
