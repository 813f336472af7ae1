package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
	"floe/metadata/sqlite"
	"floe/storage/mem"
)

// metadataTopicOf returns the answer for topic name, failing if it is absent.
func metadataTopicOf(t *testing.T, resp *kmsg.MetadataResponse, name string) kmsg.MetadataResponseTopic {
	t.Helper()
	for _, mt := range resp.Topics {
		if mt.Topic != nil && *mt.Topic == name {
			return mt
		}
	}
	t.Fatalf("topic %s not answered: %+v", name, resp.Topics)
	return kmsg.MetadataResponseTopic{}
}

// TestMetadataAutoCreateAnswersLeaderNotAvailable: a Metadata request that
// auto-created a topic listed its partitions at once; Kafka answers
// LEADER_NOT_AVAILABLE with no partitions and no topic id
// (DefaultAutoTopicCreationManager), and lists the topic from the next
// request on. Every version that auto-creates (below v4 always) answers so.
func TestMetadataAutoCreateAnswersLeaderNotAvailable(t *testing.T) {
	t.Parallel()
	a, hs := handlerAgent(t, func(c *Config) { c.AutoCreateTopics, c.DefaultPartitions = true, 3 })
	for _, v := range []int16{1, 3, 4, 9, 12} {
		name := fmt.Sprintf("auto-v%d", v)
		req := metadataReq(true, name, name) // named twice: created once, answered twice
		req.Version = v
		resp := a.mustHandle(t, req).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 2 {
			t.Fatalf("v%d: %d topics answered, want 2", v, len(resp.Topics))
		}
		for _, mt := range resp.Topics {
			if mt.ErrorCode != kerr.LeaderNotAvailable.Code || len(mt.Partitions) != 0 || mt.TopicID != [16]byte{} {
				t.Fatalf("v%d: first answer for %s: %v, %d partitions, id %x; want LEADER_NOT_AVAILABLE, none, zero",
					v, name, kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions), mt.TopicID)
			}
		}
		tp, err := hs.Store.Topic(context.Background(), name)
		if err != nil || tp.Partitions != 3 {
			t.Fatalf("v%d: stored topic %+v, %v", v, tp, err)
		}
		req = metadataReq(true, name)
		req.Version = v
		mt := metadataTopicOf(t, a.mustHandle(t, req).(*kmsg.MetadataResponse), name)
		if mt.ErrorCode != 0 || len(mt.Partitions) != 3 || (v >= 10 && mt.TopicID != tp.ID) {
			t.Fatalf("v%d: second answer for %s: %v, %d partitions, id %x; want 3 partitions of %x",
				v, name, kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions), mt.TopicID, tp.ID)
		}
	}
	// Not allowed by the request (v4+): unknown, and nothing created.
	mt := metadataTopicOf(t, a.mustHandle(t, metadataReq(false, "not-asked")).(*kmsg.MetadataResponse), "not-asked")
	if mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("no auto-creation asked: %v", kerr.ErrorForCode(mt.ErrorCode))
	}
	if _, err := hs.Store.Topic(context.Background(), "not-asked"); err == nil {
		t.Fatal("topic created although the request did not allow it")
	}
}

// TestMetadataAutoCreateAfterDelete: a topic deleted and then named in an
// auto-creating Metadata is created anew, as on Kafka: LEADER_NOT_AVAILABLE
// first, then a new topic id, the agent's partition count, and offsets
// from 0 (nothing of the old topic shows through).
func TestMetadataAutoCreateAfterDelete(t *testing.T) {
	ta := newParallelAgent(t, func(c *Config) { c.DefaultPartitions = 2 })
	ctx := context.Background()
	cl := ta.client(t)
	meta := func(auto bool) kmsg.MetadataResponseTopic {
		t.Helper()
		req := metadataReq(auto, "phoenix")
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return metadataTopicOf(t, resp, "phoenix")
	}
	if mt := meta(true); mt.ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("first auto-creating Metadata: %v", kerr.ErrorForCode(mt.ErrorCode))
	}
	first := meta(true)
	if first.ErrorCode != 0 || len(first.Partitions) != 2 {
		t.Fatalf("created topic: %v, %d partitions", kerr.ErrorForCode(first.ErrorCode), len(first.Partitions))
	}
	pcl := ta.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(2) {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: "phoenix", Partition: p, Value: []byte("old")}).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d: %v", p, err)
		}
	}
	pcl.Close() // its idempotent producer state belongs to the old topic

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TimeoutMillis = 10_000
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr("phoenix")
	del.Topics, del.TopicNames = append(del.Topics, dt), []string{"phoenix"}
	dr, err := del.RequestWith(ctx, cl)
	if err != nil || len(dr.Topics) != 1 || dr.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete: %+v, %v", dr, err)
	}
	if mt := meta(false); mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("deleted topic without auto-creation: %v", kerr.ErrorForCode(mt.ErrorCode))
	}
	if mt := meta(true); mt.ErrorCode != kerr.LeaderNotAvailable.Code || len(mt.Partitions) != 0 {
		t.Fatalf("deleted topic, auto-creating: %v with %d partitions", kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions))
	}
	again := meta(true)
	if again.ErrorCode != 0 || len(again.Partitions) != 2 || again.TopicID == first.TopicID {
		t.Fatalf("recreated topic: %v, %d partitions, id %x (old %x)", kerr.ErrorForCode(again.ErrorCode),
			len(again.Partitions), again.TopicID, first.TopicID)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "phoenix"
	for p := range int32(2) {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p, -1
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = append(lo.Topics, lt)
	lr, err := lo.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range lr.Topics[0].Partitions {
		if sp.ErrorCode != 0 || sp.Offset != 0 {
			t.Fatalf("recreated partition %d: %v, end offset %d; want 0", sp.Partition, kerr.ErrorForCode(sp.ErrorCode), sp.Offset)
		}
	}
}

// racingStore creates the topic, then reports that it already existed: the
// answer another agent's concurrent auto-creation gets.
type racingStore struct{ metadata.Store }

func (s racingStore) CreateTopic(ctx context.Context, name string, partitions int32, configs map[string]string) (metadata.Topic, error) {
	if _, err := s.Store.CreateTopic(ctx, name, partitions, configs); err != nil {
		return metadata.Topic{}, err
	}
	return metadata.Topic{}, metadata.ErrTopicExists
}

// TestMetadataAutoCreateRaceAnswersLeaderNotAvailable: a topic another
// agent created between the look-up and the creation was listed at once;
// it is LEADER_NOT_AVAILABLE as well (Kafka maps TOPIC_ALREADY_EXISTS so).
func TestMetadataAutoCreateRaceAnswersLeaderNotAvailable(t *testing.T) {
	t.Parallel()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cfg := DefaultConfig()
	cfg.AutoCreateTopics = true
	a := New(cfg, racingStore{store}, mem.New(), nil)
	mt := metadataTopicOf(t, a.mustHandle(t, metadataReq(true, "raced")).(*kmsg.MetadataResponse), "raced")
	if mt.ErrorCode != kerr.LeaderNotAvailable.Code || len(mt.Partitions) != 0 {
		t.Fatalf("raced creation: %v, %d partitions", kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions))
	}
	mt = metadataTopicOf(t, a.mustHandle(t, metadataReq(true, "raced")).(*kmsg.MetadataResponse), "raced")
	if mt.ErrorCode != 0 || len(mt.Partitions) != 1 {
		t.Fatalf("after the race: %v, %d partitions", kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions))
	}
}
