package sqlite

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"floe/metadata"
)

// copyFile copies src to dst, which must not exist yet.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBackgroundCheckpoint checks that commits reach the database file
// itself, not only the WAL, without a commit running the checkpoint: the
// writer's auto-checkpoint threshold is far above what these commits write,
// so only the background checkpointer can have copied them back. The check
// opens a copy of the bare database file, WAL left behind.
func TestBackgroundCheckpoint(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "meta.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp, err := s.CreateTopic(ctx, "t", 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	const commits = 20
	for i := range commits {
		obj := metadata.ObjectCommit{Key: fmt.Sprintf("k%d", i), Runs: []metadata.RunCommit{{TopicID: tp.ID, Partition: int32(i % 4), Records: 1}}}
		if _, err := s.CommitObject(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for try := 0; ; try++ {
		snap := filepath.Join(dir, fmt.Sprintf("snap%d.db", try))
		copyFile(t, path, snap)
		c, err := Open(ctx, snap)
		if err != nil {
			t.Fatal(err)
		}
		n, err := c.CommitCount(ctx)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if n == commits {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("database file holds %d of %d commits after %v", n, commits, 10*time.Second)
		}
		time.Sleep(checkpointInterval / 2)
	}
}

// TestCloseStopsCheckpointer checks that Close leaves no goroutine behind.
func TestCloseStopsCheckpointer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStatementsSurviveFailedCommit checks that a commit failing inside
// its transaction (a duplicate object key) leaves the prepared statements
// usable for the next commits.
func TestStatementsSurviveFailedCommit(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp, err := s.CreateTopic(ctx, "t", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	obj := metadata.ObjectCommit{Key: "dup", Runs: []metadata.RunCommit{{TopicID: tp.ID, Partition: 1, Records: 5}}}
	if _, err := s.CommitObject(ctx, obj); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitObject(ctx, obj); err == nil {
		t.Fatal("second commit of the same key succeeded")
	}
	obj.Key = "next"
	res, err := s.CommitObject(ctx, obj)
	if err != nil || res[0].Err != nil || res[0].BaseOffset != 5 {
		t.Fatalf("commit after a failed one: %+v, %v", res, err)
	}
}
