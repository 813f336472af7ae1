package agent

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"floe/storage"
	"floe/storage/mem"
)

// getCounter counts the GETs that reach the bucket.
type getCounter struct {
	storage.Bucket
	gets atomic.Int64
}

func (b *getCounter) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	b.gets.Add(1)
	return b.Bucket.GetRange(ctx, key, offset, length)
}

// TestWriteThroughForTailingConsumers: while a consumer waits at the head
// of the log, the objects flushed for it are read from the cache, with no
// GET; records nobody was waiting for are read from the bucket.
func TestWriteThroughForTailingConsumers(t *testing.T) {
	b := &getCounter{Bucket: mem.New()}
	ta := newTestAgent(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := ta.client(t, kgo.DefaultProduceTopic("wt"), kgo.ProducerLinger(0))
	ta.createTopic(t, cl, "wt", 4)

	consume := func(n int) {
		t.Helper()
		c := ta.client(t, kgo.ConsumeTopics("wt"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(100*time.Millisecond))
		for got := 0; got < n; {
			fs := c.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			got += fs.NumRecords()
		}
	}
	produce := func(n int) {
		t.Helper()
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 4), Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Nobody tailing: the records come from the bucket.
	produce(20)
	consume(20)
	if b.gets.Load() == 0 {
		t.Fatal("records nobody waited for were read without a GET")
	}

	// A consumer waiting at the head: no GET for what is produced now.
	c := ta.client(t, kgo.ConsumeTopics("wt"), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.FetchMaxWait(100*time.Millisecond))
	for ta.tailReadAt.Load() == 0 || time.Since(time.Unix(0, ta.tailReadAt.Load())) > time.Second {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		c.PollFetches(pctx)
		pcancel()
	}
	before := b.gets.Load()
	done := make(chan int)
	go func() {
		got := 0
		for got < 40 && ctx.Err() == nil {
			got += c.PollFetches(ctx).NumRecords()
		}
		done <- got
	}()
	produce(40)
	if got := <-done; got != 40 {
		t.Fatalf("tailing consumer got %d of 40 records", got)
	}
	if n := b.gets.Load() - before; n != 0 {
		t.Fatalf("tailing consumer's records took %d GETs, want 0 (cache %+v)", n, ta.cache.Stats())
	}
}
