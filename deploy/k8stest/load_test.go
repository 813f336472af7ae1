//go:build k8s

package k8stest

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// load is a producer (acks=all, idempotent) and a consumer group running against the agents
// for the whole test. Each record's value starts with its sequence number; a record counts
// as lost if its produce was acknowledged and no consumer ever saw it.
type load struct {
	t        *testing.T
	topic    string
	seeds    func() []string // current agent addresses, for clients made later
	producer *kgo.Client

	rate atomic.Int64 // records per second the producer aims at
	size atomic.Int64 // value bytes

	mu       sync.Mutex // guards the three below
	acked    map[uint64]struct{}
	failed   int
	consumed map[uint64]int // times seen (redeliveries after rebalances are allowed)

	sent      atomic.Uint64
	stopProd  context.CancelFunc
	prodDone  chan struct{}
	consumers []*kgo.Client
	consWG    sync.WaitGroup
	consStop  context.CancelFunc
}

const groupID = "k8s-test-group"

func startLoad(t *testing.T, topic string, seeds func() []string, consumers int) *load {
	t.Helper()
	l := &load{t: t, topic: topic, seeds: seeds, acked: map[uint64]struct{}{}, consumed: map[uint64]int{},
		prodDone: make(chan struct{})}
	l.rate.Store(100)
	l.size.Store(100)
	var err error
	l.producer, err = kgo.NewClient(kgo.SeedBrokers(seeds()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotence is franz-go's default with acks=all
		kgo.ProducerLinger(5*time.Millisecond), kgo.ClientID("k8s-test-producer"),
		kgo.MetadataMinAge(time.Second), kgo.MetadataMaxAge(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithCancel(context.Background())
	l.stopProd = pcancel
	go l.produce(pctx)

	cctx, ccancel := context.WithCancel(context.Background())
	l.consStop = ccancel
	for i := range consumers {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds()...), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID(fmt.Sprintf("k8s-test-consumer-%d", i)),
			kgo.MetadataMinAge(time.Second), kgo.MetadataMaxAge(5*time.Second),
			kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		l.consumers = append(l.consumers, cl)
		l.consWG.Add(1)
		go l.consume(cctx, cl)
	}
	t.Cleanup(func() {
		l.stopProducing()
		l.consStop()
		l.consWG.Wait()
		for _, cl := range l.consumers {
			cl.Close()
		}
		l.producer.Close()
	})
	return l
}

func (l *load) produce(ctx context.Context) {
	defer close(l.prodDone)
	var wg sync.WaitGroup
	defer wg.Wait()
	var seq uint64
	next := time.Now()
	for ctx.Err() == nil {
		rate := l.rate.Load()
		if rate == 0 { // paused
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			next = time.Now()
			continue
		}
		next = next.Add(time.Second / time.Duration(rate))
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		} else if d < -time.Second {
			next = time.Now() // fell behind (a stall): do not burst to catch up
		}
		seq++
		v := make([]byte, max(8, l.size.Load()))
		binary.BigEndian.PutUint64(v, seq)
		r := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", seq%64)), Value: v}
		l.sent.Add(1)
		wg.Add(1)
		s := seq
		// Produce with the background context: stopping the loop must not cancel records
		// already handed over (they would count neither as acked nor lost).
		l.producer.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			l.mu.Lock()
			defer l.mu.Unlock()
			if err != nil {
				l.failed++
				return
			}
			l.acked[s] = struct{}{}
		})
	}
}

// stopProducing stops the producer and waits (two minutes at most) until every record it
// sent has its answer.
func (l *load) stopProducing() {
	l.stopProd()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := l.producer.Flush(ctx); err != nil {
		// Records still unanswered fail when the producer is closed (cleanup).
		l.t.Errorf("producer flush: %v", err)
		return
	}
	<-l.prodDone
}

func (l *load) consume(ctx context.Context, cl *kgo.Client) {
	defer l.consWG.Done()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) {
			if ctx.Err() == nil {
				l.t.Logf("consumer: fetch %s/%d: %v", topic, p, err)
			}
		})
		l.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) >= 8 {
				l.consumed[binary.BigEndian.Uint64(r.Value)]++
			}
		})
		l.mu.Unlock()
	}
}

// stats is what the load counted so far.
type stats struct {
	sent, acked, failed, consumed, dups, missing int
}

func (s stats) String() string {
	return fmt.Sprintf("sent %d, acked %d, failed %d, consumed %d distinct (%d redelivered), acked-not-consumed %d",
		s.sent, s.acked, s.failed, s.consumed, s.dups, s.missing)
}

func (l *load) stats() (stats, []uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := stats{sent: int(l.sent.Load()), acked: len(l.acked), failed: l.failed, consumed: len(l.consumed)}
	var missing []uint64
	for seq := range l.acked {
		if _, ok := l.consumed[seq]; !ok {
			missing = append(missing, seq)
		}
	}
	for _, n := range l.consumed {
		if n > 1 {
			s.dups += n - 1
		}
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
	s.missing = len(missing)
	return s, missing
}

// ackedSince reports how many records were acknowledged, for checking progress.
func (l *load) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// progress fails the test unless at least n more records are acknowledged within timeout
// (the producer keeps going through whatever the cluster is doing).
func (l *load) progress(n int, timeout time.Duration) {
	l.t.Helper()
	base := l.ackedCount()
	waitFor(l.t, fmt.Sprintf("%d more acknowledged records", n), timeout, 200*time.Millisecond, func() error {
		if got := l.ackedCount() - base; got < n {
			return fmt.Errorf("%d acknowledged", got)
		}
		return nil
	})
	s, _ := l.stats()
	l.t.Logf("  load: %v", s)
}

// finish stops producing and waits until the consumer group has seen every acknowledged
// record; it fails with the missing sequence numbers otherwise.
func (l *load) finish(timeout time.Duration) stats {
	l.t.Helper()
	l.stopProducing()
	deadline := time.Now().Add(timeout)
	for {
		s, missing := l.stats()
		if s.missing == 0 {
			return s
		}
		if time.Now().After(deadline) {
			if len(missing) > 20 {
				missing = missing[:20]
			}
			l.t.Fatalf("consumers did not finish: %v; first missing: %v", s, missing)
		}
		time.Sleep(time.Second)
	}
}

// verifyFromStart reads the whole topic with a fresh client (no group) and checks every
// acknowledged record is stored, independently of what the group consumed.
func (l *load) verifyFromStart(timeout time.Duration) int {
	l.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(l.seeds()...), kgo.ConsumeTopics(l.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		l.t.Fatal(err)
	}
	defer cl.Close()
	l.mu.Lock()
	want := make(map[uint64]struct{}, len(l.acked))
	for s := range l.acked {
		want[s] = struct{}{}
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	read := 0
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			l.t.Fatalf("reading the topic from the start: %d acknowledged records not found", len(want))
		}
		fs.EachRecord(func(r *kgo.Record) {
			read++
			if len(r.Value) >= 8 {
				delete(want, binary.BigEndian.Uint64(r.Value))
			}
		})
	}
	return read
}

// burn keeps workers ApiVersions requests in flight against the agents (each to a broker the
// client picks) until ctx ends, and returns how many were answered. It is CPU load for the
// HPA step: an agent's CPU here hardly grows with produced bytes.
func burn(ctx context.Context, seeds []string, workers int) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("k8s-test-cpu"),
		kgo.MetadataMinAge(time.Second), kgo.MetadataMaxAge(5*time.Second))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var n atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl); err == nil {
					n.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return n.Load(), nil
}
