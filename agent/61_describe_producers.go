package agent

// DescribeProducers (key 61), version 0 (KIP-664).
//
// Per partition, the producers floe remembers there: those whose
// idempotent or transactional batches it committed (the producer_state
// the commit's sequence checks keep, Store.PartitionProducers), with
// their epoch and the last sequence of their newest batch.
// CurrentTxnStartOffset is the first offset of the producer's open
// transaction in the partition (-1 without one, or before its first batch
// landed). LastTimestamp is when floe committed the producer's newest
// batch here; Kafka reports that batch's max timestamp, which floe does
// not keep per producer. CoordinatorEpoch is -1: floe's transaction
// markers carry no coordinator epoch. Any agent answers for any partition
// (there are no leaders to be NOT_LEADER_OR_FOLLOWER); an unknown topic or
// partition is UNKNOWN_TOPIC_OR_PARTITION, a failing store
// UNKNOWN_SERVER_ERROR, per partition.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DescribeProducers), AdvertisedMin: 0, HandledMin: 0, Max: 0})
}

func (a *Agent) handleDescribeProducers(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	look := newLookups()
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		t, ok, err := a.topics.find(ctx, rt.Topic, look)
		denied := !a.authorize(r, opRead, resTopic, rt.Topic)
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			fail := func(e *kerr.Error) {
				sp.ErrorCode = e.Code
				msg := e.Message
				sp.ErrorMessage = &msg
			}
			switch {
			case denied:
				fail(kerr.TopicAuthorizationFailed)
			case err != nil:
				fail(kerr.UnknownServerError)
			case !ok || p < 0 || p >= t.Partitions:
				fail(kerr.UnknownTopicOrPartition)
			default:
				ps, perr := a.store.PartitionProducers(ctx, t.ID, p)
				if perr != nil {
					a.log.Warn("describe producers failed", "topic", rt.Topic, "partition", p, "err", perr)
					fail(kerr.UnknownServerError)
					break
				}
				for _, pi := range ps {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = pi.ProducerID, int32(pi.Epoch), pi.LastSequence
					ap.LastTimestamp = pi.LastCommit.UnixMilli()
					ap.CoordinatorEpoch = -1
					ap.CurrentTxnStartOffset = pi.TxnStartOffset
					sp.ActiveProducers = append(sp.ActiveProducers, ap)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
