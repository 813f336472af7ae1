package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestDialectClock: the shared queries' clock (SQLite's unixepoch) is the
// one the commit path reads (time.Now), to the millisecond, so times the
// two write (objects' created_at, leases, heartbeats) compare.
func TestDialectClock(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := time.Now().UnixMilli()
	var now int64
	if err := s.r.QueryRowContext(context.Background(), `SELECT `+dialect{}.Now()).Scan(&now); err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixMilli()
	if now < before || now > after {
		t.Fatalf("SQL clock %d, Go clock %d..%d", now, before, after)
	}
}

// TestRebind: $n placeholders become ?n; nothing else changes.
func TestRebind(t *testing.T) {
	for in, want := range map[string]string{
		`SELECT 1`:                        `SELECT 1`,
		`WHERE a = $1 AND b IN ($2, $10)`: `WHERE a = ?1 AND b IN (?2, ?10)`,
		`VALUES ($1, $1)`:                 `VALUES (?1, ?1)`,
	} {
		if got := rebind(in); got != want {
			t.Errorf("rebind(%q) = %q, want %q", in, got, want)
		}
	}
}
