package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"floe/metadata"
	"floe/metadata/sqlite"
	"floe/metadata/storetest"
)

func open(t testing.TB) *sqlite.Store {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) metadata.Store { return open(t) })
}

// TestReopen checks that state survives closing the store and that opening
// an already migrated file applies nothing twice.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "meta.db")
	if _, err := sqlite.Open(ctx, path); err == nil {
		t.Fatal("Open succeeded in a missing directory")
	}
	path = filepath.Join(t.TempDir(), "meta.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := s.CreateTopic(ctx, "t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitObject(ctx, metadata.ObjectCommit{Key: "k", Runs: []metadata.RunCommit{{TopicID: tp.ID, Records: 3}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.Partition(ctx, tp.ID, 0)
	if err != nil || p.NextOffset != 3 {
		t.Fatalf("after reopen: %+v, %v", p, err)
	}
	if c, err := s.CommitCount(ctx); err != nil || c != 1 {
		t.Fatalf("CommitCount after reopen: %d, %v", c, err)
	}
}

func TestOpenBadPath(t *testing.T) {
	for _, p := range []string{"", "a?b", "x#y"} {
		if s, err := sqlite.Open(context.Background(), p); err == nil {
			s.Close()
			t.Fatalf("Open(%q) succeeded", p)
		}
	}
}

func BenchmarkCommitObject(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) metadata.Store { return open(b) })
}

// BenchmarkCreateTopic: see storetest.BenchCreateTopic.
func BenchmarkCreateTopic(b *testing.B) {
	storetest.BenchCreateTopic(b, func(b *testing.B) metadata.Store { return open(b) })
}
