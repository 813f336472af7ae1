package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"

	"floe/metadata"
	"floe/metadata/internal/sqlstore"
)

// commitShards is the number of rows of the 'commits' counter (see the
// counters table in 0001_init.sql).
const commitShards = 16

// CommitObject implements metadata.Store. An object without producer ids
// is one call of floe_commit_objects (migrations/0013_group_commit.sql):
// one statement in autocommit mode, so one transaction and, once pgx has
// the statement prepared on the connection, one round trip. An idempotent
// or transactional object needs the producers' states and goes through
// commitChecked instead, a transaction of two round trips. Calls that
// overlap are committed together, in one transaction (group commit,
// metadata/internal/groupcommit): CommitCount still counts one commit per
// object.
func (s *Store) CommitObject(ctx context.Context, obj metadata.ObjectCommit) ([]metadata.RunResult, error) {
	return s.group.CommitObject(ctx, obj)
}

// commitObjects commits objs, already validated, in one transaction: each
// object's runs get their offsets after those of the objects before it.
// It returns each object's results, or an error when nothing was
// committed. It is the Store's groupcommit.CommitFunc: CommitObject calls
// that overlap on one Store are committed together, one group at a time.
func (s *Store) commitObjects(ctx context.Context, objs []metadata.ObjectCommit) ([][]metadata.RunResult, error) {
	for _, obj := range objs {
		if obj.Idempotent() {
			return s.commitChecked(ctx, objs)
		}
	}
	return s.commitPlain(ctx, objs)
}

// commitPlain commits objects without producer ids in one call of
// floe_commit_objects.
func (s *Store) commitPlain(ctx context.Context, objs []metadata.ObjectCommit) ([][]metadata.RunResult, error) {
	n := 0
	for _, obj := range objs {
		n += len(obj.Runs)
	}
	var (
		keys     = make([]string, len(objs))
		agents   = make([]string, len(objs))
		sizes    = make([]int64, len(objs))
		objects  = make([]int32, 0, n)
		topics   = make([][]byte, 0, n)
		parts    = make([]int32, 0, n)
		offsets  = make([]int64, 0, n)
		lengths  = make([]int64, 0, n)
		batches  = make([]int32, 0, n)
		records  = make([]int64, 0, n)
		minTS    = make([]int64, 0, n)
		maxTS    = make([]int64, 0, n)
		flat     = make([]metadata.RunResult, n) // the results of all runs, in call order
		returned = 0
	)
	for i, obj := range objs {
		keys[i], sizes[i], agents[i] = obj.Key, obj.Size, obj.AgentID
		for _, r := range obj.Runs {
			objects = append(objects, int32(i+1))
			topics, parts = append(topics, r.TopicID[:]), append(parts, r.Partition)
			offsets, lengths, batches = append(offsets, r.ByteOffset), append(lengths, r.ByteLength), append(batches, r.Batches)
			records, minTS, maxTS = append(records, r.Records), append(minTS, r.MinTimestamp), append(maxTS, r.MaxTimestamp)
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT o_run, o_base FROM floe_commit_objects($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		keys, sizes, agents, rand.IntN(commitShards), objects, topics, parts, offsets, lengths, batches, records, minTS, maxTS)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			run  int64
			base *int64
		)
		if err := rows.Scan(&run, &base); err != nil {
			return nil, err
		}
		if run < 1 || run > int64(n) {
			return nil, fmt.Errorf("function returned run %d of %d", run, n)
		}
		if base == nil {
			flat[run-1] = metadata.RunResult{Err: metadata.ErrUnknownTopic}
		} else {
			flat[run-1] = metadata.RunResult{BaseOffset: *base}
		}
		returned++
	}
	// rows.Err reports a failure of the statement, and with it of the
	// transaction; only then does the caller learn whether it committed.
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if returned != n {
		return nil, fmt.Errorf("function returned %d results for %d runs", returned, n)
	}
	out := make([][]metadata.RunResult, len(objs))
	for i, obj := range objs {
		out[i], flat = flat[:len(obj.Runs):len(obj.Runs)], flat[len(obj.Runs):]
		// No batch was checked: each listed batch simply follows the previous.
		for j, r := range obj.Runs {
			if len(r.BatchList) > 0 && out[i][j].Err == nil {
				out[i][j].Batches, _, _ = metadata.PlanRun(out[i][j].BaseOffset, r, nil)
			}
		}
	}
	return out, nil
}

// Lookup implements metadata.Store. A limit <= 0 means no entry-count limit.
//
// The partition state and the entries are read by two statements sent as
// one batch (one round trip). They see different snapshots, which is safe:
// index rows are committed together with the next_offset that covers them,
// and the entry query repeats the range check against the partition row.
func (s *Store) Lookup(ctx context.Context, topic metadata.TopicID, partition int32, offset int64, maxBytes int64, limit int) ([]metadata.IndexEntry, error) {
	var sqlLimit *int64
	if limit > 0 {
		l := int64(limit)
		sqlLimit = &l
	}
	b := &pgx.Batch{}
	b.Queue(sqlstore.PartitionQuery, topic[:], partition)
	// The inner max() finds the entry containing offset through the primary
	// key; the outer scan then walks forward from it.
	b.Queue(`SELECT `+sqlstore.IndexColumns+` FROM object_index i
		JOIN partitions p ON p.topic_id = i.topic_id AND p.part = i.part
		WHERE i.topic_id = $1 AND i.part = $2 AND i.end_offset > $3
		  AND $3 >= p.log_start_offset AND $3 < p.next_offset
		  AND i.base_offset >= coalesce((SELECT max(base_offset) FROM object_index
		                                 WHERE topic_id = $1 AND part = $2 AND base_offset <= $3), $3)
		ORDER BY i.base_offset LIMIT $4`, topic[:], partition, offset, sqlLimit)
	out, err := func() ([]metadata.IndexEntry, error) {
		br := s.pool.SendBatch(ctx, b)
		defer br.Close()
		p, err := sqlstore.ScanPartition(row{br.QueryRow()}, partition)
		if err != nil {
			return nil, err
		}
		if offset < p.LogStartOffset || offset > p.NextOffset {
			return nil, fmt.Errorf("%w: offset %d, log start %d, high watermark %d", metadata.ErrOffsetOutOfRange, offset, p.LogStartOffset, p.NextOffset)
		}
		rows, err := br.Query()
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		if offset == p.NextOffset {
			return nil, nil
		}
		var (
			out   []metadata.IndexEntry
			total int64
		)
		for rows.Next() {
			e, err := sqlstore.ScanEntry(rows)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
			total += e.ByteLength
			if total >= maxBytes {
				break
			}
		}
		return out, rows.Err()
	}()
	if err != nil {
		return nil, fmt.Errorf("lookup %x/%d@%d: %w", topic, partition, offset, err)
	}
	return out, nil
}
