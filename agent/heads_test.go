package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"floe/metadata"
)

func TestHeadsGet(t *testing.T) {
	t.Parallel()
	h := newHeads()
	now := time.Now()
	e := metadata.IndexEntry{TopicID: metadata.TopicID{1}, Partition: 2, BaseOffset: 10, EndOffset: 15, ObjectKey: "k"}
	h.set(e, now)
	for _, c := range []struct {
		name       string
		partition  int32
		offset, hw int64
		at         time.Time
		want       bool
	}{
		{"the head, fresh", 2, 10, 15, now, true},
		{"another partition", 3, 10, 15, now, false},
		{"offset inside the entry", 2, 12, 15, now, false},
		{"another agent committed after it", 2, 10, 20, now, false},
		{"older than the tail read window", 2, 10, 15, now.Add(tailReadWindow + time.Millisecond), false},
	} {
		got, ok := h.get(metadata.TopicID{1}, c.partition, c.offset, c.hw, c.at)
		if ok != c.want || (ok && got != e) {
			t.Errorf("%s: get = %+v, %v; want %v", c.name, got, ok, c.want)
		}
	}
}

// TestTailingFetchReadsOwnCommit: a consumer waiting at the head of the
// log is answered from the index entries of the agent's own commit, not an
// index look-up, and gets every record at its offset, in order.
func TestTailingFetchReadsOwnCommit(t *testing.T) {
	ta := newParallelAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := ta.client(t, kgo.DefaultProduceTopic("heads"), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ta.createTopic(t, cl, "heads", 4)
	c := ta.client(t, kgo.ConsumeTopics("heads"), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.FetchMaxWait(time.Second))
	for ta.tailReadAt.Load() == 0 {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		c.PollFetches(pctx)
		pcancel()
	}

	const n = 40
	done := make(chan error, 1)
	go func() {
		next := map[int32]int64{}
		for got := 0; got < n; {
			fs := c.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				done <- err
				return
			}
			for _, r := range fs.Records() {
				want := fmt.Sprintf("p%d-%d", r.Partition, next[r.Partition])
				if r.Offset != next[r.Partition] || string(r.Value) != want {
					done <- fmt.Errorf("partition %d: offset %d value %q, want offset %d value %q", r.Partition, r.Offset, r.Value, next[r.Partition], want)
					return
				}
				next[r.Partition]++
				got++
			}
		}
		done <- nil
	}()
	for i := range n {
		p := int32(i % 4)
		v := fmt.Sprintf("p%d-%d", p, i/4)
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(ta.metrics.headReads); got == 0 {
		t.Fatal("no fetch partition was served from the agent's own commit")
	}
}
