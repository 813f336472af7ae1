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

func TestPoolClass(t *testing.T) {
	for _, n := range []int{0, 1, 1<<poolMinShift - 1, 1 << poolMinShift} {
		if c, _ := poolClass(n); c != -1 {
			t.Errorf("poolClass(%d) = class %d, want unpooled", n, c)
		}
	}
	prevClass, prevSize := -1, 0
	for n := 1<<poolMinShift + 1; n <= 1<<30; n += n/7 + 1 {
		c, size := poolClass(n)
		if c < 0 || c >= poolClasses {
			t.Fatalf("poolClass(%d) = class %d, out of range", n, c)
		}
		if size < n || float64(size) > 1.25*float64(n)+1 {
			t.Fatalf("poolClass(%d) = capacity %d, want in [n, 1.25n]", n, size)
		}
		if c < prevClass || (c == prevClass && size != prevSize) || (c > prevClass && size <= prevSize) {
			t.Fatalf("poolClass(%d) = (%d, %d) after (%d, %d): classes not monotonic", n, c, size, prevClass, prevSize)
		}
		// A buffer of the class's capacity is in the same class, so put
		// files it where get looks.
		if c2, size2 := poolClass(size); c2 != c || size2 != size {
			t.Fatalf("poolClass(%d) = (%d, %d), but its capacity maps to (%d, %d)", n, c, size, c2, size2)
		}
		prevClass, prevSize = c, size
	}
}

func TestBufPoolReusesAndStaysBounded(t *testing.T) {
	p := newBufPool(3 << 20)
	a := p.get(1<<20 + 5)
	if len(a) != 1<<20+5 {
		t.Fatalf("len %d, want %d", len(a), 1<<20+5)
	}
	p.put(a)
	b := p.get(1<<20 + 100) // same class
	if &b[0] != &a[0] {
		t.Fatal("a buffer of the same class was not reused")
	}
	// A larger free buffer (up to twice the size) serves a smaller request.
	p.put(b)
	c := p.get(600 << 10)
	if &c[0] != &a[0] || len(c) != 600<<10 {
		t.Fatal("a free buffer of a class up to twice the size was not reused")
	}
	p.put(c)
	if d := p.get(300 << 10); &d[0] == &a[0] {
		t.Fatal("a free buffer over twice the size was handed out")
	}
	b = p.get(1<<20 + 100)
	// Past max, returned buffers are dropped rather than kept.
	bufs := [][]byte{b, p.get(1 << 20), p.get(1 << 20), p.get(1 << 20), p.get(1 << 20)}
	for _, x := range bufs {
		p.put(x)
	}
	if p.held > p.max {
		t.Fatalf("pool keeps %d bytes, more than its max %d", p.held, p.max)
	}
	// Foreign and small buffers are not kept.
	held := p.held
	p.put(make([]byte, 100))
	p.put(make([]byte, 1<<20+3))
	if p.held != held {
		t.Fatalf("pool kept a buffer it did not hand out: %d -> %d bytes", held, p.held)
	}
}

func TestHeldFrameReleasedByLastReference(t *testing.T) {
	budget := newByteBudget(1 << 20)
	never := func() bool { return false }
	if !budget.acquire(1000, never) {
		t.Fatal("acquire refused")
	}
	h := newHeldFrame(budget, nil, make([]byte, 1000), 1000)
	h.ref()
	h.ref()
	h.unref()
	h.unref()
	if budget.inUse() != 1000 {
		t.Fatalf("in use %d with one reference left, want 1000", budget.inUse())
	}
	h.unref()
	if budget.inUse() != 0 {
		t.Fatalf("in use %d after the last reference, want 0", budget.inUse())
	}
}

// TestAcksZeroFrameHeldUntilStored: an acks=0 produce is answered (with
// nothing) at once, but its batch still aliases the request frame until
// the PUT of its object has read it; the frame used to leave the request
// budget with the answer, so memory held by acks=0 producers went
// uncounted. Now the frame is charged through the PUT, and the budget is
// empty once the flush is done.
func TestAcksZeroFrameHeldUntilStored(t *testing.T) {
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
				t.Fatalf("timed out waiting until %s (request budget in use: %d)", what, ta.reqBudget.inUse())
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
	if got := ta.reqBudget.inUse(); got <= int64(len(batch)) {
		t.Fatalf("request budget holds %d bytes while an acks=0 batch of %d is pending, want its whole frame", got, len(batch))
	}

	ta.batcher.cut(0)
	// During the slow PUT the frame is still charged: the PUT reads the
	// batch from it.
	time.Sleep(100 * time.Millisecond)
	if got, want := ta.reqBudget.inUse(), int64(len(frame)-4); got != want {
		t.Fatalf("request budget holds %d bytes during the PUT, want the frame's %d", got, want)
	}
	waitFor("the flush is done and the budget empty", func() bool {
		ta.batcher.mu.Lock()
		defer ta.batcher.mu.Unlock()
		return ta.batcher.buffered == 0 && ta.reqBudget.inUse() == 0
	})
}

// TestFailedPutSpoilsFrames: after a failed PUT (whose HTTP transport may
// still be reading the body) the frames the object was made of are
// released from the budget but never recycled for another request; after
// a successful one they are.
func TestFailedPutSpoilsFrames(t *testing.T) {
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
	pooled := func() int64 {
		p := ta.batcher.bufs
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.held
	}

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
	p := ta.batcher.bufs
	p.mu.Lock()
	p.free, p.held = [poolClasses][][]byte{}, 0
	p.mu.Unlock()
	fail.Store(true)
	if err := produce(); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce with every PUT failing: %v, want KAFKA_STORAGE_ERROR", err)
	}
	time.Sleep(50 * time.Millisecond) // the connection's reference goes with the answer
	if n := pooled(); n != 0 {
		t.Fatalf("%d bytes of frames recycled after failed PUTs", n)
	}
	if n := ta.reqBudget.inUse(); n != 0 {
		t.Fatalf("request budget holds %d bytes after the failed flushes", n)
	}
}

func TestFlushDelay(t *testing.T) {
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

// TestBufPoolFullMakesRoomForLarger: a full pool drops smaller idle
// buffers to keep a larger one, but never drops any for nothing.
func TestBufPoolFullMakesRoomForLarger(t *testing.T) {
	p := newBufPool(4 << 20)
	small := [][]byte{p.get(1 << 20), p.get(1 << 20), p.get(1 << 20), p.get(1 << 20)}
	for _, b := range small {
		p.put(b)
	}
	if p.held != 4<<20 {
		t.Fatalf("pool holds %d bytes, want the four 1 MiB buffers", p.held)
	}
	big := p.get(2 << 20) // over twice 1 MiB: a fresh buffer
	if &big[0] == &small[3][0] {
		t.Fatal("a 1 MiB buffer was handed out for 2 MiB")
	}
	p.put(big)
	if p.held != 4<<20 || len(p.free[c2(t, 2<<20)]) != 1 {
		t.Fatalf("pool holds %d bytes and %d 2 MiB buffers, want the 2 MiB one kept in place of two 1 MiB ones", p.held, len(p.free[c2(t, 2<<20)]))
	}
	if b := p.get(2 << 20); &b[0] != &big[0] {
		t.Fatal("the kept 2 MiB buffer was not reused")
	}
	// Room is made with as few smaller buffers as it takes (one 1 MiB for
	// 3 MiB, as 2 MiB are held), and none are dropped for nothing: the
	// 2 MiB buffer cannot be kept beside the 3 MiB one with 1 MiB.
	huge := p.get(3 << 20)
	p.put(huge)
	if p.held != 4<<20 || len(p.free[c2(t, 1<<20)]) != 1 || len(p.free[c2(t, 3<<20)]) != 1 {
		t.Fatalf("pool holds %d bytes, %d 1 MiB and %d 3 MiB buffers, want one of each", p.held,
			len(p.free[c2(t, 1<<20)]), len(p.free[c2(t, 3<<20)]))
	}
	p.put(big)
	if p.held != 4<<20 || len(p.free[c2(t, 1<<20)]) != 1 || len(p.free[c2(t, 2<<20)]) != 0 {
		t.Fatalf("pool holds %d bytes, %d 1 MiB and %d 2 MiB buffers, want the 1 MiB kept and the 2 MiB dropped", p.held,
			len(p.free[c2(t, 1<<20)]), len(p.free[c2(t, 2<<20)]))
	}
}

func c2(t *testing.T, n int) int {
	c, _ := poolClass(n)
	if c < 0 {
		t.Fatalf("%d bytes: not pooled", n)
	}
	return c
}
