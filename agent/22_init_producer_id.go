package agent

// InitProducerId (key 22), versions 0–4, for idempotent and transactional
// producers.
//
// A fresh producer gets a new id at epoch 0 from the metadata store; a
// producer that names its id and current epoch (v3+, KIP-360) gets the epoch
// bumped, so it can reset its sequences after an error without losing its
// identity. The sequence checks themselves run in the flush's metadata
// transaction (metadata.PlanRun), so any agent can take any producer's
// batches. A transactional id is served by its transaction coordinator
// (txn_init.go): its producer id is kept across restarts and each call bumps
// the epoch, fencing older instances.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.InitProducerID), AdvertisedMin: 0, HandledMin: 0, Max: 4})
}

func (a *Agent) handleInitProducerID(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	// A transactional producer needs WRITE on its id; an idempotent one
	// IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679).
	if req.TransactionalID != nil && !a.authorize(r, opWrite, resTxnID, *req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	if req.TransactionalID == nil && a.authzEnabled() &&
		!a.authorizeCluster(r, opIdempotentWrite) && !a.authz.AllowedAny(&r.c.authz, r.c.principal(), r.c.host(), opWrite, resTopic) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if req.TransactionalID != nil {
		a.initTxnProducer(ctx, req, resp)
		return resp, nil
	}
	pid, epoch := int64(-1), int16(-1)
	if req.Version >= 3 {
		pid, epoch = req.ProducerID, req.ProducerEpoch
	}
	id, ep, err := a.store.InitProducerID(ctx, pid, epoch)
	switch {
	case errors.Is(err, metadata.ErrInvalidProducerEpoch):
		resp.ErrorCode = kerr.InvalidProducerEpoch.Code
	case err != nil:
		a.log.Warn("init producer id failed", "err", err)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	default:
		resp.ProducerID, resp.ProducerEpoch = id, ep
	}
	return resp, nil
}
