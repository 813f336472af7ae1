package kafkaproto

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// randomFetchResponse builds an answer with the fields floe sets: topics,
// partitions with offsets and errors, aborted transactions (nil, empty or
// some) and record batches (nil, empty, small, or large enough to be a part
// of their own).
func randomFetchResponse(rng *rand.Rand, version int16) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	resp.ThrottleMillis = rng.Int32()
	resp.ErrorCode = int16(rng.IntN(100))
	resp.SessionID = rng.Int32()
	for range rng.IntN(4) {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = string(bytes.Repeat([]byte{'a' + byte(rng.IntN(26))}, rng.IntN(300)))
		for i := range t.TopicID {
			t.TopicID[i] = byte(rng.Uint32())
		}
		for range rng.IntN(5) {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = rng.Int32()
			p.ErrorCode = int16(rng.IntN(100))
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = rng.Int64(), rng.Int64(), rng.Int64()
			p.PreferredReadReplica = rng.Int32() - 1<<30
			switch rng.IntN(3) {
			case 1:
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			case 2:
				for range 1 + rng.IntN(3) {
					at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					at.ProducerID, at.FirstOffset = rng.Int64(), rng.Int64()
					p.AbortedTransactions = append(p.AbortedTransactions, at)
				}
			}
			switch rng.IntN(4) {
			case 0:
				p.RecordBatches = nil
			case 1:
				p.RecordBatches = []byte{}
			case 2:
				p.RecordBatches = make([]byte, rng.IntN(inlineRecordBytes))
			case 3:
				p.RecordBatches = make([]byte, inlineRecordBytes+rng.IntN(100_000))
			}
			for i := range p.RecordBatches {
				p.RecordBatches[i] = byte(i*7 + 3)
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// TestFetchResponseParts: for every version floe serves, the parts joined
// are byte for byte the frame AppendResponse writes, and large record
// batches are parts of their own, not copies.
func TestFetchResponseParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var buf []byte
	var parts [][]byte
	for version := int16(4); version <= 16; version++ {
		for range 200 {
			resp := randomFetchResponse(rng, version)
			hdr := RequestHeader{APIKey: int16(kmsg.Fetch), APIVersion: version, CorrelationID: rng.Int32()}
			want := AppendResponse(nil, hdr, resp)
			var ok bool
			buf, parts, ok = FetchResponseParts(buf, parts, hdr, resp)
			if !ok {
				t.Fatalf("v%d: a plain answer was refused", version)
			}
			if got := slices.Concat(parts...); !bytes.Equal(got, want) {
				t.Fatalf("v%d: parts differ from AppendResponse (%d vs %d bytes)", version, len(got), len(want))
			}
			large := 0
			for _, tp := range resp.Topics {
				for _, p := range tp.Partitions {
					if len(p.RecordBatches) >= inlineRecordBytes {
						large++
						if !slices.ContainsFunc(parts, func(b []byte) bool { return len(b) > 0 && &b[0] == &p.RecordBatches[0] }) {
							t.Fatalf("v%d: large record batches were copied", version)
						}
					}
				}
			}
			if len(parts) != 2*large+1 {
				t.Fatalf("v%d: %d parts for %d large record sets", version, len(parts), large)
			}
		}
	}
}

// TestFetchResponsePartsRefusesOtherFields: an answer with a field the
// encoder does not write is left to AppendResponse.
func TestFetchResponsePartsRefusesOtherFields(t *testing.T) {
	hdr := RequestHeader{APIKey: int16(kmsg.Fetch), APIVersion: 16}
	for name, set := range map[string]func(*kmsg.FetchResponse){
		"current leader":  func(r *kmsg.FetchResponse) { r.Topics[0].Partitions[0].CurrentLeader.LeaderID = 1 },
		"diverging epoch": func(r *kmsg.FetchResponse) { r.Topics[0].Partitions[0].DivergingEpoch.Epoch = 3 },
		"snapshot id":     func(r *kmsg.FetchResponse) { r.Topics[0].Partitions[0].SnapshotID.EndOffset = 9 },
		"brokers":         func(r *kmsg.FetchResponse) { r.Brokers = append(r.Brokers, kmsg.NewFetchResponseBroker()) },
		"version 3":       func(r *kmsg.FetchResponse) { r.Version = 3 },
	} {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 16
		tp := kmsg.NewFetchResponseTopic()
		tp.Partitions = append(tp.Partitions, kmsg.NewFetchResponseTopicPartition())
		resp.Topics = append(resp.Topics, tp)
		if _, _, ok := FetchResponseParts(nil, nil, hdr, resp); !ok {
			t.Fatalf("%s: the plain answer was refused", name)
		}
		set(resp)
		if _, _, ok := FetchResponseParts(nil, nil, hdr, resp); ok {
			t.Errorf("%s: accepted", name)
		}
	}
}

// BenchmarkFetchResponseEncode encodes a tailing consumer's answer (16
// partitions of 160 KiB): as parts for a vectored write, and copied into
// one frame by AppendResponse.
func BenchmarkFetchResponseEncode(b *testing.B) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 16
	t := kmsg.NewFetchResponseTopic()
	for i := range 16 {
		p := kmsg.NewFetchResponseTopicPartition()
		p.Partition = int32(i)
		p.RecordBatches = make([]byte, 160<<10)
		t.Partitions = append(t.Partitions, p)
	}
	resp.Topics = append(resp.Topics, t)
	hdr := RequestHeader{APIKey: int16(kmsg.Fetch), APIVersion: 16}
	b.Run("parts", func(b *testing.B) {
		var buf []byte
		var parts [][]byte
		b.SetBytes(16 * 160 << 10)
		b.ReportAllocs()
		for b.Loop() {
			buf, parts, _ = FetchResponseParts(buf, parts, hdr, resp)
		}
	})
	b.Run("copy", func(b *testing.B) {
		var buf []byte
		b.SetBytes(16 * 160 << 10)
		b.ReportAllocs()
		for b.Loop() {
			buf = AppendResponse(buf[:0], hdr, resp)
		}
	})
}
