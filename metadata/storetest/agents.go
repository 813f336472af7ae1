package storetest

import (
	"fmt"
	"maps"
	"sort"
	"sync"
	"testing"
	"time"

	"floe/metadata"
)

func register(t *testing.T, s metadata.Store, id, host string) metadata.Agent {
	t.Helper()
	a, err := s.RegisterAgent(ctxT(t), metadata.Agent{ID: id, Host: host, Port: 9092, Zone: "zone-" + id, HTTPAddr: host + ":8080",
		Listeners: map[string]string{"PLAINTEXT": host + ":9092", "SASL_SSL": host + ":9093"}})
	if err != nil {
		t.Fatalf("RegisterAgent(%s): %v", id, err)
	}
	return a
}

func live(t *testing.T, s metadata.Store, ttl time.Duration) []metadata.Agent {
	t.Helper()
	as, err := s.LiveAgents(ctxT(t), ttl)
	if err != nil {
		t.Fatalf("LiveAgents(%v): %v", ttl, err)
	}
	return as
}

func sameAgents(t *testing.T, what string, got, want []metadata.Agent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d agents %+v, want %d %+v", what, len(got), got, len(want), want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.NodeID != w.NodeID || g.Host != w.Host || g.Port != w.Port || g.Zone != w.Zone ||
			g.HTTPAddr != w.HTTPAddr || !maps.Equal(g.Listeners, w.Listeners) || !g.LastHeartbeat.Equal(w.LastHeartbeat) {
			t.Fatalf("%s: agent %d\ngot  %+v\nwant %+v", what, i, g, w)
		}
	}
}

func testAgents(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	if as := live(t, s, time.Minute); len(as) != 0 {
		t.Fatalf("agents in a new store: %+v", as)
	}
	before := time.Now()
	a := register(t, s, "a", "host-a")
	if a.NodeID != 1 || a.ID != "a" || a.Host != "host-a" || a.Port != 9092 || a.Zone != "zone-a" || a.HTTPAddr != "host-a:8080" ||
		a.Listeners["SASL_SSL"] != "host-a:9093" {
		t.Fatalf("first agent: %+v", a)
	}
	if d := a.LastHeartbeat.Sub(before); d < -time.Minute || d > time.Minute {
		t.Fatalf("LastHeartbeat %v, now %v", a.LastHeartbeat, before)
	}
	b := register(t, s, "b", "host-b")
	if b.NodeID != 2 {
		t.Fatalf("second agent: %+v", b)
	}
	sameAgents(t, "LiveAgents", live(t, s, time.Minute), []metadata.Agent{a, b})

	// Re-registering keeps the node id and takes the new addresses.
	a2, err := s.RegisterAgent(ctx, metadata.Agent{ID: "a", Host: "host-a2", Port: 19092, Zone: "z2", HTTPAddr: "10.0.0.2:18080", NodeID: 77})
	if err != nil {
		t.Fatal(err)
	}
	if a2.NodeID != 1 || a2.Host != "host-a2" || a2.Port != 19092 || a2.Zone != "z2" || a2.HTTPAddr != "10.0.0.2:18080" ||
		a2.LastHeartbeat.Before(a.LastHeartbeat) {
		t.Fatalf("re-registered agent: %+v (was %+v)", a2, a)
	}
	sameAgents(t, "LiveAgents after re-register", live(t, s, time.Minute), []metadata.Agent{a2, b})
	// An agent without an HTTP listener registers none, and may drop it.
	b2, err := s.RegisterAgent(ctx, metadata.Agent{ID: "b", Host: "host-b", Port: 9092, Zone: "zone-b"})
	if err != nil {
		t.Fatal(err)
	}
	if b2.NodeID != b.NodeID || b2.HTTPAddr != "" {
		t.Fatalf("re-registered agent without HTTP: %+v (was %+v)", b2, b)
	}
	sameAgents(t, "LiveAgents after re-register without HTTP", live(t, s, time.Minute), []metadata.Agent{a2, b2})
	b = b2

	if err := s.Heartbeat(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	as := live(t, s, time.Minute)
	if len(as) != 2 || as[1].ID != "b" || as[1].LastHeartbeat.Before(b.LastHeartbeat) {
		t.Fatalf("after heartbeat: %+v", as)
	}
	wantErr(t, "Heartbeat of unknown agent", s.Heartbeat(ctx, "nobody"), metadata.ErrNotFound)

	if err := s.DeregisterAgent(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	sameAgents(t, "LiveAgents after deregister", live(t, s, time.Minute), []metadata.Agent{a2})
	wantErr(t, "Heartbeat after deregister", s.Heartbeat(ctx, "b"), metadata.ErrNotFound)
	if err := s.DeregisterAgent(ctx, "b"); err != nil {
		t.Fatalf("second DeregisterAgent: %v", err)
	}
	if _, err := s.LiveAgents(ctx, 0); err == nil {
		t.Fatal("LiveAgents(0) succeeded")
	}
	sameAgents(t, "LiveAgents after LiveAgents(0)", live(t, s, time.Minute), []metadata.Agent{a2})
}

func testAgentNodeIDReuse(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	for i, id := range []string{"a", "b", "c"} {
		if a := register(t, s, id, "h"); a.NodeID != int32(i+1) {
			t.Fatalf("agent %s: node id %d, want %d", id, a.NodeID, i+1)
		}
	}
	if err := s.DeregisterAgent(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id   string
		want int32
	}{{"d", 2}, {"e", 4}} {
		if a := register(t, s, c.id, "h"); a.NodeID != c.want {
			t.Fatalf("agent %s: node id %d, want %d", c.id, a.NodeID, c.want)
		}
	}
	if err := s.DeregisterAgent(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if a := register(t, s, "c", "h2"); a.NodeID != 3 {
		t.Fatalf("re-registered c: node id %d, want 3", a.NodeID)
	}
	if a := register(t, s, "f", "h"); a.NodeID != 1 {
		t.Fatalf("agent f: node id %d, want 1", a.NodeID)
	}
	var ids []string
	for _, a := range live(t, s, time.Minute) {
		ids = append(ids, fmt.Sprintf("%s=%d", a.ID, a.NodeID))
	}
	if fmt.Sprint(ids) != "[f=1 d=2 c=3 e=4]" {
		t.Fatalf("LiveAgents: %v", ids)
	}
}

// testAgentExpiry lets one agent's heartbeat age past the ttl while another
// stays fresh. The margins are wide: only the order of events matters.
func testAgentExpiry(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	register(t, s, "old", "h")
	time.Sleep(1500 * time.Millisecond)
	fresh := register(t, s, "fresh", "h")
	if fresh.NodeID != 2 {
		t.Fatalf("fresh agent: node id %d, want 2", fresh.NodeID)
	}
	as := live(t, s, 750*time.Millisecond)
	if len(as) != 1 || as[0].ID != "fresh" {
		t.Fatalf("LiveAgents(750ms): %+v, want only fresh", as)
	}
	// The expired agent was deleted, not merely hidden.
	if as := live(t, s, time.Hour); len(as) != 1 || as[0].ID != "fresh" {
		t.Fatalf("LiveAgents(1h) after expiry: %+v", as)
	}
	wantErr(t, "Heartbeat of expired agent", s.Heartbeat(ctx, "old"), metadata.ErrNotFound)
	if a := register(t, s, "old", "h"); a.NodeID != 1 {
		t.Fatalf("re-registered expired agent: node id %d, want 1", a.NodeID)
	}
}

// testConcurrentRegister registers agents from several goroutines at once;
// they must end up with distinct node ids 1..n.
func testConcurrentRegister(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	const n = 8
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		ids []int
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := s.RegisterAgent(ctx, metadata.Agent{ID: fmt.Sprintf("agent-%d", i), Host: "h", Port: 1})
			if err != nil {
				t.Errorf("RegisterAgent: %v", err)
				return
			}
			mu.Lock()
			ids = append(ids, int(a.NodeID))
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Ints(ids)
	if fmt.Sprint(ids) != "[1 2 3 4 5 6 7 8]" {
		t.Fatalf("node ids %v, want 1..8", ids)
	}
}
