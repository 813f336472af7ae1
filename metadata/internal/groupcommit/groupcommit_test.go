package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"floe/metadata"
)

// recorder is a CommitFunc that records the keys of every group it is
// given, fails every group holding the key "bad", and gives run 0 of
// each object the object's position in its group as base offset. Until
// hold is closed, its first commit blocks.
type recorder struct {
	hold   chan struct{}
	mu     sync.Mutex
	groups [][]string
	once   sync.Once
}

func (r *recorder) commit(ctx context.Context, objs []metadata.ObjectCommit) ([][]metadata.RunResult, error) {
	r.once.Do(func() { <-r.hold })
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	r.mu.Lock()
	r.groups = append(r.groups, keys)
	r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if slices.Contains(keys, "bad") {
		return nil, errors.New("duplicate key bad")
	}
	out := make([][]metadata.RunResult, len(objs))
	for i := range objs {
		out[i] = []metadata.RunResult{{BaseOffset: int64(i)}}
	}
	return out, nil
}

func obj(key string) metadata.ObjectCommit {
	return metadata.ObjectCommit{Key: key, Runs: []metadata.RunCommit{{Records: 1}}}
}

// waitQueued waits until a group is committing and n calls wait in c's
// queue.
func waitQueued(c *Committer, n int) {
	for {
		c.mu.Lock()
		ok := c.busy && len(c.queue) == n
		c.mu.Unlock()
		if ok {
			return
		}
		runtime.Gosched()
	}
}

type outcome struct {
	res []metadata.RunResult
	err error
}

// start calls Commit for each key in order, each once the previous one is
// committing or queued (behind the blocked first commit), and returns
// their outcomes.
func start(c *Committer, ctx context.Context, keys ...string) []chan outcome {
	outs := make([]chan outcome, len(keys))
	for i, k := range keys {
		outs[i] = make(chan outcome, 1)
		go func() {
			res, err := c.Commit(ctx, obj(k))
			outs[i] <- outcome{res, err}
		}()
		waitQueued(c, i)
	}
	return outs
}

func TestCallsThatArriveTogetherShareOneCommit(t *testing.T) {
	r := &recorder{hold: make(chan struct{})}
	c := New(r.commit, 64, 0)
	outs := start(c, context.Background(), "first", "a", "b", "c", "d")
	close(r.hold)
	for i, o := range outs {
		got := <-o
		want := int64(max(0, i-1)) // its place in its group
		if got.err != nil || len(got.res) != 1 || got.res[0].BaseOffset != want {
			t.Errorf("call %d: %+v, %v; want base %d", i, got.res, got.err, want)
		}
	}
	want := [][]string{{"first"}, {"a", "b", "c", "d"}}
	if fmt.Sprint(r.groups) != fmt.Sprint(want) {
		t.Fatalf("groups %v, want %v", r.groups, want)
	}
}

func TestGroupLimits(t *testing.T) {
	r := &recorder{hold: make(chan struct{})}
	c := New(r.commit, 2, 0)
	outs := start(c, context.Background(), "first", "a", "b", "c")
	close(r.hold)
	for _, o := range outs {
		if got := <-o; got.err != nil {
			t.Fatal(got.err)
		}
	}
	if want := [][]string{{"first"}, {"a", "b"}, {"c"}}; fmt.Sprint(r.groups) != fmt.Sprint(want) {
		t.Fatalf("groups %v, want %v", r.groups, want)
	}
}

func TestFailedGroupIsCommittedAgainOneByOne(t *testing.T) {
	r := &recorder{hold: make(chan struct{})}
	c := New(r.commit, 64, 0)
	outs := start(c, context.Background(), "first", "a", "bad", "c")
	close(r.hold)
	for i, o := range outs {
		got := <-o
		if (got.err != nil) != (i == 2) {
			t.Errorf("call %d: error %v", i, got.err)
		}
		if got.err == nil && got.res[0].BaseOffset != 0 {
			t.Errorf("call %d: base %d, want 0 (committed alone)", i, got.res[0].BaseOffset)
		}
	}
	want := [][]string{{"first"}, {"a", "bad", "c"}, {"a"}, {"bad"}, {"c"}}
	if fmt.Sprint(r.groups) != fmt.Sprint(want) {
		t.Fatalf("groups %v, want %v", r.groups, want)
	}
}

func TestQueuedCallThatGivesUpIsNotCommitted(t *testing.T) {
	r := &recorder{hold: make(chan struct{})}
	c := New(r.commit, 64, 0)
	first := start(c, context.Background(), "first")[0]
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := c.Commit(ctx, obj("gone"))
		gone <- err
	}()
	waitQueued(c, 1)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled queued call: %v", err)
	}
	close(r.hold)
	if got := <-first; got.err != nil {
		t.Fatal(got.err)
	}
	// The committer is idle again: the next call commits alone, at once.
	if _, err := c.Commit(context.Background(), obj("next")); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"first"}, {"next"}}; fmt.Sprint(r.groups) != fmt.Sprint(want) {
		t.Fatalf("groups %v, want %v", r.groups, want)
	}
}

// A caller that starts each commit once the previous one has run its
// CommitQueued hook, without waiting for it to finish, gets them
// committed in that order (as an agent's flushes are).
func TestCommitQueuedOrdersCallsInFlight(t *testing.T) {
	r := &recorder{hold: make(chan struct{})}
	c := New(r.commit, 2, 0)
	keys := []string{"first", "a", "b", "c", "d", "e"}
	outs := make([]chan outcome, len(keys))
	for i, k := range keys {
		queued := make(chan struct{})
		var once sync.Once
		ctx := metadata.WithCommitQueued(context.Background(), func() { once.Do(func() { close(queued) }) })
		outs[i] = make(chan outcome, 1)
		go func() {
			res, err := c.Commit(ctx, obj(k))
			select {
			case <-queued:
			default:
				err = fmt.Errorf("%s returned before its hook ran", k)
			}
			outs[i] <- outcome{res, err}
		}()
		<-queued
	}
	close(r.hold)
	for i, o := range outs {
		if got := <-o; got.err != nil {
			t.Fatalf("call %d: %v", i, got.err)
		}
	}
	if want := [][]string{{"first"}, {"a", "b"}, {"c", "d"}, {"e"}}; fmt.Sprint(r.groups) != fmt.Sprint(want) {
		t.Fatalf("groups %v, want %v", r.groups, want)
	}
}
