package postgres_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"floe/metadata"
	"floe/metadata/pgtest"
	"floe/metadata/postgres"
	"floe/metadata/storetest"
)

func open(t testing.TB, srv *pgtest.Server) *postgres.Store {
	s, err := postgres.Open(context.Background(), srv.CreateDatabase(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	srv := pgtest.Start(t)
	storetest.Run(t, func(t *testing.T) metadata.Store { return open(t, srv) })
}

// TestConcurrentOpen opens one new database from several stores at once:
// the advisory lock must make exactly one of them apply each migration.
func TestConcurrentOpen(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.CreateDatabase(t, "shared")
	ctx := context.Background()
	const n = 4
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = postgres.Open(ctx, url)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	// All stores see one database: a topic created through one is seen,
	// and a duplicate rejected, through another.
	if _, err := stores[0].CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[n-1].CreateTopic(ctx, "t", 1, nil); err == nil {
		t.Fatal("duplicate topic through a second store succeeded")
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var versions, shards int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM schema_migrations), (SELECT count(*) FROM counters)`).Scan(&versions, &shards); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if versions != len(files) || shards != 16 {
		t.Fatalf("schema_migrations rows %d, counter shards %d; want %d and 16", versions, shards, len(files))
	}
}

func BenchmarkCommitObject(b *testing.B) {
	srv := pgtest.Start(b)
	storetest.Bench(b, func(b *testing.B) metadata.Store { return open(b, srv) })
}

// BenchmarkCreateTopic: see storetest.BenchCreateTopic.
func BenchmarkCreateTopic(b *testing.B) {
	srv := pgtest.Start(b)
	storetest.BenchCreateTopic(b, func(b *testing.B) metadata.Store { return open(b, srv) })
}

// BenchmarkConcurrentCommits: see storetest.BenchConcurrentCommits. Each
// simulated agent has a pool of one connection: an agent's commits are
// serialised (flush order), so one is all its flushes use at a time.
func BenchmarkConcurrentCommits(b *testing.B) {
	srv := pgtest.Start(b)
	storetest.BenchConcurrentCommits(b, func(b *testing.B) (metadata.Store, func() metadata.Store) {
		url := srv.CreateDatabase(b, "")
		first, err := postgres.Open(context.Background(), url)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { first.Close() })
		return first, func() metadata.Store {
			sep := "?"
			if strings.Contains(url, "?") {
				sep = "&"
			}
			s, err := postgres.Open(context.Background(), url+sep+"pool_max_conns=1")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}
	})
}
