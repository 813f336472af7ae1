package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

// CommitObject implements metadata.Store in one IMMEDIATE transaction. The
// file-wide write lock makes the per-partition lock order moot here, but
// partitions are still visited in sorted order to match the interface.
func (s *Store) CommitObject(ctx context.Context, obj metadata.ObjectCommit) ([]metadata.RunResult, error) {
	if err := obj.Validate(); err != nil {
		return nil, err
	}
	type state struct {
		exists      bool
		next, maxTS int64
	}
	parts := map[sqlutil.RunKey]*state{}
	var keys []sqlutil.RunKey
	for _, r := range obj.Runs {
		k := sqlutil.RunKey{Topic: r.TopicID, Partition: r.Partition}
		if _, ok := parts[k]; !ok {
			parts[k] = &state{}
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })

	results := make([]metadata.RunResult, len(obj.Runs))
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		// Prepared once per commit: modernc compiles every unprepared
		// statement anew, which dominates a commit of hundreds of runs.
		sel, err := tx.PrepareContext(ctx, `SELECT next_offset, max_timestamp FROM partitions WHERE topic_id = ? AND part = ?`)
		if err != nil {
			return err
		}
		defer sel.Close()
		for _, k := range keys {
			st := parts[k]
			err := sel.QueryRowContext(ctx, k.Topic[:], k.Partition).Scan(&st.next, &st.maxTS)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			st.exists = true
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO objects (key, size, agent_id, created_at) VALUES (?, ?, ?, ?)`,
			obj.Key, obj.Size, obj.AgentID, s.now().UnixMilli()); err != nil {
			return err
		}
		ins, err := tx.PrepareContext(ctx, `INSERT INTO object_index
			(topic_id, part, base_offset, end_offset, object_key, byte_offset, byte_length, batches, min_ts, max_ts)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer ins.Close()
		for i, r := range obj.Runs {
			st := parts[sqlutil.RunKey{Topic: r.TopicID, Partition: r.Partition}]
			if !st.exists {
				results[i] = metadata.RunResult{Err: metadata.ErrUnknownTopic}
				continue
			}
			states, err := loadProducerStates(ctx, tx, r)
			if err != nil {
				return err
			}
			txns, err := loadTxns(ctx, tx, r)
			if err != nil {
				return err
			}
			base := st.next
			batches, segs, next, aborted := metadata.PlanTxnRun(st.next, r, states, txns)
			st.next = next
			results[i] = metadata.RunResult{BaseOffset: base, Batches: batches}
			for _, sg := range segs {
				st.maxTS = max(st.maxTS, sg.MaxTimestamp)
				if _, err := ins.ExecContext(ctx, r.TopicID[:], r.Partition, sg.BaseOffset, sg.EndOffset, obj.Key,
					sg.ByteOffset, sg.ByteLength, sg.Batches, sg.MinTimestamp, sg.MaxTimestamp); err != nil {
					return err
				}
			}
			if err := saveProducerStates(ctx, tx, r, states, s.now().UnixMilli()); err != nil {
				return err
			}
			if err := saveTxns(ctx, tx, r, txns, aborted); err != nil {
				return err
			}
		}
		upd, err := tx.PrepareContext(ctx, `UPDATE partitions SET next_offset = ?, max_timestamp = ? WHERE topic_id = ? AND part = ?`)
		if err != nil {
			return err
		}
		defer upd.Close()
		for _, k := range keys {
			st := parts[k]
			if !st.exists {
				continue
			}
			if _, err := upd.ExecContext(ctx, st.next, st.maxTS, k.Topic[:], k.Partition); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE counters SET value = value + 1 WHERE name = 'commits'`)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("commit object %s: %w", obj.Key, err)
	}
	return results, nil
}

// CommitCount implements metadata.Store.
func (s *Store) CommitCount(ctx context.Context) (int64, error) {
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT value FROM counters WHERE name = 'commits'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("commit count: %w", err)
	}
	return n, nil
}

const indexColumns = `topic_id, part, base_offset, end_offset, object_key, byte_offset, byte_length, batches, min_ts, max_ts`

func scanEntry(row interface{ Scan(...any) error }) (metadata.IndexEntry, error) {
	var (
		e  metadata.IndexEntry
		id []byte
	)
	if err := row.Scan(&id, &e.Partition, &e.BaseOffset, &e.EndOffset, &e.ObjectKey,
		&e.ByteOffset, &e.ByteLength, &e.Batches, &e.MinTimestamp, &e.MaxTimestamp); err != nil {
		return e, err
	}
	var err error
	e.TopicID, err = sqlutil.TopicIDFromBytes(id)
	return e, err
}

// Lookup implements metadata.Store. A limit <= 0 means no entry-count limit.
func (s *Store) Lookup(ctx context.Context, topic metadata.TopicID, partition int32, offset int64, maxBytes int64, limit int) ([]metadata.IndexEntry, error) {
	var out []metadata.IndexEntry
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		p, err := partitionState(ctx, tx, topic, partition)
		if err != nil {
			return err
		}
		if offset < p.LogStartOffset || offset > p.NextOffset {
			return fmt.Errorf("%w: offset %d, log start %d, high watermark %d", metadata.ErrOffsetOutOfRange, offset, p.LogStartOffset, p.NextOffset)
		}
		if offset == p.NextOffset {
			return nil
		}
		sqlLimit := int64(limit)
		if limit <= 0 {
			sqlLimit = -1
		}
		// The inner max() finds the entry containing offset through the
		// primary key; the outer scan then walks forward from it.
		rows, err := tx.QueryContext(ctx, `SELECT `+indexColumns+` FROM object_index
			WHERE topic_id = ?1 AND part = ?2 AND end_offset > ?3
			  AND base_offset >= coalesce((SELECT max(base_offset) FROM object_index
			                               WHERE topic_id = ?1 AND part = ?2 AND base_offset <= ?3), ?3)
			ORDER BY base_offset LIMIT ?4`, topic[:], partition, offset, sqlLimit)
		if err != nil {
			return err
		}
		defer rows.Close()
		var total int64
		for rows.Next() {
			e, err := scanEntry(rows)
			if err != nil {
				return err
			}
			out = append(out, e)
			total += e.ByteLength
			if total >= maxBytes {
				break
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("lookup %x/%d@%d: %w", topic, partition, offset, err)
	}
	return out, nil
}

// LookupTimestamp implements metadata.Store. Entries wholly below the log
// start offset are ignored; ErrUnknownTopic if the partition does not exist.
func (s *Store) LookupTimestamp(ctx context.Context, topic metadata.TopicID, partition int32, ts int64) (metadata.IndexEntry, error) {
	e, err := s.lookupOne(ctx, topic, partition, `SELECT `+indexColumns+` FROM object_index
		WHERE topic_id = ?1 AND part = ?2 AND end_offset > ?3 AND max_ts >= ?4
		ORDER BY base_offset LIMIT 1`, ts)
	if err != nil {
		return e, fmt.Errorf("lookup %x/%d timestamp %d: %w", topic, partition, ts, err)
	}
	return e, nil
}

// LookupMaxTimestamp implements metadata.Store; ErrUnknownTopic if the
// partition does not exist.
func (s *Store) LookupMaxTimestamp(ctx context.Context, topic metadata.TopicID, partition int32) (metadata.IndexEntry, error) {
	e, err := s.lookupOne(ctx, topic, partition, `SELECT `+indexColumns+` FROM object_index
		WHERE topic_id = ?1 AND part = ?2 AND end_offset > ?3
		ORDER BY max_ts DESC, base_offset LIMIT 1`)
	if err != nil {
		return e, fmt.Errorf("lookup %x/%d max timestamp: %w", topic, partition, err)
	}
	return e, nil
}

// lookupOne checks the partition exists, then runs query with (topic,
// partition, log start offset, extra...) and returns its single row.
func (s *Store) lookupOne(ctx context.Context, topic metadata.TopicID, partition int32, query string, extra ...any) (metadata.IndexEntry, error) {
	var e metadata.IndexEntry
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		p, err := partitionState(ctx, tx, topic, partition)
		if err != nil {
			return err
		}
		args := append([]any{topic[:], partition, p.LogStartOffset}, extra...)
		e, err = scanEntry(tx.QueryRowContext(ctx, query, args...))
		if errors.Is(err, sql.ErrNoRows) {
			return metadata.ErrNotFound
		}
		return err
	})
	return e, err
}
