package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
	"floe/storage/mem"
)

// TestDepartedNodeIDStaysResolvable: once an agent leaves the live set, its
// node id is still in Metadata, at the survivor's address, and a client
// can talk to it (franz-go names cached coordinators by node id); no
// partition leader and no coordinator is ever that node id; a new agent
// taking the node id is listed at its own address, once.
func TestDepartedNodeIDStaysResolvable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	agents := twoAgents(t, ctx)
	victim, survivor := agents[0], agents[1]
	gone := victim.NodeID()
	if _, err := survivor.store.CreateTopic(ctx, "dep", 6, nil); err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	if err := victim.Close(cctx); err != nil {
		t.Fatal(err)
	}
	ccancel()
	if err := survivor.refreshLive(ctx); err != nil {
		t.Fatal(err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(survivor.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	metadataOf := func() *kmsg.MetadataResponse {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("dep")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := metadataOf()
	addrs := map[int32]string{}
	for _, b := range resp.Brokers {
		if _, dup := addrs[b.NodeID]; dup {
			t.Fatalf("node %d listed twice: %+v", b.NodeID, resp.Brokers)
		}
		addrs[b.NodeID] = fmt.Sprintf("%s:%d", b.Host, b.Port)
	}
	if len(addrs) != 2 || addrs[gone] != survivor.KafkaAddr() || addrs[survivor.NodeID()] != survivor.KafkaAddr() {
		t.Fatalf("brokers %v; want node %d (departed) and %d both at %s", addrs, gone, survivor.NodeID(), survivor.KafkaAddr())
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.Leader != survivor.NodeID() {
			t.Fatalf("partition %d led by %d, want the live agent %d", p.Partition, p.Leader, survivor.NodeID())
		}
	}
	for i := range 20 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = int8(i % 2)
		req.CoordinatorKeys = []string{fmt.Sprintf("k-%d", i)}
		fr, err := req.RequestWith(ctx, cl)
		if err != nil || len(fr.Coordinators) != 1 || fr.Coordinators[0].NodeID != survivor.NodeID() {
			t.Fatalf("FindCoordinator = %+v, %v; want node %d", fr, err, survivor.NodeID())
		}
	}
	if _, err := cl.Broker(int(gone)).Request(ctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
		t.Fatalf("request to departed node id %d: %v", gone, err)
	}

	// A new agent takes the free node id: it is that agent again.
	cfg := DefaultConfig()
	cfg.KafkaAddr, cfg.HTTPAddr = "127.0.0.1:0", ""
	cfg.HeartbeatInterval = 100 * time.Millisecond
	fresh := New(cfg, survivor.store, mem.New(), nil)
	if err := fresh.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		fresh.Close(cctx)
	})
	if fresh.NodeID() != gone {
		t.Fatalf("new agent got node id %d, want the free %d", fresh.NodeID(), gone)
	}
	if err := survivor.refreshLive(ctx); err != nil {
		t.Fatal(err)
	}
	resp = metadataOf()
	addrs = map[int32]string{}
	for _, b := range resp.Brokers {
		if _, dup := addrs[b.NodeID]; dup {
			t.Fatalf("node %d listed twice: %+v", b.NodeID, resp.Brokers)
		}
		addrs[b.NodeID] = fmt.Sprintf("%s:%d", b.Host, b.Port)
	}
	if len(addrs) != 2 || addrs[gone] != fresh.KafkaAddr() {
		t.Fatalf("brokers %v; want node %d at the new agent's %s", addrs, gone, fresh.KafkaAddr())
	}
}

// TestDepartedBookkeeping: which node ids are listed, where, and for how
// long.
func TestDepartedBookkeeping(t *testing.T) {
	t.Parallel()
	a := &Agent{id: "self"}
	self := metadata.Agent{ID: "self", NodeID: 1, Host: "h1", Port: 1, Zone: "z1"}
	other := metadata.Agent{ID: "other", NodeID: 3, Host: "h3", Port: 3, Zone: "z2"}
	gone := metadata.Agent{ID: "gone", NodeID: 2, Host: "h2", Port: 2}
	note := func(old, live []metadata.Agent, at time.Time) {
		a.viewMu.Lock()
		a.noteDepartedLocked(old, live, at)
		a.viewMu.Unlock()
	}
	live := []metadata.Agent{self, other}
	now := time.Now()
	note(nil, []metadata.Agent{self, gone, other}, now)
	if got := a.departedBrokers(live, ""); len(got) != 0 {
		t.Fatalf("nothing departed yet, got %+v", got)
	}
	note([]metadata.Agent{self, gone, other}, live, now)
	got := a.departedBrokers(live, "")
	if len(got) != 1 || got[0].NodeID != 2 {
		t.Fatalf("departed = %+v, want node 2", got)
	}
	// Each id lands on a fixed agent of the view: 2 % 2 = index 0.
	if got[0].Host != "h1" || got[0].Port != 1 {
		t.Fatalf("node 2 at %s:%d, want h1:1", got[0].Host, got[0].Port)
	}
	// A client in zone z2 gets an address in z2.
	if got := a.departedBrokers(live, "z2"); len(got) != 1 || got[0].Host != "h3" || got[0].Zone != "z2" {
		t.Fatalf("departed for zone z2 = %+v, want at h3", got)
	}
	// Leaving again (a later refresh that still lacks it) keeps the first
	// departure time.
	note(live, live, now.Add(time.Minute))
	a.viewMu.Lock()
	at := a.departed[2]
	a.viewMu.Unlock()
	if !at.Equal(now) {
		t.Fatalf("departure time moved to %v", at)
	}
	// Forgotten after departedAliasTTL.
	note(live, live, now.Add(departedAliasTTL+time.Second))
	if got := a.departedBrokers(live, ""); len(got) != 0 {
		t.Fatalf("still listed after %v: %+v", departedAliasTTL, got)
	}
	// A node id taken by a new agent is not an alias.
	note([]metadata.Agent{self, gone, other}, live, now)
	reborn := metadata.Agent{ID: "reborn", NodeID: 2, Host: "h9", Port: 9}
	live2 := []metadata.Agent{self, reborn, other}
	if got := a.departedBrokers(live2, ""); len(got) != 0 {
		t.Fatalf("node 2 is live again, yet aliased: %+v", got)
	}
	note(live, live2, now)
	a.viewMu.Lock()
	_, still := a.departed[2]
	a.viewMu.Unlock()
	if still {
		t.Fatal("node 2 is live again, yet still recorded as departed")
	}
	// This agent itself is never departed, even when missing from a view.
	note(live, []metadata.Agent{other}, now)
	a.viewMu.Lock()
	_, selfGone := a.departed[1]
	a.viewMu.Unlock()
	if selfGone {
		t.Fatal("this agent recorded itself as departed")
	}
}
