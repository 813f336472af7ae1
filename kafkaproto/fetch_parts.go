package kafkaproto

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// inlineRecordBytes is the size under which a partition's record batches are
// copied into the encoded fields rather than given as a part of their own:
// a separate slice in a vectored write is not worth it for a few kilobytes.
const inlineRecordBytes = 16 << 10

// FetchResponseParts is AppendResponse for a Fetch answer without copying
// its record batches: the frame comes back as parts for a vectored write —
// the encoded fields in buf (which it reuses) and, between them, each
// partition's RecordBatches slice as it is. A tailing consumer's answer
// holds a whole flush's worth of batches, and copying them into one frame
// was a copy of every byte fetched.
//
// It writes the fields floe's Fetch answers use. When resp carries any other
// (tags, diverging epochs, leader hints, broker endpoints) it returns ok
// false, and the caller encodes with AppendResponse instead. The parts'
// concatenation is byte for byte what AppendResponse appends.
func FetchResponseParts(buf []byte, parts [][]byte, hdr RequestHeader, resp *kmsg.FetchResponse) (newBuf []byte, newParts [][]byte, ok bool) {
	if !plainFetchResponse(resp) {
		return buf, parts, false
	}
	v := resp.Version
	flexible := v >= 12
	// cuts are where record batches go: after buf[:cuts[i].at].
	type cut struct {
		at      int
		batches []byte
	}
	var cuts []cut
	var outside int // bytes of the frame not in buf

	buf = append(buf[:0], 0, 0, 0, 0) // frame length, patched below
	buf = binary.BigEndian.AppendUint32(buf, uint32(hdr.CorrelationID))
	if responseFlexible(hdr, resp) {
		buf = append(buf, 0)
	}
	if v >= 1 {
		buf = kbin.AppendInt32(buf, resp.ThrottleMillis)
	}
	if v >= 7 {
		buf = kbin.AppendInt16(buf, resp.ErrorCode)
		buf = kbin.AppendInt32(buf, resp.SessionID)
	}
	buf = appendLen(buf, len(resp.Topics), flexible)
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if v <= 12 {
			if flexible {
				buf = kbin.AppendUvarint(buf, uint32(len(t.Topic))+1)
			} else {
				buf = kbin.AppendInt16(buf, int16(len(t.Topic)))
			}
			buf = append(buf, t.Topic...)
		} else {
			buf = kbin.AppendUuid(buf, t.TopicID)
		}
		buf = appendLen(buf, len(t.Partitions), flexible)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			buf = kbin.AppendInt32(buf, p.Partition)
			buf = kbin.AppendInt16(buf, p.ErrorCode)
			buf = kbin.AppendInt64(buf, p.HighWatermark)
			if v >= 4 {
				buf = kbin.AppendInt64(buf, p.LastStableOffset)
			}
			if v >= 5 {
				buf = kbin.AppendInt64(buf, p.LogStartOffset)
			}
			if v >= 4 {
				switch {
				case p.AbortedTransactions == nil && flexible:
					buf = append(buf, 0)
				case p.AbortedTransactions == nil:
					buf = kbin.AppendInt32(buf, -1)
				default:
					buf = appendLen(buf, len(p.AbortedTransactions), flexible)
				}
				for _, at := range p.AbortedTransactions {
					buf = kbin.AppendInt64(buf, at.ProducerID)
					buf = kbin.AppendInt64(buf, at.FirstOffset)
					if flexible {
						buf = append(buf, 0) // no tagged fields
					}
				}
			}
			if v >= 11 {
				buf = kbin.AppendInt32(buf, p.PreferredReadReplica)
			}
			rb := p.RecordBatches
			switch {
			case rb == nil && flexible:
				buf = append(buf, 0)
			case rb == nil:
				buf = kbin.AppendInt32(buf, -1)
			default:
				if flexible {
					buf = kbin.AppendUvarint(buf, uint32(len(rb))+1)
				} else {
					buf = kbin.AppendInt32(buf, int32(len(rb)))
				}
				if len(rb) < inlineRecordBytes {
					buf = append(buf, rb...)
				} else {
					cuts = append(cuts, cut{len(buf), rb})
					outside += len(rb)
				}
			}
			if flexible {
				buf = append(buf, 0) // no tagged fields
			}
		}
		if flexible {
			buf = append(buf, 0)
		}
	}
	if flexible {
		buf = append(buf, 0)
	}
	binary.BigEndian.PutUint32(buf, uint32(len(buf)+outside-4))

	parts = parts[:0]
	from := 0
	for _, c := range cuts {
		parts = append(parts, buf[from:c.at], c.batches)
		from = c.at
	}
	parts = append(parts, buf[from:])
	return buf, parts, true
}

func appendLen(b []byte, n int, flexible bool) []byte {
	if flexible {
		return kbin.AppendUvarint(b, uint32(n)+1)
	}
	return kbin.AppendInt32(b, int32(n))
}

// plainFetchResponse reports whether resp uses only the fields
// FetchResponseParts writes, at a version it writes (floe serves 4 and up).
func plainFetchResponse(resp *kmsg.FetchResponse) bool {
	if resp.Version < 4 || resp.Version > 16 || resp.UnknownTags.Len() > 0 || len(resp.Brokers) > 0 {
		return false
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.UnknownTags.Len() > 0 {
			return false
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.UnknownTags.Len() > 0 ||
				p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1 || p.DivergingEpoch.UnknownTags.Len() > 0 ||
				p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1 || p.CurrentLeader.UnknownTags.Len() > 0 ||
				p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1 || p.SnapshotID.UnknownTags.Len() > 0 {
				return false
			}
			for k := range p.AbortedTransactions {
				if p.AbortedTransactions[k].UnknownTags.Len() > 0 {
					return false
				}
			}
		}
	}
	return true
}
