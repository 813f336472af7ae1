package agent

// AddOffsetsToTxn (key 25), versions 0–3.
//
// Served by the transactional id's coordinator: the consumer group joins
// the ongoing transaction (starting one if none is), so that its
// TxnOffsetCommits become the group's committed offsets when the
// transaction commits. v4 (KIP-890 part 2) is not served.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.AddOffsetsToTxn), AdvertisedMin: 0, HandledMin: 0, Max: 3})
}

func (a *Agent) handleAddOffsetsToTxn(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	// WRITE on the transactional id, then READ on the group.
	if !a.authorize(r, opWrite, resTxnID, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	if !a.authorize(r, opRead, resGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	code := a.txn.with(ctx, req.TransactionalID, func(e *txnEntry) *kerr.Error {
		if err := e.checkProducer(req.ProducerID, req.ProducerEpoch); err != nil {
			return err
		}
		if req.Group == "" {
			return kerr.InvalidGroupID
		}
		if e.t.State == metadata.TxnOngoing && slices.Contains(e.t.Groups, req.Group) {
			return nil
		}
		e.begin()
		e.t.Groups = append(e.t.Groups, req.Group)
		return a.txn.save(ctx, e)
	})
	if code != nil {
		resp.ErrorCode = code.Code
	}
	return resp, nil
}
