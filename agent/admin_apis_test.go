package agent

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// direct sends req to the agent itself and returns its answer.
func direct[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	resp, err := cl.SeedBrokers()[0].Request(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(R)
}

func produceTo(t *testing.T, cl *kgo.Client, topic string, partition int32, n int) {
	t.Helper()
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: partition, Key: []byte("k"), Value: []byte(strings.Repeat("v", 100+i))}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDescribeLogDirsSizes: one directory; each partition's size is the
// bytes of its index rows, empty partitions 0, unknown ones left out.
func TestDescribeLogDirsSizes(t *testing.T) {
	ta := newParallelAgent(t)
	cl := ta.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ta.createTopic(t, cl, "sized", 3)
	produceTo(t, cl, "sized", 0, 3)
	produceTo(t, cl, "sized", 2, 1)
	ctx := context.Background()
	tp, err := ta.store.Topic(ctx, "sized")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	for p := range tp.Partitions {
		st, err := ta.store.Partition(ctx, tp.ID, p)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := ta.store.PartitionRows(ctx, tp.ID, p, st.NextOffset)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			want[p] += r.ByteLength
		}
	}
	if want[0] <= want[2] || want[2] == 0 || want[1] != 0 {
		t.Fatalf("index rows hold %v bytes", want)
	}

	req := kmsg.NewPtrDescribeLogDirsRequest()
	for _, topic := range []string{"sized", "nope"} {
		rt := kmsg.NewDescribeLogDirsRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0, 1, 2, 7}
		req.Topics = append(req.Topics, rt)
	}
	resp := direct[*kmsg.DescribeLogDirsResponse](t, cl, req)
	if resp.ErrorCode != 0 || len(resp.Dirs) != 1 {
		t.Fatalf("answer: %+v", resp)
	}
	d := resp.Dirs[0]
	if d.Dir != logDirName || d.ErrorCode != 0 || d.TotalBytes != -1 || d.UsableBytes != -1 || len(d.Topics) != 1 || d.Topics[0].Topic != "sized" {
		t.Fatalf("dir: %+v", d)
	}
	got := map[int32]int64{}
	for _, p := range d.Topics[0].Partitions {
		if p.OffsetLag != 0 || p.IsFuture {
			t.Fatalf("partition %+v", p)
		}
		got[p.Partition] = p.Size
	}
	if len(got) != 3 || got[0] != want[0] || got[1] != 0 || got[2] != want[2] {
		t.Fatalf("sizes %v, want %v", got, want)
	}
	// Topics null: every topic, __consumer_offsets included.
	resp = direct[*kmsg.DescribeLogDirsResponse](t, cl, kmsg.NewPtrDescribeLogDirsRequest())
	var names []string
	for _, dt := range resp.Dirs[0].Topics {
		names = append(names, dt.Topic)
	}
	if !slices.Equal(names, []string{offsetsTopic, "sized"}) {
		t.Fatalf("all topics: %v", names)
	}
}

// TestDescribeProducersIdempotentAndTransactional: an idempotent
// producer's epoch and last sequence; an open transaction's first offset.
func TestDescribeProducersIdempotentAndTransactional(t *testing.T) {
	ta := newParallelAgent(t)
	admin := ta.client(t)
	ta.createTopic(t, admin, "prod", 2)
	idem := ta.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceTo(t, idem, "prod", 0, 3) // sequences 0..2, offsets 0..2
	txn := ta.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("tx-describe"),
		kgo.TransactionTimeout(time.Minute))
	ctx := context.Background()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceTo(t, txn, "prod", 0, 2) // offsets 3..4, sequences 0..1

	describe := func() []kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
		t.Helper()
		req := kmsg.NewPtrDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = "prod", []int32{0, 1, 5}
		req.Topics = append(req.Topics, rt)
		unknown := kmsg.NewDescribeProducersRequestTopic()
		unknown.Topic, unknown.Partitions = "nope", []int32{0}
		req.Topics = append(req.Topics, unknown)
		resp := direct[*kmsg.DescribeProducersResponse](t, admin, req)
		ps := resp.Topics[0].Partitions
		wantCode(t, "partition 0", ps[0].ErrorCode, nil)
		wantCode(t, "partition 1", ps[1].ErrorCode, nil)
		wantCode(t, "partition 5", ps[2].ErrorCode, kerr.UnknownTopicOrPartition)
		wantCode(t, "unknown topic", resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
		if len(ps[1].ActiveProducers) != 0 {
			t.Fatalf("partition 1 producers: %+v", ps[1].ActiveProducers)
		}
		return ps[0].ActiveProducers
	}
	aps := describe()
	if len(aps) != 2 {
		t.Fatalf("producers: %+v", aps)
	}
	now := time.Now().UnixMilli()
	for _, ap := range aps {
		if ap.LastTimestamp < now-60_000 || ap.LastTimestamp > now+1000 || ap.CoordinatorEpoch != -1 {
			t.Fatalf("producer %+v", ap)
		}
	}
	idemP, txnP := aps[0], aps[1] // the idempotent producer's id was handed out first
	if idemP.LastSequence != 2 || idemP.CurrentTxnStartOffset != -1 || txnP.LastSequence != 1 || txnP.CurrentTxnStartOffset != 3 {
		t.Fatalf("idempotent %+v, transactional %+v", idemP, txnP)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	for _, ap := range describe() {
		if ap.ProducerID == txnP.ProducerID && ap.CurrentTxnStartOffset != -1 {
			t.Fatalf("after commit: %+v", ap)
		}
	}
}

// TestDescribeTopicPartitionsPages: Kafka's cursor over sorted topics and
// partitions, and the partitions Metadata reports.
func TestDescribeTopicPartitionsPages(t *testing.T) {
	ta := newParallelAgent(t)
	cl := ta.client(t)
	for name, n := range map[string]int32{"pa": 3, "pb": 2, "pc": 1} {
		ta.createTopic(t, cl, name, n)
	}
	type tp struct {
		topic string
		part  int32
	}
	page := func(topics []string, limit int32, cursor *tp) ([]tp, *tp, kmsg.DescribeTopicPartitionsResponse) {
		t.Helper()
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		for _, n := range topics {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = n
			req.Topics = append(req.Topics, rt)
		}
		req.ResponsePartitionLimit = limit
		if cursor != nil {
			req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: cursor.topic, Partition: cursor.part}
		}
		resp := direct[*kmsg.DescribeTopicPartitionsResponse](t, cl, req)
		var got []tp
		for _, st := range resp.Topics {
			for _, p := range st.Partitions {
				got = append(got, tp{deref(st.Topic), p.Partition})
			}
		}
		var next *tp
		if resp.NextCursor != nil {
			next = &tp{resp.NextCursor.Topic, resp.NextCursor.Partition}
		}
		return got, next, *resp
	}
	named := []string{"pc", "pa", "pb", "pa"}
	var all []tp
	var cursor *tp
	for i, wantNext := range []*tp{{"pa", 2}, {"pb", 1}, nil} {
		got, next, _ := page(named, 2, cursor)
		if len(got) == 0 || (wantNext == nil) != (next == nil) || (next != nil && *next != *wantNext) {
			t.Fatalf("page %d: %v, next %v, want next %v", i, got, next, wantNext)
		}
		all = append(all, got...)
		cursor = next
	}
	want := []tp{{"pa", 0}, {"pa", 1}, {"pa", 2}, {"pb", 0}, {"pb", 1}, {"pc", 0}}
	if !slices.Equal(all, want) {
		t.Fatalf("pages hold %v, want %v", all, want)
	}

	// A topic that uses up the limit exactly: the cursor names the next.
	if got, next, _ := page(named, 3, nil); len(got) != 3 || next == nil || *next != (tp{"pb", 0}) {
		t.Fatalf("exact page: %v, next %v", got, next)
	}

	// Every topic; partitions as Metadata reports them.
	_, _, resp := page(nil, 2000, nil)
	md := kmsg.NewPtrMetadataRequest()
	mresp := direct[*kmsg.MetadataResponse](t, cl, md)
	if len(resp.Topics) != len(mresp.Topics) || deref(resp.Topics[0].Topic) != offsetsTopic || !resp.Topics[0].IsInternal {
		t.Fatalf("all topics: %+v", resp.Topics)
	}
	for i, st := range resp.Topics {
		mt := mresp.Topics[i]
		if deref(st.Topic) != deref(mt.Topic) || st.TopicID != mt.TopicID || len(st.Partitions) != len(mt.Partitions) {
			t.Fatalf("topic %d: %+v vs metadata %+v", i, st, mt)
		}
		for j, p := range st.Partitions {
			mp := mt.Partitions[j]
			if p.LeaderID != mp.Leader || p.LeaderEpoch != mp.LeaderEpoch || !slices.Equal(p.Replicas, mp.Replicas) ||
				!slices.Equal(p.ISR, mp.ISR) || p.EligibleLeaderReplicas == nil || len(p.EligibleLeaderReplicas) != 0 {
				t.Fatalf("%s/%d: %+v vs metadata %+v", deref(st.Topic), j, p, mp)
			}
		}
	}

	// Unknown and illegal names are answered; a cursor outside the named
	// topics is refused for all of them.
	_, _, resp = page([]string{"nope", "pa", "bad/name"}, 2000, nil)
	codes := map[string]int16{}
	for _, st := range resp.Topics {
		codes[deref(st.Topic)] = st.ErrorCode
	}
	if codes["nope"] != kerr.UnknownTopicOrPartition.Code || codes["bad/name"] != kerr.InvalidTopicException.Code || codes["pa"] != 0 {
		t.Fatalf("codes %v", codes)
	}
	_, _, resp = page([]string{"pa", "pb"}, 2000, &tp{"pc", 0})
	if len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code || resp.Topics[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("cursor outside the topics: %+v", resp.Topics)
	}
	_, _, resp = page(nil, 2000, &tp{"pa", -1})
	if len(resp.Topics) != 0 {
		t.Fatalf("negative cursor partition with no topics named: %+v", resp.Topics)
	}
}

// TestElectLeadersAndReassignments: a broker without replicas has no
// election to hold and no reassignment to run.
func TestElectLeadersAndReassignments(t *testing.T) {
	ta := newParallelAgent(t)
	cl := ta.client(t)
	ta.createTopic(t, cl, "el", 2)

	el := kmsg.NewPtrElectLeadersRequest()
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = "el", []int32{0, 1, 9}
	el.Topics = append(el.Topics, rt)
	unknown := kmsg.NewElectLeadersRequestTopic()
	unknown.Topic, unknown.Partitions = "nope", []int32{0}
	el.Topics = append(el.Topics, unknown)
	for _, typ := range []int8{0, 1} {
		el.ElectionType = typ
		resp := direct[*kmsg.ElectLeadersResponse](t, cl, el)
		ps := resp.Topics[0].Partitions
		wantCode(t, "request", resp.ErrorCode, nil)
		wantCode(t, "partition 0", ps[0].ErrorCode, kerr.ElectionNotNeeded)
		wantCode(t, "partition 1", ps[1].ErrorCode, kerr.ElectionNotNeeded)
		wantCode(t, "partition 9", ps[2].ErrorCode, kerr.UnknownTopicOrPartition)
		wantCode(t, "unknown topic", resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	}
	el.ElectionType = 5
	wantCode(t, "election type 5", direct[*kmsg.ElectLeadersResponse](t, cl, el).ErrorCode, kerr.InvalidRequest)
	el.ElectionType, el.Topics = 0, nil
	resp := direct[*kmsg.ElectLeadersResponse](t, cl, el)
	if len(resp.Topics) != 2 || resp.Topics[0].Topic != offsetsTopic || resp.Topics[1].Topic != "el" || len(resp.Topics[1].Partitions) != 0 {
		t.Fatalf("every partition: %+v", resp.Topics)
	}

	self := ta.self.NodeID
	mresp := direct[*kmsg.MetadataResponse](t, cl, kmsg.NewPtrMetadataRequest())
	var current []int32
	for _, mt := range mresp.Topics {
		if deref(mt.Topic) == "el" {
			current = mt.Partitions[0].Replicas
		}
	}
	alter := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	at := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	at.Topic = "el"
	for _, replicas := range [][]int32{nil, current, {self, 999}, {self, self}, {}, {self + 1}} {
		p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		p.Partition, p.Replicas = 0, replicas
		at.Partitions = append(at.Partitions, p)
	}
	missing := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	missing.Partition, missing.Replicas = 9, current
	at.Partitions = append(at.Partitions, missing)
	alter.Topics = append(alter.Topics, at)
	aresp := direct[*kmsg.AlterPartitionAssignmentsResponse](t, cl, alter)
	ps := aresp.Topics[0].Partitions
	for i, want := range []struct {
		code *kerr.Error
		msg  string
	}{
		{kerr.NoReassignmentInProgress, ""},
		{nil, ""},
		{kerr.InvalidReplicaAssignment, "includes broker 999, but no such broker is registered"},
		{kerr.InvalidReplicaAssignment, "more than once"},
		{kerr.InvalidReplicaAssignment, "empty replica list"},
		{kerr.InvalidReplicaAssignment, "no such broker"},
		{kerr.UnknownTopicOrPartition, "Unable to find partition el:9."},
	} {
		wantCode(t, "reassignment "+want.msg, ps[i].ErrorCode, want.code)
		if !strings.Contains(deref(ps[i].ErrorMessage), want.msg) {
			t.Fatalf("reassignment %d: message %q, want %q", i, deref(ps[i].ErrorMessage), want.msg)
		}
	}
	if why, _ := reassignment(0, []int32{1}, []int32{2}, nil, false); why != kerr.InvalidReplicaAssignment {
		t.Fatalf("another live agent's id: %v", why)
	}

	lresp := direct[*kmsg.ListPartitionReassignmentsResponse](t, cl, kmsg.NewPtrListPartitionReassignmentsRequest())
	if lresp.ErrorCode != 0 || len(lresp.Topics) != 0 {
		t.Fatalf("reassignments listed: %+v", lresp)
	}
}

// TestFeatures: ApiVersions reports floe's feature table, whose levels
// follow from the API versions the agent registers; UpdateFeatures
// accepts the current levels only, with Kafka's answers (the table's own
// test has every refusal).
func TestFeatures(t *testing.T) {
	ta := newTestAgent(t, nil)
	cl := ta.client(t)
	av := direct[*kmsg.ApiVersionsResponse](t, cl, kmsg.NewPtrApiVersionsRequest())
	finalized := map[string]int16{}
	for _, f := range av.FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
	}
	maxOf := func(key kmsg.Key) int16 {
		for _, k := range av.ApiKeys {
			if k.ApiKey == int16(key) {
				return k.MaxVersion
			}
		}
		return -1
	}
	// metadata.version 20 is Kafka 3.8-IV0: Fetch 16, Produce 11, Metadata
	// 12; 3.9-IV0 (21) would need Fetch 17.
	if finalized["metadata.version"] != 20 || maxOf(kmsg.Fetch) != 16 || maxOf(kmsg.Produce) != 11 || maxOf(kmsg.Metadata) != 12 {
		t.Errorf("metadata.version %d with Fetch %d, Produce %d, Metadata %d", finalized["metadata.version"], maxOf(kmsg.Fetch), maxOf(kmsg.Produce), maxOf(kmsg.Metadata))
	}
	if (finalized["group.version"] == 1) != (maxOf(kmsg.ConsumerGroupHeartbeat) >= 0) {
		t.Errorf("group.version %d, ConsumerGroupHeartbeat max %d", finalized["group.version"], maxOf(kmsg.ConsumerGroupHeartbeat))
	}
	if (finalized["share.version"] == 1) != (maxOf(kmsg.ShareGroupHeartbeat) >= 1) {
		t.Errorf("share.version %d, ShareGroupHeartbeat max %d", finalized["share.version"], maxOf(kmsg.ShareGroupHeartbeat))
	}
	if tv, ok := finalized["transaction.version"]; ok || tv >= 2 || maxOf(kmsg.Produce) >= 12 || maxOf(kmsg.EndTxn) >= 5 {
		t.Errorf("transaction.version %d (listed %v), Produce %d, EndTxn %d: TV2 needs Produce 12 and EndTxn 5", tv, ok, maxOf(kmsg.Produce), maxOf(kmsg.EndTxn))
	}
	if av.FinalizedFeaturesEpoch != 22 || len(av.SupportedFeatures) != 3 {
		t.Errorf("epoch %d, supported %+v", av.FinalizedFeaturesEpoch, av.SupportedFeatures)
	}

	conn, err := net.Dial("tcp", ta.KafkaAddr()) // requests at the version asked
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(req *kmsg.UpdateFeaturesRequest) *kmsg.UpdateFeaturesResponse {
		resp := kmsg.NewPtrUpdateFeaturesResponse()
		rawRequest(t, conn, req, resp)
		return resp
	}
	update := func(version int16, validateOnly bool, kv ...any) *kmsg.UpdateFeaturesResponse {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version, req.ValidateOnly = version, validateOnly
		for i := 0; i < len(kv); i += 2 {
			u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			u.Feature, u.MaxVersionLevel, u.UpgradeType = kv[i].(string), int16(kv[i+1].(int)), 1
			req.FeatureUpdates = append(req.FeatureUpdates, u)
		}
		return send(req)
	}
	self := strconv.Itoa(int(ta.self.NodeID))
	resp := update(2, false, "group.version", 1, "metadata.version", 21)
	wantCode(t, "metadata.version 21", resp.ErrorCode, kerr.InvalidUpdateVersion)
	if want := "The update failed for all features since the following feature had an error: Invalid update version 21 for feature metadata.version. Local controller " + self + " only supports versions 20"; deref(resp.ErrorMessage) != want || len(resp.Results) != 0 {
		t.Fatalf("answer %q %+v, want %q", deref(resp.ErrorMessage), resp.Results, want)
	}
	resp = update(1, true, "transaction.version", 2)
	if want := "Invalid update version 2 for feature transaction.version. Local controller " + self + " does not support this feature."; !strings.HasSuffix(deref(resp.ErrorMessage), want) {
		t.Fatalf("transaction.version 2: %q", deref(resp.ErrorMessage))
	}
	resp = update(1, false, "group.version", 1, "transaction.version", 0)
	wantCode(t, "current levels", resp.ErrorCode, nil)
	if len(resp.Results) != 2 || resp.Results[1].Feature != "transaction.version" {
		t.Fatalf("v1 results %+v", resp.Results)
	}
	// v0 asks by AllowDowngrade: a downgrade to the current level passes.
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version = 0
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.AllowDowngrade = "share.version", 1, true
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	wantCode(t, "v0 safe downgrade to the current level", send(req).ErrorCode, nil)
	req.FeatureUpdates[0].AllowDowngrade = false
	req.FeatureUpdates[0].MaxVersionLevel = 0
	if resp := send(req); !strings.HasSuffix(deref(resp.ErrorMessage), "Local controller "+self+" only supports versions 1") {
		t.Fatalf("v0 share.version 0: %q", deref(resp.ErrorMessage))
	}
}
