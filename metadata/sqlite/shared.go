package sqlite

// The Store's side of metadata/internal/sqlstore: its connections as a
// sqlstore.DB (reads on the query-only pool, writes on the writer, every
// write counted for the checkpointer) and SQLite's dialect.

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"floe/metadata/internal/sqlstore"
)

var _ sqlstore.DB = sqlDB{}

// sqlDB is the Store's pools as sqlstore sees them.
type sqlDB struct{ s *Store }

func (d sqlDB) Read() sqlstore.Querier  { return querier{q: d.s.r, prep: d.s} }
func (d sqlDB) Write() sqlstore.Querier { return querier{q: d.s.w, s: d.s} }

func (d sqlDB) WriteTx(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	return d.s.writeTx(ctx, func(tx *sql.Tx) error { return fn(querier{q: tx}) })
}

// querier runs sqlstore's queries on a pool or a transaction, their $n
// placeholders rewritten as ?n. s is set on the writer pool, whose
// statements outside writeTx count as writes for the checkpointer.
type querier struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
	s *Store
	// prep is set on the reader pool, whose statements are prepared once
	// (see readStmt).
	prep *Store
}

func (q querier) wrote() {
	if q.s != nil && q.s.ckpt != nil {
		q.s.ckpt.writes.Add(1)
	}
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.q.ExecContext(ctx, rebind(query), args...)
	if err != nil {
		return 0, err
	}
	q.wrote()
	return res.RowsAffected()
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	if q.prep != nil {
		if st := q.prep.readStmt(ctx, rebind(query)); st != nil {
			rows, err := st.QueryContext(ctx, args...)
			if err != nil {
				return nil, err
			}
			return sqlRows{rows}, nil
		}
	}
	rows, err := q.q.QueryContext(ctx, rebind(query), args...)
	if err != nil {
		return nil, err
	}
	q.wrote()
	return sqlRows{rows}, nil
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	if q.prep != nil {
		if st := q.prep.readStmt(ctx, rebind(query)); st != nil {
			return st.QueryRowContext(ctx, args...)
		}
	}
	q.wrote()
	return q.q.QueryRowContext(ctx, rebind(query), args...)
}

// maxReadStmts bounds the statements readStmt keeps: the shared reads are
// a fixed set of texts, a list of values (dialect.In) one per power of two.
const maxReadStmts = 256

// readStmt returns query prepared on the reader pool, preparing it on
// first use, or nil (the caller then runs it unprepared) when the cache is
// full or the statement does not prepare (its error then surfaces from
// the unprepared run). modernc.org/sqlite compiles an unprepared statement
// on every call, and the shared reads include the fetch path's
// Partitions.
func (s *Store) readStmt(ctx context.Context, query string) *sql.Stmt {
	if st, ok := s.readStmts.Load(query); ok {
		return st.(*sql.Stmt)
	}
	if s.nReadStmts.Load() >= maxReadStmts {
		return nil
	}
	st, err := s.r.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	if prev, loaded := s.readStmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt)
	}
	s.nReadStmts.Add(1)
	return st
}

// sqlRows is *sql.Rows with a Close that returns nothing (as pgx.Rows).
type sqlRows struct{ r *sql.Rows }

func (r sqlRows) Next() bool             { return r.r.Next() }
func (r sqlRows) Scan(dest ...any) error { return r.r.Scan(dest...) }
func (r sqlRows) Err() error             { return r.r.Err() }
func (r sqlRows) Close()                 { r.r.Close() }

var (
	placeholder = regexp.MustCompile(`\$([0-9]+)`)
	// rebound caches rebind: the shared queries are a fixed set of texts.
	rebound sync.Map
)

// rebind rewrites PostgreSQL's $n placeholders as SQLite's ?n.
func rebind(query string) string {
	if q, ok := rebound.Load(query); ok {
		return q.(string)
	}
	q := placeholder.ReplaceAllString(query, "?$1")
	rebound.Store(query, q)
	return q
}

// dialect is SQLite's SQL for sqlstore. Times are unix milliseconds of the
// host clock, the one time.Now reads: the store clock, since an SQLite file
// is used by one host.
type dialect struct{}

var _ sqlstore.Dialect = dialect{}

func (dialect) Now() string                { return `CAST(round(unixepoch('subsec') * 1000) AS INTEGER)` }
func (dialect) Micros(param string) string { return `(CAST(` + param + ` AS INTEGER) / 1000)` }
func (dialect) Expired() string            { return `0` }
func (dialect) JSON(param string) string   { return param }
func (dialect) JSONText(col string) string { return col }
func (dialect) ForUpdate() string          { return `` }
func (dialect) Bytewise() string           { return `` }  // BINARY, SQLite's default collation
func (dialect) MaxIn() int                 { return 512 } // far below SQLite's limit on bound parameters

// In pads vals to a power of two with copies of the last one (IN is a set,
// so copies change nothing): a query then has a handful of texts whatever
// the number of values, and readStmt keeps them all prepared.
func (dialect) In(col string, first int, vals []string) (string, []any) {
	if len(vals) == 0 {
		return `0 = 1`, nil
	}
	n := 1
	for n < len(vals) {
		n *= 2
	}
	var b strings.Builder
	args := make([]any, n)
	b.WriteString(col + ` IN (`)
	for i := range n {
		if i > 0 {
			b.WriteString(`, `)
		}
		b.WriteString(`?` + strconv.Itoa(first+i))
		args[i] = vals[min(i, len(vals)-1)]
	}
	b.WriteString(`)`)
	return b.String(), args
}

func (dialect) Series(from, to string) string {
	return `(WITH RECURSIVE s(n) AS (SELECT CAST(` + from + ` AS INTEGER) UNION ALL SELECT n + 1 FROM s WHERE n + 1 < ` + to + `)
		SELECT n FROM s) AS g`
}

func (dialect) IsUniqueViolation(err error) bool {
	var se *msqlite.Error
	return errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}
