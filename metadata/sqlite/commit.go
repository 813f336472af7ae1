package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"

	"floe/metadata"
	"floe/metadata/internal/sqlstore"
	"floe/metadata/internal/sqlutil"
)

// CommitObject implements metadata.Store in one IMMEDIATE transaction.
// Calls that overlap are committed together, in one transaction and so one
// WAL sync (group commit, metadata/internal/groupcommit), in the order they
// arrived; CommitCount still counts one commit per object.
func (s *Store) CommitObject(ctx context.Context, obj metadata.ObjectCommit) ([]metadata.RunResult, error) {
	return s.group.CommitObject(ctx, obj)
}

// commitObjects commits objs, already validated, in one transaction: each
// object's runs get their offsets after those of the objects before it.
// The file-wide write lock makes the per-partition lock order moot here,
// but partitions are still visited in sorted order to match the interface.
// All its statements are prepared once per Store (stmts.go). It is the
// Store's groupcommit.CommitFunc.
func (s *Store) commitObjects(ctx context.Context, objs []metadata.ObjectCommit) ([][]metadata.RunResult, error) {
	type state struct {
		exists      bool
		next, maxTS int64
	}
	parts := make(map[sqlutil.RunKey]*state)
	var keys []sqlutil.RunKey
	for _, obj := range objs {
		for _, r := range obj.Runs {
			k := sqlutil.RunKey{Topic: r.TopicID, Partition: r.Partition}
			if _, ok := parts[k]; !ok {
				parts[k] = &state{}
				keys = append(keys, k)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })

	results := make([][]metadata.RunResult, len(objs))
	err := s.writeStmtTx(ctx, func(t *wtx) error {
		// Keys are sorted, so each topic's keys are adjacent: read each
		// topic's partitions from the first to the last committed one in
		// one statement.
		for i := 0; i < len(keys); {
			j := i + 1
			for j < len(keys) && keys[j].Topic == keys[i].Topic {
				j++
			}
			if err := readPartitions(t, keys[i].Topic, keys[i].Partition, keys[j-1].Partition, func(part int32, next, maxTS int64) {
				if st := parts[sqlutil.RunKey{Topic: keys[i].Topic, Partition: part}]; st != nil {
					*st = state{exists: true, next: next, maxTS: maxTS}
				}
			}); err != nil {
				return err
			}
			i = j
		}
		now := s.now().UnixMilli()
		for o, obj := range objs {
			if err := t.exec(stInsertObject, obj.Key, obj.Size, obj.AgentID, now); err != nil {
				return err
			}
			results[o] = make([]metadata.RunResult, len(obj.Runs))
			for i, r := range obj.Runs {
				st := parts[sqlutil.RunKey{Topic: r.TopicID, Partition: r.Partition}]
				if !st.exists {
					results[o][i] = metadata.RunResult{Err: metadata.ErrUnknownTopic}
					continue
				}
				states, err := loadProducerStates(t, r)
				if err != nil {
					return err
				}
				txns, err := loadTxns(t, r)
				if err != nil {
					return err
				}
				base := st.next
				batches, segs, next, aborted := metadata.PlanTxnRun(st.next, r, states, txns)
				st.next = next
				results[o][i] = metadata.RunResult{BaseOffset: base, Batches: batches}
				for _, sg := range segs {
					st.maxTS = max(st.maxTS, sg.MaxTimestamp)
					if err := t.exec(stInsertIndex, r.TopicID[:], r.Partition, sg.BaseOffset, sg.EndOffset, obj.Key,
						sg.ByteOffset, sg.ByteLength, sg.Batches, sg.MinTimestamp, sg.MaxTimestamp); err != nil {
						return err
					}
				}
				if err := saveProducerStates(t, r, states, now); err != nil {
					return err
				}
				if err := saveTxns(t, r, txns, aborted); err != nil {
					return err
				}
			}
			if err := t.exec(stCountCommit); err != nil {
				return err
			}
		}
		for _, k := range keys {
			st := parts[k]
			if !st.exists {
				continue
			}
			if err := t.exec(stUpdatePartition, st.next, st.maxTS, k.Topic[:], k.Partition); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// readPartitions calls fn with the state of each existing partition of
// topic numbered from first to last.
func readPartitions(t *wtx, topic metadata.TopicID, first, last int32, fn func(part int32, next, maxTS int64)) error {
	rows, err := t.stmt(stPartitionRange).QueryContext(t.ctx, topic[:], first, last)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			part        int32
			next, maxTS int64
		)
		if err := rows.Scan(&part, &next, &maxTS); err != nil {
			return err
		}
		fn(part, next, maxTS)
	}
	return rows.Err()
}

// Lookup implements metadata.Store. A limit <= 0 means no entry-count limit.
func (s *Store) Lookup(ctx context.Context, topic metadata.TopicID, partition int32, offset int64, maxBytes int64, limit int) ([]metadata.IndexEntry, error) {
	var out []metadata.IndexEntry
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		p := metadata.PartitionState{Partition: partition}
		err := tx.StmtContext(ctx, s.rstmts[rsPartitionState]).QueryRowContext(ctx, topic[:], partition).
			Scan(&p.LogStartOffset, &p.NextOffset, &p.MaxTimestamp)
		if errors.Is(err, sql.ErrNoRows) {
			return metadata.ErrUnknownTopic
		}
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
		rows, err := tx.StmtContext(ctx, s.rstmts[rsLookup]).QueryContext(ctx, topic[:], partition, offset, sqlLimit)
		if err != nil {
			return err
		}
		defer rows.Close()
		var total int64
		for rows.Next() {
			e, err := sqlstore.ScanEntry(rows)
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
