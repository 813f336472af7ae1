package agent

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waitUntil(ctx, t, "condition (10 s)", cond)
}

// waitUntil polls cond until it holds, failing the test if ctx ends first.
func waitUntil(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// produceAndFetch checks that a fresh client is served: it produces n
// records to topic partition 0 and reads them back, within 15 s.
func produceAndFetch(t *testing.T, ta *testAgent, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cl := ta.client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	ta.createTopic(t, cl, topic, 1)
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce while another connection misbehaves: %v", err)
		}
	}
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("fetch while another connection misbehaves: got %d of %d records: %v", len(got), n, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		if want := fmt.Sprintf("v%d", i); v != want {
			t.Fatalf("record %d is %q, want %q", i, v, want)
		}
	}
}

// TestFrameClaimDoesNotStallOthers: a 4-byte length claiming 64 MiB, then
// two bytes and silence (or one byte a second) used to reserve 64 MiB of the
// shared request budget at once and leave every other client unanswered for
// as long as the connection was held.
func TestFrameClaimDoesNotStallOthers(t *testing.T) {
	t.Parallel()
	for _, trickle := range []bool{false, true} {
		t.Run(fmt.Sprintf("trickle=%v", trickle), func(t *testing.T) {
			ta := newTestAgent(t, nil)
			hostile, err := net.Dial("tcp", ta.KafkaAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer hostile.Close()
			claim := binary.BigEndian.AppendUint32(nil, 64<<20)
			if _, err := hostile.Write(append(claim, 0, 0)); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			defer close(stop)
			if trickle {
				go func() {
					tick := time.NewTicker(time.Second)
					defer tick.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
							hostile.Write([]byte{0})
						}
					}
				}()
			}
			waitFor(t, func() bool { return ta.reqBudget.InUse() > 0 }) // the claim is being read
			produceAndFetch(t, ta, "others", 20)
			if held := ta.reqBudget.InUse(); held > 2*frameStart {
				t.Fatalf("a frame with 2 bytes of its body sent holds %d bytes of the request budget", held)
			}
		})
	}
}

// TestFrameNoLargerThanSentTakesOneBuffer: a frame no larger than one its
// connection already sent whole is charged and allocated whole at once (a
// producer's frames were grown from 128 KiB, each copied up to a third more
// than its size), while a first frame still holds only what has arrived
// (TestFrameClaimDoesNotStallOthers).
func TestFrameNoLargerThanSentTakesOneBuffer(t *testing.T) {
	ta := newParallelAgent(t)
	c, err := net.Dial("tcp", ta.KafkaAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks = 9, 1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "absent"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = make([]byte, 700<<10)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrProduceResponse()
	rawRequest(t, c, req, resp)
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("produce to an absent topic answered %+v", resp.Topics)
	}
	waitFor(t, func() bool { return ta.reqBudget.InUse() == 0 })
	const next = 600 << 10
	if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, next), 0, 0)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return ta.reqBudget.InUse() > 0 })
	if held := ta.reqBudget.InUse(); held != next {
		t.Fatalf("a %d-byte frame after a larger one holds %d bytes, want all of it at once", next, held)
	}
}

// TestPartialFrameTimesOut: a frame that does not arrive whole within
// RequestReadTimeout of its first byte closes its connection, and its
// budget comes back.
func TestPartialFrameTimesOut(t *testing.T) {
	ta := newParallelAgent(t, func(c *Config) { c.RequestReadTimeout = 300 * time.Millisecond })
	c, err := net.Dial("tcp", ta.KafkaAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(append(binary.BigEndian.AppendUint32(nil, 1<<20), 0, 18))
	expectClosedBy(t, c, 10*time.Second)
	waitFor(t, func() bool { return ta.reqBudget.InUse() == 0 })
	if n := counterValue(t, ta.metrics.limitHits.WithLabelValues("request.read.timeout")); n != 1 {
		t.Fatalf("request.read.timeout hits %v, want 1", n)
	}
}

// expectClosedBy fails unless the peer closes c within d.
func expectClosedBy(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("connection not closed by the agent: %v", err)
	}
}

// rawRequest sends req on c and reads its answer's body (after the
// correlation id) as resp.
func rawRequest(t *testing.T, c net.Conn, req kmsg.Request, resp kmsg.Response) {
	t.Helper()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 7)); err != nil {
		t.Fatal(err)
	}
	var sz [4]byte
	if _, err := io.ReadFull(c, sz[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatal(err)
	}
	resp.SetVersion(req.GetVersion())
	skip := 4
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		skip++ // empty response header tags
	}
	if err := resp.ReadFrom(body[skip:]); err != nil {
		t.Fatal(err)
	}
}

// TestIdleConnectionClosed: connections that send nothing were never
// closed (none within 120 s). Now one idle for ConnectionsMaxIdle is; one
// waiting for a long-poll answer longer than that is not.
func TestIdleConnectionClosed(t *testing.T) {
	ta := newParallelAgent(t, func(c *Config) { c.ConnectionsMaxIdle = 300 * time.Millisecond })
	idle, err := net.Dial("tcp", ta.KafkaAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	cl := ta.client(t)
	ta.createTopic(t, cl, "idle", 1)

	busy, err := net.Dial("tcp", ta.KafkaAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 1500, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "idle"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrFetchResponse()
		rawRequest(t, busy, req, resp)
		if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Errorf("long poll answer %+v", resp.Topics)
		}
	}()
	expectClosedBy(t, idle, 10*time.Second)
	wg.Wait()
	// The long-poll connection stays usable right after its answer.
	req := kmsg.NewPtrApiVersionsRequest()
	rawRequest(t, busy, req, kmsg.NewPtrApiVersionsResponse())
	if n := counterValue(t, ta.metrics.limitHits.WithLabelValues("connections.max.idle.ms")); n < 1 {
		t.Fatal("idle close not counted")
	}
}

// TestConnectionLimitsHold: 10,000 connections from one address against an
// agent with a per-address limit; it stays up and answers others.
func TestConnectionLimitsHold(t *testing.T) {
	ta := newParallelAgent(t, func(c *Config) { c.MaxConnectionsPerIP = 50 })
	flood := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for i := range 10_000 {
		c, err := flood.Dial("tcp", ta.KafkaAddr())
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		if i < 50 {
			open = append(open, c) // kept open: these count against the limit
			continue
		}
		c.Close()
	}
	// The 51st from the same address is closed at once.
	extra, err := flood.Dial("tcp", ta.KafkaAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	expectClosedBy(t, extra, 10*time.Second)
	// Another address is served meanwhile (the client dials from 127.0.0.1).
	produceAndFetch(t, ta, "limits", 10)
	if n := counterValue(t, ta.metrics.limitHits.WithLabelValues("max.connections.per.ip")); n < 1 {
		t.Fatal("per-address refusals not counted")
	}
	ta.connMu.Lock()
	got := ta.connsPerIP["127.0.0.2"]
	ta.connMu.Unlock()
	if got > 50 {
		t.Fatalf("%d connections open from one address, limit 50", got)
	}
}

// TestMaxConnections: past max.connections new connections are closed.
func TestMaxConnections(t *testing.T) {
	ta := newParallelAgent(t, func(c *Config) { c.MaxConnections = 3 })
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", ta.KafkaAddr())
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
		rawRequest(t, c, kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrApiVersionsResponse())
	}
	c, err := net.Dial("tcp", ta.KafkaAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	expectClosedBy(t, c, 10*time.Second)
	open[0].Close()
	waitFor(t, func() bool { ta.connMu.Lock(); defer ta.connMu.Unlock(); return len(ta.conns) < 3 })
	c2, err := net.Dial("tcp", ta.KafkaAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	rawRequest(t, c2, kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrApiVersionsResponse())
}

// TestFetchAnswerCapped: a Fetch asking for max_bytes 2^31-1 over more data
// than fetch.max.bytes used to build one answer of everything (575 MB over
// 576 MB of data). The answer is capped, except that a first batch larger
// than the cap comes whole (KIP-74), and the fetch budget is returned.
func TestFetchAnswerCapped(t *testing.T) {
	t.Parallel()
	const capBytes = 256 << 10
	ta := newTestAgent(t, nil, func(c *Config) { c.FetchMaxBytes = capBytes })
	cl := ta.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("capped"),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(10_000), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ta.createTopic(t, cl, "capped", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// One large record (a 400 KiB batch), then 2 MiB in small ones.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 400<<10)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	small := ta.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("capped"),
		kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var rs []*kgo.Record
	for range 2048 {
		rs = append(rs, &kgo.Record{Value: make([]byte, 1024)})
	}
	if err := small.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fetch := func(offset int64) []byte {
		c, err := net.Dial("tcp", ta.KafkaAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 100, 1, 1<<31-1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "capped"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<31-1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrFetchResponse()
		rawRequest(t, c, req, resp)
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Fatal(err)
		}
		return p.RecordBatches
	}
	if got := fetch(0); len(got) < 400<<10 || len(got) > 401<<10 {
		t.Fatalf("first fetch returned %d bytes, want the whole 400 KiB batch alone", len(got))
	}
	got := fetch(1)
	if len(got) == 0 || len(got) > capBytes {
		t.Fatalf("fetch of max_bytes 2^31-1 returned %d bytes, cap %d", len(got), capBytes)
	}
	if n := counterValue(t, ta.metrics.limitHits.WithLabelValues("fetch.max.bytes")); n != 2 {
		t.Fatalf("fetch.max.bytes hits %v, want 2", n)
	}
	waitFor(t, func() bool { return ta.fetchBudget.InUse() == 0 })
}

// TestFetchBudgetBoundsAnswers: concurrent consumers of more data than the
// fetch budget are all answered, the budget is never overdrawn by more than
// one answer's first partition, and nothing is left charged afterwards.
func TestFetchBudgetBoundsAnswers(t *testing.T) {
	t.Parallel()
	const budget = 512 << 10
	ta := newTestAgent(t, nil, func(c *Config) { c.FetchBufferBytes = budget })
	cl := ta.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("budget"))
	ta.createTopic(t, cl, "budget", 8)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var rs []*kgo.Record
	for i := range 4096 {
		rs = append(rs, &kgo.Record{Partition: int32(i % 8), Value: make([]byte, 1024)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var peak int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			peak = max(peak, ta.fetchBudget.InUse())
			time.Sleep(100 * time.Microsecond)
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := kgo.NewClient(kgo.SeedBrokers(ta.KafkaAddr()), kgo.ConsumeTopics("budget"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(200<<20), kgo.FetchMaxPartitionBytes(200<<20), kgo.BrokerMaxReadBytes(256<<20))
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			n := 0
			for n < len(rs) {
				fs := c.PollFetches(ctx)
				if ctx.Err() != nil {
					errs <- fmt.Errorf("consumed %d of %d: %w", n, len(rs), ctx.Err())
					return
				}
				n += fs.NumRecords()
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Each waiting answer's first partition may be admitted alone when the
	// budget is empty; beyond that the budget holds.
	if peak > budget+(256<<10) {
		t.Fatalf("fetch budget peaked at %d, limit %d", peak, budget)
	}
	waitFor(t, func() bool { return ta.fetchBudget.InUse() == 0 })
}
