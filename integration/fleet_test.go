package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestScaleOutAndDrainUnderLoad runs a fleet the way an autoscaler does, on
// PostgreSQL and MinIO with real agent processes: one agent under a
// producer and a consumer group, scaled out to three, then the first one
// (the clients' only seed, and the coordinator of whatever it coordinated)
// stopped with SIGTERM while the load goes on. No produce callback may
// fail (franz-go retries retriable errors itself, so a failed callback
// means a client saw worse), the drained agent must exit cleanly, every
// acknowledged record must be stored at its offset, and the group must
// have received every one of them.
func TestScaleOutAndDrainUnderLoad(t *testing.T) {
	c := newCluster(t, "floe_fleet")
	ctx := testContext(t, 5*time.Minute)
	first := c.startAgent(t)
	const topic, partitions = "fleet", 12

	// Clients refresh metadata every second, so that they notice the new
	// agents without waiting for an error (franz-go's default is 5 min).
	opts := []kgo.Opt{kgo.SeedBrokers(first.Addr), kgo.MetadataMaxAge(time.Second),
		kgo.MetadataMinAge(100 * time.Millisecond)}
	adm, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	createTopic(t, ctx, adm, topic, partitions, nil)

	// The group: two members, recording what they receive.
	var gotMu sync.Mutex
	got := map[string]bool{}
	cctx, stopConsumers := context.WithCancel(ctx)
	var consumers sync.WaitGroup
	for i := range 2 {
		cl, err := kgo.NewClient(append(opts, kgo.ConsumerGroup("fleet-g"), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		consumers.Add(1)
		go func() {
			defer consumers.Done()
			defer cl.Close()
			for cctx.Err() == nil {
				fs := cl.PollFetches(cctx)
				fs.EachError(func(tp string, p int32, err error) {
					if cctx.Err() == nil {
						t.Logf("consumer %d: fetch %s/%d: %v", i, tp, p, err)
					}
				})
				gotMu.Lock()
				fs.EachRecord(func(r *kgo.Record) { got[string(r.Key)] = true })
				gotMu.Unlock()
			}
		}()
	}

	// The producer: idempotent (franz-go's default), acks=all, one record
	// every few hundred microseconds until told to stop.
	pcl, err := kgo.NewClient(append(opts, kgo.ProducerLinger(5*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	type ack struct {
		key       string
		partition int32
		offset    int64
		value     string
	}
	var ackMu sync.Mutex
	var acks []ack
	var produceErrs []error
	stopProducing := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; ; i++ {
			select {
			case <-stopProducing:
				if err := pcl.Flush(ctx); err != nil {
					ackMu.Lock()
					produceErrs = append(produceErrs, err)
					ackMu.Unlock()
				}
				return
			default:
			}
			key := "k" + strconv.Itoa(i)
			value := strings.Repeat(fmt.Sprintf("v%d.", i), 20)
			pcl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value)}, func(r *kgo.Record, err error) {
				ackMu.Lock()
				defer ackMu.Unlock()
				if err != nil {
					produceErrs = append(produceErrs, fmt.Errorf("record %s: %w", key, err))
					return
				}
				acks = append(acks, ack{key, r.Partition, r.Offset, value})
			})
			if i%50 == 49 {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	ackedNow := func() int {
		ackMu.Lock()
		defer ackMu.Unlock()
		return len(acks)
	}
	waitAcked := func(n int, what string) {
		t.Helper()
		for ackedNow() < n {
			if ctx.Err() != nil {
				t.Fatalf("%s: %d of %d records acknowledged before timeout", what, ackedNow(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	waitAcked(5_000, "one agent")
	t.Logf("scaling out to three agents after %d acknowledged records", ackedNow())
	second, third := c.startAgent(t), c.startAgent(t)
	waitFor(t, 30*time.Second, "the first agent lists three brokers", func() bool {
		return len(nodeIDs(t, ctx, []string{first.Addr})) == 3
	})
	waitAcked(ackedNow()+10_000, "three agents")

	t.Logf("draining the first agent (SIGTERM) after %d acknowledged records", ackedNow())
	start := time.Now()
	first.Stop()
	t.Logf("first agent exited %v after SIGTERM, status %v", time.Since(start).Round(time.Millisecond), first.cmd.ProcessState)
	if code := first.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("drained agent exited with %d:\n%s", code, first.Log())
	}
	if !strings.Contains(first.Log(), "draining") {
		t.Fatalf("the first agent did not drain (not alone, it should have):\n%s", first.Log())
	}
	waitAcked(ackedNow()+10_000, "after the drain")
	close(stopProducing)
	<-produced

	ackMu.Lock()
	errs, all := produceErrs, acks
	ackMu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("%d produce callbacks failed, first: %v", len(errs), errs[0])
	}

	// The group received every acknowledged record.
	waitFor(t, 2*time.Minute, "the group to receive every acknowledged record", func() bool {
		gotMu.Lock()
		defer gotMu.Unlock()
		for _, a := range all {
			if !got[a.key] {
				return false
			}
		}
		return true
	})
	stopConsumers()
	consumers.Wait()

	// And each is stored at the offset it was acknowledged with.
	ends := map[int32]int64{}
	for _, a := range all {
		ends[a.partition] = max(ends[a.partition], a.offset+1)
	}
	stored, err := readAll(ctx, second.Addr, topic, ends)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range all {
		rs := stored[a.partition]
		if a.offset >= int64(len(rs)) || string(rs[a.offset].Key) != a.key || string(rs[a.offset].Value) != a.value {
			t.Fatalf("acknowledged record %s (%d/%d) is not stored there", a.key, a.partition, a.offset)
		}
	}
	t.Logf("%d records acknowledged across scale-out and drain, all stored and consumed by the group (third agent %s)", len(all), third.Addr)
}
