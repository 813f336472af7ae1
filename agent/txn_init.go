package agent

import (
	"context"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
)

// initTxnProducer answers InitProducerId for a transactional id, as Kafka's
// coordinator does: a new id gets a fresh producer id at epoch 0; a known
// one keeps its producer id with the epoch bumped (a fresh id once the
// epoch is exhausted), which fences every older instance. An ongoing
// transaction is aborted first, its markers carrying the bumped epoch. With
// a producer id and epoch given (KIP-360) they must be the current ones, or
// those of a producer whose transaction timed out (KIP-588).
func (a *Agent) initTxnProducer(ctx context.Context, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) {
	id := *req.TransactionalID
	if id == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return
	}
	timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
	if timeout <= 0 || timeout > txnMaxTimeout {
		resp.ErrorCode = kerr.InvalidTransactionTimeout.Code
		return
	}
	code := a.txn.with(ctx, id, func(e *txnEntry) *kerr.Error {
		if req.Version >= 3 && req.ProducerID >= 0 && e.exists && (req.ProducerID != e.t.ProducerID ||
			(req.ProducerEpoch != e.t.ProducerEpoch && req.ProducerEpoch != e.t.TimedOutEpoch)) {
			return kerr.ProducerFenced
		}
		if !e.exists {
			pid, code := a.txn.newProducerID(ctx)
			if code != nil {
				return code
			}
			e.t = metadata.Transaction{ID: id, ProducerID: pid, TimedOutEpoch: -1, State: metadata.TxnEmpty, Timeout: timeout}
		} else {
			bumped := e.t.ProducerEpoch < math.MaxInt16-1
			if bumped {
				e.t.ProducerEpoch++
			}
			if e.t.State == metadata.TxnOngoing {
				if err := a.txn.end(ctx, e, false); err != nil {
					return err
				}
			}
			if !bumped {
				pid, code := a.txn.newProducerID(ctx)
				if code != nil {
					return code
				}
				e.t.ProducerID, e.t.ProducerEpoch = pid, 0
			}
			e.t.Timeout, e.t.TimedOutEpoch = timeout, -1
		}
		if err := a.txn.save(ctx, e); err != nil {
			return err
		}
		resp.ProducerID, resp.ProducerEpoch = e.t.ProducerID, e.t.ProducerEpoch
		return nil
	})
	if code != nil {
		resp.ErrorCode = code.Code
		resp.ProducerID, resp.ProducerEpoch = -1, -1
	}
}

// newProducerID allocates a producer id for a transactional id, within
// storeTimeout (the id's entry is locked meanwhile).
func (c *txnCoordinator) newProducerID(ctx context.Context) (int64, *kerr.Error) {
	ctx, cancel := context.WithTimeout(ctx, c.leases.Timeout)
	defer cancel()
	pid, _, err := c.a.store.InitProducerID(ctx, -1, -1)
	if err != nil {
		c.a.log.Warn("init producer id failed", "err", err)
		return 0, kerr.CoordinatorNotAvailable
	}
	return pid, nil
}
