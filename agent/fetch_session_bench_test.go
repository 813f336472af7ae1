package agent

import (
	"context"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

// BenchmarkIdleFullFetch measures what declining fetch sessions (KIP-227)
// costs a consumer of many partitions with nothing new to read: each
// long-poll round is a full fetch naming every partition and an answer
// listing every partition, where an incremental fetch in a session would
// name and list none. It reports the request and answer sizes and the
// agent's CPU per round (handler plus encoding).
func BenchmarkIdleFullFetch(b *testing.B) {
	for _, partitions := range []int32{100, 1000} {
		b.Run(strconv.Itoa(int(partitions))+"-partitions", func(b *testing.B) {
			ta := newTestAgent(b, nil)
			cl := ta.client(b)
			ta.createTopic(b, cl, "idle", partitions)
			req := kmsg.NewPtrFetchRequest()
			req.Version = 12
			req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 0, 50<<20
			req.SessionEpoch = -1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "idle"
			for p := range partitions {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.PartitionMaxBytes = p, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			reqBytes := len(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1))
			hdr := kafkaproto.RequestHeader{APIKey: 1, APIVersion: 12, CorrelationID: 1}
			ctx := context.Background()
			var respBytes int
			b.ReportAllocs()
			for b.Loop() {
				// The answer reads its connection's client quota.
				r := &request{c: &conn{a: ta.Agent}, hdr: hdr, req: req}
				resp, err := ta.handleFetch(ctx, r)
				if err != nil {
					b.Fatal(err)
				}
				out := kafkaproto.AppendResponse(nil, hdr, resp)
				respBytes = len(out)
				ta.releaseFetchBuffers(resp.(*kmsg.FetchResponse))
				ta.fetchBudget.Release(r.fetchHeld)
			}
			b.ReportMetric(float64(reqBytes), "req-bytes")
			b.ReportMetric(float64(respBytes), "resp-bytes")
		})
	}
}
