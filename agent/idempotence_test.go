package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"floe/metadata"
	"floe/storage/faulty"
	"floe/storage/mem"
)

// lossyStore commits for real but reports some commits as failed, as a
// connection dropped after COMMIT does: the agent cannot tell that the
// records are stored, and the producer retries them.
type lossyStore struct {
	metadata.Store
	loseEvery int64
	n         atomic.Int64
	lost      atomic.Int64
}

func (s *lossyStore) CommitObject(ctx context.Context, obj metadata.ObjectCommit) ([]metadata.RunResult, error) {
	res, err := s.Store.CommitObject(ctx, obj)
	if err == nil && s.n.Add(1)%s.loseEvery == 0 {
		s.lost.Add(1)
		return nil, errors.New("injected: commit answer lost")
	}
	return res, err
}

// TestIdempotentProducerSurvivesFailures produces with franz-go's idempotent
// producer while the object store fails some PUTs outright and the metadata
// store loses the answers of some commits that did land: every record is
// stored exactly once, at dense offsets, in order.
func TestIdempotentProducerSurvivesFailures(t *testing.T) {
	t.Parallel()
	// Every 7th object fails all its PUT attempts, so its whole flush fails.
	var puts, failedObjects atomic.Int64
	var doomed sync.Map
	fb := faulty.New(mem.New())
	fb.BeforePut = func(key string) error {
		fail, _ := doomed.LoadOrStore(key, puts.Add(1)%7 == 0)
		if fail.(bool) {
			failedObjects.Add(1)
			return errors.New("injected: put failed")
		}
		return nil
	}
	var lossy *lossyStore
	ta := newTestAgentOver(t, fb, func(s metadata.Store) metadata.Store {
		lossy = &lossyStore{Store: s, loseEvery: 5}
		return lossy
	}, func(c *Config) { c.FlushInterval = 2 * time.Millisecond })

	cl := ta.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Millisecond),
		kgo.MetadataMinAge(10*time.Millisecond), // retries wait for a metadata refresh
		kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }))
	ta.createTopic(t, cl, "idem", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Rounds of 40 records make many flushes, so failures hit many of them.
	const n, round = 2000, 40
	for start := 0; start < n; start += round {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		wg.Add(round)
		for i := start; i < start+round; i++ {
			r := &kgo.Record{Topic: "idem", Partition: int32(i % 4), Value: fmt.Appendf(nil, "%d", i)}
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if firstErr != nil {
			t.Fatal(firstErr)
		}
	}
	if lossy.lost.Load() == 0 || failedObjects.Load() == 0 {
		t.Fatalf("no failure was injected (%d lost commits, %d failed puts)", lossy.lost.Load(), failedObjects.Load())
	}

	// Read everything back: per partition, values in produce order, once each.
	cons := ta.client(t, kgo.ConsumeTopics("idem"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	next := make(map[int32]int)
	for got := 0; got < n; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", got, n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			want := fmt.Sprint(next[r.Partition]*4 + int(r.Partition))
			if r.Offset != int64(next[r.Partition]) || string(r.Value) != want {
				t.Fatalf("partition %d offset %d: value %s, want offset %d value %s", r.Partition, r.Offset, r.Value, next[r.Partition], want)
			}
			next[r.Partition]++
			got++
		})
	}
	for p := range int32(4) {
		st, err := lossy.Partition(ctx, mustTopic(t, lossy, "idem").ID, p)
		if err != nil {
			t.Fatal(err)
		}
		if st.NextOffset != n/4 {
			t.Fatalf("partition %d holds %d offsets, want %d: a retry was stored twice", p, st.NextOffset, n/4)
		}
	}
	t.Logf("%d commit answers lost, %d failed put attempts, %d objects", lossy.lost.Load(), failedObjects.Load(), puts.Load())
}

func mustTopic(t *testing.T, s metadata.Store, name string) metadata.Topic {
	t.Helper()
	tp, err := s.Topic(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}
