package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestStartCreateDatabase starts a cluster, creates two databases and checks
// that they are separate, empty and reachable only through their own URL.
func TestStartCreateDatabase(t *testing.T) {
	s := Start(t)
	ctx := context.Background()
	urlA := s.CreateDatabase(t, "alpha")
	urlB := s.CreateDatabase(t, "")
	if urlA == urlB {
		t.Fatalf("two databases share URL %s", urlA)
	}
	a, err := pgx.Connect(ctx, urlA)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	if _, err := a.Exec(ctx, `CREATE TABLE only_in_alpha (x int)`); err != nil {
		t.Fatal(err)
	}
	b, err := pgx.Connect(ctx, urlB)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	var db string
	var n int
	if err := b.QueryRow(ctx, `SELECT current_database(), (SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_alpha')`).Scan(&db, &n); err != nil {
		t.Fatal(err)
	}
	if db != "floe_test_1" || n != 0 {
		t.Fatalf("second database: name %q, sees %d alpha tables; want floe_test_1, 0", db, n)
	}
	if s.Port() == 5432 {
		t.Logf("note: port 5432 was free and got picked")
	}
	// The duplicate name must fail, not silently reuse.
	if _, err := s.CreateDB(ctx, "alpha"); err == nil {
		t.Fatal("creating database alpha twice succeeded")
	}
}
