package agent

import (
	"encoding/binary"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/storage/faulty"
	"floe/storage/mem"
)

// TestAcksZeroFrameHeldUntilStored: an acks=0 produce is answered (with
// nothing) at once, but its batch still aliases the request frame until
// the PUT of its object has read it; the frame used to leave the request
// budget with the answer, so memory held by acks=0 producers went
// uncounted. Now the frame is charged through the PUT, and the budget is
// empty once the flush is done.
func TestAcksZeroFrameHeldUntilStored(t *testing.T) {
	t.Parallel()
	bucket := &faulty.Bucket{Bucket: mem.New(), Latency: 300 * time.Millisecond}
	ta := newTestAgent(t, bucket, func(c *Config) { c.FlushInterval = time.Hour })
	cl := ta.client(t)
	ta.createTopic(t, cl, "acks0", 1)

	batch := testBatch(t, 3)
	req := kmsg.NewPtrProduceRequest()
	req.Acks = 0
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "acks0"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// franz-go answers acks=0 only through its producer; write the frame
	// by hand: Produce v8 (request header v1), as a client would.
	req.Version = 8
	body := req.AppendTo(nil)
	frame := binary.BigEndian.AppendUint32(nil, uint32(2+2+4+2+len(body)))
	frame = binary.BigEndian.AppendUint16(frame, uint16(kmsg.Produce))
	frame = binary.BigEndian.AppendUint16(frame, 8)
	frame = binary.BigEndian.AppendUint32(frame, 1)      // correlation id
	frame = binary.BigEndian.AppendUint16(frame, 0xffff) // null client id
	frame = append(frame, body...)
	nc, err := net.Dial("tcp", ta.KafkaAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s (request budget in use: %d)", what, ta.reqBudget.InUse())
			}
			time.Sleep(time.Millisecond)
		}
	}
	pending := func() int64 {
		ta.batcher.mu.Lock()
		defer ta.batcher.mu.Unlock()
		return ta.batcher.pending
	}
	waitFor("the batch is pending", func() bool { return pending() == int64(len(batch)) })
	// Answered, not yet flushed: the frame (larger than its batch) is
	// still charged.
	time.Sleep(20 * time.Millisecond)
	if got := ta.reqBudget.InUse(); got <= int64(len(batch)) {
		t.Fatalf("request budget holds %d bytes while an acks=0 batch of %d is pending, want its whole frame", got, len(batch))
	}

	ta.batcher.cut(0)
	// During the slow PUT the frame is still charged: the PUT reads the
	// batch from it.
	time.Sleep(100 * time.Millisecond)
	if got, want := ta.reqBudget.InUse(), int64(len(frame)-4); got != want {
		t.Fatalf("request budget holds %d bytes during the PUT, want the frame's %d", got, want)
	}
	waitFor("the flush is done and the budget empty", func() bool {
		ta.batcher.mu.Lock()
		defer ta.batcher.mu.Unlock()
		return ta.batcher.buffered == 0 && ta.reqBudget.InUse() == 0
	})
}

// TestFailedPutSpoilsFrames: after a failed PUT (whose HTTP transport may
// still be reading the body) the frames the object was made of are
// released from the budget but never recycled for another request; after
// a successful one they are.
func TestFailedPutSpoilsFrames(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	bucket := &faulty.Bucket{Bucket: mem.New(), BeforePut: func(string) error {
		if fail.Load() {
			return errors.New("injected put failure")
		}
		return nil
	}}
	ta := newTestAgent(t, bucket, func(c *Config) { c.FlushInterval = 10 * time.Millisecond })
	// One attempt per record: the failing produce ends with its first
	// KAFKA_STORAGE_ERROR instead of retrying.
	cl := ta.client(t, kgo.RecordRetries(0), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	ta.createTopic(t, cl, "spoil", 1)
	big := make([]byte, 100<<10) // frames over 4 KiB are pooled
	produce := func() error {
		return cl.ProduceSync(t.Context(), &kgo.Record{Topic: "spoil", Value: big}).FirstErr()
	}
	pooled := ta.batcher.bufs.Held

	if err := produce(); err != nil {
		t.Fatal(err)
	}
	// The connection's reference goes once the answer is written.
	for deadline := time.Now().Add(5 * time.Second); pooled() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a stored produce frame was not recycled")
		}
	}
	// Empty the pool, then fail every PUT: the failed produce's frame must
	// not come back.
	ta.batcher.bufs.Clear()
	fail.Store(true)
	if err := produce(); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce with every PUT failing: %v, want KAFKA_STORAGE_ERROR", err)
	}
	time.Sleep(50 * time.Millisecond) // the connection's reference goes with the answer
	if n := pooled(); n != 0 {
		t.Fatalf("%d bytes of frames recycled after failed PUTs", n)
	}
	if n := ta.reqBudget.InUse(); n != 0 {
		t.Fatalf("request budget holds %d bytes after the failed flushes", n)
	}
}

func TestFlushDelay(t *testing.T) {
	t.Parallel()
	iv := 250 * time.Millisecond
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		name    string
		lastCut time.Time
		now     time.Time
		want    time.Duration
	}{
		{"first object", time.Time{}, t0, iv},
		{"after a pause", t0, t0.Add(time.Second), iv},
		{"exactly one interval after", t0, t0.Add(iv), iv},
		{"continuous: one interval after the last cut", t0, t0.Add(95 * time.Millisecond), 155 * time.Millisecond},
		{"continuous, right after a cut", t0, t0.Add(time.Microsecond), iv - time.Microsecond},
		{"continuous, at the end of the interval: the request's other partitions join", t0, t0.Add(iv - 10*time.Microsecond), minFlushDelay},
		{"clock stepped back", t0, t0.Add(-time.Second), iv},
	} {
		if got := flushDelay(iv, c.lastCut, c.now); got != c.want {
			t.Errorf("%s: flushDelay = %v, want %v", c.name, got, c.want)
		}
	}
}
