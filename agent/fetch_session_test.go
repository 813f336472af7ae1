package agent

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSessionIDsAndEpochs: every session id × epoch combination a
// client may send (KIP-227), answered as Kafka answers a broker that keeps
// no session for it. A non-zero id with epoch -1 ("full fetch, close the
// session", what kafka-go's Client.Fetch sends) used to get
// FETCH_SESSION_ID_NOT_FOUND and no data.
func TestFetchSessionIDsAndEpochs(t *testing.T) {
	ta := newParallelAgent(t)
	cl := ta.client(t, kgo.DefaultProduceTopic("sessions"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ta.createTopic(t, cl, "sessions", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id, epoch int32
		want      *kerr.Error // nil: served with the record
	}{
		{0, -1, nil},  // sessionless full fetch
		{0, 0, nil},   // full fetch asking for a session: none is opened
		{42, -1, nil}, // full fetch closing session 42
		{42, 0, nil},  // full fetch replacing session 42
		{42, 1, kerr.FetchSessionIDNotFound},
		{42, 7, kerr.FetchSessionIDNotFound},
		{0, 3, kerr.FetchSessionIDNotFound},
		{42, -2, kerr.FetchSessionIDNotFound},
	} {
		t.Run(fmt.Sprintf("id=%d,epoch=%d", tc.id, tc.epoch), func(t *testing.T) {
			for _, version := range []int16{7, 11, 12, 16} {
				c, err := net.Dial("tcp", ta.KafkaAddr())
				if err != nil {
					t.Fatal(err)
				}
				req := kmsg.NewPtrFetchRequest()
				req.Version = version
				req.SessionID, req.SessionEpoch = tc.id, tc.epoch
				req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 10, 1, 1<<20
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic = "sessions"
				if version >= 13 {
					topic, _, err := ta.topics.get(ctx, "sessions")
					if err != nil {
						t.Fatal(err)
					}
					rt.TopicID = topic.ID
				}
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.PartitionMaxBytes = 1 << 20
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				resp := kmsg.NewPtrFetchResponse()
				rawRequest(t, c, req, resp)
				c.Close()
				if resp.SessionID != 0 {
					t.Fatalf("v%d: session id %d handed out", version, resp.SessionID)
				}
				if tc.want != nil {
					if resp.ErrorCode != tc.want.Code || len(resp.Topics) != 0 {
						t.Fatalf("v%d: error %d with %d topics, want %v and none", version, resp.ErrorCode, len(resp.Topics), tc.want)
					}
					continue
				}
				if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
					t.Fatalf("v%d: answer %+v", version, resp)
				}
				if len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
					t.Fatalf("v%d: full fetch returned no records", version)
				}
			}
		})
	}
}

// TestFetchZstdTopicBelowV10: a topic whose compression.type is zstd (the
// compactor rewrites its batches into zstd) answers Fetch v4–9, from
// clients that cannot read zstd, UNSUPPORTED_COMPRESSION_TYPE, as Kafka
// does; v10 and up, and other topics at any version, are served.
func TestFetchZstdTopicBelowV10(t *testing.T) {
	ta := newTestAgent(t, nil)
	cl := ta.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, topic := range []string{"zstd", "plain"} {
		ta.createTopic(t, cl, topic, 1)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	incrementalAlter(t, cl, false, incAlter{typ: kmsg.ConfigResourceTypeTopic, name: "zstd",
		configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("compression.type", "zstd")}})
	for _, version := range []int16{4, 9, 10, 12} {
		c, err := net.Dial("tcp", ta.KafkaAddr())
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.SessionEpoch = version, -1
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 10, 1, 1<<20
		for _, topic := range []string{"zstd", "plain"} {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp := kmsg.NewPtrFetchResponse()
		rawRequest(t, c, req, resp)
		c.Close()
		if len(resp.Topics) != 2 {
			t.Fatalf("v%d: %+v", version, resp)
		}
		for _, st := range resp.Topics {
			sp := st.Partitions[0]
			var want int16
			if st.Topic == "zstd" && version < 10 {
				want = kerr.UnsupportedCompressionType.Code
			}
			if sp.ErrorCode != want || (want == 0) != (len(sp.RecordBatches) > 0) {
				t.Fatalf("v%d %s: error %v with %d bytes, want %v", version, st.Topic, kerr.ErrorForCode(sp.ErrorCode), len(sp.RecordBatches), kerr.ErrorForCode(want))
			}
		}
	}
}
