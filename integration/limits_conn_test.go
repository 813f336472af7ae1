package integration

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestHostileConnectionsDoNotStopFloe runs floe dev with the connection
// limits set from its flags and misbehaves as a hostile client would: a
// frame claiming 64 MiB followed by silence, idle connections, a flood of
// connections from one address. A well-behaved client from another address
// is served throughout, and every refusal shows in
// floe_agent_limit_hits_total.
func TestHostileConnectionsDoNotStopFloe(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir(),
		"--request-read-timeout", "2s", "--connections-max-idle", "1s", "--max-connections-per-ip", "20")
	ctx := testContext(t, 2*time.Minute)
	flood := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}

	claim, err := flood.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Close()
	claim.Write(append(binary.BigEndian.AppendUint32(nil, 64<<20), 0, 0))
	idle, err := flood.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	for range 2000 {
		c, err := flood.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.DefaultProduceTopic("served"),
		kgo.ConsumeTopics("served"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 50 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce beside hostile connections: %v", err)
		}
	}
	for n := 0; n < 50; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("fetched %d of 50 beside hostile connections", n)
		}
		n += fs.NumRecords()
	}

	for _, c := range []net.Conn{claim, idle} {
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Fatalf("hostile connection not closed by floe: %v", err)
		}
	}
	for _, limit := range []string{"request.read.timeout", "connections.max.idle.ms", "max.connections.per.ip"} {
		if n := p.metric(t, fmt.Sprintf(`floe_agent_limit_hits_total{limit=%q}`, limit)); n < 1 {
			t.Errorf("limit %s hit %v times, want at least 1", limit, n)
		}
	}
}
