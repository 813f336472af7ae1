package agent

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"floe/metadata"
)

// slowAnswerStore commits as its store does, but holds the answer of the
// first CommitObject call after hold is set until release is closed.
type slowAnswerStore struct {
	metadata.Store
	hold    atomic.Bool
	release chan struct{}
	entered atomic.Int32
}

func (s *slowAnswerStore) CommitObject(ctx context.Context, obj metadata.ObjectCommit) ([]metadata.RunResult, error) {
	if !s.hold.Load() {
		return s.Store.CommitObject(ctx, obj)
	}
	n := s.entered.Add(1)
	res, err := s.Store.CommitObject(ctx, obj)
	if n == 1 {
		<-s.release
	}
	return res, err
}

// TestFlushCommitsOverlap: the next flush's commit starts as soon as the
// store has queued the previous one's, not once it has returned, and the
// records still get their offsets in produce order.
func TestFlushCommitsOverlap(t *testing.T) {
	t.Parallel()
	ss := &slowAnswerStore{release: make(chan struct{})}
	ta := newTestAgentOver(t, nil, func(s metadata.Store) metadata.Store { ss.Store = s; return ss })
	cl := ta.client(t, kgo.DefaultProduceTopic("overlap"), kgo.ProducerLinger(0))
	ta.createTopic(t, cl, "overlap", 1)
	ss.hold.Store(true)

	type acked struct {
		value  string
		offset int64
	}
	offsets := make(chan acked, 2)
	cl2 := ta.client(t, kgo.DefaultProduceTopic("overlap"), kgo.ProducerLinger(0))
	produce := func(cl *kgo.Client, v string) {
		cl.Produce(context.Background(), &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce %s: %v", v, err)
			}
			offsets <- acked{v, r.Offset}
		})
	}
	produce(cl, "a")
	waitFor(t, func() bool { return ss.entered.Load() == 1 })
	produce(cl2, "b") // another producer, while "a" is in flight
	for deadline := time.Now().Add(10 * time.Second); ss.entered.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if ss.entered.Load() != 2 {
		t.Errorf("second flush's commit did not start while the first's answer was held")
	}
	close(ss.release)
	for range 2 {
		// "b" may be answered first: its flush returned, "a"'s was held.
		a := <-offsets
		if want := map[string]int64{"a": 0, "b": 1}[a.value]; a.offset != want {
			t.Errorf("record %s: offset %d, want %d", a.value, a.offset, want)
		}
	}
}
