package workload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"floe/proof/history"
)

// worker is one sequential client. Only its goroutine touches its fields,
// except rebalanced, which the group callbacks fill under mu.
type worker struct {
	run  *run
	id   int
	kind Kind
	rng  *rand.Rand
	log  *slog.Logger

	pid  int
	cl   *kgo.Client
	sess *kgo.GroupTransactSession // txn-subscribe only; cl is its client
	keys []history.Key             // the keys an assign worker assigned

	// sarama: the worker's client is sc, a sarama client (assign and
	// subscribe only; see sarama.go), instead of cl.
	sarama bool
	sc     *saramaClient

	mu         sync.Mutex
	rebalanced map[history.Key]bool
}

// loop runs ops until stop ends. Ops run under ctx (the run's parent) with
// their own timeout, so that the end of the run does not turn the last
// ops' outcomes into unknowns.
// An error is a client that cannot be built (a configuration error), never
// a broker's answer.
func (w *worker) loop(stop, ctx context.Context) error {
	defer w.close()
	for stop.Err() == nil && ctx.Err() == nil {
		if w.cl == nil && w.sc == nil {
			if err := w.open(); err != nil {
				return fmt.Errorf("worker %d: %w", w.id, err)
			}
		}
		switch {
		case w.rng.Float64() < w.run.cfg.CrashP:
			w.crash()
			continue
		case (w.kind == KindAssign || w.kind == KindTxnAssign) && w.rng.Float64() < w.run.cfg.ReassignP:
			w.reassign()
			continue
		}
		switch w.step(ctx).Type {
		case history.Fail:
			w.pid = w.run.nextProcess()
		case history.Info:
			w.crash()
			if d := w.run.cfg.CrashBackoff; d > 0 {
				select {
				case <-stop.Done():
				case <-time.After(d):
				}
			}
		}
	}
	return nil
}

func (w *worker) transactionalID() string {
	return fmt.Sprintf("%s-txn-%d", w.run.cfg.Group, w.id)
}

// open starts a fresh client under a fresh process and records its assign
// or subscribe.
func (w *worker) open() error {
	if w.sarama {
		return w.openSarama()
	}
	r := w.run
	w.pid = r.nextProcess()
	opts := []kgo.Opt{
		kgo.SeedBrokers(r.cfg.Brokers...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.FetchMaxWait(r.cfg.PollWait),
		// A record in flight is not failed by its context; this bounds how
		// long a send can wait past OpTimeout before its outcome is unknown.
		// (franz-go's floor is one second).
		kgo.RecordDeliveryTimeout(max(r.cfg.OpTimeout, time.Second)),
	}
	o := history.Op{Process: w.pid, Type: history.OK, Invoke: r.rec.Now()}
	switch w.kind {
	case KindAssign, KindTxnAssign:
		// A random non-empty subset of the keys, from the start.
		w.keys = w.randomKeys()
		opts = append(opts, kgo.ConsumePartitions(w.partitions(w.keys, kgo.NewOffset().AtStart())))
		o.F, o.Keys, o.SeekToBeginning = history.Assign, append([]history.Key(nil), w.keys...), true
	case KindSubscribe, KindTxnSubscribe:
		opts = append(opts,
			kgo.ConsumerGroup(r.cfg.Group+"-"+string(w.kind)),
			kgo.ConsumeTopics(r.keys.TopicNames()...),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(w.onRebalance),
			kgo.OnPartitionsRevoked(w.onRebalance),
			kgo.OnPartitionsLost(w.onRebalance),
		)
		o.F = history.Subscribe
		for k := range r.keys.Count() {
			o.Keys = append(o.Keys, history.Key(k))
		}
	}
	if w.kind == KindTxnAssign || w.kind == KindTxnSubscribe {
		opts = append(opts, kgo.TransactionalID(w.transactionalID()))
	}
	var err error
	if w.kind == KindTxnSubscribe {
		w.sess, err = kgo.NewGroupTransactSession(opts...)
		if err == nil {
			w.cl = w.sess.Client()
		}
	} else {
		w.cl, err = kgo.NewClient(opts...)
	}
	if err != nil {
		return fmt.Errorf("new client: %w", err)
	}
	o.Complete = r.rec.Now()
	r.rec.Add(o)
	return nil
}

func (w *worker) randomKeys() []history.Key {
	n := w.run.keys.Count()
	var ks []history.Key
	for _, k := range w.rng.Perm(n)[:1+w.rng.IntN(n)] {
		ks = append(ks, history.Key(k))
	}
	slices.Sort(ks)
	return ks
}

func (w *worker) partitions(ks []history.Key, at kgo.Offset) map[string]map[int32]kgo.Offset {
	parts := map[string]map[int32]kgo.Offset{}
	for _, k := range ks {
		t, p := w.run.keys.Partition(k)
		if parts[t] == nil {
			parts[t] = map[int32]kgo.Offset{}
		}
		parts[t][p] = at
	}
	return parts
}

// reassign assigns a new random set of keys: the keys kept go on from where
// they were, the new ones start from the beginning, as the checker assumes
// (an assign forgets the position of keys it drops).
func (w *worker) reassign() {
	r := w.run
	o := history.Op{Process: w.pid, Type: history.OK, F: history.Assign, Invoke: r.rec.Now()}
	next := w.randomKeys()
	var added, removed []history.Key
	for _, k := range next {
		if !slices.Contains(w.keys, k) {
			added = append(added, k)
		}
	}
	for _, k := range w.keys {
		if !slices.Contains(next, k) {
			removed = append(removed, k)
		}
	}
	drop := map[string][]int32{}
	for _, k := range removed {
		t, p := r.keys.Partition(k)
		drop[t] = append(drop[t], p)
	}
	if w.sc != nil {
		w.sc.drop(removed) // a sarama worker's added keys start at their first poll
	} else {
		w.cl.RemoveConsumePartitions(drop)
		w.cl.AddConsumePartitions(w.partitions(added, kgo.NewOffset().AtStart()))
	}
	w.keys = next
	o.Keys = append([]history.Key(nil), next...)
	o.Complete = r.rec.Now()
	r.rec.Add(o)
}

func (w *worker) onRebalance(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rebalanced == nil {
		w.rebalanced = map[history.Key]bool{}
	}
	for t, ps := range parts {
		for _, p := range ps {
			if k, ok := w.run.keys.Key(t, p); ok {
				w.rebalanced[k] = true
			}
		}
	}
}

// takeRebalanced returns and forgets the keys rebalanced since the last op.
func (w *worker) takeRebalanced() []history.Key {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.rebalanced) == 0 {
		return nil
	}
	ks := history.SortedKeys(w.rebalanced)
	w.rebalanced = nil
	return ks
}

// crash records a crash and closes the client; the next op opens a new one
// under a new process, because the old client may still be acting.
func (w *worker) crash() {
	now := w.run.rec.Now()
	w.run.rec.Add(history.Op{Process: w.pid, Type: history.Info, F: history.Crash, Invoke: now, Complete: now})
	w.close()
}

func (w *worker) close() {
	switch {
	case w.sess != nil:
		w.sess.Close()
	case w.cl != nil:
		w.cl.Close()
	case w.sc != nil:
		w.sc.close()
	}
	w.sess, w.cl, w.sc = nil, nil, nil
}

// step runs one op of the worker's kind and records it.
func (w *worker) step(ctx context.Context) history.Op {
	r := w.run
	ctx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
	defer cancel()
	o := history.Op{Process: w.pid, Type: history.OK, Invoke: r.rec.Now()}
	switch w.kind {
	case KindAssign, KindSubscribe:
		send, poll := w.send, w.poll
		if w.sc != nil {
			send, poll = w.saramaSend, w.saramaPoll
		}
		if w.rng.IntN(2) == 0 {
			send(ctx, &o)
		} else {
			poll(ctx, &o)
		}
	case KindTxnAssign:
		w.txn(ctx, &o)
	case KindTxnSubscribe:
		w.groupTxn(ctx, &o)
	}
	o.Complete = r.rec.Now()
	o.Rebalanced = w.takeRebalanced()
	r.rec.Add(o)
	return o
}

func (w *worker) record() (*kgo.Record, history.Key, int64) {
	k, t, p, v := w.nextSend()
	return &kgo.Record{Topic: t, Partition: p, Value: encodeValue(v)}, k, v
}

// send: one record outside any transaction.
func (w *worker) send(ctx context.Context, o *history.Op) {
	o.F = history.Send
	rec, k, v := w.record()
	if err := w.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		o.Type, o.Error = history.Info, err.Error()
		o.Mops = []history.Mop{history.SendMop(k, v)}
		return
	}
	o.Mops = []history.Mop{history.SendAt(k, rec.Offset, v)}
}

// poll: one poll; a group member then commits what it polled.
func (w *worker) poll(ctx context.Context, o *history.Op) {
	o.F = history.Poll
	m, err := w.pollOnce(ctx, func(ctx context.Context) kgo.Fetches { return w.cl.PollFetches(ctx) })
	o.Mops = []history.Mop{history.PollMop(m)}
	if err == nil && w.kind == KindSubscribe {
		err = w.cl.CommitUncommittedOffsets(ctx)
	}
	if err != nil {
		o.Type, o.Error = history.Info, err.Error()
	}
}

// pollOnce polls for at most PollWait and returns the records per key. A
// poll that found nothing in time is not an error.
func (w *worker) pollOnce(ctx context.Context, poll func(context.Context) kgo.Fetches) (map[history.Key][]history.Pair, error) {
	pctx, cancel := context.WithTimeout(ctx, w.run.cfg.PollWait)
	defer cancel()
	fs := poll(pctx)
	m := map[history.Key][]history.Pair{}
	var err error
	fs.EachError(func(t string, p int32, e error) {
		if err == nil && !errors.Is(e, context.DeadlineExceeded) && !errors.Is(e, context.Canceled) {
			err = fmt.Errorf("fetch %s/%d: %w", t, p, e)
		}
	})
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	fs.EachRecord(func(rec *kgo.Record) {
		if k, p, ok := w.run.readRecord(rec.Topic, rec.Partition, rec.Offset, rec.Value); ok {
			m[k] = append(m[k], p)
		}
	})
	return m, err
}

// txn: a transaction of sends and polls of assigned partitions, aborted on
// purpose with probability AbortP when it sent something.
func (w *worker) txn(ctx context.Context, o *history.Op) {
	o.F = history.Txn
	if err := w.cl.BeginTransaction(); err != nil {
		o.Type, o.Error = history.Info, err.Error()
		return
	}
	var failure error
	sent := false
	for range 1 + w.rng.IntN(w.run.cfg.MaxTxnLen) {
		if w.rng.IntN(2) == 0 {
			rec, k, v := w.record()
			if err := w.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				o.Mops = append(o.Mops, history.SendMop(k, v))
				failure = err
				break
			}
			sent = true
			o.Mops = append(o.Mops, history.SendAt(k, rec.Offset, v))
			continue
		}
		m, err := w.pollOnce(ctx, func(ctx context.Context) kgo.Fetches { return w.cl.PollFetches(ctx) })
		o.Mops = append(o.Mops, history.PollMop(m))
		if err != nil {
			failure = err
			break
		}
	}
	if failure == nil && !(sent && w.rng.Float64() < w.run.cfg.AbortP) {
		err := w.cl.Flush(ctx)
		if err == nil {
			err = w.cl.EndTransaction(ctx, kgo.TryCommit)
		}
		if err != nil {
			o.Type, o.Error = history.Info, err.Error()
		}
		o.F = kindOf(o.Mops)
		return
	}
	o.F = kindOf(o.Mops)
	err := w.cl.AbortBufferedRecords(ctx)
	if err == nil {
		err = w.cl.EndTransaction(ctx, kgo.TryAbort)
	}
	switch {
	case err != nil:
		o.Type, o.Error = history.Info, err.Error()
	case failure != nil:
		// The abort succeeded, so nothing of it is visible; a send whose
		// outcome was uncertain was aborted with it.
		o.Type, o.Error = history.Fail, failure.Error()
	default:
		o.Type, o.Error = history.Fail, "aborted on purpose"
	}
}

// groupTxn: read-process-write in a group transaction: poll, send one to
// three records, commit them with the polled offsets (or abort on purpose).
func (w *worker) groupTxn(ctx context.Context, o *history.Op) {
	o.F = history.Txn
	if err := w.sess.Begin(); err != nil {
		o.Type, o.Error = history.Info, err.Error()
		return
	}
	m, failure := w.pollOnce(ctx, func(ctx context.Context) kgo.Fetches { return w.sess.PollFetches(ctx) })
	o.Mops = append(o.Mops, history.PollMop(m))
	for n := 1 + w.rng.IntN(3); n > 0 && failure == nil; n-- {
		rec, k, v := w.record()
		if err := w.sess.ProduceSync(ctx, rec).FirstErr(); err != nil {
			o.Mops = append(o.Mops, history.SendMop(k, v))
			failure = err
			break
		}
		o.Mops = append(o.Mops, history.SendAt(k, rec.Offset, v))
	}
	try := kgo.TryCommit
	if failure != nil || w.rng.Float64() < w.run.cfg.AbortP {
		try = kgo.TryAbort
	}
	committed, err := w.sess.End(ctx, try)
	switch {
	case err != nil:
		o.Type, o.Error = history.Info, err.Error()
	case !committed:
		o.Type, o.Error = history.Fail, "aborted"
		if failure != nil {
			o.Error = failure.Error()
		}
	}
}

// kindOf names an op by its micro-ops, as Jepsen tags them.
func kindOf(mops []history.Mop) history.F {
	sends, polls := false, false
	for _, m := range mops {
		sends = sends || m.F == history.MopSend
		polls = polls || m.F == history.MopPoll
	}
	switch {
	case sends && !polls:
		return history.Send
	case polls && !sends:
		return history.Poll
	}
	return history.Txn
}
