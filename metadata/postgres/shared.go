package postgres

// The Store's side of metadata/internal/sqlstore: its pgx pool as a
// sqlstore.DB, queried natively (pgx's statement cache and binary
// protocol, no database/sql layer), and PostgreSQL's dialect.

import (
	"context"
	"database/sql"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"floe/metadata/internal/sqlstore"
)

var _ sqlstore.DB = sqlDB{}

// sqlDB is the pool as sqlstore sees it.
type sqlDB struct{ pool *pgxpool.Pool }

func (d sqlDB) Read() sqlstore.Querier  { return querier{d.pool} }
func (d sqlDB) Write() sqlstore.Querier { return querier{d.pool} }

func (d sqlDB) WriteTx(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error { return fn(querier{tx}) })
}

// querier runs sqlstore's queries on the pool or a transaction.
type querier struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	return q.q.Query(ctx, query, args...)
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return row{q.q.QueryRow(ctx, query, args...)}
}

// row reports pgx.ErrNoRows as sql.ErrNoRows, sqlstore's no-row error.
type row struct{ r pgx.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sql.ErrNoRows
	}
	return err
}

// dialect is PostgreSQL's SQL for sqlstore. Times are timestamptz from the
// database clock, so agents with skewed clocks agree on liveness and
// lease expiry.
type dialect struct{}

var _ sqlstore.Dialect = dialect{}

func (dialect) Now() string { return `now()` }
func (dialect) Micros(param string) string {
	return `(CAST(` + param + ` AS bigint) * interval '1 microsecond')`
}
func (dialect) Expired() string            { return `'-infinity'` }
func (dialect) JSON(param string) string   { return `CAST(CAST(` + param + ` AS text) AS jsonb)` }
func (dialect) JSONText(col string) string { return `CAST(` + col + ` AS text)` }
func (dialect) ForUpdate() string          { return ` FOR UPDATE` }
func (dialect) Bytewise() string           { return ` COLLATE "C"` }
func (dialect) MaxIn() int                 { return 1 << 30 } // one array parameter holds any number

func (dialect) In(col string, first int, vals []string) (string, []any) {
	return col + ` = ANY($` + strconv.Itoa(first) + `)`, []any{vals}
}

func (dialect) Series(from, to string) string {
	return `generate_series(CAST(` + from + ` AS integer), CAST(` + to + ` AS integer) - 1) AS g(n)`
}

func (dialect) IsUniqueViolation(err error) bool { return isUniqueViolation(err, "") }
