package agent

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"floe/metadata"
)

// topicCache is this agent's view of topics, at most ttl old. Topics created
// or deleted through this agent are reflected at once; changes made through
// other agents within ttl. A stale view is safe: the commit transaction
// rejects runs of topics that no longer exist.
type topicCache struct {
	store metadata.Store
	ttl   time.Duration

	mu      sync.Mutex
	loaded  time.Time
	byName  map[string]metadata.Topic
	byID    map[metadata.TopicID]metadata.Topic
	loading chan struct{} // non-nil while one goroutine reloads; others wait
	// gen counts invalidations. A reload that an invalidation overtook
	// read the store before the change that caused it, so it loads again
	// rather than keep or return what it read.
	gen uint64
}

func newTopicCache(store metadata.Store, ttl time.Duration) *topicCache {
	return &topicCache{store: store, ttl: ttl}
}

// snapshot returns the current maps, reloading them if older than ttl.
func (tc *topicCache) snapshot(ctx context.Context) (map[string]metadata.Topic, map[metadata.TopicID]metadata.Topic, error) {
	for {
		tc.mu.Lock()
		if tc.byName != nil && time.Since(tc.loaded) < tc.ttl {
			n, i := tc.byName, tc.byID
			tc.mu.Unlock()
			return n, i, nil
		}
		if tc.loading != nil {
			ch := tc.loading
			tc.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		ch := make(chan struct{})
		tc.loading = ch
		gen := tc.gen
		tc.mu.Unlock()

		topics, err := tc.store.Topics(ctx)
		tc.mu.Lock()
		tc.loading = nil
		close(ch)
		if err != nil {
			tc.mu.Unlock()
			return nil, nil, err
		}
		if tc.gen != gen {
			tc.mu.Unlock()
			continue // invalidated while loading
		}
		byName := make(map[string]metadata.Topic, len(topics))
		byID := make(map[metadata.TopicID]metadata.Topic, len(topics))
		for _, t := range topics {
			byName[t.Name] = t
			byID[t.ID] = t
		}
		tc.byName, tc.byID, tc.loaded = byName, byID, time.Now()
		tc.mu.Unlock()
		return byName, byID, nil
	}
}

// all returns every topic.
func (tc *topicCache) all(ctx context.Context) (map[string]metadata.Topic, error) {
	n, _, err := tc.snapshot(ctx)
	return n, err
}

// byName returns a topic, asking the store directly on a miss so a topic just
// created through another agent is found.
func (tc *topicCache) get(ctx context.Context, name string) (metadata.Topic, bool, error) {
	n, _, err := tc.snapshot(ctx)
	if err != nil {
		return metadata.Topic{}, false, err
	}
	if t, ok := n[name]; ok {
		return t, true, nil
	}
	t, err := tc.store.Topic(ctx, name)
	if errors.Is(err, metadata.ErrUnknownTopic) {
		return metadata.Topic{}, false, nil
	}
	if err != nil {
		return metadata.Topic{}, false, err
	}
	tc.invalidate()
	return t, true, nil
}

// getID returns a topic by id, asking the store on a miss.
func (tc *topicCache) getID(ctx context.Context, id metadata.TopicID) (metadata.Topic, bool, error) {
	_, i, err := tc.snapshot(ctx)
	if err != nil {
		return metadata.Topic{}, false, err
	}
	if t, ok := i[id]; ok {
		return t, true, nil
	}
	t, err := tc.store.TopicByID(ctx, id)
	if errors.Is(err, metadata.ErrUnknownTopic) {
		return metadata.Topic{}, false, nil
	}
	if err != nil {
		return metadata.Topic{}, false, err
	}
	tc.invalidate()
	return t, true, nil
}

// invalidate forces the next read to reload, including a read that waits
// for a reload already under way (which may predate the change).
func (tc *topicCache) invalidate() {
	tc.mu.Lock()
	tc.loaded = time.Time{}
	tc.gen++
	tc.mu.Unlock()
}

// Topic config defaults, as a Kafka broker reports them.
var topicConfigDefaults = map[string]string{
	"cleanup.policy":                      "delete",
	"compression.type":                    "producer",
	"delete.retention.ms":                 "86400000",
	"max.message.bytes":                   "1048588",
	"message.timestamp.type":              "CreateTime",
	"min.insync.replicas":                 "1",
	"retention.bytes":                     "-1",
	"retention.ms":                        "604800000",
	"segment.bytes":                       "1073741824",
	"segment.ms":                          "604800000",
	"message.timestamp.difference.max.ms": "9223372036854775807",
	"min.cleanable.dirty.ratio":           "0.5",
	"unclean.leader.election.enable":      "false",
}

// topicConfig returns a config's effective value and whether it was set on
// the topic explicitly.
func topicConfig(t metadata.Topic, name string) (string, bool) {
	if v, ok := t.Configs[name]; ok {
		return v, true
	}
	return topicConfigDefaults[name], false
}

// maxMessageBytes is the topic's max.message.bytes.
func maxMessageBytes(t metadata.Topic) int64 {
	v, _ := topicConfig(t, "max.message.bytes")
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 1048588
	}
	return n
}
