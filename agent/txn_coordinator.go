package agent

// The transaction coordinator: which agent coordinates a transactional id,
// the lease that makes that exclusive, the id's state in the metadata store,
// ending transactions by writing commit or abort markers into every
// partition, and the background loop that aborts timed-out transactions and
// finishes the ones a crashed coordinator left half-ended.
//
// Placement is the group coordinator's rendezvous hash (coordinator.ownerOf)
// over the live agents; the lease metadata.TxnLeaseName(id) makes it
// exclusive, trusted locally until renewal start + TTL - margin as for
// groups. The state lives in the store (metadata.Transaction) and is written
// before anything it implies happens: PrepareCommit/PrepareAbort is saved
// before the first marker, so an agent taking over an id in a Prepare state
// writes the markers again (a partition whose transaction a marker already
// closed ignores the second one) and completes it.

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

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
// Locking: mu guards the entries map only; each txnEntry's mu guards its
// fields and is held across the store and marker I/O of one request, so the
// requests of one id are applied one at a time, in order. Lock order: an
// entry's mu before c.mu, never the reverse.
type txnCoordinator struct {
	a        *Agent
	leaseTTL time.Duration

	mu      sync.Mutex
	entries map[string]*txnEntry
}

// txnEntry is one coordinated transactional id.
type txnEntry struct {
	id string

	mu         sync.Mutex
	t          metadata.Transaction // valid when loaded
	exists     bool                 // the store has a record (t is it)
	loaded     bool
	epoch      int64 // lease epoch the state was loaded under
	leaseUntil time.Time
	lastUsed   time.Time
	gone       bool // removed from the map: callers must look again
}

func newTxnCoordinator(a *Agent) *txnCoordinator {
	return &txnCoordinator{a: a, leaseTTL: a.cfg.AgentTTL, entries: map[string]*txnEntry{}}
}

func (c *txnCoordinator) isOwner(id string) bool { return c.a.coord.ownerOf(id).ID == c.a.id }

// with runs fn on a transactional id this agent coordinates, with the
// entry locked, the lease held and the state loaded; a transaction left in
// a Prepare state is completed first. NOT_COORDINATOR when another agent
// should coordinate it, COORDINATOR_NOT_AVAILABLE while another agent
// still holds the lease or the store fails.
func (c *txnCoordinator) with(ctx context.Context, id string, fn func(e *txnEntry) *kerr.Error) *kerr.Error {
	if !c.isOwner(id) {
		return kerr.NotCoordinator
	}
	for {
		c.mu.Lock()
		e := c.entries[id]
		if e == nil {
			e = &txnEntry{id: id}
			c.entries[id] = e
		}
		c.mu.Unlock()

		e.mu.Lock()
		if e.gone {
			e.mu.Unlock()
			continue
		}
		defer e.mu.Unlock()
		if err := c.ensureLease(ctx, e); err != nil {
			return err
		}
		e.lastUsed = time.Now()
		if e.exists && (e.t.State == metadata.TxnPrepareCommit || e.t.State == metadata.TxnPrepareAbort) {
			if err := c.complete(ctx, e); err != nil {
				return err
			}
		}
		return fn(e)
	}
}

// ensureLease (e.mu held) makes sure this agent holds the id's lease and
// the state is loaded under the current tenure.
func (c *txnCoordinator) ensureLease(ctx context.Context, e *txnEntry) *kerr.Error {
	start := time.Now()
	if e.loaded && start.Before(e.leaseUntil) {
		return nil
	}
	l, err := c.a.store.AcquireCoordinatorLease(ctx, metadata.TxnLeaseName(e.id), c.a.id, c.leaseTTL)
	if err != nil {
		if !errors.Is(err, metadata.ErrLeaseHeld) {
			c.a.log.Warn("acquire transaction lease failed", "txn", e.id, "err", err)
		}
		c.dropLocked(e)
		return kerr.CoordinatorNotAvailable
	}
	if !e.loaded || l.Epoch != e.epoch {
		t, err := c.a.store.LoadTxn(ctx, e.id)
		switch {
		case errors.Is(err, metadata.ErrNotFound):
			e.t, e.exists = metadata.Transaction{ID: e.id}, false
		case err != nil:
			c.a.log.Warn("load transaction failed", "txn", e.id, "err", err)
			e.loaded = false
			return kerr.CoordinatorNotAvailable
		default:
			e.t, e.exists = t, true
		}
		e.loaded, e.epoch = true, l.Epoch
	}
	e.leaseUntil = start.Add(c.leaseTTL - c.leaseTTL/5)
	return nil
}

// save (e.mu held) writes the entry's state to the store.
func (c *txnCoordinator) save(ctx context.Context, e *txnEntry) *kerr.Error {
	if err := c.a.store.SaveTxn(ctx, e.t); err != nil {
		c.a.log.Warn("save transaction failed", "txn", e.id, "err", err)
		// The store may or may not hold the new state: read it again.
		e.loaded = false
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

// begin (e.mu held) marks the transaction ongoing, starting its clock.
func (e *txnEntry) begin() {
	if e.t.State != metadata.TxnOngoing {
		e.t.State, e.t.StartedAt = metadata.TxnOngoing, time.Now()
		e.t.Partitions, e.t.Groups = nil, nil
	}
}

// end (e.mu held) ends the ongoing transaction: Prepare state saved, then
// the markers and the offsets, then the Complete state.
func (c *txnCoordinator) end(ctx context.Context, e *txnEntry, commit bool) *kerr.Error {
	e.t.State = metadata.TxnPrepareAbort
	if commit {
		e.t.State = metadata.TxnPrepareCommit
	}
	if err := c.save(ctx, e); err != nil {
		return err
	}
	return c.complete(ctx, e)
}

// complete (e.mu held) finishes a transaction in a Prepare state.
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
	data := markerBatch(e.t.ProducerID, e.t.ProducerEpoch, commit, int32(e.epoch), time.Now().UnixMilli())
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
		pw, err := c.a.batcher.add(topic.ID, p.Partition, produceBatch{data: data, records: 1,
			minTS: time.Now().UnixMilli(), maxTS: time.Now().UnixMilli(),
			pid: e.t.ProducerID, epoch: e.t.ProducerEpoch, sequence: -1, transactional: true, marker: m})
		if err != nil {
			return kerr.CoordinatorNotAvailable
		}
		waiters = append(waiters, pw)
	}
	var failed *kerr.Error
	for _, pw := range waiters {
		<-pw.done
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
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// dropLocked (e.mu held) forgets an id.
func (c *txnCoordinator) dropLocked(e *txnEntry) {
	e.loaded, e.gone = false, true
	c.mu.Lock()
	if c.entries[e.id] == e {
		delete(c.entries, e.id)
	}
	c.mu.Unlock()
}

func (c *txnCoordinator) list() []*txnEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	es := make([]*txnEntry, 0, len(c.entries))
	for _, e := range c.entries {
		es = append(es, e)
	}
	return es
}

// run is the background loop, owned by the Agent's WaitGroup.
func (c *txnCoordinator) run() {
	defer c.a.wg.Done()
	tick := time.NewTicker(txnTick)
	defer tick.Stop()
	nextScan := time.Now().Add(txnScanInterval)
	for {
		select {
		case <-c.a.ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		for _, e := range c.list() {
			c.tickEntry(e, now)
		}
		if !now.Before(nextScan) {
			nextScan = now.Add(txnScanInterval)
			c.scan()
		}
	}
}

func (c *txnCoordinator) tickEntry(e *txnEntry, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gone {
		return
	}
	if !now.Before(e.leaseUntil) {
		c.dropLocked(e)
		return
	}
	if !c.isOwner(e.id) || now.Sub(e.lastUsed) > txnIdleRelease {
		ctx, cancel := context.WithTimeout(c.a.ctx, 5*time.Second)
		defer cancel()
		c.releaseLocked(ctx, e)
	}
}

// releaseLocked (e.mu held) drops an id and releases its lease, so its new
// owner can take it at once.
func (c *txnCoordinator) releaseLocked(ctx context.Context, e *txnEntry) {
	c.dropLocked(e)
	if err := c.a.store.ReleaseCoordinatorLease(ctx, metadata.TxnLeaseName(e.id), c.a.id); err != nil {
		c.a.log.Warn("release transaction lease failed", "txn", e.id, "err", err)
	}
}

// renewed extends the local trust in every transactional id whose lease the
// agent's one renewal (coordinator.renew, which renews all of this agent's
// coordinator leases at once) found still held at the same epoch.
func (c *txnCoordinator) renewed(ok map[string]int64, until time.Time) {
	for _, e := range c.list() {
		e.mu.Lock()
		if ep, held := ok[metadata.TxnLeaseName(e.id)]; held && ep == e.epoch && e.loaded {
			e.leaseUntil = until
		}
		e.mu.Unlock()
	}
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
func (c *txnCoordinator) close(ctx context.Context) {
	for _, e := range c.list() {
		e.mu.Lock()
		if !e.gone {
			c.releaseLocked(ctx, e)
		}
		e.mu.Unlock()
	}
}
