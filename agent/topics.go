package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"golang.org/x/time/rate"

	"floe/metadata"
	"floe/topicconfig"
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

	// autoCreate is the agent-wide token bucket of Metadata
	// auto-creations, built on first use from the agent's AutoCreateRate.
	autoCreateOnce sync.Once
	autoCreate     *rate.Limiter
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

// lastView returns the topics the cache last loaded, however old, for an
// answer that must not fail when the store cannot be read (Metadata, as a
// Kafka broker answers it from its cached view); ok is false when none was
// ever loaded.
func (tc *topicCache) lastView() (map[string]metadata.Topic, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.byName, tc.byName != nil
}

// get returns a topic, asking the store directly on a miss so a topic just
// created through another agent is found.
func (tc *topicCache) get(ctx context.Context, name string) (metadata.Topic, bool, error) {
	return tc.find(ctx, name, nil)
}

// missLookups is how many topics missing from the cached view one request
// asks the store about (lookups); beyond it, the view, at most the cache's
// TTL old, answers alone. A Metadata request or an OffsetCommit naming
// 10,000 unknown topics would otherwise cost 10,000 queries, and the cost
// of the bound is only that a topic created through another agent in the
// last TTL may be reported unknown once more, which clients retry.
const missLookups = 32

// lookups is a request's allowance of store queries for topics missing
// from the cached view (see missLookups).
type lookups struct{ left int }

func newLookups() *lookups { return &lookups{left: missLookups} }

// take uses one look-up; false when none is left. A nil allowance is
// unbounded.
func (l *lookups) take() bool {
	if l == nil {
		return true
	}
	if l.left == 0 {
		return false
	}
	l.left--
	return true
}

// find is get with the store asked on a miss only while budget allows.
func (tc *topicCache) find(ctx context.Context, name string, budget *lookups) (metadata.Topic, bool, error) {
	n, _, err := tc.snapshot(ctx)
	return lookUp(ctx, tc, n, err, name, budget, tc.store.Topic)
}

// getID returns a topic by id, asking the store on a miss.
func (tc *topicCache) getID(ctx context.Context, id metadata.TopicID) (metadata.Topic, bool, error) {
	return tc.findID(ctx, id, nil)
}

// findID is getID with the store asked on a miss only while budget allows.
func (tc *topicCache) findID(ctx context.Context, id metadata.TopicID, budget *lookups) (metadata.Topic, bool, error) {
	_, i, err := tc.snapshot(ctx)
	return lookUp(ctx, tc, i, err, id, budget, tc.store.TopicByID)
}

// lookUp finds key in view, one of tc's maps as snapshot returned it (with
// err), and on a miss asks the store (load) while budget allows.
func lookUp[K comparable](ctx context.Context, tc *topicCache, view map[K]metadata.Topic, err error, key K, budget *lookups,
	load func(context.Context, K) (metadata.Topic, error)) (metadata.Topic, bool, error) {
	if t, ok := view[key]; ok || err != nil || !budget.take() {
		return t, ok, err
	}
	t, err := load(ctx, key)
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

// allowAutoCreate takes a token from the agent-wide bucket of Metadata
// auto-creations: perSecond a second, bursts of as many (at least one); a
// rate of 0 or less means no limit.
func (tc *topicCache) allowAutoCreate(perSecond float64) bool {
	tc.autoCreateOnce.Do(func() {
		if perSecond <= 0 {
			tc.autoCreate = rate.NewLimiter(rate.Inf, 0)
			return
		}
		tc.autoCreate = rate.NewLimiter(rate.Limit(perSecond), max(1, int(math.Ceil(perSecond))))
	})
	return tc.autoCreate.Allow()
}

// clusterBudget is what one request may still add to the cluster under
// MaxTopics and MaxPartitions: the store's totals, read once per request
// when first needed, plus what the request itself has created (or, when
// it only validates, would have). Concurrent requests each start from the
// store's totals, so together they may overshoot by what they create at
// the same moment: the limits stop a runaway client, they are not quotas.
type clusterBudget struct {
	a          *Agent
	loaded     bool
	topics     int
	partitions int64
}

// check reports whether topics more topics holding partitions more
// partitions fit under the cluster limits: nil, or POLICY_VIOLATION with
// its message, counted as a limit hit (or the error of reading the
// totals).
func (b *clusterBudget) check(ctx context.Context, topics int, partitions int64) (*kerr.Error, string) {
	if code, msg := b.load(ctx); code != nil {
		return code, msg
	}
	limit, msg := b.refusal(topics, partitions)
	if limit == "" {
		return nil, ""
	}
	b.a.limitHit(limit, "topics", b.topics, "partitions", b.partitions, "asked", partitions)
	return kerr.PolicyViolation, msg
}

// load reads the store's totals unless read already: REQUEST_TIMED_OUT
// past the request's deadline, UNKNOWN_SERVER_ERROR on other failures.
func (b *clusterBudget) load(ctx context.Context) (*kerr.Error, string) {
	cfg := &b.a.cfg
	if b.loaded || (cfg.MaxTopics <= 0 && cfg.MaxPartitions <= 0) {
		return nil, ""
	}
	n, p, err := b.a.store.TopicTotals(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return kerr.RequestTimedOut, "the request timed out counting the cluster's topics"
		}
		b.a.log.Warn("count topics failed", "err", err)
		return kerr.UnknownServerError, ""
	}
	b.topics, b.partitions, b.loaded = n, p, true
	return nil, ""
}

// refusal names the limit (and says why) that topics more topics with
// partitions more partitions would break; "" if none. The totals must be
// loaded.
func (b *clusterBudget) refusal(topics int, partitions int64) (limit, msg string) {
	cfg := &b.a.cfg
	if cfg.MaxTopics > 0 && b.topics+topics > cfg.MaxTopics {
		return "max.topics", fmt.Sprintf("the cluster has %d topics, the limit is %d", b.topics, cfg.MaxTopics)
	}
	if cfg.MaxPartitions > 0 && b.partitions+partitions > cfg.MaxPartitions {
		return "max.partitions", fmt.Sprintf("the cluster has %d partitions, %d more would exceed the limit of %d",
			b.partitions, partitions, cfg.MaxPartitions)
	}
	return "", ""
}

// add counts what the request created.
func (b *clusterBudget) add(topics int, partitions int64) {
	b.topics += topics
	b.partitions += partitions
}

// checkPartitionsPerTopic answers INVALID_PARTITIONS, with its message,
// for a topic count above MaxPartitionsPerTopic.
func (a *Agent) checkPartitionsPerTopic(topic string, partitions int32) (*kerr.Error, string) {
	if limit := a.cfg.MaxPartitionsPerTopic; limit > 0 && partitions > limit {
		a.limitHit("max.partitions.per.topic", "topic", topic, "asked", partitions, "max", limit)
		return kerr.InvalidPartitions, fmt.Sprintf("%d partitions exceed the limit of %d per topic", partitions, limit)
	}
	return nil, ""
}

// adminContext bounds an admin request's store calls (CreateTopics,
// CreatePartitions, DeleteTopics, DeleteRecords) by the timeout the
// client gave (TimeoutMillis): past it, what is left is answered
// REQUEST_TIMED_OUT, as Kafka answers, instead of working on for a client
// that gave up. A timeout of 0 or less, which asks Kafka not to wait for
// the change to spread, gets storeTimeout: floe's changes are done when
// the store call returns.
func adminContext(ctx context.Context, timeoutMillis int32) (context.Context, context.CancelFunc) {
	d := storeTimeout
	if timeoutMillis > 0 {
		d = time.Duration(timeoutMillis) * time.Millisecond
	}
	return context.WithTimeout(ctx, d)
}

// topicConfig returns a config's effective value and whether it was set on
// the topic explicitly.
func (a *Agent) topicConfig(t metadata.Topic, name string) (string, bool) {
	if v, ok := t.Configs[name]; ok {
		return v, true
	}
	return a.defaults.Get().Default(name), false
}

// maxMessageBytes is the topic's max.message.bytes.
func (a *Agent) maxMessageBytes(t metadata.Topic) int64 {
	d := a.defaults.Get()
	if n := d.Int(t.Configs, topicconfig.MaxMessageBytes); n > 0 {
		return n
	}
	return d.MaxMessageBytes
}
