package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"floe/metadata"
	"floe/metadata/sqlite"
	"floe/storage/mem"
)

// TestGroupConsumeAndCommit: two franz-go members of one group split a
// topic, consume every record exactly once between them, and their commits
// are what OffsetFetch and kadm lag report.
func TestGroupConsumeAndCommit(t *testing.T) {
	ta := newParallelAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 400
	adm := kadm.NewClient(produceNumbered(t, ctx, ta, "gt", 4, n))
	var clients []*kgo.Client
	for _, name := range []string{"c1", "c2"} {
		clients = append(clients, ta.client(t, kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("gt"), kgo.ClientID(name),
			kgo.FetchMaxWait(100*time.Millisecond), kgo.DisableAutoCommit()))
	}
	start := time.Now()
	if seen := consumeDistinct(ctx, n, t.Errorf, clients...); seen != n {
		t.Fatalf("consumed %d distinct records, want %d", seen, n)
	}
	t.Logf("consumed after %v", time.Since(start))
	for _, cl := range clients {
		cl.Close() // leaves the group
	}
	lag, err := adm.Lag(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	gl := lag["g1"]
	if gl.Error() != nil {
		t.Fatal(gl.Error())
	}
	for _, l := range lag["g1"].Lag.Sorted() {
		if l.Err != nil {
			t.Errorf("lag %s/%d: %v", l.Topic, l.Partition, l.Err)
		}
		committed += l.Commit.At
		if l.Lag != 0 {
			t.Errorf("lag of %d/%d = %d", l.Partition, l.End.Offset, l.Lag)
		}
	}
	if committed != n {
		t.Fatalf("committed offsets add up to %d, want %d", committed, n)
	}
	// The group is empty now: it can be deleted, which removes its offsets.
	dr, err := adm.DeleteGroups(ctx, "g1")
	if err != nil || dr["g1"].Err != nil {
		t.Fatalf("delete group: %v %v", err, dr["g1"].Err)
	}
	offs, _ := ta.store.FetchOffsets(ctx, "g1")
	if len(offs) != 0 {
		t.Fatalf("offsets after delete: %+v", offs)
	}
}

// produceNumbered creates topic with partitions and produces the values
// "0" to n-1 to it, round robin, through the client it returns.
func produceNumbered(t *testing.T, ctx context.Context, ta *testAgent, topic string, partitions int32, n int) *kgo.Client {
	t.Helper()
	prod := ta.client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return prod
}

// consumeDistinct polls the group members clients, each in a goroutine of
// its own and committing after every poll (a failed commit told to
// commitErr), until they have seen n distinct values between them or ctx
// ends. It returns how many distinct values they saw.
func consumeDistinct(ctx context.Context, n int, commitErr func(string, ...any), clients ...*kgo.Client) int {
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
		wg   sync.WaitGroup
	)
	for _, cl := range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				mu.Lock()
				done := len(seen) == n
				mu.Unlock()
				if done {
					return
				}
				pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
				fs := cl.PollFetches(pctx)
				pcancel()
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)] = true
					mu.Unlock()
				})
				if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
					commitErr("commit: %v", err)
				}
			}
		})
	}
	wg.Wait()
	return len(seen)
}

// rawJoin sends one JoinGroup at a version.
func rawJoin(t *testing.T, ctx context.Context, ta *testAgent, version int16, group, member string) *kmsg.JoinGroupResponse {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(kmsg.JoinGroup), version)
	cl := ta.client(t, kgo.MaxVersions(vs))
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = version
	req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	req.Protocols = append(req.Protocols, p)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != version {
		t.Fatalf("join sent at v%d, want v%d", resp.Version, version)
	}
	return resp
}

// TestJoinGroupVersions: MEMBER_ID_REQUIRED only for v4+ (kafka-go joins
// at v2 and would loop forever on it); the second v4 join completes.
func TestJoinGroupVersions(t *testing.T) {
	ta := newParallelAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := rawJoin(t, ctx, ta, 2, "old", "")
	if r.ErrorCode != 0 || r.MemberID == "" || r.Generation != 1 || r.LeaderID != r.MemberID {
		t.Fatalf("v2 join = %+v", r)
	}
	r = rawJoin(t, ctx, ta, 4, "new", "")
	if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
		t.Fatalf("v4 join = %+v", r)
	}
	r2 := rawJoin(t, ctx, ta, 4, "new", r.MemberID)
	if r2.ErrorCode != 0 || r2.MemberID != r.MemberID || r2.Generation != 1 || len(r2.Members) != 1 {
		t.Fatalf("v4 rejoin = %+v", r2)
	}
	rec, err := ta.store.LoadGroup(ctx, "new")
	if err != nil || rec.StateName != "CompletingRebalance" || rec.Empty {
		t.Fatalf("stored group = %+v, %v", rec, err)
	}
}

// twoAgents starts two agents over one SQLite file that see each other.
func twoAgents(t *testing.T, ctx context.Context, opts ...func(*Config)) []*Agent {
	dir := t.TempDir()
	var agents []*Agent
	for range 2 {
		store, err := sqlite.Open(ctx, filepath.Join(dir, "meta.db"))
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.KafkaAddr, cfg.HTTPAddr = "127.0.0.1:0", ""
		cfg.HeartbeatInterval = 100 * time.Millisecond
		cfg.DrainDelay = 300 * time.Millisecond
		for _, o := range opts {
			o(&cfg)
		}
		a := startAgent(t, cfg, store, mem.New(), nil, func() { store.Close() })
		agents = append(agents, a)
	}
	for _, a := range agents {
		if err := a.refreshLive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return agents
}

// TestNotCoordinatorAndLease: two agents over one SQLite file; the group's
// non-owner answers NOT_COORDINATOR, FindCoordinator on both names the
// owner, and the owner holds the group's lease.
func TestNotCoordinatorAndLease(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	agents := twoAgents(t, ctx)
	// Find a group each agent owns.
	owned := map[string]*Agent{}
	var groups []string
	for i := 0; len(groups) < 2; i++ {
		g := fmt.Sprintf("grp-%d", i)
		o := agents[0].coord.ownerOf(g)
		if o.ID != agents[1].coord.ownerOf(g).ID {
			t.Fatalf("agents disagree on the owner of %s", g)
		}
		for _, a := range agents {
			if a.id == o.ID && owned[a.id] == nil {
				owned[a.id] = a
				groups = append(groups, g)
			}
		}
	}
	for _, g := range groups {
		owner := agents[0]
		if agents[0].coord.ownerOf(g).ID != agents[0].id {
			owner = agents[1]
		}
		other := agents[0]
		if owner == agents[0] {
			other = agents[1]
		}
		ocl, err := kgo.NewClient(kgo.SeedBrokers(other.KafkaAddr()))
		if err != nil {
			t.Fatal(err)
		}
		defer ocl.Close()
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKeys = []string{g}
		fr, err := fc.RequestWith(ctx, ocl)
		if err != nil || len(fr.Coordinators) != 1 || fr.Coordinators[0].NodeID != owner.NodeID() {
			t.Fatalf("FindCoordinator(%s) = %+v, %v; owner is node %d", g, fr, err, owner.NodeID())
		}
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID, hb.Generation = g, "m", 1
		// Send to the non-owner directly.
		br := ocl.Broker(int(other.NodeID()))
		hr, err := hb.RequestWith(ctx, br)
		if err != nil || hr.ErrorCode != kerr.NotCoordinator.Code {
			t.Fatalf("heartbeat to non-owner = %+v, %v", hr, err)
		}
		hr, err = hb.RequestWith(ctx, ocl.Broker(int(owner.NodeID())))
		if err != nil || hr.ErrorCode != kerr.UnknownMemberID.Code {
			t.Fatalf("heartbeat to owner = %+v, %v", hr, err)
		}
		if _, err := owner.store.AcquireCoordinatorLease(ctx, metadata.GroupLeaseName(g), other.id, time.Second); err == nil {
			t.Fatalf("non-owner took the lease of %s", g)
		}
	}
}

// TestKIP848Group: two franz-go members using the KIP-848 protocol
// (ServerSideBalancer) share a topic, consume every record once and commit;
// ConsumerGroupDescribe shows a stable group with disjoint assignments.
func TestKIP848Group(t *testing.T) {
	ta := newParallelAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 200
	prod := produceNumbered(t, ctx, ta, "t848", 4, n)
	adm := kadm.NewClient(prod)
	var clients []*kgo.Client
	for i := range 2 {
		clients = append(clients, ta.client(t, kgo.ConsumerGroup("g848"), kgo.ConsumeTopics("t848"), kgo.ServerSideBalancer(),
			kgo.ClientID(fmt.Sprintf("c%d", i)), kgo.FetchMaxWait(100*time.Millisecond), kgo.DisableAutoCommit()))
	}
	if seen := consumeDistinct(ctx, n, t.Logf, clients...); seen != n {
		t.Fatalf("consumed %d distinct, want %d", seen, n)
	}
	// Both members stay in: the group settles with disjoint assignments.
	var d *kmsg.ConsumerGroupDescribeResponseGroup
	for ctx.Err() == nil {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"g848"}
		resp, err := req.RequestWith(ctx, prod)
		if err != nil {
			t.Fatal(err)
		}
		d = &resp.Groups[0]
		if d.ErrorCode == 0 && d.State == "Stable" && len(d.Members) == 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	owned := map[int32]string{}
	for _, m := range d.Members {
		for _, tp := range m.Assignment.TopicPartitions {
			for _, p := range tp.Partitions {
				if o, dup := owned[p]; dup {
					t.Fatalf("partition %d owned by %s and %s", p, o, m.MemberID)
				}
				owned[p] = m.MemberID
			}
		}
	}
	if len(owned) != 4 || d.AssignorName != "uniform" {
		t.Fatalf("assignment %v assignor %q", owned, d.AssignorName)
	}
	lag, err := adm.Lag(ctx, "g848")
	if err != nil {
		t.Fatal(err)
	}
	gl := lag["g848"]
	if err := gl.Error(); err != nil {
		t.Fatal(err)
	}
	if tot := gl.Lag.Total(); tot != 0 {
		t.Fatalf("lag %d after consuming everything", tot)
	}
}

// TestGroupAdminAPIs drives the admin-side group APIs with raw requests:
// batched FindCoordinator, OffsetCommit/OffsetFetch with metadata (v8
// several groups at once), ListGroups with a state filter, batched
// LeaveGroup by instance id, OffsetDelete and DeleteGroups errors.
func TestGroupAdminAPIs(t *testing.T) {
	ta := newParallelAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := ta.client(t)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "ta"); err != nil {
		t.Fatal(err)
	}

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"x", "y", ""}
	fr, err := fc.RequestWith(ctx, cl)
	if err != nil || len(fr.Coordinators) != 3 {
		t.Fatalf("FindCoordinator = %+v, %v", fr, err)
	}
	for _, c := range fr.Coordinators { // franz-go may reorder the keys
		if (c.Key == "" && c.ErrorCode != kerr.InvalidGroupID.Code) || (c.Key != "" && (c.ErrorCode != 0 || c.NodeID != ta.NodeID())) {
			t.Fatalf("FindCoordinator key %q = %+v", c.Key, c)
		}
	}

	// Admin commits (generation -1) to empty groups, with metadata.
	for _, g := range []string{"ga", "gb"} {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation = g, -1
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic = "ta"
		for p := range int32(2) {
			op := kmsg.NewOffsetCommitRequestTopicPartition()
			md := g + "-md"
			op.Partition, op.Offset, op.Metadata, op.LeaderEpoch = p, int64(10+p), &md, 0
			ot.Partitions = append(ot.Partitions, op)
		}
		bad := kmsg.NewOffsetCommitRequestTopic()
		bad.Topic = "nope"
		bad.Partitions = []kmsg.OffsetCommitRequestTopicPartition{kmsg.NewOffsetCommitRequestTopicPartition()}
		oc.Topics = append(oc.Topics, ot, bad)
		or, err := oc.RequestWith(ctx, cl)
		if err != nil || or.Topics[0].Partitions[1].ErrorCode != 0 || or.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("OffsetCommit = %+v, %v", or, err)
		}
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	for _, g := range []string{"ga", "gb", "none"} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = "ta", []int32{1}
		rg.Topics = append(rg.Topics, rt)
		of.Groups = append(of.Groups, rg)
	}
	ofr, err := of.RequestWith(ctx, cl)
	if err != nil || len(ofr.Groups) != 3 {
		t.Fatalf("OffsetFetch = %+v, %v", ofr, err)
	}
	for i, want := range []int64{11, 11, -1} {
		p := ofr.Groups[i].Topics[0].Partitions[0]
		if p.Offset != want || (want > 0 && *p.Metadata != ofr.Groups[i].Group+"-md") || (want > 0 && p.LeaderEpoch != 0) {
			t.Fatalf("OffsetFetch group %d = %+v", i, p)
		}
	}

	// A static member in group gs; ListGroups filters by state.
	iid := "inst"
	join := joinReq("gs")
	join.InstanceID = &iid
	jr, err := join.RequestWith(ctx, cl)
	if err != nil || jr.ErrorCode != 0 {
		t.Fatalf("static join = %+v, %v", jr, err)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.StatesFilter = []string{"completingrebalance"}
	lgr, err := lg.RequestWith(ctx, cl)
	if err != nil || len(lgr.Groups) != 1 || lgr.Groups[0].Group != "gs" || lgr.Groups[0].GroupType != "classic" {
		t.Fatalf("ListGroups(CompletingRebalance) = %+v, %v", lgr, err)
	}
	lg.StatesFilter = []string{"Empty"}
	lgr, _ = lg.RequestWith(ctx, cl)
	if len(lgr.Groups) != 2 || lgr.Groups[0].Group != "ga" || lgr.Groups[1].Group != "gb" {
		t.Fatalf("ListGroups(Empty) = %+v", lgr.Groups)
	}
	// Deleting a group with a member fails; offsets of a group's
	// subscribed topic cannot be deleted while it is active.
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"gs", "ga", "missing"}
	dgr, err := dg.RequestWith(ctx, cl)
	if err != nil || dgr.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code || dgr.Groups[1].ErrorCode != 0 ||
		dgr.Groups[2].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("DeleteGroups = %+v, %v", dgr, err)
	}
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "gb"
	odt := kmsg.NewOffsetDeleteRequestTopic()
	odt.Topic = "ta"
	odt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
	od.Topics = append(od.Topics, odt)
	odr, err := od.RequestWith(ctx, cl)
	if err != nil || odr.ErrorCode != 0 || odr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("OffsetDelete = %+v, %v", odr, err)
	}
	if offs, _ := ta.store.FetchOffsets(ctx, "gb"); len(offs) != 1 || offs[0].Partition != 1 {
		t.Fatalf("offsets after OffsetDelete = %+v", offs)
	}
	// Batched leave by instance id alone, and an unknown member.
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group = "gs"
	m1 := kmsg.NewLeaveGroupRequestMember()
	m1.InstanceID = &iid
	m2 := kmsg.NewLeaveGroupRequestMember()
	m2.MemberID = "ghost"
	lv.Members = append(lv.Members, m1, m2)
	lvr, err := lv.RequestWith(ctx, cl)
	if err != nil || lvr.ErrorCode != 0 || lvr.Members[0].ErrorCode != 0 || lvr.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("LeaveGroup = %+v, %v", lvr, err)
	}
	d, err := adm.DescribeGroups(ctx, "gs", "never")
	if err != nil || d["gs"].State != "Empty" || d["never"].State != "Dead" {
		t.Fatalf("DescribeGroups = %+v, %v", d, err)
	}
}

// TestGracefulHandOff: closing the coordinator's agent saves the group and
// releases its lease, so the other agent serves the group at once (no wait
// for the lease to expire) and knows its members.
func TestGracefulHandOff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	agents := twoAgents(t, ctx)
	g := "handoff"
	owner, other := agents[0], agents[1]
	if owner.coord.ownerOf(g).ID != owner.id {
		owner, other = other, owner
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(owner.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(kmsg.JoinGroup), 2)
	jcl, err := kgo.NewClient(kgo.SeedBrokers(owner.KafkaAddr()), kgo.MaxVersions(vs))
	if err != nil {
		t.Fatal(err)
	}
	defer jcl.Close()
	jr, err := joinReq(g).RequestWith(ctx, jcl)
	if err != nil || jr.ErrorCode != 0 {
		t.Fatalf("join = %+v, %v", jr, err)
	}
	syncReq := kmsg.NewPtrSyncGroupRequest()
	syncReq.Group, syncReq.MemberID, syncReq.Generation = g, jr.MemberID, jr.Generation
	syncReq.ProtocolType, syncReq.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range") // mandatory from v5
	sa := kmsg.NewSyncGroupRequestGroupAssignment()
	sa.MemberID, sa.MemberAssignment = jr.MemberID, []byte("assigned")
	syncReq.GroupAssignment = append(syncReq.GroupAssignment, sa)
	if sr, err := syncReq.RequestWith(ctx, jcl); err != nil || sr.ErrorCode != 0 {
		t.Fatalf("syncReq = %+v, %v", sr, err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	start := time.Now()
	if err := owner.Close(cctx); err != nil {
		t.Fatal(err)
	}
	if err := other.refreshLive(ctx); err != nil {
		t.Fatal(err)
	}
	ocl, err := kgo.NewClient(kgo.SeedBrokers(other.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer ocl.Close()
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = g, jr.MemberID, jr.Generation
	hr, err := hb.RequestWith(ctx, ocl)
	if err != nil || hr.ErrorCode != 0 {
		t.Fatalf("heartbeat to the new coordinator = %+v, %v", hr, err)
	}
	if d := time.Since(start); d > other.cfg.AgentTTL/2 {
		t.Fatalf("hand-off took %v: the lease was waited out, not released", d)
	}
	syncReq.Generation = jr.Generation
	sr, err := syncReq.RequestWith(ctx, ocl)
	if err != nil || sr.ErrorCode != 0 || string(sr.MemberAssignment) != "assigned" {
		t.Fatalf("syncReq on the new coordinator = %+v, %v", sr, err)
	}
}

// TestOffsetsExpireForEmptyGroups: once a group has been empty for the
// retention period its offsets go; a group with members keeps them.
func TestOffsetsExpireForEmptyGroups(t *testing.T) {
	ta := newParallelAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := ta.client(t)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "exp"); err != nil {
		t.Fatal(err)
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "exp", Partition: 0, At: 5, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, "gone", os); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	// "busy" has a member (joined, never leaves) and commits as admin first.
	if r, err := adm.CommitOffsets(ctx, "busy", os); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	if r := rawJoin(t, ctx, ta, 2, "busy", ""); r.ErrorCode != 0 {
		t.Fatalf("join: %+v", r)
	}
	time.Sleep(300 * time.Millisecond)
	ta.coord.retention = 200 * time.Millisecond
	ta.coord.expireOffsets()
	if o, _ := ta.store.FetchOffsets(ctx, "gone"); len(o) != 0 {
		t.Fatalf("empty group kept %+v", o)
	}
	if o, _ := ta.store.FetchOffsets(ctx, "busy"); len(o) != 1 {
		t.Fatalf("group with a member lost its offsets: %+v", o)
	}
}
