// Package sqlstore holds the SQL of the metadata stores' plain reads and
// writes (topics, configs, partitions, agents, leases, groups, offsets,
// transactions, producer ids, look-ups by time, compaction bookkeeping),
// written once against a small Dialect and run on both the SQLite and the
// PostgreSQL store, each of which embeds a *Store. What must differ stays
// in the stores: CommitObject (SQLite's Go commit on prepared statements,
// PostgreSQL's floe_commit_object and commitChecked), the fetch path's
// Lookup, how a chunk of offsets is written (Batches), and the migrations.
//
// Queries use PostgreSQL's numbered placeholders ($1, $2 …); the SQLite
// store's DB rewrites them as ?1, ?2. Dialect fragments cover the rest:
// the store clock, durations added to it, JSON columns, row locks,
// bytewise ordering, lists of values, number series and unique
// violations.
//
// The package knows no driver: it never imports pgx or an SQLite driver,
// and it never talks to object storage.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"floe/metadata"
)

// Querier runs statements on a pool or inside one transaction.
type Querier interface {
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// QueryRow's Row.Scan returns sql.ErrNoRows when there is no row.
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Rows is what *sql.Rows and pgx.Rows share.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is one result row.
type Row interface {
	Scan(dest ...any) error
}

// DB is a store's connections as the shared code sees them.
type DB interface {
	// Read runs single reads outside a transaction.
	Read() Querier
	// Write runs single writes, each its own transaction.
	Write() Querier
	// WriteTx runs fn in one write transaction, committed if fn returns nil.
	WriteTx(ctx context.Context, fn func(q Querier) error) error
}

// Dialect is the SQL that differs between the stores. Every method returns
// a fragment built from constants (In: one per number of values), so a
// query's text is the same on every call: PostgreSQL (pgx) and the SQLite
// store cache prepared statements by text.
type Dialect interface {
	// Now is the store clock's current time in the type of the store's
	// time columns: the database clock on PostgreSQL (timestamptz), the
	// host clock in unix milliseconds on SQLite.
	Now() string
	// Micros turns param, a duration in microseconds (int64), into a
	// value that adds to Now and to time columns.
	Micros(param string) string
	// Expired is the value a lease's expiry is set to when it is released
	// (older than any Now).
	Expired() string
	// JSON casts param, JSON text, to the type of JSON columns;
	// JSONText reads such a column back as text.
	JSON(param string) string
	JSONText(col string) string
	// ForUpdate is the row-lock clause of a read that is followed by a
	// write of the same rows ("" where one writer runs at a time).
	ForUpdate() string
	// Bytewise is the collation clause that orders text by its bytes.
	Bytewise() string
	// In matches col against vals, whose first placeholder is $first, and
	// returns the condition and its arguments. At most MaxIn values go in
	// one condition.
	In(col string, first int, vals []string) (string, []any)
	MaxIn() int
	// Series is a FROM item g with one integer column n holding
	// from, from+1 … to-1 (from < to; from and to are placeholders).
	Series(from, to string) string
	// IsUniqueViolation reports whether err is a unique-constraint error.
	IsUniqueViolation(err error) bool
}

// Batches writes many offset rows at once, as each store does it best:
// PostgreSQL in one statement over arrays (unnest), SQLite through one
// prepared statement per row in one transaction. The Store cuts what it is
// given into metadata.OffsetChunk rows per call.
type Batches interface {
	// UpsertGroupOffsets writes offsets of group (at most OffsetChunk) in
	// one transaction, committed at the store clock's now; of a partition
	// named twice, the last wins.
	UpsertGroupOffsets(ctx context.Context, group string, offsets []metadata.GroupOffset) error
	// UpsertTxnOffsets is UpsertGroupOffsets for the pending offsets of a
	// transaction.
	UpsertTxnOffsets(ctx context.Context, txnID, group string, offsets []metadata.GroupOffset) error
	// DeleteGroupOffsets deletes the offsets of parts (at most
	// OffsetChunk) of group in one transaction.
	DeleteGroupOffsets(ctx context.Context, group string, parts []metadata.TopicPartition) error
}

// Store implements the metadata.Store methods written once. A store
// embeds it and adds what stays its own.
type Store struct {
	db DB
	d  Dialect
	b  Batches
}

// New returns the shared methods over db in dialect d, writing offsets
// through b.
func New(db DB, d Dialect, b Batches) *Store { return &Store{db: db, d: d, b: b} }

// Time returns a scan destination for a time column: a timestamptz
// (PostgreSQL) or unix milliseconds (SQLite). NULL and 0 leave the zero
// time.
func Time(dst *time.Time) any { return timeScanner{dst} }

type timeScanner struct{ dst *time.Time }

func (s timeScanner) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*s.dst = time.Time{}
	case time.Time:
		*s.dst = v
	case int64:
		*s.dst = time.Time{}
		if v != 0 {
			*s.dst = time.UnixMilli(v)
		}
	default:
		return fmt.Errorf("scan time from %T", v)
	}
	return nil
}

// collect scans every row of a query with scan.
func collect[T any](rows Rows, err error, scan func(r Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// noRows maps sql.ErrNoRows to sentinel.
func noRows(err, sentinel error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return sentinel
	}
	return err
}

// affected is Exec's error, or sentinel when no row changed.
func affected(n int64, err, sentinel error) error {
	if err == nil && n == 0 {
		return sentinel
	}
	return err
}

// partitionValues collects rows of (partition, value) into a map.
func partitionValues(rows Rows, err error) (map[int32]int64, error) {
	type pv struct {
		part int32
		v    int64
	}
	pvs, err := collect(rows, err, func(r Row) (x pv, err error) { return x, r.Scan(&x.part, &x.v) })
	if err != nil {
		return nil, err
	}
	out := make(map[int32]int64, len(pvs))
	for _, x := range pvs {
		out[x.part] = x.v
	}
	return out, nil
}
