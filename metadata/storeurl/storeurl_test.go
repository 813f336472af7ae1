package storeurl_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"floe/metadata/pgtest"
	"floe/metadata/storeurl"
)

// roundTrip creates a topic through a store opened from url, reopens it and
// reads the topic back, proving the URL reached a real, persistent store.
func roundTrip(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	s, err := storeurl.Open(ctx, url)
	if err != nil {
		t.Fatalf("Open(%s): %v", url, err)
	}
	tp, err := s.CreateTopic(ctx, "t", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = storeurl.Open(ctx, url)
	if err != nil {
		t.Fatalf("reopen %s: %v", url, err)
	}
	defer s.Close()
	got, err := s.Topic(ctx, "t")
	if err != nil || got.ID != tp.ID || got.Partitions != 2 {
		t.Fatalf("topic after reopen: %+v, %v", got, err)
	}
}

func TestSQLiteAbsolute(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "meta.db")
	roundTrip(t, "sqlite://"+path)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file: %v", err)
	}
}

func TestSQLiteRelative(t *testing.T) {
	t.Chdir(t.TempDir())
	roundTrip(t, "sqlite://./floe-data/meta.db")
	if _, err := os.Stat(filepath.Join("floe-data", "meta.db")); err != nil {
		t.Fatalf("database file: %v", err)
	}
}

func TestPostgres(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.CreateDatabase(t, "a")
	roundTrip(t, url)
	roundTrip(t, "postgresql://"+strings.TrimPrefix(srv.CreateDatabase(t, "b"), "postgres://"))
}

func TestBadURLs(t *testing.T) {
	for _, u := range []string{"", "meta.db", "sqlite://", "mysql://x/y", "file:///tmp/x", "postgres://127.0.0.1:1/x?connect_timeout=1"} {
		if s, err := storeurl.Open(context.Background(), u); err == nil {
			s.Close()
			t.Fatalf("Open(%q) succeeded", u)
		}
	}
}
