package sqlite

import (
	"database/sql"
	"fmt"
	"strings"
)

// OpenDB opens a database/sql handle on the store's file for tables kept
// beside the store's own (the Iceberg catalog). Its connections wait for
// the store's writer as the store's do (busy timeout), use the same WAL
// with full syncs, and start every transaction as a writer (BEGIN
// IMMEDIATE), so a read-then-write never fails its lock upgrade.
func OpenDB(path string) (*sql.DB, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("open sqlite %q: path must be non-empty and contain no '?' or '#'", path)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?"+
		fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate", busyTimeoutMillis))
	if err != nil {
		return nil, fmt.Errorf("open sqlite %q: %w", path, err)
	}
	db.SetMaxOpenConns(2)
	return db, nil
}
