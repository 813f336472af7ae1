package agent

// DeleteRecords (key 21), versions 0–2 (v2 is flexible).
//
// Advances each partition's log start offset to the requested offset (-1
// means the high watermark) and answers the new low watermark. The log start
// never moves backwards: a request below it succeeds and answers the current
// log start, as Kafka does. An offset above the high watermark, or negative
// other than -1, is OFFSET_OUT_OF_RANGE. Index rows wholly below the new log
// start are deleted at once; the compactor deletes their objects after its
// grace period. ListOffsets earliest and Fetch read the log start from the
// store, so they reflect the change immediately. The request's
// TimeoutMillis bounds the store calls: partitions not done by then are
// REQUEST_TIMED_OUT.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DeleteRecords), AdvertisedMin: 0, HandledMin: 0, Max: 2})
}

func (a *Agent) handleDeleteRecords(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	ctx, cancel := adminContext(ctx, req.TimeoutMillis)
	defer cancel()
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		topic, ok, err := a.topics.get(ctx, rt.Topic)
		denied := !a.authorize(r, opDelete, resTopic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			switch {
			case denied:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case ctx.Err() != nil:
				sp.ErrorCode = kerr.RequestTimedOut.Code
			case err != nil:
				sp.ErrorCode = kerr.KafkaStorageError.Code
			case !ok || rp.Partition < 0 || rp.Partition >= topic.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				low, code := a.deleteRecords(ctx, topic.ID, rp.Partition, rp.Offset)
				sp.LowWatermark = low
				if code != nil {
					sp.ErrorCode = code.Code
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// deleteRecords advances one partition's log start to offset and returns
// the resulting low watermark (-1 on error).
func (a *Agent) deleteRecords(ctx context.Context, topic metadata.TopicID, partition int32, offset int64) (int64, *kerr.Error) {
	st, err := a.store.Partition(ctx, topic, partition)
	if err != nil {
		return -1, a.deleteRecordsError(ctx, "partition state", err)
	}
	if offset == -1 {
		offset = st.NextOffset
	}
	if offset < 0 || offset > st.NextOffset {
		return -1, kerr.OffsetOutOfRange
	}
	st, err = a.store.AdvanceLogStart(ctx, topic, partition, offset)
	if err != nil {
		return -1, a.deleteRecordsError(ctx, "advance log start", err)
	}
	return st.LogStartOffset, nil
}

// deleteRecordsError is the answer to a failed store call of DeleteRecords.
func (a *Agent) deleteRecordsError(ctx context.Context, what string, err error) *kerr.Error {
	switch {
	case errors.Is(err, metadata.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition
	case ctx.Err() != nil:
		return kerr.RequestTimedOut
	}
	a.log.Warn("delete records: "+what+" failed", "err", err)
	return kerr.KafkaStorageError
}
