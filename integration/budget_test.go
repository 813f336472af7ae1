package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"floe/internal/testpki"
)

// Issue 26: five connections that each started a 90 MiB Produce frame and
// left stopped floe dev for every client, because readers waiting for
// request budget never noticed their peers going, and a waiter holding
// nothing at the head of the line kept every holder waiting. These tests
// replay that, and its variants, against floe dev (32 MiB request budget)
// and an agent on PostgreSQL and MinIO (64 MiB): a new client's
// ApiVersions is answered within a second throughout, and the budget comes
// back to zero once the peers have gone.

const bigFrame = 90 << 20 // under --max-request-size (100 MiB)

// hostilePeer sends the start of a bigFrame Produce frame: up to upTo
// bytes of it, for at most sendFor (its writes block while floe reads
// nothing), then closes, as a client whose write timed out does. trickle
// sends one byte a second after the first MiB instead, until ctx ends.
type hostilePeer struct {
	sendFor time.Duration
	upTo    int
	trickle bool
	// tls, if set, connects with TLS.
	tls *tls.Config
}

func (h hostilePeer) run(ctx context.Context, t *testing.T, addr string, corr int32) {
	var c net.Conn
	var err error
	if h.tls != nil {
		c, err = tls.Dial("tcp", addr, h.tls)
	} else {
		c, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Errorf("hostile dial: %v", err)
		return
	}
	defer c.Close()
	hdr := binary.BigEndian.AppendUint32(nil, bigFrame)
	hdr = binary.BigEndian.AppendUint16(hdr, 0)            // Produce
	hdr = binary.BigEndian.AppendUint16(hdr, 7)            // v7
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(corr)) // correlation id
	hdr = binary.BigEndian.AppendUint16(hdr, 1)            // client id length
	hdr = append(hdr, 'x')                                 // client id
	c.SetWriteDeadline(time.Now().Add(h.sendFor))          //nolint:errcheck
	if _, err := c.Write(hdr); err != nil {
		return
	}
	sent := len(hdr) - 4
	chunk := make([]byte, 1<<20)
	limit := h.upTo
	if h.trickle {
		limit = 1 << 20
	}
	for sent < limit {
		m, err := c.Write(chunk[:min(len(chunk), limit-sent)])
		sent += m
		if err != nil {
			return
		}
	}
	if !h.trickle {
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			c.SetWriteDeadline(time.Now().Add(time.Second)) //nolint:errcheck
			if _, err := c.Write([]byte{0}); err != nil {
				return
			}
		}
	}
}

// apiVersionsAnswered opens a new connection, sends ApiVersions v0 and
// reports how long the answer's first bytes took (an error past limit).
func apiVersionsAnswered(addr string, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, limit)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(start.Add(limit))                //nolint:errcheck
	body := binary.BigEndian.AppendUint16(nil, 18) // ApiVersions
	body = binary.BigEndian.AppendUint16(body, 0)  // v0
	body = binary.BigEndian.AppendUint32(body, 1)  // correlation id
	body = binary.BigEndian.AppendUint16(body, 5)  // client id length
	body = append(body, "probe"...)                // client id
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if _, err := c.Write(append(frame, body...)); err != nil {
		return 0, err
	}
	var sz [4]byte
	if _, err := c.Read(sz[:]); err != nil {
		return time.Since(start), fmt.Errorf("no answer within %v: %w", limit, err)
	}
	return time.Since(start), nil
}

// probe asks for ApiVersions on a new connection every 100 ms until ctx
// ends and fails the test on any answer slower than a second.
func probe(ctx context.Context, t *testing.T, addr string) (stop func() (n int, slowest time.Duration)) {
	var wg sync.WaitGroup
	var n int
	var slowest time.Duration
	pctx, cancel := context.WithCancel(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for pctx.Err() == nil {
			took, err := apiVersionsAnswered(addr, time.Second)
			if err != nil {
				t.Errorf("a new client's ApiVersions beside large frames: %v", err)
				return
			}
			n++
			slowest = max(slowest, took)
			select {
			case <-pctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() (int, time.Duration) { cancel(); wg.Wait(); return n, slowest }
}

// waitHeldZero waits until floe holds no request bytes, within d.
func waitHeldZero(t *testing.T, p *proc, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		held := p.metric(t, "floe_agent_request_bytes_held")
		if held == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("floe still holds %v request bytes %v after the peers left", held, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hostileRound runs peers against addr with a prober beside them, and
// goodRecords produced and read back by a well-behaved client meanwhile
// (0: none).
func hostileRound(t *testing.T, p *proc, peers []hostilePeer, goodRecords int, topic string) {
	hostileRoundAt(t, p, p.Addr, peers, goodRecords, topic)
}

// hostileRoundAt is hostileRound with the peers on the listener at addr.
func hostileRoundAt(t *testing.T, p *proc, addr string, peers []hostilePeer, goodRecords int, topic string) {
	ctx := testContext(t, 2*time.Minute)
	stopProbe := probe(ctx, t, p.Addr)
	var wg sync.WaitGroup
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	for i, h := range peers {
		wg.Add(1)
		go func() { defer wg.Done(); h.run(hctx, t, addr, int32(i)) }()
	}
	if goodRecords > 0 {
		createTopicWith(t, ctx, p.Addr, topic, 1, nil)
		produceAndReadBack(t, ctx, p.Addr, topic, goodRecords)
	}
	wg.Wait()
	gone := time.Now()
	// The peers have closed: what their frames held comes back without
	// waiting for --request-read-timeout (30 s).
	waitHeldZero(t, p, 10*time.Second)
	n, slowest := stopProbe()
	t.Logf("%d peers gone, budget back in %v; %d ApiVersions probes, slowest %v",
		len(peers), time.Since(gone).Round(time.Millisecond), n, slowest.Round(time.Millisecond))
	if took, err := apiVersionsAnswered(p.Addr, time.Second); err != nil {
		t.Fatalf("after the peers left: %v (%v)", err, took)
	}
}

// produceAndReadBack produces n records with acks=all, each acknowledged,
// and reads every one back in order.
func produceAndReadBack(t *testing.T, ctx context.Context, addr, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < n; i += 50 {
		var recs []*kgo.Record
		for j := i; j < min(i+50, n); j++ {
			recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "good-%d", j)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("a well-behaved producer beside large frames: %v", err)
		}
	}
	got := consumeFrom(t, ctx, addr, topic, n)
	for i, r := range got {
		if want := fmt.Sprintf("good-%d", i); string(r.Value) != want || r.Offset != int64(i) {
			t.Fatalf("record %d: offset %d value %q, want %q", i, r.Offset, r.Value, want)
		}
	}
}

func closing(n int, sendFor time.Duration, upTo int) []hostilePeer {
	peers := make([]hostilePeer, n)
	for i := range peers {
		peers[i] = hostilePeer{sendFor: sendFor, upTo: upTo}
	}
	return peers
}

func TestLargeFramesThatLeaveDoNotStopFloeDev(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	t.Run("five", func(t *testing.T) { hostileRound(t, p, closing(5, 3*time.Second, bigFrame), 0, "") })
	t.Run("twenty", func(t *testing.T) { hostileRound(t, p, closing(20, 3*time.Second, bigFrame), 0, "") })
	t.Run("half-way", func(t *testing.T) {
		// Peers that close once half their frame is sent, before floe
		// could have read it all (its budget is 32 MiB).
		hostileRound(t, p, closing(5, 10*time.Second, bigFrame/2), 0, "")
	})
	t.Run("beside-producers", func(t *testing.T) {
		hostileRound(t, p, closing(10, 4*time.Second, bigFrame), 2000, "good-dev")
	})
}

// TestLargeFramesThatLeaveDoNotStopTLS: the same over an SSL listener,
// where a waiting reader looks through TLS at the socket beneath.
func TestLargeFramesThatLeaveDoNotStopTLS(t *testing.T) {
	ca := testpki.NewCA(t, t.TempDir(), "floe test CA")
	cert, key := ca.Issue(t, "server", 0, pkix.Name{CommonName: "127.0.0.1"}, x509.ExtKeyUsageServerAuth)
	plain, ssl := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startFloe(t, "dev", "--data-dir", t.TempDir(), "--listeners", fmt.Sprintf("PLAINTEXT://%s,SSL://%s", plain, ssl),
		"--tls-cert", cert, "--tls-key", key)
	p.Addr = plain // the prober's
	peers := closing(5, 3*time.Second, bigFrame)
	for i := range peers {
		peers[i].tls = ca.ClientConfig(nil)
	}
	hostileRoundAt(t, p, ssl, peers, 0, "")
}

// TestTricklingFramesDoNotStopFloeDev: peers that send 1 byte a second
// and never close are cut off at --request-read-timeout, waiting for
// budget or not, and what they held comes back.
func TestTricklingFramesDoNotStopFloeDev(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir(), "--request-read-timeout", "3s")
	ctx := testContext(t, time.Minute)
	stopProbe := probe(ctx, t, p.Addr)
	var wg sync.WaitGroup
	for i := range 40 { // 40 MiB sent at once: some readers wait for budget
		wg.Add(1)
		go func() {
			defer wg.Done()
			hostilePeer{sendFor: 10 * time.Second, trickle: true}.run(ctx, t, p.Addr, int32(i))
		}()
	}
	wg.Wait() // floe closed every one of them
	waitHeldZero(t, p, 5*time.Second)
	n, slowest := stopProbe()
	t.Logf("%d ApiVersions probes, slowest %v", n, slowest.Round(time.Millisecond))
	if hits := p.metric(t, `floe_agent_limit_hits_total{limit="request.read.timeout"}`); hits < 40 {
		t.Fatalf("request.read.timeout hit %v times, want 40", hits)
	}
}

func TestLargeFramesThatLeaveDoNotStopAgent(t *testing.T) {
	c := newCluster(t, "budget_leave")
	p := c.startAgent(t)
	t.Run("five", func(t *testing.T) { hostileRound(t, p, closing(5, 3*time.Second, bigFrame), 0, "") })
	t.Run("beside-producers", func(t *testing.T) {
		hostileRound(t, p, closing(10, 4*time.Second, bigFrame), 1000, "good-agent")
	})
}
