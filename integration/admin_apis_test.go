package integration

// The admin APIs tools call, each through franz-go's kadm and sarama's
// ClusterAdmin against a real `floe dev` (issue 13): configs (altered,
// validated, described with synonyms), log dirs, producers, topic
// partitions, elections, reassignments, features and client quotas, and an
// IncrementalAlterConfigs of retention.ms that the compactor then enforces.
// sarama has no DescribeProducers or DescribeTopicPartitions; those go
// through kadm and a raw kmsg request only.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// adminEnv is one floe dev with a franz-go client, kadm and sarama's
// ClusterAdmin on it.
type adminEnv struct {
	p      *proc
	cl     *kgo.Client
	adm    *kadm.Client
	sarama sarama.ClusterAdmin
	nodeID int32
}

func startAdminEnv(t *testing.T, extra ...string) *adminEnv {
	t.Helper()
	p := startFloe(t, append([]string{"dev", "--data-dir", t.TempDir()}, extra...)...)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	sa, err := sarama.NewClusterAdmin([]string{p.Addr}, saramaConfig(sarama.V4_0_0_0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sa.Close() })
	e := &adminEnv{p: p, cl: cl, adm: kadm.NewClient(cl), sarama: sa}
	brokers, err := e.adm.ListBrokers(testContext(t, time.Minute))
	if err != nil || len(brokers) != 1 {
		t.Fatalf("brokers: %v %v", brokers, err)
	}
	e.nodeID = brokers[0].NodeID
	return e
}

func sp(s string) *string { return &s }

// produceAt produces n records to topic/partition with timestamp ts, in
// one request (one object).
func (e *adminEnv) produceAt(t *testing.T, ctx context.Context, topic string, partition int32, n int, ts time.Time) {
	t.Helper()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: partition, Key: []byte(strconv.Itoa(i)),
			Value: []byte(strings.Repeat("x", 200)), Timestamp: ts})
	}
	if err := e.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func (e *adminEnv) startOffset(t *testing.T, ctx context.Context, topic string) int64 {
	t.Helper()
	os, err := e.adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := os.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("start offset of %s: %+v", topic, o)
	}
	return o.Offset
}

// TestIncrementalAlterConfigsRetentionEnforced: retention.ms altered on a
// topic holding data is what the compactor enforces. floe dev keeps data
// forever by default; once IncrementalAlterConfigs (kadm on one topic,
// sarama on another) sets retention.ms to ten minutes, the compactor drops
// the hour-old records and keeps the fresh ones.
func TestIncrementalAlterConfigsRetentionEnforced(t *testing.T) {
	e := startAdminEnv(t, "--compactor-interval", "200ms")
	ctx := testContext(t, 3*time.Minute)
	old := time.Now().Add(-time.Hour)
	for _, topic := range []string{"ret-kadm", "ret-sarama"} {
		createTopic(t, ctx, e.cl, topic, 1, nil)
		e.produceAt(t, ctx, topic, 0, 5, old)
		time.Sleep(50 * time.Millisecond) // the next records go in another object
		e.produceAt(t, ctx, topic, 0, 3, time.Now())
	}
	// Several compactor rounds: floe dev's default keeps everything.
	time.Sleep(time.Second)
	for _, topic := range []string{"ret-kadm", "ret-sarama"} {
		if got := e.startOffset(t, ctx, topic); got != 0 {
			t.Fatalf("%s: start offset %d before retention.ms was set", topic, got)
		}
	}

	res, err := e.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: sp("600000")}}, "ret-kadm")
	if err != nil || res[0].Err != nil {
		t.Fatalf("kadm IncrementalAlterConfigs: %+v %v", res, err)
	}
	err = e.sarama.IncrementalAlterConfig(sarama.TopicResource, "ret-sarama", map[string]sarama.IncrementalAlterConfigsEntry{
		"retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: sp("600000")},
	}, false)
	if err != nil {
		t.Fatalf("sarama IncrementalAlterConfig: %v", err)
	}
	for _, topic := range []string{"ret-kadm", "ret-sarama"} {
		waitFor(t, 30*time.Second, topic+" retention to drop the hour-old records", func() bool {
			return e.startOffset(t, ctx, topic) == 5
		})
	}
	// The fresh records are all still there, and nothing else.
	fetched := consumeFrom(t, ctx, e.p.Addr, "ret-kadm", 3)
	for i, r := range fetched {
		if r.Offset != int64(5+i) || r.Timestamp.Before(old.Add(time.Minute)) {
			t.Fatalf("record %d after retention: offset %d at %v", i, r.Offset, r.Timestamp)
		}
	}
	// DescribeConfigs says what is enforced.
	rcs, err := e.adm.DescribeTopicConfigs(ctx, "ret-kadm")
	if err != nil {
		t.Fatal(err)
	}
	c, err := rcs.On("ret-kadm", nil)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, kv := range c.Configs {
		if kv.Key == "retention.ms" {
			found = true
			if kv.MaybeValue() != "600000" || kv.Source != kmsg.ConfigSourceDynamicTopicConfig || len(kv.Synonyms) != 2 ||
				kv.Synonyms[1].Key != "log.retention.ms" {
				t.Fatalf("retention.ms described as %+v", kv)
			}
		}
	}
	if !found {
		t.Fatal("retention.ms not described")
	}
}

// consumeFrom reads n records of partition 0 from the log start.
func consumeFrom(t *testing.T, ctx context.Context, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consume %s: %v", topic, err)
		}
		recs = append(recs, fs.Records()...)
	}
	if len(recs) != n {
		t.Fatalf("consumed %d records of %s, want %d", len(recs), topic, n)
	}
	return recs
}

// TestAdminAPIsKadmAndSarama drives every admin API floe added through
// both clients.
func TestAdminAPIsKadmAndSarama(t *testing.T) {
	e := startAdminEnv(t)
	ctx := testContext(t, 3*time.Minute)
	createTopic(t, ctx, e.cl, "adm", 2, nil)
	e.produceAt(t, ctx, "adm", 0, 4, time.Now())
	self := strconv.Itoa(int(e.nodeID))

	t.Run("configs", func(t *testing.T) {
		// kadm: incremental SET and APPEND, validate-only, a refusal.
		res, err := e.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: "retention.bytes", Value: sp("1000000")},
			{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: sp("compact")},
		}, "adm")
		if err != nil || res[0].Err != nil {
			t.Fatalf("kadm alter: %+v %v", res, err)
		}
		res, err = e.adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: sp("1")}}, "adm")
		if err != nil || res[0].Err != nil {
			t.Fatalf("kadm validate: %+v %v", res, err)
		}
		// Every codec Kafka takes is taken (the compactor recompresses into
		// it); others are refused in Kafka's words.
		res, err = e.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "compression.type", Value: sp("zstd")}}, "adm")
		if err != nil || res[0].Err != nil {
			t.Fatalf("kadm alter compression.type: %+v %v", res, err)
		}
		res, err = e.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "compression.type", Value: sp("brotli")}}, "adm")
		if err != nil || !errors.Is(res[0].Err, kerr.InvalidConfig) ||
			res[0].ErrMessage != "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer" {
			t.Fatalf("kadm refused alter: %+v %v", res, err)
		}
		// sarama reads back exactly what kadm stored.
		results, err := e.sarama.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.TopicResource, Name: "adm"}},
			sarama.DescribeConfigsOptions{IncludeSynonyms: true, IncludeDocumentation: true})
		if err != nil || len(results) != 1 || results[0].ErrorCode != 0 {
			t.Fatalf("sarama DescribeConfigs: %+v %v", results, err)
		}
		got := map[string]*sarama.ConfigEntry{}
		for i := range results[0].Configs {
			got[results[0].Configs[i].Name] = &results[0].Configs[i]
		}
		for name, c := range got {
			if c.Documentation == nil || *c.Documentation == "" {
				t.Fatalf("%s has no documentation", name)
			}
		}
		if c := got["retention.bytes"]; c == nil || c.Value != "1000000" || c.Source != sarama.SourceTopic || len(c.Synonyms) != 2 ||
			c.Synonyms[1].ConfigName != "log.retention.bytes" || c.Synonyms[1].Source != sarama.SourceDefault {
			t.Fatalf("retention.bytes: %+v", c)
		}
		if c := got["cleanup.policy"]; c == nil || c.Value != "delete,compact" {
			t.Fatalf("cleanup.policy: %+v", c)
		}
		// floe dev's default: kept forever, as its compactor keeps them.
		if c := got["retention.ms"]; c == nil || c.Value != "-1" || c.Source != sarama.SourceDefault {
			t.Fatalf("retention.ms after validate-only: %+v", c)
		}
		if c := got["compression.type"]; c == nil || c.Value != "zstd" || c.Source != sarama.SourceTopic {
			t.Fatalf("compression.type: %+v", c)
		}
		if c := got["compression.zstd.level"]; c == nil || c.Value != "3" || c.Source != sarama.SourceDefault {
			t.Fatalf("compression.zstd.level: %+v", c)
		}
		// sarama: incremental DELETE, the legacy AlterConfigs replacing all,
		// and a refused broker change.
		err = e.sarama.IncrementalAlterConfig(sarama.TopicResource, "adm", map[string]sarama.IncrementalAlterConfigsEntry{
			"cleanup.policy": {Operation: sarama.IncrementalAlterConfigsOperationDelete},
		}, false)
		if err != nil {
			t.Fatal(err)
		}
		lres, err := e.adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "segment.ms", Value: sp("3600000")}, {Name: "retention.ms", Value: sp("86400000")}}, "adm")
		if err != nil || lres[0].Err != nil {
			t.Fatalf("kadm legacy AlterConfigs: %+v %v", lres, err)
		}
		if err := e.sarama.AlterConfig(sarama.TopicResource, "adm", map[string]*string{"segment.bytes": sp("52428800")}, false); err != nil {
			t.Fatal(err)
		}
		state, err := e.adm.DescribeTopicConfigs(ctx, "adm")
		if err != nil {
			t.Fatal(err)
		}
		rc, _ := state.On("adm", nil)
		for _, kv := range rc.Configs {
			dynamic := kv.Source == kmsg.ConfigSourceDynamicTopicConfig
			if dynamic != (kv.Key == "segment.bytes") || (dynamic && kv.MaybeValue() != "52428800") {
				t.Fatalf("after the legacy AlterConfigs: %s=%s from %v", kv.Key, kv.MaybeValue(), kv.Source)
			}
		}
		err = e.sarama.IncrementalAlterConfig(sarama.BrokerResource, self, map[string]sarama.IncrementalAlterConfigsEntry{
			"log.retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: sp("1")},
		}, false)
		if !errors.Is(err, sarama.ErrInvalidRequest) {
			t.Fatalf("sarama broker alter: %v", err)
		}
		bres, err := e.adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "message.max.bytes", Value: sp("1")}}, e.nodeID)
		if err != nil || !errors.Is(bres[0].Err, kerr.InvalidRequest) || !strings.Contains(bres[0].ErrMessage, "Cannot update these configs for one broker") {
			t.Fatalf("kadm broker alter: %+v %v", bres, err)
		}
		// Broker configs: the values floe runs with, read-only, from both.
		brc, err := e.adm.DescribeBrokerConfigs(ctx, e.nodeID)
		if err != nil {
			t.Fatal(err)
		}
		bc, err := brc.On(self, nil)
		if err != nil {
			t.Fatal(err)
		}
		kv := map[string]string{}
		for _, c := range bc.Configs {
			kv[c.Key] = c.MaybeValue()
		}
		sres, err := e.sarama.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.BrokerResource, Name: self,
			ConfigNames: []string{"message.max.bytes", "log.cleaner.min.cleanable.ratio", "broker.id"}}}, sarama.DescribeConfigsOptions{})
		if err != nil || len(sres) != 1 || sres[0].ErrorCode != sarama.ErrNoError || len(sres[0].Configs) != 3 {
			t.Fatalf("sarama broker configs: %+v %v", sres, err)
		}
		bentries := sres[0].Configs
		for _, en := range bentries {
			if en.ReadOnly != (en.Name == "broker.id") || en.Value != kv[en.Name] || en.Value == "" { // the others the cluster may set
				t.Fatalf("%s: sarama %+v, kadm %q", en.Name, en, kv[en.Name])
			}
		}
		if kv["message.max.bytes"] != "1048588" || kv["broker.id"] != self || kv["log.cleaner.min.cleanable.ratio"] != "0.5" {
			t.Fatalf("broker configs %v", kv)
		}
	})

	t.Run("log dirs", func(t *testing.T) {
		all, err := e.adm.DescribeAllLogDirs(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		dirs := all[e.nodeID]
		if len(dirs) != 1 || dirs["object-storage"].Err != nil {
			t.Fatalf("kadm log dirs: %+v", all)
		}
		kadmSize := dirs["object-storage"].Topics["adm"][0].Size
		if kadmSize <= 0 { // 4 records of 200 bytes, as compressed by the producer
			t.Fatalf("kadm: partition 0 holds %d bytes", kadmSize)
		}
		if s1 := dirs["object-storage"].Topics["adm"][1].Size; s1 != 0 {
			t.Fatalf("kadm: empty partition holds %d bytes", s1)
		}
		sdirs, err := e.sarama.DescribeLogDirs([]int32{e.nodeID})
		if err != nil || len(sdirs[e.nodeID]) != 1 {
			t.Fatalf("sarama log dirs: %+v %v", sdirs, err)
		}
		var saramaSize int64 = -1
		for _, dt := range sdirs[e.nodeID][0].Topics {
			if dt.Topic == "adm" {
				for _, p := range dt.Partitions {
					if p.PartitionID == 0 {
						saramaSize = p.Size
					}
				}
			}
		}
		if saramaSize != kadmSize || sdirs[e.nodeID][0].Path != "object-storage" {
			t.Fatalf("sarama size %d, kadm %d, dir %q", saramaSize, kadmSize, sdirs[e.nodeID][0].Path)
		}
	})

	t.Run("producers and topic partitions (kadm only)", func(t *testing.T) {
		ps, err := e.adm.DescribeProducers(ctx, kadm.TopicsSet{"adm": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		part := ps["adm"].Partitions[0]
		if part.Err != nil || len(part.ActiveProducers) != 1 {
			t.Fatalf("kadm producers: %+v", part)
		}
		for _, ap := range part.ActiveProducers {
			if ap.LastSequence != 3 || ap.CurrentTxnStartOffset != -1 || ap.ProducerEpoch != 0 {
				t.Fatalf("producer %+v", ap)
			}
		}
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = "adm"
		req.Topics = append(req.Topics, rt)
		req.ResponsePartitionLimit = 1
		resp, err := req.RequestWith(ctx, e.cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].LeaderID != e.nodeID ||
			resp.NextCursor == nil || resp.NextCursor.Topic != "adm" || resp.NextCursor.Partition != 1 {
			t.Fatalf("DescribeTopicPartitions: %+v", resp)
		}
	})

	t.Run("elections and reassignments", func(t *testing.T) {
		el, err := e.adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"adm": {0: {}, 1: {}}})
		if err != nil {
			t.Fatal(err)
		}
		for p := range int32(2) {
			if r := el["adm"][p]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
				t.Fatalf("kadm election %d: %+v", p, r)
			}
		}
		sel, err := e.sarama.ElectLeaders(sarama.PreferredElection, map[string][]int32{"adm": {0, 1}})
		if err != nil || sel["adm"][0].ErrorCode != sarama.ErrElectionNotNeeded || sel["adm"][1].ErrorCode != sarama.ErrElectionNotNeeded {
			t.Fatalf("sarama election: %+v %v", sel, err)
		}

		var cancel kadm.AlterPartitionAssignmentsReq
		cancel.Assign("adm", 0, nil)
		ar, err := e.adm.AlterPartitionAssignments(ctx, cancel)
		if err != nil || !errors.Is(ar["adm"][0].Err, kerr.NoReassignmentInProgress) {
			t.Fatalf("kadm cancel: %+v %v", ar, err)
		}
		var move kadm.AlterPartitionAssignmentsReq
		move.Assign("adm", 0, []int32{e.nodeID, e.nodeID + 100})
		ar, err = e.adm.AlterPartitionAssignments(ctx, move)
		if err != nil || !errors.Is(ar["adm"][0].Err, kerr.InvalidReplicaAssignment) {
			t.Fatalf("kadm move: %+v %v", ar, err)
		}
		// sarama: the replicas the partition already has are a no-op.
		if err := e.sarama.AlterPartitionReassignments("adm", [][]int32{{e.nodeID}, {e.nodeID}}); err != nil {
			t.Fatalf("sarama no-op reassignment: %v", err)
		}
		lr, err := e.adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"adm": {0: {}, 1: {}}})
		if err != nil || len(lr) != 0 {
			t.Fatalf("kadm list reassignments: %+v %v", lr, err)
		}
		sl, err := e.sarama.ListPartitionReassignments("adm", []int32{0, 1})
		if err != nil || len(sl) != 0 {
			t.Fatalf("sarama list reassignments: %+v %v", sl, err)
		}
	})

	t.Run("features", func(t *testing.T) {
		uf, err := e.adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 2, UpgradeType: 1})
		if err != nil || !errors.Is(uf["transaction.version"].Err, kerr.InvalidUpdateVersion) {
			t.Fatalf("kadm UpdateFeatures: %+v %v", uf, err)
		}
		_, err = e.sarama.UpdateFeatures([]sarama.FeatureUpdate{{Feature: "transaction.version", MaxVersionLevel: 2}})
		if !errors.Is(err, sarama.ErrInvalidUpdateVersion) || !strings.Contains(err.Error(), "Invalid update version 2 for feature transaction.version. Local controller "+self+" does not support this feature.") {
			t.Fatalf("sarama UpdateFeatures: %v", err)
		}
	})

	t.Run("client quotas", func(t *testing.T) {
		entity := kadm.ClientQuotaEntity{{Type: "user", Name: sp("alice")}}
		aq, err := e.adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity,
			Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1 << 20}}}})
		if err != nil || len(aq) != 1 || aq[0].Err != nil {
			t.Fatalf("kadm AlterClientQuotas: %+v %v", aq, err)
		}
		err = e.sarama.AlterClientQuotas([]sarama.QuotaEntityComponent{{EntityType: sarama.QuotaEntityUser, MatchType: sarama.QuotaMatchExact, Name: "bob"}},
			sarama.ClientQuotasOp{Key: "consumer_byte_rate", Value: 1024}, false)
		if err != nil {
			t.Fatalf("sarama AlterClientQuotas: %v", err)
		}
		// An unknown key is refused as Kafka refuses it, and stores nothing.
		bad, err := e.adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity,
			Ops: []kadm.AlterClientQuotaOp{{Key: "bogus_rate", Value: 1}}}})
		if err != nil || len(bad) != 1 || !errors.Is(bad[0].Err, kerr.InvalidRequest) {
			t.Fatalf("kadm AlterClientQuotas of an unknown key: %+v %v", bad, err)
		}
		dq, err := e.adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: kmsg.QuotasMatchTypeAny}})
		if err != nil || len(dq) != 2 {
			t.Fatalf("kadm DescribeClientQuotas: %+v %v, want alice's and bob's", dq, err)
		}
		got := map[string]float64{}
		for _, q := range dq {
			for _, v := range q.Values {
				got[*q.Entity[0].Name+"/"+v.Key] = v.Value
			}
		}
		if got["alice/producer_byte_rate"] != 1<<20 || got["bob/consumer_byte_rate"] != 1024 || len(got) != 2 {
			t.Fatalf("kadm DescribeClientQuotas values %v", got)
		}
		sq, err := e.sarama.DescribeClientQuotas([]sarama.QuotaFilterComponent{{EntityType: sarama.QuotaEntityUser, MatchType: sarama.QuotaMatchAny}}, false)
		if err != nil || len(sq) != 2 {
			t.Fatalf("sarama DescribeClientQuotas: %+v %v", sq, err)
		}
	})
}
