package agent

// AddPartitionsToTxn (key 24), versions 0–4.
//
// Served by the transactional id's coordinator: the partitions join the
// ongoing transaction (starting one, and its timeout clock, if none is),
// and the metadata store records them per (partition, producer) so that
// the commit transaction accepts the producer's transactional batches
// there. v4 is the batched form (several transactional ids, VerifyOnly);
// v5 (KIP-890 part 2) is not served. Unknown partitions fail with
// UNKNOWN_TOPIC_OR_PARTITION and the rest of the request with
// OPERATION_NOT_ATTEMPTED, as in Kafka.

import (
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.AddPartitionsToTxn), AdvertisedMin: 0, HandledMin: 0, Max: 4})
}

func (a *Agent) handleAddPartitionsToTxn(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		resp.Topics = a.addPartitionsToTxn(ctx, r, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, req.Topics)
		return resp, nil
	}
	// Batched requests are broker-to-broker (KIP-890).
	if !a.authorizeCluster(r, opClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	for _, t := range req.Transactions {
		topics := make([]kmsg.AddPartitionsToTxnRequestTopic, len(t.Topics))
		for i, tt := range t.Topics {
			topics[i] = kmsg.AddPartitionsToTxnRequestTopic{Topic: tt.Topic, Partitions: tt.Partitions}
		}
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = t.TransactionalID
		for _, st := range a.addPartitionsToTxn(ctx, r, t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly, topics) {
			tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			tt.Topic = st.Topic
			for _, sp := range st.Partitions {
				tt.Partitions = append(tt.Partitions, kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{Partition: sp.Partition, ErrorCode: sp.ErrorCode})
			}
			rt.Topics = append(rt.Topics, tt)
		}
		resp.Transactions = append(resp.Transactions, rt)
	}
	return resp, nil
}

// addPartitionsToTxn adds (or with verifyOnly, checks) the partitions of one
// transactional id and answers per partition.
func (a *Agent) addPartitionsToTxn(ctx context.Context, r *request, id string, pid int64, epoch int16, verifyOnly bool, topics []kmsg.AddPartitionsToTxnRequestTopic) []kmsg.AddPartitionsToTxnResponseTopic {
	codes := map[metadata.TopicPartition]*kerr.Error{}
	code := a.authorizeTxnPartitions(r, id, topics, codes)
	if code == nil && len(codes) == 0 {
		code = a.txn.with(ctx, id, func(e *txnEntry) *kerr.Error {
			if err := e.checkProducer(pid, epoch); err != nil {
				return err
			}
			if e.t.State == metadata.TxnPrepareCommit || e.t.State == metadata.TxnPrepareAbort {
				return kerr.ConcurrentTransactions
			}
			var add []metadata.TopicPartition
			var ids []metadata.TopicIDPartition
			unknown := false
			for _, rt := range topics {
				topic, ok, err := a.topics.get(ctx, rt.Topic)
				if err != nil {
					return kerr.CoordinatorNotAvailable
				}
				for _, p := range rt.Partitions {
					tp := metadata.TopicPartition{Topic: rt.Topic, Partition: p}
					if !ok || p < 0 || p >= topic.Partitions {
						codes[tp], unknown = kerr.UnknownTopicOrPartition, true
						continue
					}
					in := e.t.State == metadata.TxnOngoing && slices.Contains(e.t.Partitions, tp)
					if verifyOnly {
						if !in {
							codes[tp] = kerr.InvalidTxnState
						}
						continue
					}
					if !in && !slices.Contains(add, tp) {
						add = append(add, tp)
						ids = append(ids, metadata.TopicIDPartition{Topic: topic.ID, Partition: p})
					}
				}
			}
			if unknown {
				for _, rt := range topics {
					for _, p := range rt.Partitions {
						if tp := (metadata.TopicPartition{Topic: rt.Topic, Partition: p}); codes[tp] == nil {
							codes[tp] = kerr.OperationNotAttempted
						}
					}
				}
				return nil
			}
			if verifyOnly || len(add) == 0 {
				return nil
			}
			if err := a.store.AddTxnPartitions(ctx, e.t.ProducerID, e.t.ProducerEpoch, ids); err != nil {
				if errors.Is(err, metadata.ErrUnknownTopic) {
					return kerr.UnknownTopicOrPartition
				}
				a.log.Warn("add partitions to transaction failed", "txn", id, "err", err)
				return kerr.CoordinatorNotAvailable
			}
			e.begin()
			e.t.Partitions = append(e.t.Partitions, add...)
			return a.txn.save(ctx, e)
		})
	}
	var out []kmsg.AddPartitionsToTxnResponseTopic
	for _, rt := range topics {
		st := kmsg.NewAddPartitionsToTxnResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			sp.Partition = p
			c := code
			if c == nil {
				c = codes[metadata.TopicPartition{Topic: rt.Topic, Partition: p}]
			}
			if c != nil {
				sp.ErrorCode = c.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		out = append(out, st)
	}
	return out
}

// authorizeTxnPartitions checks WRITE on the transactional id (its code
// for every partition) and on each topic, as Kafka does before the
// transaction is looked at: when a topic is refused, its partitions get
// TOPIC_AUTHORIZATION_FAILED in codes and the others OPERATION_NOT_ATTEMPTED.
func (a *Agent) authorizeTxnPartitions(r *request, id string, topics []kmsg.AddPartitionsToTxnRequestTopic, codes map[metadata.TopicPartition]*kerr.Error) *kerr.Error {
	if !a.authorize(r, opWrite, resTxnID, id) {
		return kerr.TransactionalIDAuthorizationFailed
	}
	denied := map[string]bool{}
	for _, rt := range topics {
		if !a.authorize(r, opWrite, resTopic, rt.Topic) {
			denied[rt.Topic] = true
		}
	}
	if len(denied) == 0 {
		return nil
	}
	for _, rt := range topics {
		for _, p := range rt.Partitions {
			codes[metadata.TopicPartition{Topic: rt.Topic, Partition: p}] = kerr.OperationNotAttempted
			if denied[rt.Topic] {
				codes[metadata.TopicPartition{Topic: rt.Topic, Partition: p}] = kerr.TopicAuthorizationFailed
			}
		}
	}
	return nil
}
