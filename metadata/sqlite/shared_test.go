package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
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

// TestIn: a list is padded to a power of two with its last value.
func TestIn(t *testing.T) {
	for _, tc := range []struct {
		vals []string
		cond string
		args []any
	}{
		{nil, `0 = 1`, nil},
		{[]string{"a"}, `k IN (?2)`, []any{"a"}},
		{[]string{"a", "b", "c"}, `k IN (?2, ?3, ?4, ?5)`, []any{"a", "b", "c", "c"}},
	} {
		cond, args := dialect{}.In("k", 2, tc.vals)
		if cond != tc.cond || !reflect.DeepEqual(args, tc.args) {
			t.Errorf("In(%q) = %q %v, want %q %v", tc.vals, cond, args, tc.cond, tc.args)
		}
	}
}

// TestKnownObjectsManyKeys: more keys than one list holds, in chunks.
func TestKnownObjectsManyKeys(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var keys []string
	for i := range 1300 {
		keys = append(keys, fmt.Sprintf("k%04d", i))
	}
	for _, k := range keys[:700] {
		if _, err := s.w.ExecContext(ctx, `INSERT INTO objects (key, size, agent_id, created_at) VALUES (?, 1, 'a', 1)`, k); err != nil {
			t.Fatal(err)
		}
	}
	known, err := s.KnownObjects(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(known) != 700 || !known["k0000"] || !known["k0699"] || known["k0700"] {
		t.Fatalf("%d known, want k0000..k0699", len(known))
	}
}
