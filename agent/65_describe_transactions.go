package agent

// DescribeTransactions (key 65), version 0.
//
// Describes the transactional ids this agent coordinates from their state
// in the metadata store; ids another agent coordinates get NOT_COORDINATOR
// (clients find the coordinator per id), unknown ids
// TRANSACTIONAL_ID_NOT_FOUND.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DescribeTransactions), AdvertisedMin: 0, HandledMin: 0, Max: 0})
}

func (a *Agent) handleDescribeTransactions(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
		if !a.authorize(r, opDescribe, resTxnID, id) {
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		t, err := a.store.LoadTxn(ctx, id)
		switch {
		case !a.txn.isOwner(id):
			st.ErrorCode = kerr.NotCoordinator.Code
		case errors.Is(err, metadata.ErrNotFound):
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
		case err != nil:
			a.log.Warn("describe transactions: load failed", "txn", id, "err", err)
			st.ErrorCode = kerr.CoordinatorNotAvailable.Code
		default:
			st.State = string(t.State)
			st.TimeoutMillis = int32(t.Timeout.Milliseconds())
			if !t.StartedAt.IsZero() {
				st.StartTimestamp = t.StartedAt.UnixMilli()
			}
			st.ProducerID, st.ProducerEpoch = t.ProducerID, t.ProducerEpoch
			if t.State == metadata.TxnOngoing || t.State == metadata.TxnPrepareCommit || t.State == metadata.TxnPrepareAbort {
				idx := map[string]int{}
				for _, p := range t.Partitions {
					if !a.authorize(r, opDescribe, resTopic, p.Topic) {
						continue // topics not allowed are left out, as in Kafka
					}
					i, ok := idx[p.Topic]
					if !ok {
						i = len(st.Topics)
						idx[p.Topic] = i
						tt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
						tt.Topic = p.Topic
						st.Topics = append(st.Topics, tt)
					}
					st.Topics[i].Partitions = append(st.Topics[i].Partitions, p.Partition)
				}
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
