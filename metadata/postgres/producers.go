package postgres

import (
	"context"
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

// commitChecked commits an object whose runs carry idempotent batches. The
// sequence checks need the producers' states, so this is a transaction
// driven from here rather than one function call: lock the partitions (in
// sorted order, as floe_commit_object does), read the producer states, plan
// every run with metadata.PlanRun, and write everything back in one batch.
func (s *Store) commitChecked(ctx context.Context, obj metadata.ObjectCommit) ([]metadata.RunResult, error) {
	type state struct {
		next, maxTS int64
	}
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
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })
	topics := make([][]byte, len(keys))
	parts := make([]int32, len(keys))
	for i, k := range keys {
		topics[i], parts[i] = k.Topic[:], k.Partition
	}

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)

	states := map[sqlutil.RunKey]*state{}
	rows, err := tx.Query(ctx, `SELECT p.topic_id, p.part, p.next_offset, p.max_timestamp FROM partitions p
		WHERE (p.topic_id, p.part) IN (SELECT u.t, u.q FROM unnest($1::bytea[], $2::integer[]) AS u(t, q))
		ORDER BY p.topic_id, p.part FOR UPDATE OF p`, topics, parts)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id []byte
		var k sqlutil.RunKey
		st := &state{}
		if err := rows.Scan(&id, &k.Partition, &st.next, &st.maxTS); err != nil {
			rows.Close()
			return nil, err
		}
		copy(k.Topic[:], id)
		states[k] = st
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}

	producers := map[sqlutil.RunKey]map[int64]*metadata.ProducerState{}
	rows, err = tx.Query(ctx, `SELECT s.topic_id, s.part, s.producer_id, s.epoch, s.batches FROM producer_state s
		WHERE (s.topic_id, s.part, s.producer_id) IN
		      (SELECT u.t, u.q, u.p FROM unnest($1::bytea[], $2::integer[], $3::bigint[]) AS u(t, q, p))`, ptopics, pparts, ppids)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id []byte
		var k sqlutil.RunKey
		var pid int64
		var epoch int16
		var raw string
		if err := rows.Scan(&id, &k.Partition, &pid, &epoch, &raw); err != nil {
			rows.Close()
			return nil, err
		}
		copy(k.Topic[:], id)
		st, err := sqlutil.DecodeProducerState(epoch, raw)
		if err != nil {
			rows.Close()
			return nil, err
		}
		if producers[k] == nil {
			producers[k] = map[int64]*metadata.ProducerState{}
		}
		producers[k][pid] = st
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}

	txns := map[sqlutil.RunKey]map[int64]*metadata.PartitionTxn{}
	if len(tpids) > 0 {
		rows, err = tx.Query(ctx, `SELECT t.topic_id, t.part, t.producer_id, t.epoch, t.first_offset FROM txn_partitions t
			WHERE (t.topic_id, t.part, t.producer_id) IN
			      (SELECT u.t, u.q, u.p FROM unnest($1::bytea[], $2::integer[], $3::bigint[]) AS u(t, q, p))`, ttopics, tparts, tpids)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id []byte
			var k sqlutil.RunKey
			var pid int64
			var first *int64
			t := &metadata.PartitionTxn{FirstOffset: -1}
			if err := rows.Scan(&id, &k.Partition, &pid, &t.Epoch, &first); err != nil {
				rows.Close()
				return nil, err
			}
			copy(k.Topic[:], id)
			if first != nil {
				t.FirstOffset = *first
			}
			if txns[k] == nil {
				txns[k] = map[int64]*metadata.PartitionTxn{}
			}
			txns[k][pid] = t
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}

	b := &pgx.Batch{}
	b.Queue(`INSERT INTO objects (key, size, agent_id) VALUES ($1, $2, $3)`, obj.Key, obj.Size, obj.AgentID)
	results := make([]metadata.RunResult, len(obj.Runs))
	for i, r := range obj.Runs {
		k := sqlutil.RunKey{Topic: r.TopicID, Partition: r.Partition}
		st := states[k]
		if st == nil {
			results[i] = metadata.RunResult{Err: metadata.ErrUnknownTopic}
			continue
		}
		if producers[k] == nil {
			producers[k] = map[int64]*metadata.ProducerState{}
		}
		base := st.next
		if txns[k] == nil {
			txns[k] = map[int64]*metadata.PartitionTxn{}
		}
		batches, segs, next, aborted := metadata.PlanTxnRun(st.next, r, producers[k], txns[k])
		for _, a := range aborted {
			b.Queue(`INSERT INTO txn_aborted (topic_id, part, first_offset, producer_id, last_offset)
				VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, r.TopicID[:], r.Partition, a.FirstOffset, a.ProducerID, a.LastOffset)
		}
		st.next = next
		results[i] = metadata.RunResult{BaseOffset: base, Batches: batches}
		for _, sg := range segs {
			st.maxTS = max(st.maxTS, sg.MaxTimestamp)
			b.Queue(`INSERT INTO object_index (topic_id, part, base_offset, end_offset, object_key,
				byte_offset, byte_length, batches, min_ts, max_ts) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				r.TopicID[:], r.Partition, sg.BaseOffset, sg.EndOffset, obj.Key, sg.ByteOffset, sg.ByteLength, sg.Batches, sg.MinTimestamp, sg.MaxTimestamp)
		}
	}
	for _, k := range keys {
		st := states[k]
		if st == nil {
			continue
		}
		b.Queue(`UPDATE partitions SET next_offset = $1, max_timestamp = $2 WHERE topic_id = $3 AND part = $4`,
			st.next, st.maxTS, k.Topic[:], k.Partition)
		for pid, t := range txns[k] {
			switch {
			case t.Closed:
				b.Queue(`DELETE FROM txn_partitions WHERE topic_id = $1 AND part = $2 AND producer_id = $3`, k.Topic[:], k.Partition, pid)
			case t.Changed:
				b.Queue(`UPDATE txn_partitions SET first_offset = $1 WHERE topic_id = $2 AND part = $3 AND producer_id = $4`,
					t.FirstOffset, k.Topic[:], k.Partition, pid)
			}
		}
		for pid, ps := range producers[k] {
			raw, err := sqlutil.EncodeProducerState(ps)
			if err != nil {
				return nil, err
			}
			b.Queue(`INSERT INTO producer_state (topic_id, part, producer_id, epoch, batches) VALUES ($1, $2, $3, $4, $5)
				ON CONFLICT (topic_id, part, producer_id) DO UPDATE SET epoch = excluded.epoch, batches = excluded.batches, updated_at = now()`,
				k.Topic[:], k.Partition, pid, ps.Epoch, raw)
		}
	}
	b.Queue(`UPDATE counters SET value = value + 1 WHERE name = 'commits' AND shard = $1`, rand.IntN(commitShards))
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	return results, nil
}
