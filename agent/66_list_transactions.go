package agent

// ListTransactions (key 66), versions 0–1.
//
// Lists the transactional ids this agent coordinates (by placement; admin
// clients ask every broker and merge the answers), filtered by state,
// producer id and (v1+) minimum running time. Unknown state filters are
// echoed in UnknownStateFilters. v2 (id patterns) is not served.

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.ListTransactions), AdvertisedMin: 0, HandledMin: 0, Max: 1})
}

var txnStates = []string{string(metadata.TxnEmpty), string(metadata.TxnOngoing), string(metadata.TxnPrepareCommit),
	string(metadata.TxnPrepareAbort), string(metadata.TxnCompleteCommit), string(metadata.TxnCompleteAbort)}

func (a *Agent) handleListTransactions(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	for _, s := range req.StateFilters {
		if !slices.Contains(txnStates, s) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	all, err := a.store.Transactions(ctx)
	if err != nil {
		a.log.Warn("list transactions failed", "err", err)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	now := time.Now()
	for _, t := range all {
		switch {
		case !a.txn.isOwner(t.ID):
		case !a.authorize(r, opDescribe, resTxnID, t.ID):
		case len(req.StateFilters) > 0 && !slices.Contains(req.StateFilters, string(t.State)):
		case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, t.ProducerID):
		case req.Version >= 1 && req.DurationFilterMillis >= 0 &&
			(t.StartedAt.IsZero() || now.Sub(t.StartedAt) < time.Duration(req.DurationFilterMillis)*time.Millisecond):
		default:
			st := kmsg.NewListTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.TransactionState = t.ID, t.ProducerID, string(t.State)
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
	}
	return resp, nil
}
