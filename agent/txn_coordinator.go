package agent

// The transaction coordinator: which agent coordinates a transactional id,
// the lease that makes that exclusive, the id's state in the metadata store,
// ending transactions by writing commit or abort markers into every
// partition, and the background loop that aborts timed-out transactions and
// finishes the ones a crashed coordinator left half-ended.
//
// Placement is the group coordinator's rendezvous hash (Agent.coordinatorFor)
// over the live agents; the lease metadata.TxnLeaseName(id) makes it
// exclusive, with the group coordinator's lease lifecycle
// (agent/internal/lease). The state lives in the store
// (metadata.Transaction) and is written before anything it implies
// happens: PrepareCommit/PrepareAbort is saved before the first marker, so
// an agent taking over an id in a Prepare state writes the markers again
// (a partition whose transaction a marker already closed ignores the
// second one) and completes it.

import (
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"floe/agent/internal/lease"
	"floe/kafkaproto"
	"floe/metadata"
)

const (
	// txnTick is how often leases, hand-offs and timeouts are checked.
	txnTick = 200 * time.Millisecond
	// txnScanInterval is how often the store is scanned for timed-out
	// transactions and half-ended ones whose coordinator died (Kafka's
	// transaction.abort.timed.out.transaction.cleanup.interval.ms is 10 s).
	txnScanInterval = time.Second
	// txnMaxTimeout is transaction.max.timeout.ms.
	txnMaxTimeout = 15 * time.Minute
	// txnIdleRelease drops an idle id from memory and releases its lease.
	txnIdleRelease = time.Minute
)

// txnCoordinator holds the transactional ids this agent coordinates.
//
// Locking: mu guards the entries map only (the leased owner's); each
// txnEntry's lock (its lease.State's) guards its fields and is held across
// the store and marker I/O of one request, so the requests of one id are
// applied one at a time, in order. Lock order: an entry's lock before c.mu,
// never the reverse.
type txnCoordinator struct {
	a        *Agent
	leaseTTL time.Duration

	mu      sync.Mutex
	entries map[string]*txnEntry
	leases  *lease.Owner[*txnEntry]
}

// txnEntry is one coordinated transactional id; the fields below
// lease.State are guarded by its lock.
type txnEntry struct {
	id string
	lease.State

	t      metadata.Transaction // valid when loaded (lease.State.Held)
	exists bool                 // the store has a record (t is it)
}

func newTxnCoordinator(a *Agent) *txnCoordinator {
	c := &txnCoordinator{a: a, leaseTTL: a.cfg.AgentTTL, entries: map[string]*txnEntry{}}
	c.leases = lease.New(a.leaseConfig(), &c.mu, c.entries, lease.Hooks[*txnEntry]{
		Kind:     "txn",
		Name:     metadata.TxnLeaseName,
		NewEntry: func(id string) *txnEntry { return &txnEntry{id: id} },
		Load:     c.load,
		// The state is in the store, written before it is acted on:
		// nothing to save on a hand-off, nobody parked to tell.
		Unload: func(e *txnEntry) { e.t, e.exists = metadata.Transaction{}, false },
		Idle:   func(e *txnEntry, now time.Time) bool { return now.Sub(e.LastUsed()) > txnIdleRelease },
	})
	return c
}

func (c *txnCoordinator) isOwner(id string) bool { return c.leases.Owns(id) }

// with runs fn on a transactional id this agent coordinates, with the
// entry locked, the lease held and the state loaded (lease.Owner.With); a
// transaction left in a Prepare state is completed first. NOT_COORDINATOR
// when another agent should coordinate it or holds its lease,
// COORDINATOR_NOT_AVAILABLE when the store fails or takes longer than
// storeTimeout. The store calls fn makes through save, end and
// newProducerID are bounded by storeTimeout each; fn gets no bounded ctx of
// its own (lease.Owner.With passes one), so calls it makes with its caller's ctx
// (AddPartitionsToTxn's AddTxnPartitions) are not.
func (c *txnCoordinator) with(ctx context.Context, id string, fn func(e *txnEntry) *kerr.Error) *kerr.Error {
	return c.leases.With(ctx, id, func(ctx context.Context, e *txnEntry, _ time.Time) *kerr.Error {
		if e.exists && (e.t.State == metadata.TxnPrepareCommit || e.t.State == metadata.TxnPrepareAbort) {
			if err := c.complete(ctx, e); err != nil {
				return err
			}
		}
		return fn(e)
	})
}

// load (e locked) reads the id's state under a new tenure.
func (c *txnCoordinator) load(ctx context.Context, e *txnEntry, _ time.Time) error {
	t, err := c.a.store.LoadTxn(ctx, e.id)
	switch {
	case errors.Is(err, metadata.ErrNotFound):
		e.t, e.exists = metadata.Transaction{ID: e.id}, false
	case err != nil:
		return err
	default:
		e.t, e.exists = t, true
	}
	return nil
}

// save (e locked) writes the entry's state to the store.
func (c *txnCoordinator) save(ctx context.Context, e *txnEntry) *kerr.Error {
	ctx, cancel := context.WithTimeout(ctx, c.leases.Timeout)
	defer cancel()
	if err := c.a.store.SaveTxn(ctx, e.t); err != nil {
		c.a.log.Warn("save transaction failed", "txn", e.id, "err", err)
		// The store may or may not hold the new state: read it again.
		c.leases.Invalidate(e)
		return kerr.CoordinatorNotAvailable
	}
	e.exists = true
	return nil
}

// checkProducer validates a request's producer id and epoch against the
// id's state, as Kafka's coordinator does.
func (e *txnEntry) checkProducer(pid int64, epoch int16) *kerr.Error {
	switch {
	case !e.exists || pid != e.t.ProducerID:
		return kerr.InvalidProducerIDMapping
	case epoch == e.t.TimedOutEpoch:
		// Its transaction timed out: it may recover with InitProducerId
		// (KIP-588), which clients do on this error but not on a fence.
		return kerr.InvalidProducerEpoch
	case epoch < e.t.ProducerEpoch:
		return kerr.ProducerFenced
	case epoch > e.t.ProducerEpoch:
		return kerr.InvalidProducerEpoch
	}
	return nil
}

// begin (e locked) marks the transaction ongoing, starting its clock.
func (e *txnEntry) begin() {
	if e.t.State != metadata.TxnOngoing {
		e.t.State, e.t.StartedAt = metadata.TxnOngoing, time.Now()
		e.t.Partitions, e.t.Groups = nil, nil
	}
}

// end (e locked) ends the ongoing transaction: Prepare state saved, then
// the markers and the offsets, then the Complete state.
func (c *txnCoordinator) end(ctx context.Context, e *txnEntry, commit bool) *kerr.Error {
	ctx, cancel := context.WithTimeout(ctx, c.leases.Timeout)
	defer cancel()
	e.t.State = metadata.TxnPrepareAbort
	if commit {
		e.t.State = metadata.TxnPrepareCommit
	}
	if err := c.save(ctx, e); err != nil {
		return err
	}
	return c.complete(ctx, e)
}

// complete (e locked) finishes a transaction in a Prepare state.
func (c *txnCoordinator) complete(ctx context.Context, e *txnEntry) *kerr.Error {
	commit := e.t.State == metadata.TxnPrepareCommit
	if err := c.writeMarkers(ctx, e, commit); err != nil {
		return err
	}
	var err error
	if commit {
		var offs map[string][]metadata.GroupOffset
		offs, err = c.a.store.TxnOffsets(ctx, e.id)
		for _, g := range slices.Sorted(maps.Keys(offs)) {
			if err == nil {
				err = c.a.store.CommitOffsets(ctx, g, offs[g])
			}
		}
	}
	if err == nil {
		err = c.a.store.DeleteTxnOffsets(ctx, e.id)
	}
	if err != nil {
		c.a.log.Warn("transaction offsets failed", "txn", e.id, "err", err)
		return kerr.CoordinatorNotAvailable
	}
	e.t.State = metadata.TxnCompleteAbort
	if commit {
		e.t.State = metadata.TxnCompleteCommit
	}
	e.t.StartedAt = time.Time{}
	return c.save(ctx, e)
}

// writeMarkers writes a commit or abort marker into every partition of the
// transaction, through the batcher like any produced batch, and waits for
// them all to commit.
func (c *txnCoordinator) writeMarkers(ctx context.Context, e *txnEntry, commit bool) *kerr.Error {
	data := markerBatch(e.t.ProducerID, e.t.ProducerEpoch, commit, int32(e.Epoch()), time.Now().UnixMilli())
	m := metadata.MarkerAbort
	if commit {
		m = metadata.MarkerCommit
	}
	var waiters []*produceWaiter
	for _, p := range e.t.Partitions {
		topic, ok, err := c.a.topics.get(ctx, p.Topic)
		if err != nil {
			c.a.log.Warn("transaction marker: topic lookup failed", "txn", e.id, "topic", p.Topic, "err", err)
			return kerr.CoordinatorNotAvailable
		}
		if !ok || p.Partition >= topic.Partitions {
			continue // deleted since: nothing to end there
		}
		pw, err := c.a.batcher.add(topic.ID, p.Partition, produceBatch{data: data, crc: kafkaproto.BatchChecksum(data), records: 1,
			minTS: time.Now().UnixMilli(), maxTS: time.Now().UnixMilli(),
			pid: e.t.ProducerID, epoch: e.t.ProducerEpoch, sequence: -1, transactional: true, marker: m})
		if err != nil {
			return kerr.CoordinatorNotAvailable
		}
		waiters = append(waiters, pw)
	}
	var failed *kerr.Error
	for _, pw := range waiters {
		select {
		case <-pw.done:
		case <-ctx.Done():
			// The marker may still commit; the Prepare state stays, so
			// the next request or the scan writes it again.
			return kerr.CoordinatorNotAvailable
		}
		switch pw.err {
		case nil, kerr.UnknownTopicOrPartition:
		default:
			c.a.log.Warn("transaction marker failed", "txn", e.id, "err", pw.err)
			failed = kerr.CoordinatorNotAvailable
		}
	}
	return failed
}

// markerBatch is a control batch (attributes transactional|control) with
// one record: key = version 0, type (0 abort, 1 commit); value = version
// 0, coordinator epoch.
func markerBatch(pid int64, epoch int16, commit bool, coordEpoch int32, ts int64) []byte {
	typ := byte(0)
	if commit {
		typ = 1
	}
	// The record: length, attributes, timestamp delta, offset delta, key
	// length, key, value length, value, header count (varints zigzagged).
	rec := []byte{32, 0, 0, 0, 8, 0, 0, 0, typ, 12, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(rec[12:], uint32(coordEpoch))
	b := make([]byte, 61, 61+len(rec))
	// base offset 0, partition leader epoch 0
	binary.BigEndian.PutUint32(b[8:], uint32(61+len(rec)-12))
	b[16] = 2 // magic
	binary.BigEndian.PutUint16(b[21:], 0x30)
	binary.BigEndian.PutUint32(b[23:], 0) // last offset delta
	binary.BigEndian.PutUint64(b[27:], uint64(ts))
	binary.BigEndian.PutUint64(b[35:], uint64(ts))
	binary.BigEndian.PutUint64(b[43:], uint64(pid))
	binary.BigEndian.PutUint16(b[51:], uint16(epoch))
	binary.BigEndian.PutUint32(b[53:], math.MaxUint32) // base sequence -1
	binary.BigEndian.PutUint32(b[57:], 1)              // one record
	b = append(b, rec...)
	kafkaproto.SetBatchCRC(b)
	return b
}

// run is the background loop (lease.Owner.Run), owned by the Agent's
// WaitGroup; it also scans for transactions to end every txnScanInterval.
func (c *txnCoordinator) run() {
	defer c.a.wg.Done()
	nextScan := time.Now().Add(txnScanInterval)
	c.leases.Run(c.a.ctx, txnTick, func(now time.Time) {
		if !now.Before(nextScan) {
			nextScan = now.Add(txnScanInterval)
			c.scan()
		}
	})
}

// scan aborts the timed-out transactions this agent should coordinate, and
// completes those a crashed coordinator left in a Prepare state.
func (c *txnCoordinator) scan() {
	ctx, cancel := context.WithTimeout(c.a.ctx, 30*time.Second)
	defer cancel()
	all, err := c.a.store.Transactions(ctx)
	if err != nil {
		c.a.log.Warn("list transactions failed", "err", err)
		return
	}
	now := time.Now()
	for _, t := range all {
		stuck := (t.State == metadata.TxnPrepareCommit || t.State == metadata.TxnPrepareAbort) && now.Sub(t.UpdatedAt) > c.leaseTTL
		timedOut := t.State == metadata.TxnOngoing && now.Sub(t.StartedAt) > t.Timeout
		if (!stuck && !timedOut) || !c.isOwner(t.ID) {
			continue
		}
		// with completes a Prepare state itself; an ongoing one that is
		// still timed out under the lock is aborted with a bumped epoch,
		// fencing the producer that let it time out.
		code := c.with(ctx, t.ID, func(e *txnEntry) *kerr.Error {
			if e.t.State != metadata.TxnOngoing || time.Since(e.t.StartedAt) <= e.t.Timeout {
				return nil
			}
			c.a.log.Info("aborting timed-out transaction", "txn", e.id, "producer_id", e.t.ProducerID)
			if e.t.ProducerEpoch < math.MaxInt16-1 {
				e.t.TimedOutEpoch = e.t.ProducerEpoch
				e.t.ProducerEpoch++
			}
			return c.end(ctx, e, false)
		})
		if code != nil && code != kerr.NotCoordinator {
			c.a.log.Warn("transaction cleanup failed", "txn", t.ID, "err", code)
		}
	}
}

// close releases every id's lease so another agent takes them at once.
func (c *txnCoordinator) close(ctx context.Context) { c.leases.Close(ctx) }
