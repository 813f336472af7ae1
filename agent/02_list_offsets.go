package agent

// ListOffsets (key 2), versions 1–7.
//
// -1 is the high watermark (under read_committed the last stable offset:
// the first offset of the oldest open transaction, else the high
// watermark), -2 the log start offset, -3 (v7+) the
// offset and timestamp of the record with the largest timestamp. A
// timestamp >= 0 finds the first record whose timestamp is at or after it:
// the index narrows the search to one run, whose batches are then decoded.
// Nothing at or after the timestamp is offset -1, timestamp -1. Other
// negative timestamps are UNSUPPORTED_VERSION, and a partition named twice
// is INVALID_REQUEST, as in Kafka.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.ListOffsets), AdvertisedMin: 1, HandledMin: 1, Max: 7})
}

func (a *Agent) handleListOffsets(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	seen := make(map[partKey]bool)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		topic, ok, err := a.topics.get(ctx, rt.Topic)
		denied := !a.authorize(r, opDescribe, resTopic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = -1, -1, -1
			var code *kerr.Error
			switch {
			case denied:
				code = kerr.TopicAuthorizationFailed
			case err != nil:
				code = kerr.KafkaStorageError
			case !ok || rp.Partition < 0 || rp.Partition >= topic.Partitions:
				code = kerr.UnknownTopicOrPartition
			case seen[partKey{topic.ID, rp.Partition}]:
				code = kerr.InvalidRequest
			default:
				seen[partKey{topic.ID, rp.Partition}] = true
				code = a.listOffset(ctx, req.Version, req.IsolationLevel, topic.ID, rp.Timestamp, &sp)
			}
			if code != nil {
				sp.ErrorCode = code.Code
				sp.Offset, sp.Timestamp, sp.LeaderEpoch = -1, -1, -1
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (a *Agent) listOffset(ctx context.Context, version int16, isolation int8, topic metadata.TopicID, ts int64, sp *kmsg.ListOffsetsResponseTopicPartition) *kerr.Error {
	state, err := a.store.Partition(ctx, topic, sp.Partition)
	if err != nil {
		if errors.Is(err, metadata.ErrUnknownTopic) {
			return kerr.UnknownTopicOrPartition
		}
		a.log.Warn("list offsets: partition state failed", "err", err)
		return kerr.KafkaStorageError
	}
	sp.LeaderEpoch = 0
	switch {
	case ts == -1:
		sp.Offset = state.NextOffset
		if isolation == 1 {
			// Read after the high watermark, as Fetch does.
			open, err := a.store.FirstOpenOffsets(ctx, topic)
			if err != nil {
				a.log.Warn("list offsets: open transactions failed", "err", err)
				return kerr.KafkaStorageError
			}
			if first, ok := open[sp.Partition]; ok {
				sp.Offset = min(sp.Offset, first)
			}
		}
		return nil
	case ts == -2:
		sp.Offset = state.LogStartOffset
		return nil
	case ts == -3 && version >= 7:
		e, err := a.store.LookupMaxTimestamp(ctx, topic, sp.Partition)
		if errors.Is(err, metadata.ErrNotFound) {
			sp.LeaderEpoch = -1
			return nil
		}
		if err != nil {
			a.log.Warn("list offsets: max timestamp lookup failed", "err", err)
			return kerr.KafkaStorageError
		}
		return a.scanRun(ctx, e, func(off, t int64) bool { return t == e.MaxTimestamp }, sp)
	case ts < 0:
		return kerr.UnsupportedVersion
	}
	e, err := a.store.LookupTimestamp(ctx, topic, sp.Partition, ts)
	if errors.Is(err, metadata.ErrNotFound) {
		sp.LeaderEpoch = -1
		return nil
	}
	if err != nil {
		a.log.Warn("list offsets: timestamp lookup failed", "err", err)
		return kerr.KafkaStorageError
	}
	return a.scanRun(ctx, e, func(off, t int64) bool { return off >= state.LogStartOffset && t >= ts }, sp)
}

// scanRun reads the run of e and sets sp to the first record that match
// accepts; none is offset -1, timestamp -1.
func (a *Agent) scanRun(ctx context.Context, e metadata.IndexEntry, match func(offset, ts int64) bool, sp *kmsg.ListOffsetsResponseTopicPartition) *kerr.Error {
	data, err := a.cache.GetRange(ctx, e.ObjectKey, e.ByteOffset, e.ByteLength)
	if err != nil {
		a.log.Warn("list offsets: object read failed", "key", e.ObjectKey, "err", err)
		return kerr.KafkaStorageError
	}
	errFound := errors.New("found")
	_, err = kafkaproto.WalkBatches(data, e.BaseOffset, func(h kafkaproto.BatchHeader, b []byte, base int64) error {
		_, recs, err := kafkaproto.DecodeRecords(b)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			off, t := base+int64(rec.OffsetDelta), h.RecordTimestamp(rec)
			if match(off, t) {
				sp.Offset, sp.Timestamp = off, t
				return errFound
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, errFound):
		return nil
	case err != nil:
		return kerr.CorruptMessage
	}
	sp.Offset, sp.Timestamp, sp.LeaderEpoch = -1, -1, -1
	return nil
}
