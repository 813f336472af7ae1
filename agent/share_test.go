package agent

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
)

// countingShares counts the store's share-state write transactions.
type countingShares struct {
	metadata.Store
	updates atomic.Int64
}

func (c *countingShares) UpdateShares(ctx context.Context, group string, parts []metadata.ShareKey,
	update func(time.Time, map[metadata.ShareKey]*metadata.SharePartitionState) error) error {
	c.updates.Add(1)
	return c.Store.UpdateShares(ctx, group, parts, update)
}

// shareFixture is an agent with a topic of two partitions holding records
// 0..9 each, and a share group reading it from the earliest offset.
type shareFixture struct {
	ta    *testAgent
	cl    *kgo.Client
	store *countingShares
	topic metadata.Topic
}

func newShareFixture(t *testing.T) *shareFixture {
	f := &shareFixture{}
	f.ta = newTestAgentOver(t, nil, func(s metadata.Store) metadata.Store {
		f.store = &countingShares{Store: s}
		return f.store
	})
	f.cl = f.ta.client(t)
	f.ta.createTopic(t, f.cl, "q", 2)
	for p := range int32(2) {
		for i := range 10 {
			r := &kgo.Record{Topic: "q", Partition: p, Value: []byte(strconv.Itoa(i))}
			if err := f.ta.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())).ProduceSync(context.Background(), r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	res := incrementalAlter(t, f.cl, false, groupResource("sg", setOp("share.auto.offset.reset", "earliest"),
		setOp("group.share.delivery.count.limit", "2")))
	wantCode(t, "share configs", res[0].ErrorCode, nil)
	var err error
	if f.topic, err = f.ta.store.Topic(context.Background(), "q"); err != nil {
		t.Fatal(err)
	}
	return f
}

type ackRange struct {
	first, last int64
	typ         int8
}

func (f *shareFixture) fetch(t *testing.T, member string, epoch, maxRecords int32, parts []int32, acks map[int32][]ackRange) *kmsg.ShareFetchResponse {
	t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 1
	req.GroupID, req.MemberID = kmsg.StringPtr("sg"), kmsg.StringPtr(member)
	req.ShareSessionEpoch, req.MaxRecords, req.MaxBytes = epoch, maxRecords, 1<<20
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = f.topic.ID
	// The partitions to fetch, then those only acknowledged.
	all := slices.Clone(parts)
	for p := range acks {
		if !slices.Contains(parts, p) {
			all = append(all, p)
		}
	}
	for _, p := range all {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = p
		if slices.Contains(parts, p) {
			rp.PartitionMaxBytes = 1 << 20
		}
		for _, a := range acks[p] {
			b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
			b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a.first, a.last, []int8{a.typ}
			rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), f.cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// acquired returns a ShareFetch answer's acquired ranges and record counts
// by partition.
func acquired(t *testing.T, resp *kmsg.ShareFetchResponse) map[int32][]metadata.AcquiredRange {
	t.Helper()
	out := map[int32][]metadata.AcquiredRange{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != 0 || p.AcknowledgeErrorCode != 0 {
				t.Fatalf("partition %d: error %d, ack error %d", p.Partition, p.ErrorCode, p.AcknowledgeErrorCode)
			}
			for _, a := range p.AcquiredRecords {
				out[p.Partition] = append(out[p.Partition], metadata.AcquiredRange{First: a.FirstOffset, Last: a.LastOffset, Deliveries: a.DeliveryCount})
			}
			if len(p.AcquiredRecords) > 0 && len(p.Records) == 0 {
				t.Fatalf("partition %d: records acquired but no batches", p.Partition)
			}
		}
	}
	return out
}

// TestShareFetchAcquireAndAcknowledge drives ShareFetch and
// ShareAcknowledge by hand: acquisition by max records, redelivery of
// released records with their delivery count, the delivery-count limit,
// acknowledgements of another member's records refused, the start offset
// over the finished prefix, and ONE share-state transaction per request.
func TestShareFetchAcquireAndAcknowledge(t *testing.T) {
	t.Parallel()
	f := newShareFixture(t)
	before := f.store.updates.Load()
	resp := f.fetch(t, "m1", 0, 6, []int32{0, 1}, nil)
	if n := f.store.updates.Load() - before; n != 1 {
		t.Fatalf("one ShareFetch over two partitions made %d share-state transactions, want 1", n)
	}
	if resp.AcquisitionLockTimeoutMillis != 30000 {
		t.Errorf("lock timeout %d, want the default 30000", resp.AcquisitionLockTimeoutMillis)
	}
	got := acquired(t, resp)
	// Six records in all, from the first partition on.
	total := int64(0)
	for _, rs := range got {
		for _, r := range rs {
			total += r.Last - r.First + 1
			if r.Deliveries != 1 {
				t.Fatalf("first delivery with count %d", r.Deliveries)
			}
		}
	}
	if total != 6 {
		t.Fatalf("acquired %d records, want 6: %+v", total, got)
	}
	// Another member gets the rest of partition 0 and all of 1 (no more
	// than held by m1).
	got2 := acquired(t, f.fetch(t, "m2", 0, 100, []int32{0, 1}, nil))
	for p, rs := range got2 {
		for _, r := range rs {
			for _, m := range got[p] {
				if r.First <= m.Last && m.First <= r.Last {
					t.Fatalf("partition %d: %+v acquired twice (m1 %+v)", p, r, m)
				}
			}
		}
	}
	// m2 may not acknowledge m1's records.
	p0 := got[0][0]
	resp = f.fetch(t, "m2", 1, 0, nil, map[int32][]ackRange{0: {{p0.First, p0.First, 1}}})
	if code := resp.Topics[0].Partitions[0].AcknowledgeErrorCode; code != kerr.InvalidRecordState.Code {
		t.Fatalf("ack of another member's record: code %d, want INVALID_RECORD_STATE", code)
	}
	// m1 releases everything it holds in one ShareAcknowledge: one
	// transaction, and the records come back with delivery count 2.
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr("sg"), kmsg.StringPtr("m1"), 1
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = f.topic.ID
	for p, rs := range got {
		ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
		ap.Partition = p
		for _, r := range rs {
			b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
			b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = r.First, r.Last, []int8{metadata.ShareAckRelease}
			ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, b)
		}
		at.Partitions = append(at.Partitions, ap)
	}
	ack.Topics = append(ack.Topics, at)
	before = f.store.updates.Load()
	aresp, err := ack.RequestWith(context.Background(), f.cl)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.store.updates.Load() - before; n != 1 {
		t.Fatalf("one ShareAcknowledge made %d share-state transactions, want 1", n)
	}
	for _, p := range aresp.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("release of partition %d: code %d", p.Partition, p.ErrorCode)
		}
	}
	// A stale epoch is refused; the session goes on at 2.
	if r := f.fetch(t, "m1", 1, 10, nil, nil); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("stale epoch: code %d", r.ErrorCode)
	}
	again := acquired(t, f.fetch(t, "m1", 2, 100, nil, nil))
	if !reflect.DeepEqual(again[0], []metadata.AcquiredRange{{First: got[0][0].First, Last: got[0][0].Last, Deliveries: 2}}) {
		t.Fatalf("redelivery of partition 0 = %+v, want %+v at delivery count 2", again[0], got[0])
	}
	// Released again at the limit (2), the records are archived; m2
	// accepts its own: partition 0 is done, its start offset at 10.
	var m2acks []ackRange
	for _, r := range got2[0] {
		m2acks = append(m2acks, ackRange{r.First, r.Last, metadata.ShareAckAccept})
	}
	acquired(t, f.fetch(t, "m1", 3, 0, nil, map[int32][]ackRange{0: {{got[0][0].First, got[0][0].Last, metadata.ShareAckRelease}}}))
	acquired(t, f.fetch(t, "m2", 2, 0, nil, map[int32][]ackRange{0: m2acks}))
	if spso := f.startOffsets(t)[0]; spso != 10 {
		t.Fatalf("partition 0 start offset %d, want 10", spso)
	}
	// Session errors.
	if r := f.fetch(t, "nobody", 3, 10, nil, nil); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("unknown session: code %d", r.ErrorCode)
	}
	if r := f.fetch(t, "m1", 0, 10, []int32{0}, map[int32][]ackRange{0: {{0, 0, 1}}}); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("acks in a new session: code %d", r.ErrorCode)
	}
}

func (f *shareFixture) startOffsets(t *testing.T) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = 1
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = "sg"
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(context.Background(), f.cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, rt := range resp.Groups[0].Topics {
		for _, p := range rt.Partitions {
			out[p.Partition] = p.StartOffset
		}
	}
	return out
}

// TestShareGroupHeartbeatAssigns checks the assignor: every partition to
// some member, members sharing partitions when they outnumber them.
func TestShareGroupHeartbeatAssigns(t *testing.T) {
	t.Parallel()
	f := newShareFixture(t)
	beat := func(member string, epoch int32) *kmsg.ShareGroupHeartbeatResponse {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = "sg", member, epoch
		if epoch == 0 {
			req.SubscribedTopicNames = []string{"q"}
		}
		resp, err := req.RequestWith(context.Background(), f.cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat %s at %d: code %d", member, epoch, resp.ErrorCode)
		}
		return resp
	}
	r := beat("a", 0)
	if r.Assignment == nil || len(r.Assignment.TopicPartitions) != 1 || len(r.Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Fatalf("one member: %+v, want both partitions", r.Assignment)
	}
	beat("b", 0)
	beat("c", 0)
	// c, joining last, shares a partition; a learns it has one.
	held := map[int32]int{}
	for _, m := range []string{"a", "b", "c"} {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{"sg"}
		resp, err := req.RequestWith(context.Background(), f.cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, dm := range resp.Groups[0].Members {
			if dm.MemberID != m {
				continue
			}
			if len(dm.Assignment.TopicPartitions) != 1 || len(dm.Assignment.TopicPartitions[0].Partitions) != 1 {
				t.Fatalf("member %s: %+v, want one partition", m, dm.Assignment)
			}
			held[dm.Assignment.TopicPartitions[0].Partitions[0]]++
		}
	}
	if held[0] == 0 || held[1] == 0 {
		t.Fatalf("partitions held %v: both must have a member", held)
	}
	// A consumer-group heartbeat on the share group's id is refused.
	cg := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cg.Group, cg.MemberID, cg.MemberEpoch, cg.SubscribedTopicNames, cg.RebalanceTimeoutMillis = "sg", "x", 0, []string{"q"}, 1000
	cr, err := cg.RequestWith(context.Background(), f.cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "consumer heartbeat on a share group", cr.ErrorCode, kerr.GroupIDNotFound)
	// Leaving, and a heartbeat of a member that left.
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = "sg", "c", -1
	if resp, err := req.RequestWith(context.Background(), f.cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("leave: %v %+v", err, resp)
	}
	req.MemberEpoch = 5
	if resp, err := req.RequestWith(context.Background(), f.cl); err != nil || resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat after leaving: %v %+v", err, resp)
	}
	// ListGroups shows it as a share group.
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	lr, err := lg.RequestWith(context.Background(), f.cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(lr.Groups) != 1 || lr.Groups[0].GroupType != "share" || lr.Groups[0].GroupState != "Stable" {
		t.Fatalf("ListGroups: %+v", lr.Groups)
	}
}

// TestShareGroupConfigsStored checks the share keys go in and are
// described as the group's.
func TestShareGroupConfigsStored(t *testing.T) {
	ta := newParallelAgent(t)
	cl := ta.client(t)
	set := map[string]string{"share.auto.offset.reset": "by_duration:P1DT2H", "share.isolation.level": "read_committed",
		"share.record.lock.duration.ms": "2000", "group.share.delivery.count.limit": "3"}
	var ops []kmsg.IncrementalAlterConfigsRequestResourceConfig
	for k, v := range set {
		ops = append(ops, setOp(k, v))
	}
	res := incrementalAlter(t, cl, false, groupResource("g", ops...))
	wantCode(t, "SET share keys", res[0].ErrorCode, nil)
	cs := describeGroup(t, cl, "g")
	for k, v := range set {
		if c := cs[k]; deref(c.Value) != v || c.Source != kmsg.ConfigSourceGroupConfig {
			t.Errorf("%s = %+v, want %s from the group", k, c, v)
		}
	}
	s := newShareSettings(set)
	if s.reset != "by_duration" || s.resetAgo != 26*time.Hour || !s.readCommitted ||
		s.limits.LockDuration != 2*time.Second || s.limits.MaxDeliveries != 3 {
		t.Fatalf("settings %+v", s)
	}
}

// TestShareFetchReadCommitted checks share.isolation.level=read_committed:
// records of an aborted transaction and the control batches are never
// acquired, those of a committed one are; read_uncommitted acquires the
// aborted ones too.
func TestShareFetchReadCommitted(t *testing.T) {
	ta := newParallelAgent(t)
	cl := ta.client(t)
	ta.createTopic(t, cl, "tx", 1)
	ctx := context.Background()
	txn := ta.client(t, kgo.TransactionalID("share-txn"), kgo.DefaultProduceTopic("tx"))
	for _, commit := range []bool{false, true} { // offsets 0-2 aborted, 3 marker; 4-6 committed, 7 marker
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	tp, err := ta.store.Topic(ctx, "tx")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		level string
		want  []metadata.AcquiredRange
	}{
		{"read_committed", []metadata.AcquiredRange{{First: 4, Last: 6, Deliveries: 1}}},
		{"read_uncommitted", []metadata.AcquiredRange{{First: 0, Last: 2, Deliveries: 1}, {First: 4, Last: 6, Deliveries: 1}}},
	} {
		g := "g-" + tc.level
		res := incrementalAlter(t, cl, false, groupResource(g, setOp("share.auto.offset.reset", "earliest"),
			setOp("share.isolation.level", tc.level)))
		wantCode(t, "configs", res[0].ErrorCode, nil)
		f := &shareFixture{ta: ta, cl: cl, topic: tp}
		req := kmsg.NewPtrShareFetchRequest()
		req.Version = 1
		req.GroupID, req.MemberID, req.MaxRecords, req.MaxBytes = kmsg.StringPtr(g), kmsg.StringPtr("m"), 100, 1<<20
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = f.topic.ID
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if got := acquired(t, resp)[0]; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: acquired %+v, want %+v", tc.level, got, tc.want)
		}
	}
}

// TestShareLeaveReleases checks that a member leaving the group has the
// records it holds released at once, not when their 30 s locks end.
func TestShareLeaveReleases(t *testing.T) {
	t.Parallel()
	f := newShareFixture(t)
	hb := func(member string, epoch int32) {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = "sg", member, epoch
		if epoch == 0 {
			req.SubscribedTopicNames = []string{"q"}
		}
		resp, err := req.RequestWith(context.Background(), f.cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("heartbeat %s at %d: %v %+v", member, epoch, err, resp)
		}
	}
	hb("leaver", 0)
	held := acquired(t, f.fetch(t, "leaver", 0, 3, []int32{0}, nil))[0]
	if want := []metadata.AcquiredRange{{First: 0, Last: 2, Deliveries: 1}}; !reflect.DeepEqual(held, want) {
		t.Fatalf("acquired %+v, want %+v", held, want)
	}
	hb("leaver", -1)
	got := acquired(t, f.fetch(t, "stayer", 0, 3, []int32{0}, nil))[0]
	if want := []metadata.AcquiredRange{{First: 0, Last: 2, Deliveries: 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the holder left: %+v, want %+v", got, want)
	}
}

// TestShareFetchBatchSize checks KIP-1206's batch-optimized mode: the
// acquired ranges come cut at BatchSize offsets.
func TestShareFetchBatchSize(t *testing.T) {
	t.Parallel()
	f := newShareFixture(t)
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 1
	req.GroupID, req.MemberID = kmsg.StringPtr("sg"), kmsg.StringPtr("m")
	req.MaxRecords, req.BatchSize, req.MaxBytes = 10, 4, 1<<20
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = f.topic.ID
	rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), f.cl)
	if err != nil {
		t.Fatal(err)
	}
	want := []metadata.AcquiredRange{{First: 0, Last: 3, Deliveries: 1}, {First: 4, Last: 7, Deliveries: 1}, {First: 8, Last: 9, Deliveries: 1}}
	if got := acquired(t, resp)[0]; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %+v, want %+v", got, want)
	}
}

// TestShareConnectionCloseReleases checks that the records a member holds
// are released when the connection that opened its share session closes
// (a consumer process that died), long before their 30 s locks end.
func TestShareConnectionCloseReleases(t *testing.T) {
	t.Parallel()
	f := newShareFixture(t)
	holder := *f
	holder.cl = f.ta.client(t)
	held := acquired(t, holder.fetch(t, "holder", 0, 10, []int32{1}, nil))[1]
	if want := []metadata.AcquiredRange{{First: 0, Last: 9, Deliveries: 1}}; !reflect.DeepEqual(held, want) {
		t.Fatalf("acquired %+v, want %+v", held, want)
	}
	holder.cl.Close()
	deadline := time.Now().Add(10 * time.Second)
	for epoch := int32(0); ; epoch++ {
		got := acquired(t, f.fetch(t, "stayer", epoch, 3, []int32{1}, nil))[1]
		if len(got) > 0 {
			if want := []metadata.AcquiredRange{{First: 0, Last: 2, Deliveries: 2}}; !reflect.DeepEqual(got, want) {
				t.Fatalf("after the holder's connection closed: %+v, want %+v", got, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("records of a closed connection's session not released")
		}
		// The holder still has them all: ask again once the agent has
		// seen the close.
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShareBadInput checks the Kafka errors of malformed share requests.
func TestShareBadInput(t *testing.T) {
	t.Parallel()
	f := newShareFixture(t)
	ctx := context.Background()
	long := kmsg.NewPtrShareFetchRequest()
	long.GroupID, long.MemberID = kmsg.StringPtr("sg"), kmsg.StringPtr("0123456789012345678901234567890123456789")
	if r, err := long.RequestWith(ctx, f.cl); err != nil || r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("member id over 36 characters: %v %+v", err, r)
	}
	// An unknown topic id and a partition past the topic's.
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.MaxRecords = kmsg.StringPtr("sg"), kmsg.StringPtr("m"), 10
	unknown := kmsg.NewShareFetchRequestTopic()
	unknown.TopicID = [16]byte{1, 2, 3}
	unknown.Partitions = append(unknown.Partitions, kmsg.NewShareFetchRequestTopicPartition())
	known := kmsg.NewShareFetchRequestTopic()
	known.TopicID = f.topic.ID
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.Partition = 7
	known.Partitions = append(known.Partitions, rp)
	req.Topics = append(req.Topics, unknown, known)
	r, err := req.RequestWith(ctx, f.cl)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[[16]byte]int16{}
	for _, rt := range r.Topics {
		codes[rt.TopicID] = rt.Partitions[0].ErrorCode
	}
	if codes[unknown.TopicID] != kerr.UnknownTopicID.Code || codes[f.topic.ID] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("partition errors %v", codes)
	}
	// Malformed acknowledgement batches: first after last, types of the
	// wrong count, an unknown type.
	acquired(t, f.fetch(t, "m2", 0, 5, []int32{0}, nil))
	for i, b := range []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
		{FirstOffset: 3, LastOffset: 1, AcknowledgeTypes: []int8{1}},
		{FirstOffset: 0, LastOffset: 3, AcknowledgeTypes: []int8{1, 1}},
		{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{9}},
	} {
		ack := kmsg.NewPtrShareAcknowledgeRequest()
		ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr("sg"), kmsg.StringPtr("m2"), int32(i+1)
		at := kmsg.NewShareAcknowledgeRequestTopic()
		at.TopicID = f.topic.ID
		ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
		ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, b)
		at.Partitions = append(at.Partitions, ap)
		ack.Topics = append(ack.Topics, at)
		ar, err := ack.RequestWith(ctx, f.cl)
		if err != nil {
			t.Fatal(err)
		}
		if ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("batch %+v: %+v, want INVALID_REQUEST on the partition", b, ar)
		}
	}
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID = kmsg.StringPtr("sg"), kmsg.StringPtr("m2")
	if ar, err := ack.RequestWith(ctx, f.cl); err != nil || ar.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("ShareAcknowledge at epoch 0: %v %+v", err, ar)
	}
	// A consumer group's id is no share group's.
	cg := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cg.Group, cg.MemberID, cg.SubscribedTopicNames, cg.RebalanceTimeoutMillis = "cg", "x", []string{"q"}, 1000
	if cr, err := cg.RequestWith(ctx, f.cl); err != nil || cr.ErrorCode != 0 {
		t.Fatalf("consumer group join: %v %+v", err, cr)
	}
	req.GroupID = kmsg.StringPtr("cg")
	if r, err := req.RequestWith(ctx, f.cl); err != nil || r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ShareFetch on a consumer group: %v %+v", err, r)
	}
}

// TestShareACLs checks the share APIs' authorization: READ on the group
// and READ on each topic, DELETE on the group to delete its offsets.
func TestShareACLs(t *testing.T) {
	t.Parallel()
	c := newACLCluster(t)
	ctx := aclCtx(t)
	topic, err := c.store.CreateTopic(ctx, "shared", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	fetch := func() *kmsg.ShareFetchResponse {
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.MaxRecords = kmsg.StringPtr("sg"), kmsg.StringPtr("m"), 10
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = topic.ID
		rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		return on[*kmsg.ShareFetchResponse](t, c.cb, req)
	}
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "sg", "m", []string{"shared"}
	if err := codeIs(fetch().ErrorCode, kerr.GroupAuthorizationFailed); err != nil {
		t.Fatal("ShareFetch before any grant:", err)
	}
	if err := codeIs(on[*kmsg.ShareGroupHeartbeatResponse](t, c.cb, hb).ErrorCode, kerr.GroupAuthorizationFailed); err != nil {
		t.Fatal("ShareGroupHeartbeat before any grant:", err)
	}
	c.grant(t, allowAnon(resGroup, "sg", lit, opRead))
	eventually(t, "b refuses the topic only", func() error {
		r := fetch()
		if err := codeIs(r.ErrorCode, nil); err != nil {
			return err
		}
		return codeIs(r.Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
	})
	if err := codeIs(on[*kmsg.ShareGroupHeartbeatResponse](t, c.cb, hb).ErrorCode, kerr.TopicAuthorizationFailed); err != nil {
		t.Fatal("ShareGroupHeartbeat without DESCRIBE on the topic:", err)
	}
	c.grant(t, allowAnon(resTopic, "shared", lit, opRead))
	eventually(t, "b serves the share fetch", func() error {
		r := on[*kmsg.ShareFetchResponse](t, c.cb, func() kmsg.Request {
			req := kmsg.NewPtrShareFetchRequest()
			req.GroupID, req.MemberID, req.MaxRecords = kmsg.StringPtr("sg"), kmsg.StringPtr("m2"), 10
			rt := kmsg.NewShareFetchRequestTopic()
			rt.TopicID = topic.ID
			rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
			req.Topics = append(req.Topics, rt)
			return req
		}())
		if err := codeIs(r.ErrorCode, nil); err != nil {
			return err
		}
		return codeIs(r.Topics[0].Partitions[0].ErrorCode, nil)
	})
	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "sg"
	dt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
	dt.Topic = "shared"
	del.Topics = append(del.Topics, dt)
	if err := codeIs(on[*kmsg.DeleteShareGroupOffsetsResponse](t, c.cb, del).ErrorCode, kerr.GroupAuthorizationFailed); err != nil {
		t.Fatal("DeleteShareGroupOffsets without DELETE on the group:", err)
	}
}

// TestShareReadLimit checks that a share fetch reads about what its
// records need once a partition's density is known.
func TestShareReadLimit(t *testing.T) {
	t.Parallel()
	s := newShares(nil)
	k := metadata.ShareKey{Partition: 3}
	if got := s.readLimit(k, 500, 1<<20); got != 1<<20 {
		t.Fatalf("unknown density: %d, want the whole limit", got)
	}
	s.observe(k, 200_000, 1000) // 200 bytes per offset
	if got := s.readLimit(k, 500, 1<<20); got != 125_000 {
		t.Fatalf("limit %d, want 500 × 200 × 1.25", got)
	}
	if got := s.readLimit(k, 10, 1<<20); got != minShareRead {
		t.Fatalf("limit %d, want the floor %d", got, minShareRead)
	}
	if got := s.readLimit(k, 500, 1000); got != 1000 {
		t.Fatalf("limit %d, want the answer's 1000", got)
	}
	// A read that got nothing (a batch past the bound) lifts the bound.
	s.observe(k, 0, 0)
	if got := s.readLimit(k, 500, 1<<20); got != 1<<20 {
		t.Fatalf("after an empty read: %d, want the whole limit", got)
	}
}
