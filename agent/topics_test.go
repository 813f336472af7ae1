package agent

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"floe/metadata"
	"floe/metadata/sqlite"
)

// slowTopics holds the first Topics call after reading, until released.
type slowTopics struct {
	metadata.Store
	read, release chan struct{}
}

func (s *slowTopics) Topics(ctx context.Context) ([]metadata.Topic, error) {
	ts, err := s.Store.Topics(ctx)
	if s.read != nil {
		close(s.read)
		s.read = nil
		<-s.release
	}
	return ts, err
}

// TestTopicCacheInvalidatedWhileLoading: a topic created (and the cache
// invalidated) while a reload that read the store before it is under way
// is in the next view; the overtaken reload's list is not kept as fresh for
// the cache's TTL (all-topics Metadata answered without the topic, and
// kafka-go's writer failed with UNKNOWN_TOPIC_OR_PARTITION).
func TestTopicCacheInvalidatedWhileLoading(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	slow := &slowTopics{Store: store, read: make(chan struct{}), release: make(chan struct{})}
	read := slow.read
	tc := newTopicCache(slow, time.Hour)

	got := make(chan map[string]metadata.Topic)
	go func() {
		n, _, err := tc.snapshot(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- n
	}()
	<-read // the reload has read the store: no topics yet
	if _, err := store.CreateTopic(ctx, "late", 1, nil); err != nil {
		t.Fatal(err)
	}
	tc.invalidate()
	close(slow.release)
	if _, ok := (<-got)["late"]; !ok {
		t.Error("the reader of the overtaken reload did not see the topic")
	}
	if n, err := tc.all(ctx); err != nil || n["late"].Name != "late" {
		t.Fatalf("after the overtaken reload the cache lists %v (err %v), want topic late", n, err)
	}
}
