package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/jackc/pgx/v5"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

type pidKey struct {
	run sqlutil.RunKey
	pid int64
}

// partitionState is a locked partition row as commitChecked plans it.
type partitionState struct {
	next, maxTS int64
}

// checkedReads is what commitChecked reads under the partition locks: the
// partitions' offsets, and the producers' states and open transactions on
// them.
type checkedReads struct {
	parts     map[sqlutil.RunKey]*partitionState
	producers map[sqlutil.RunKey]map[int64]*metadata.ProducerState
	txns      map[sqlutil.RunKey]map[int64]*metadata.PartitionTxn
}

// commitChecked commits objects some of whose runs carry idempotent or
// transactional batches. The sequence checks need the producers' states,
// so the commit is planned here, by metadata.PlanTxnRun, between two round
// trips of one transaction: the first inserts the object rows, locks the
// partitions (floe_lock_partitions, as floe_commit_objects does) and reads the
// producer states and open transactions; the second writes everything
// back, a handful of statements over arrays, and commits. Several objects
// are planned one after the other, each seeing the states the previous
// left.
func (s *Store) commitChecked(ctx context.Context, objs []metadata.ObjectCommit) (_ [][]metadata.RunResult, err error) {
	var keys []sqlutil.RunKey
	seen := map[sqlutil.RunKey]bool{}
	var ptopics [][]byte
	var pparts []int32
	var ppids []int64
	seenPid := map[pidKey]bool{}
	// The open transactions to load: (partition, producer) of every
	// transactional batch and marker.
	var ttopics [][]byte
	var tparts []int32
	var tpids []int64
	seenTxn := map[pidKey]bool{}
	okeys := make([]string, len(objs))
	oagents := make([]string, len(objs))
	osizes := make([]int64, len(objs))
	for i, obj := range objs {
		okeys[i], osizes[i], oagents[i] = obj.Key, obj.Size, obj.AgentID
		for _, r := range obj.Runs {
			k := sqlutil.RunKey{Topic: r.TopicID, Partition: r.Partition}
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
			for _, b := range r.BatchList {
				pk := pidKey{k, b.ProducerID}
				if b.ProducerID >= 0 && !seenPid[pk] {
					seenPid[pk] = true
					ptopics, pparts, ppids = append(ptopics, r.TopicID[:]), append(pparts, r.Partition), append(ppids, b.ProducerID)
				}
				if (b.Transactional || b.Marker != metadata.MarkerNone) && !seenTxn[pk] {
					seenTxn[pk] = true
					ttopics, tparts, tpids = append(ttopics, r.TopicID[:]), append(tparts, r.Partition), append(tpids, b.ProducerID)
				}
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })
	topics := make([][]byte, len(keys))
	parts := make([]int32, len(keys))
	for i, k := range keys {
		topics[i], parts[i] = k.Topic[:], k.Partition
	}

	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	// The transaction is begun inside the first batch, saving the round
	// trip of its own BEGIN; whatever fails after it, it is rolled back
	// here, or the connection is closed (and the transaction with it).
	begun := false
	defer func() {
		if begun && err != nil {
			if _, rerr := conn.Exec(context.WithoutCancel(ctx), `rollback`); rerr != nil {
				conn.Conn().Close(context.WithoutCancel(ctx))
			}
		}
	}()

	b := &pgx.Batch{}
	b.Queue(`begin`)
	// The object rows first: they are new, so nobody waits for them, and a
	// duplicate key fails here, before any partition is locked.
	b.Queue(`INSERT INTO objects (key, size, agent_id) SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])`,
		okeys, osizes, oagents)
	b.Queue(`SELECT topic_id, part, next_offset, max_timestamp FROM floe_lock_partitions($1, $2)`, topics, parts)
	b.Queue(`SELECT s.topic_id, s.part, s.producer_id, s.epoch, s.batches FROM producer_state s
		WHERE (s.topic_id, s.part, s.producer_id) IN
		      (SELECT u.t, u.q, u.p FROM unnest($1::bytea[], $2::integer[], $3::bigint[]) AS u(t, q, p))`, ptopics, pparts, ppids)
	if len(tpids) > 0 {
		b.Queue(`SELECT t.topic_id, t.part, t.producer_id, t.epoch, t.first_offset FROM txn_partitions t
			WHERE (t.topic_id, t.part, t.producer_id) IN
			      (SELECT u.t, u.q, u.p FROM unnest($1::bytea[], $2::integer[], $3::bigint[]) AS u(t, q, p))`, ttopics, tparts, tpids)
	}
	begun = true
	rd, err := readChecked(conn.SendBatch(ctx, b), len(tpids) > 0)
	if err != nil {
		return nil, err
	}

	var w checkedWrites
	out := make([][]metadata.RunResult, len(objs))
	for i, obj := range objs {
		out[i] = make([]metadata.RunResult, len(obj.Runs))
		for j, r := range obj.Runs {
			k := sqlutil.RunKey{Topic: r.TopicID, Partition: r.Partition}
			st := rd.parts[k]
			if st == nil {
				out[i][j] = metadata.RunResult{Err: metadata.ErrUnknownTopic}
				continue
			}
			if rd.producers[k] == nil {
				rd.producers[k] = map[int64]*metadata.ProducerState{}
			}
			if rd.txns[k] == nil {
				rd.txns[k] = map[int64]*metadata.PartitionTxn{}
			}
			base := st.next
			batches, segs, next, aborted := metadata.PlanTxnRun(st.next, r, rd.producers[k], rd.txns[k])
			st.next = next
			out[i][j] = metadata.RunResult{BaseOffset: base, Batches: batches}
			for _, a := range aborted {
				w.aborted.add(k, a.ProducerID)
				w.abortedFirst, w.abortedLast = append(w.abortedFirst, a.FirstOffset), append(w.abortedLast, a.LastOffset)
			}
			for _, sg := range segs {
				st.maxTS = max(st.maxTS, sg.MaxTimestamp)
				w.index.add(obj.Key, r.TopicID, r.Partition, sg)
			}
		}
	}
	for _, k := range keys {
		st := rd.parts[k]
		if st == nil {
			continue
		}
		w.partTopics, w.partParts = append(w.partTopics, k.Topic[:]), append(w.partParts, k.Partition)
		w.partNext, w.partMaxTS = append(w.partNext, st.next), append(w.partMaxTS, st.maxTS)
		for pid, t := range rd.txns[k] {
			switch {
			case t.Closed:
				w.txnClosed.add(k, pid)
			case t.Changed:
				w.txnChanged.add(k, pid)
				w.txnFirst = append(w.txnFirst, t.FirstOffset)
			}
		}
		for pid, ps := range rd.producers[k] {
			raw, err := sqlutil.EncodeProducerState(ps)
			if err != nil {
				return nil, err
			}
			w.producers.add(k, pid)
			w.producerEpochs, w.producerBatches = append(w.producerEpochs, ps.Epoch), append(w.producerBatches, raw)
		}
	}
	if err := conn.SendBatch(ctx, w.batch(len(objs))).Close(); err != nil {
		return nil, err
	}
	// The batch ended in COMMIT; a connection idle outside a transaction
	// now is the proof it took.
	if st := conn.Conn().PgConn().TxStatus(); st != 'I' {
		return nil, fmt.Errorf("transaction status %q after commit", st)
	}
	begun = false
	return out, nil
}

// readChecked reads the results of commitChecked's first batch (begin,
// the object rows, the locked partitions, the producer states and, when
// queued, the open transactions) and closes it.
func readChecked(br pgx.BatchResults, withTxns bool) (rd checkedReads, err error) {
	defer func() { err = errors.Join(err, br.Close()) }()
	rd = checkedReads{
		parts:     map[sqlutil.RunKey]*partitionState{},
		producers: map[sqlutil.RunKey]map[int64]*metadata.ProducerState{},
		txns:      map[sqlutil.RunKey]map[int64]*metadata.PartitionTxn{},
	}
	for range 2 { // begin, objects
		if _, err := br.Exec(); err != nil {
			return rd, err
		}
	}
	rows, _ := br.Query()
	var id []byte
	var k sqlutil.RunKey
	st := partitionState{}
	if _, err := pgx.ForEachRow(rows, []any{&id, &k.Partition, &st.next, &st.maxTS}, func() error {
		copy(k.Topic[:], id)
		rd.parts[k] = &partitionState{next: st.next, maxTS: st.maxTS}
		return nil
	}); err != nil {
		return rd, err
	}
	var pid int64
	var epoch int16
	var raw string
	rows, _ = br.Query()
	if _, err := pgx.ForEachRow(rows, []any{&id, &k.Partition, &pid, &epoch, &raw}, func() error {
		copy(k.Topic[:], id)
		ps, err := sqlutil.DecodeProducerState(epoch, raw)
		if err != nil {
			return err
		}
		if rd.producers[k] == nil {
			rd.producers[k] = map[int64]*metadata.ProducerState{}
		}
		rd.producers[k][pid] = ps
		return nil
	}); err != nil {
		return rd, err
	}
	if !withTxns {
		return rd, nil
	}
	var first *int64
	rows, _ = br.Query()
	_, err = pgx.ForEachRow(rows, []any{&id, &k.Partition, &pid, &epoch, &first}, func() error {
		copy(k.Topic[:], id)
		t := &metadata.PartitionTxn{Epoch: epoch, FirstOffset: -1}
		if first != nil {
			t.FirstOffset = *first
		}
		if rd.txns[k] == nil {
			rd.txns[k] = map[int64]*metadata.PartitionTxn{}
		}
		rd.txns[k][pid] = t
		return nil
	})
	return rd, err
}

// producerKeys are (partition, producer) pairs as column arrays.
type producerKeys struct {
	topics [][]byte
	parts  []int32
	pids   []int64
}

func (c *producerKeys) add(k sqlutil.RunKey, pid int64) {
	c.topics, c.parts, c.pids = append(c.topics, k.Topic[:]), append(c.parts, k.Partition), append(c.pids, pid)
}

// indexRows are object_index rows as column arrays.
type indexRows struct {
	keys                          []string
	topics                        [][]byte
	parts, batches                []int32
	bases, ends, offsets, lengths []int64
	minTS, maxTS                  []int64
}

func (c *indexRows) add(key string, topic metadata.TopicID, part int32, sg metadata.Segment) {
	c.keys, c.topics, c.parts = append(c.keys, key), append(c.topics, topic[:]), append(c.parts, part)
	c.bases, c.ends, c.batches = append(c.bases, sg.BaseOffset), append(c.ends, sg.EndOffset), append(c.batches, sg.Batches)
	c.offsets, c.lengths = append(c.offsets, sg.ByteOffset), append(c.lengths, sg.ByteLength)
	c.minTS, c.maxTS = append(c.minTS, sg.MinTimestamp), append(c.maxTS, sg.MaxTimestamp)
}

// checkedWrites is what a planned commitChecked writes back, as column
// arrays: one statement per table, however many rows.
type checkedWrites struct {
	index                     indexRows
	partTopics                [][]byte
	partParts                 []int32
	partNext, partMaxTS       []int64
	producers                 producerKeys
	producerEpochs            []int16
	producerBatches           []string
	txnClosed, txnChanged     producerKeys
	txnFirst                  []int64
	aborted                   producerKeys
	abortedFirst, abortedLast []int64
}

// batch is the second round trip of commitChecked: the writes, the commit
// counter (one per object) and COMMIT.
func (w *checkedWrites) batch(objects int) *pgx.Batch {
	b := &pgx.Batch{}
	ix := &w.index
	if len(ix.keys) > 0 {
		b.Queue(`INSERT INTO object_index (topic_id, part, base_offset, end_offset, object_key,
			byte_offset, byte_length, batches, min_ts, max_ts)
			SELECT * FROM unnest($1::bytea[], $2::integer[], $3::bigint[], $4::bigint[], $5::text[],
			                     $6::bigint[], $7::bigint[], $8::integer[], $9::bigint[], $10::bigint[])`,
			ix.topics, ix.parts, ix.bases, ix.ends, ix.keys, ix.offsets, ix.lengths, ix.batches, ix.minTS, ix.maxTS)
	}
	if len(w.partTopics) > 0 {
		b.Queue(`UPDATE partitions p SET next_offset = u.n, max_timestamp = u.m
			FROM unnest($1::bytea[], $2::integer[], $3::bigint[], $4::bigint[]) AS u(t, q, n, m)
			WHERE p.topic_id = u.t AND p.part = u.q`, w.partTopics, w.partParts, w.partNext, w.partMaxTS)
	}
	if p := &w.producers; len(p.pids) > 0 {
		b.Queue(`INSERT INTO producer_state (topic_id, part, producer_id, epoch, batches)
			SELECT * FROM unnest($1::bytea[], $2::integer[], $3::bigint[], $4::smallint[], $5::text[])
			ON CONFLICT (topic_id, part, producer_id) DO UPDATE SET epoch = excluded.epoch, batches = excluded.batches, updated_at = now()`,
			p.topics, p.parts, p.pids, w.producerEpochs, w.producerBatches)
	}
	if t := &w.txnClosed; len(t.pids) > 0 {
		b.Queue(`DELETE FROM txn_partitions t USING unnest($1::bytea[], $2::integer[], $3::bigint[]) AS u(t, q, p)
			WHERE t.topic_id = u.t AND t.part = u.q AND t.producer_id = u.p`, t.topics, t.parts, t.pids)
	}
	if t := &w.txnChanged; len(t.pids) > 0 {
		b.Queue(`UPDATE txn_partitions t SET first_offset = u.f
			FROM unnest($1::bytea[], $2::integer[], $3::bigint[], $4::bigint[]) AS u(t, q, p, f)
			WHERE t.topic_id = u.t AND t.part = u.q AND t.producer_id = u.p`, t.topics, t.parts, t.pids, w.txnFirst)
	}
	if a := &w.aborted; len(a.pids) > 0 {
		b.Queue(`INSERT INTO txn_aborted (topic_id, part, first_offset, producer_id, last_offset)
			SELECT * FROM unnest($1::bytea[], $2::integer[], $3::bigint[], $4::bigint[], $5::bigint[])
			ON CONFLICT DO NOTHING`, a.topics, a.parts, w.abortedFirst, a.pids, w.abortedLast)
	}
	b.Queue(`UPDATE counters SET value = value + $2 WHERE name = 'commits' AND shard = $1`, rand.IntN(commitShards), objects)
	b.Queue(`commit`)
	return b
}
