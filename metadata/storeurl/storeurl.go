// Package storeurl opens a metadata.Store from the URL given on the command
// line: sqlite://PATH for the embedded store, postgres:// or postgresql://
// for PostgreSQL. It only dispatches; it holds no state.
package storeurl

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"floe/metadata"
	"floe/metadata/postgres"
	"floe/metadata/sqlite"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// Open opens the store named by url:
//
//	sqlite://./floe-data/meta.db  relative path (parent directory created)
//	sqlite:///var/lib/floe/meta.db  absolute path
//	postgres://user:pass@host:5432/db?sslmode=disable  (also postgresql://)
func Open(ctx context.Context, url string) (metadata.Store, error) {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return nil, fmt.Errorf("metadata url %q: want sqlite://PATH or postgres://…", url)
	}
	switch strings.ToLower(scheme) {
	case "sqlite":
		if rest == "" {
			return nil, fmt.Errorf("metadata url %q: empty sqlite path", url)
		}
		if err := os.MkdirAll(filepath.Dir(rest), 0o755); err != nil {
			return nil, fmt.Errorf("metadata url %q: %w", url, err)
		}
		return sqlite.Open(ctx, rest)
	case "postgres", "postgresql":
		return postgres.Open(ctx, url)
	default:
		return nil, fmt.Errorf("metadata url %q: unsupported scheme %q (want sqlite or postgres)", url, scheme)
	}
}

// OpenSQL opens a database/sql handle on the database url names, for
// components that keep their own tables beside the store's (the Iceberg
// catalog), and returns its dialect: "sqlite" or "postgres". A SQLite
// handle is sqlite.OpenDB's.
func OpenSQL(url string) (*sql.DB, string, error) {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return nil, "", fmt.Errorf("metadata url %q: want sqlite://PATH or postgres://…", url)
	}
	switch strings.ToLower(scheme) {
	case "sqlite":
		if rest == "" {
			return nil, "", fmt.Errorf("metadata url %q: empty sqlite path", url)
		}
		db, err := sqlite.OpenDB(rest)
		return db, "sqlite", err
	case "postgres", "postgresql":
		db, err := sql.Open("pgx", url)
		if err != nil {
			return nil, "", err
		}
		db.SetMaxOpenConns(4)
		return db, "postgres", nil
	}
	return nil, "", fmt.Errorf("metadata url %q: unsupported scheme %q (want sqlite or postgres)", url, scheme)
}
