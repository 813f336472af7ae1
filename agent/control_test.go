package agent

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Regression tests of clients' retries, with the agent's control functions
// (ControlKey) answering in the broker's place.

// TestGroupFindsCoordinatorAfterRefusals: the first FindCoordinator is
// answered NOT_COORDINATOR and the second loses its connection; franz-go's
// group consumer asks again, joins, consumes and commits.
func TestGroupFindsCoordinatorAfterRefusals(t *testing.T) {
	ta, ctx, admin := controlledAgent(t, "fc")
	if err := admin.ProduceSync(ctx, recordsTo("fc", 3)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var refused atomic.Int32
	ta.ControlKey(int16(kmsg.FindCoordinator), false, func(req kmsg.Request) (kmsg.Response, error, bool) {
		refused.Add(1)
		fc := req.(*kmsg.FindCoordinatorRequest)
		resp := fc.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode = kerr.NotCoordinator.Code
		for _, key := range fc.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.ErrorCode = key, kerr.NotCoordinator.Code
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp, nil, true
	})
	ta.ControlKey(int16(kmsg.FindCoordinator), false, func(kmsg.Request) (kmsg.Response, error, bool) {
		refused.Add(1)
		return nil, errors.New("test: connection lost"), true
	})
	cl := ta.client(t, kgo.ConsumerGroup("fc-group"), kgo.ConsumeTopics("fc"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	var got []string
	for len(got) < 3 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %q before the deadline", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if fmt.Sprint(got) != "[r0 r1 r2]" {
		t.Fatalf("consumed %q, want r0 r1 r2", got)
	}
	if n := refused.Load(); n != 2 {
		t.Fatalf("%d FindCoordinator requests refused, want 2", n)
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	offs, err := kadm.NewClient(admin).FetchOffsets(ctx, "fc-group")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("fc", 0); !ok || o.Err != nil || o.At != 3 {
		t.Fatalf("committed %+v (found %v), want offset 3", o, ok)
	}
}

// TestProduceWaitsOutLeaderNotAvailable: the first Metadata answer naming
// the topic says LEADER_NOT_AVAILABLE, as Kafka's does while a new topic's
// leaders are elected; franz-go asks again and produces.
func TestProduceWaitsOutLeaderNotAvailable(t *testing.T) {
	ta, ctx, admin := controlledAgent(t, "lna")
	real, err := metadataReq(false, "lna").RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	var answered atomic.Int32
	ta.ControlKey(int16(kmsg.Metadata), false, func(req kmsg.Request) (kmsg.Response, error, bool) {
		m := req.(*kmsg.MetadataRequest)
		if len(m.Topics) == 0 || m.Topics[0].Topic == nil || *m.Topics[0].Topic != "lna" {
			return nil, nil, false // not ours: the handler answers, the function stays
		}
		answered.Add(1)
		resp := *real
		resp.Version = m.Version
		topic := real.Topics[0]
		topic.ErrorCode, topic.Partitions = kerr.LeaderNotAvailable.Code, nil
		resp.Topics = []kmsg.MetadataResponseTopic{topic}
		return &resp, nil, true
	})
	produceDense(t, ctx, ta.client(t, kgo.MetadataMinAge(50*time.Millisecond)), "lna", 2)
	if n := answered.Load(); n != 1 {
		t.Fatalf("%d Metadata answers said LEADER_NOT_AVAILABLE, want 1", n)
	}
}

// TestIdempotentRetryOfStoredProduce: the first Produce is stored but
// answered REQUEST_TIMED_OUT, as a Kafka leader answers when replication
// outlasts the request's timeout; franz-go's idempotent producer sends the
// same batch again and the agent answers it as the duplicate it is: each
// record is stored once, at the offsets the retry reports.
func TestIdempotentRetryOfStoredProduce(t *testing.T) {
	ta, ctx, admin := controlledAgent(t, "dup")
	fwd := ta.client(t)
	var timedOut atomic.Int32
	ta.ControlKey(int16(kmsg.Produce), false, func(req kmsg.Request) (kmsg.Response, error, bool) {
		// Store it through another connection (this function is busy, so
		// that request reaches the handler), then lose the answer.
		pr := req.(*kmsg.ProduceRequest)
		stored, err := fwd.Broker(int(ta.NodeID())).Request(ctx, pr)
		if err != nil {
			return nil, err, true
		}
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, st := range stored.(*kmsg.ProduceResponse).Topics {
			for i, sp := range st.Partitions {
				if sp.ErrorCode != 0 {
					t.Errorf("forwarded produce: %v", kerr.ErrorForCode(sp.ErrorCode))
				}
				st.Partitions[i] = kmsg.NewProduceResponseTopicPartition()
				st.Partitions[i].Partition, st.Partitions[i].ErrorCode = sp.Partition, kerr.RequestTimedOut.Code
			}
			resp.Topics = append(resp.Topics, st)
		}
		timedOut.Add(1)
		return resp, nil, true
	})
	produceDense(t, ctx, ta.client(t), "dup", 4)
	if n := timedOut.Load(); n != 1 {
		t.Fatalf("%d Produce answers lost, want 1", n)
	}
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx, "dup")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := ends.Lookup("dup", 0); !ok || o.Err != nil || o.Offset != 4 {
		t.Fatalf("end offset %+v (found %v), want 4: the retry was stored again", o, ok)
	}
}

// controlledAgent is a test agent with a one-partition topic, a context
// for the test and a client.
func controlledAgent(t *testing.T, topic string) (*testAgent, context.Context, *kgo.Client) {
	ta := newParallelAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	admin := ta.client(t)
	ta.createTopic(t, admin, topic, 1)
	return ta, ctx, admin
}

// produceDense produces n records to topic with cl and fails unless they
// were stored at offsets 0, 1, …
func produceDense(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, n int) {
	t.Helper()
	recs := recordsTo(topic, n)
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.Offset != int64(i) {
			t.Fatalf("record %d at offset %d, want %d", i, r.Offset, i)
		}
	}
}

// recordsTo is n records r0, r1, … for partition 0 of topic.
func recordsTo(topic string, n int) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "r%d", i)}
	}
	return recs
}
