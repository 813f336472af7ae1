package agent

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// __consumer_offsets exists from the start, is flagged internal (franz-go's
// TestConsumeRegex failed without it: regex consumers skip internal topics
// by that flag), refuses produces and deletion.
func TestInternalOffsetsTopic(t *testing.T) {
	ta := newParallelAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := ta.client(t)

	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, mt := range resp.Topics {
		if mt.Topic != nil && *mt.Topic == offsetsTopic {
			found = true
			if !mt.IsInternal || len(mt.Partitions) != offsetsTopicPartitions {
				t.Fatalf("%s: internal=%v partitions=%d", offsetsTopic, mt.IsInternal, len(mt.Partitions))
			}
		} else if mt.IsInternal {
			t.Fatalf("topic %v flagged internal", mt.Topic)
		}
	}
	if !found {
		t.Fatalf("Metadata does not list %s", offsetsTopic)
	}

	err = cl.ProduceSync(ctx, &kgo.Record{Topic: offsetsTopic, Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("produce to %s: %v, want INVALID_TOPIC_EXCEPTION", offsetsTopic, err)
	}
	dr, err := kadm.NewClient(cl).DeleteTopics(ctx, offsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	if d := dr[offsetsTopic]; !errors.Is(d.Err, kerr.InvalidTopicException) {
		t.Fatalf("delete %s: %v, want INVALID_TOPIC_EXCEPTION", offsetsTopic, d.Err)
	}
	// A second agent on the same store starts fine with the topic there.
	if err := ta.ensureInternalTopics(ctx); err != nil {
		t.Fatal(err)
	}
}

// KIP-848 regex subscriptions are resolved by the coordinator (they were
// refused with INVALID_REGULAR_EXPRESSION before; franz-go's
// Test848RegexBrokerResolves needs them).
func TestKIP848RegexSubscription(t *testing.T) {
	ta := newParallelAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(ta.client(t))
	for _, tp := range []string{"rx-orders", "rx-orders-v2", "rx-other"} {
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, tp); err != nil {
			t.Fatal(err)
		}
	}
	heartbeat := func(member string, epoch int32, regex string) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.MemberEpoch = "rx", member, epoch
		req.RebalanceTimeoutMillis = 30000
		if epoch == 0 {
			req.SubscribedTopicRegex = &regex
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		resp, err := req.RequestWith(ctx, ta.client(t))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := heartbeat("m1", 0, "rx-(orders"); resp.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Fatalf("bad regex: error %d, want INVALID_REGULAR_EXPRESSION", resp.ErrorCode)
	}
	resp := heartbeat("m1", 0, "rx-orders.*|__consumer_offsets")
	if resp.ErrorCode != 0 || resp.Assignment == nil {
		t.Fatalf("join: error %d assignment %v", resp.ErrorCode, resp.Assignment)
	}
	topics, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, at := range resp.Assignment.Topics {
		for _, td := range topics {
			if td.ID == at.TopicID {
				got = append(got, td.Topic)
			}
		}
	}
	slices.Sort(got)
	if want := []string{"__consumer_offsets", "rx-orders", "rx-orders-v2"}; !slices.Equal(got, want) {
		t.Fatalf("assigned %v, want %v", got, want)
	}
}
