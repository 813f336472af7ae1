package agent

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSmallBudgetsLoseNoAcknowledgedRecord: with every budget far below
// what the load keeps in flight (256 KiB of requests, fetch answers and
// read cache against 8 MiB produced by two concurrent producers while a
// consumer reads), producers and the consumer wait, and every
// acknowledged record comes back once, in order, with its value; nothing
// is left charged afterwards.
func TestSmallBudgetsLoseNoAcknowledgedRecord(t *testing.T) {
	ta := newParallelAgent(t, func(c *Config) {
		c.BufferBytes, c.FetchBufferBytes, c.CacheBytes = 256<<10, 256<<10, 256<<10
		c.FlushBytes = 64 << 10
	})
	const parts, producers, perProducer = 4, 2, 4096
	setup := ta.client(t)
	ta.createTopic(t, setup, "small", parts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Each value is its producer, its sequence number and 1 KiB of filler,
	// so the consumer can check every record's identity and bytes.
	value := func(p, i int) []byte {
		v := make([]byte, 1024)
		binary.BigEndian.PutUint32(v, uint32(p))
		binary.BigEndian.PutUint32(v[4:], uint32(i))
		for j := 8; j < len(v); j++ {
			v[j] = byte(p*31 + i + j)
		}
		return v
	}
	var wg sync.WaitGroup
	errs := make(chan error, producers+1)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := ta.client(t, kgo.DefaultProduceTopic("small"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			for i := range perProducer {
				r := &kgo.Record{Partition: int32(i % parts), Key: []byte(fmt.Sprint(p)), Value: value(p, i)}
				cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
					if err != nil {
						errs <- fmt.Errorf("producer %d record %d: %w", p, i, err)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				errs <- err
			}
		}()
	}

	// next[p][partition] is the next sequence number expected from
	// producer p in that partition (each producer's records of one
	// partition arrive in the order sent).
	next := make([][parts]int, producers)
	for p := range next {
		for part := range parts {
			next[p][part] = part
		}
	}
	consumer := ta.client(t, kgo.ConsumeTopics("small"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for n := 0; n < producers*perProducer; {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d of %d records consumed: %v", n, producers*perProducer, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		for _, r := range fs.Records() {
			p, i := int(binary.BigEndian.Uint32(r.Value)), int(binary.BigEndian.Uint32(r.Value[4:]))
			if p >= producers || string(r.Key) != fmt.Sprint(p) || i != next[p][r.Partition] || string(r.Value) != string(value(p, i)) {
				t.Fatalf("partition %d offset %d: producer %d record %d (key %q), want record %d", r.Partition, r.Offset, p, i, r.Key, next[p][r.Partition])
			}
			next[p][r.Partition] += parts
			n++
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// The budgets were full: producers waited for room.
	if w := testutil.ToFloat64(ta.metrics.backpressureWaits); w == 0 {
		t.Fatal("no producer waited for buffer room: the budgets were never full")
	}
	waitFor(t, func() bool { return ta.fetchBudget.InUse() == 0 })
	if got := ta.cache.Stats().Bytes; got > 256<<10 {
		t.Fatalf("read cache holds %d bytes, over its 256 KiB", got)
	}
}
