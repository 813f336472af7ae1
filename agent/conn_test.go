package agent

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
)

// TestPipelinedAnswerNotHeldBack: the answer to a pipelined request goes out
// as soon as it is ready, not once a later request on the same connection
// is answered too. Here a Fetch long-polls for a second and a Produce
// pipelined behind it waits for its flush (ten minutes away); the Fetch's
// answer must reach the client meanwhile. A writer that flushed only when
// no request was queued held it until the Produce was answered, adding a
// flush interval to every pipelining producer's acknowledgements.
func TestPipelinedAnswerNotHeldBack(t *testing.T) {
	ta := newParallelAgent(t, func(c *Config) { c.FlushInterval = 10 * time.Minute })
	const topic = "pipelined"
	ta.createTopic(t, ta.client(t), topic, 1)

	fetch := fetchReq(metadata.Topic{Name: topic}, 0)
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes = 4, 1000, 1
	produce := kmsg.NewPtrProduceRequest()
	produce.Version = 7
	produce.Acks, produce.TimeoutMillis = -1, 60_000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = testBatch(t, 3)
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)

	rc := dialRaw(t, ta)
	rf := kmsg.NewRequestFormatter(kmsg.FormatterClientID("pipelined"))
	// One write, so that the Produce is queued behind the Fetch at once.
	// (AppendRequest writes its size prefix at the start of dst: one frame
	// per call.)
	frames := append(rf.AppendRequest(nil, fetch, 1), rf.AppendRequest(nil, produce, 2)...)
	if _, err := rc.c.Write(frames); err != nil {
		t.Fatal(err)
	}
	corr, body, err := rc.read()
	if err != nil {
		t.Fatalf("no answer to the Fetch while the Produce behind it waits for its flush: %v", err)
	}
	if corr != 1 {
		t.Fatalf("first answer has correlation id %d, want the Fetch's 1", corr)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 4
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("fetch answer %+v", resp)
	}
}

// TestIdleConnectionsHoldNoBuffers: a connection holds a write buffer only
// while it writes answers, and a read buffer until it has sent nothing for
// readerIdle. Each one used to keep its own 16 KiB buffers (and a scratch
// as large as its largest answer) for its whole life: 5,000 idle
// connections held 160 MiB of heap. Between answers, and while a Fetch
// long-polls, the buffers are back in the pools; requests read and answers
// written after that still arrive whole.
func TestIdleConnectionsHoldNoBuffers(t *testing.T) {
	ta := newParallelAgent(t)
	const topic = "idle-buffers"
	ta.createTopic(t, ta.client(t), topic, 1)
	roundTrip := func(rc *rawConn, corr int32) {
		t.Helper()
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "idle", "1"
		rc.send(req, 3, corr)
		got, body, err := rc.read()
		if err != nil {
			t.Fatal(err)
		}
		if got != corr {
			t.Fatalf("answer has correlation id %d, want %d", got, corr)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 3
		if err := resp.ReadFrom(body); err != nil || resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
			t.Fatalf("ApiVersions answer %+v, %v", resp, err)
		}
	}
	held := func() (float64, float64) {
		return testutil.ToFloat64(ta.metrics.writeBuffers), testutil.ToFloat64(ta.metrics.readBuffers)
	}
	waitHeld := func(want float64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			w, r := held()
			if w == want && r == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%v connections hold a write buffer and %v a read buffer, want %v", w, r, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitHeld(0) // the test's admin client is idle too

	conns := make([]*rawConn, 20)
	for i := range conns {
		conns[i] = dialRaw(t, ta)
		roundTrip(conns[i], 1)
	}
	waitHeld(0)

	// A Fetch waiting for records that do not come holds no buffer either.
	fetch := fetchReq(metadata.Topic{Name: topic}, 0)
	fetch.MaxWaitMillis, fetch.MinBytes = 3000, 1
	conns[0].send(fetch, 4, 2)
	if n := testutil.ToFloat64(ta.metrics.connections); n < float64(len(conns)) {
		t.Fatalf("%v connections open, want at least %d", n, len(conns))
	}
	waitHeld(0)
	if _, _, err := conns[0].read(); err != nil {
		t.Fatal(err)
	}
	// Every connection writes again through a buffer taken anew.
	for _, c := range conns {
		roundTrip(c, 3)
	}
	waitHeld(0)
}
