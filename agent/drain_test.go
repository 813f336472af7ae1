package agent

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCloseDrainsFirst: once Close begins, /readyz fails, the agent names
// only the other agent as partition leader and coordinator, a group it
// coordinated is served by the other agent while it still drains, and it
// still answers produce requests sent to it until the drain ends.
func TestCloseDrainsFirst(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const delay = 1500 * time.Millisecond
	agents := twoAgents(t, ctx, func(c *Config) { c.HTTPAddr, c.DrainDelay = "127.0.0.1:0", delay })
	leaving, staying := agents[0], agents[1]
	topic, err := staying.store.CreateTopic(ctx, "drain", 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	group := ""
	for i := 0; group == ""; i++ {
		if g := fmt.Sprintf("g-%d", i); leaving.coordinatorFor(g).ID == leaving.id {
			group = g
		}
	}
	_, lbr := directClient(t, leaving)
	_, sbr := directClient(t, staying)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = group, -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "drain"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Offset = 42
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	cr, err := commit.RequestWith(ctx, lbr)
	if err != nil || cr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("OffsetCommit = %+v, %v", cr, err)
	}
	fetchCommitted := func() (int64, int16) {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = group
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = "drain", []int32{0}
		rg.Topics = append(rg.Topics, rt)
		req.Groups = append(req.Groups, rg)
		resp, err := req.RequestWith(ctx, sbr)
		if err != nil {
			t.Fatal(err)
		}
		g := resp.Groups[0]
		if g.ErrorCode != 0 {
			return 0, g.ErrorCode
		}
		return g.Topics[0].Partitions[0].Offset, g.Topics[0].Partitions[0].ErrorCode
	}
	if _, code := fetchCommitted(); code == 0 {
		t.Fatalf("the staying agent served group %s before the drain", group)
	}

	closed := make(chan error, 1)
	go func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer ccancel()
		closed <- leaving.Close(cctx)
	}()
	for !leaving.isDraining() {
		time.Sleep(time.Millisecond)
	}
	resp, err := http.Get("http://" + leaving.HTTPAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while draining: %d, want 503", resp.StatusCode)
	}

	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("drain")
	md.Topics = append(md.Topics, mt)
	mr, err := md.RequestWith(ctx, lbr)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range mr.Brokers {
		if b.NodeID == leaving.NodeID() {
			t.Fatalf("the draining agent lists itself: %+v", mr.Brokers)
		}
	}
	for _, p := range mr.Topics[0].Partitions {
		if p.Leader != staying.NodeID() {
			t.Fatalf("partition %d led by %d while draining, want %d", p.Partition, p.Leader, staying.NodeID())
		}
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{group}
	fr, err := fc.RequestWith(ctx, lbr)
	if err != nil || fr.Coordinators[0].NodeID != staying.NodeID() {
		t.Fatalf("FindCoordinator(%s) on the draining agent = %+v, %v; want node %d", group, fr, err, staying.NodeID())
	}

	// The group moves while the leaving agent still drains.
	for {
		off, code := fetchCommitted()
		if code == 0 {
			if off != 42 {
				t.Fatalf("committed offset after the hand-off = %d, want 42", off)
			}
			break
		}
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) before the staying agent served group %s (last error %d)", err, group, code)
		case <-time.After(20 * time.Millisecond):
		}
	}

	// And it still takes produce requests until the drain ends.
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 10_000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "drain"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = testBatch(t, 3)
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	pr, err := produce.RequestWith(ctx, lbr)
	if err != nil || pr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("Produce to the draining agent = %+v, %v", pr, err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the produce should have found it draining", err)
	default:
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	ps, err := staying.store.Partition(ctx, topic.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ps.NextOffset != 3 {
		t.Fatalf("high watermark %d after the drain, want the 3 records produced during it", ps.NextOffset)
	}
}

// TestLoneAgentClosesWithoutDrainWait: with nobody to hand off to, Close
// does not wait out DrainDelay, and the agent keeps naming itself.
func TestLoneAgentClosesWithoutDrainWait(t *testing.T) {
	ta := newParallelAgent(t, func(c *Config) { c.DrainDelay = time.Hour })
	done := make(chan error, 1)
	go func() { done <- ta.Close(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a lone agent waits out its drain delay")
	}
	if live := ta.liveAgents(); len(live) != 1 || live[0].ID != ta.id {
		t.Fatalf("lone closing agent's view %+v, want itself", live)
	}
}
