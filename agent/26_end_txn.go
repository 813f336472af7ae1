package agent

// EndTxn (key 26), versions 0–4.
//
// Served by the transactional id's coordinator. Commit or abort: the
// PrepareCommit/PrepareAbort state is saved, a marker is written into every
// partition of the transaction (through the batcher, committed like any
// produced batch), the transaction's pending offsets become the groups'
// committed offsets (commit) or are dropped (abort), and the Complete
// state is saved — all before the answer, so a producer's next transaction
// never overlaps the markers of its last one. A retry of an EndTxn that
// already completed the same way succeeds. v5 (KIP-890 part 2, an epoch
// bump per transaction) is not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.EndTxn), AdvertisedMin: 0, HandledMin: 0, Max: 4})
}

func (a *Agent) handleEndTxn(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if !a.authorize(r, opWrite, resTxnID, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	code := a.txn.with(ctx, req.TransactionalID, func(e *txnEntry) *kerr.Error {
		if err := e.checkProducer(req.ProducerID, req.ProducerEpoch); err != nil {
			return err
		}
		switch e.t.State {
		case metadata.TxnOngoing:
			return a.txn.end(ctx, e, req.Commit)
		case metadata.TxnCompleteCommit:
			if req.Commit {
				return nil // a retry
			}
		case metadata.TxnCompleteAbort:
			if !req.Commit {
				return nil
			}
		}
		return kerr.InvalidTxnState
	})
	if code != nil {
		resp.ErrorCode = code.Code
	}
	return resp, nil
}
