package agent

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
)

// TestReregisterUnderLoad: an agent whose registry row expires registers
// again from its heartbeat while handlers read its identity (Metadata,
// DescribeConfigs of the broker). The identity was written by the
// heartbeat and read by handlers without a lock; run with -race.
func TestReregisterUnderLoad(t *testing.T) {
	ta := newParallelAgent(t, func(c *Config) { c.HeartbeatInterval = 5 * time.Millisecond })
	adm := kadm.NewClient(ta.client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	node := strconv.Itoa(int(ta.NodeID()))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := ta.store.DeregisterAgent(ctx, ta.id); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(7 * time.Millisecond)
		}
	}()
	for range 100 {
		rc, err := adm.DescribeBrokerConfigs(ctx, ta.NodeID())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rc.On(node, nil); err != nil {
			t.Fatalf("broker %s configs: %v", node, err)
		}
		if _, err := adm.BrokerMetadata(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	// It is registered again, under the same node id.
	deadline := time.Now().Add(5 * time.Second)
	for {
		live, err := ta.store.LiveAgents(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(live) == 1 && live[0].NodeID == ta.NodeID() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("live agents %+v, want this one with node id %d", live, ta.NodeID())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInvalidRequiredAcks: acks outside -1, 0 and 1 is answered
// INVALID_REQUIRED_ACKS per partition, as Kafka answers it; floe took any
// non-zero acks as acks=all and stored the records.
func TestInvalidRequiredAcks(t *testing.T) {
	ta := newParallelAgent(t)
	cl := ta.client(t)
	ta.createTopic(t, cl, "acks", 1)
	c, err := net.Dial("tcp", ta.KafkaAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, acks := range []int16{2, -2, 5} {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, acks, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "acks"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = testBatch(t, 2)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrProduceResponse()
		rawRequest(t, c, req, resp)
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.InvalidRequiredAcks.Code {
			t.Fatalf("acks=%d answered %v, want INVALID_REQUIRED_ACKS", acks, kerr.ErrorForCode(got))
		}
	}
	end, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), "acks")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := end.Lookup("acks", 0); o.Offset != 0 {
		t.Fatalf("records stored by refused produces: end offset %d", o.Offset)
	}
}

// downStore fails Topics while down.
type downStore struct {
	metadata.Store
	down atomic.Bool
}

func (s *downStore) Topics(ctx context.Context) ([]metadata.Topic, error) {
	if s.down.Load() {
		return nil, errors.New("store unreachable")
	}
	return s.Store.Topics(ctx)
}

// TestMetadataWhileStoreDown: with the topics unreadable, Metadata is
// answered from the last view, as a Kafka broker answers from its cached
// metadata; it closed the connection, and franz-go's transactional
// producers then failed InitProducerId for good (the proof's runs with
// PostgreSQL down).
func TestMetadataWhileStoreDown(t *testing.T) {
	t.Parallel()
	ds := &downStore{}
	ta := newTestAgentOver(t, nil, func(s metadata.Store) metadata.Store { ds.Store = s; return ds },
		func(c *Config) { c.TopicCacheTTL = time.Millisecond })
	cl := ta.client(t)
	ta.createTopic(t, cl, "kept", 3)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := adm.Metadata(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	ds.down.Store(true)
	time.Sleep(5 * time.Millisecond) // past the cache's TTL
	// A raw request: franz-go answers Metadata from its own cache for a
	// while.
	c, err := net.Dial("tcp", ta.KafkaAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("kept")
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrMetadataResponse()
	rawRequest(t, c, req, resp)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 3 {
		t.Fatalf("metadata with the store down: %+v", resp.Topics)
	}
}
