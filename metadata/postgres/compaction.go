package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

// compactorAgentID is the agent_id recorded for objects the compactor writes.
const compactorAgentID = "compactor"

const objectColumns = `key, size, level, created_at, state, delete_after`

func scanObject(row pgx.Row) (metadata.ObjectInfo, error) {
	var (
		o     metadata.ObjectInfo
		after *time.Time
	)
	if err := row.Scan(&o.Key, &o.Size, &o.Level, &o.CreatedAt, &o.State, &after); err != nil {
		return o, err
	}
	if after != nil {
		o.DeleteAfter = *after
	}
	return o, nil
}

func (s *Store) queryObjects(ctx context.Context, what, query string, args ...any) ([]metadata.ObjectInfo, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []metadata.ObjectInfo
	for rows.Next() {
		o, err := scanObject(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// Objects implements metadata.CompactionStore.
func (s *Store) Objects(ctx context.Context, state string) ([]metadata.ObjectInfo, error) {
	return s.queryObjects(ctx, "objects "+state,
		`SELECT `+objectColumns+` FROM objects WHERE state = $1 ORDER BY created_at, key`, state)
}

// DeletableObjects implements metadata.CompactionStore.
func (s *Store) DeletableObjects(ctx context.Context, limit int) ([]metadata.ObjectInfo, error) {
	return s.queryObjects(ctx, "deletable objects",
		`SELECT `+objectColumns+` FROM objects WHERE state = $1 AND delete_after <= now()
		 ORDER BY delete_after, key LIMIT $2`, metadata.ObjectReplaced, limit)
}

func collectEntries(rows pgx.Rows) ([]metadata.IndexEntry, error) {
	defer rows.Close()
	var out []metadata.IndexEntry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ObjectRows implements metadata.CompactionStore.
func (s *Store) ObjectRows(ctx context.Context, keys []string) ([]metadata.IndexEntry, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+indexColumns+` FROM object_index i
		WHERE i.object_key = ANY($1) ORDER BY i.topic_id, i.part, i.base_offset`, keys)
	if err != nil {
		return nil, fmt.Errorf("object rows: %w", err)
	}
	out, err := collectEntries(rows)
	if err != nil {
		return nil, fmt.Errorf("object rows: %w", err)
	}
	return out, nil
}

// PartitionRows implements metadata.CompactionStore.
func (s *Store) PartitionRows(ctx context.Context, topic metadata.TopicID, partition int32, end int64) ([]metadata.IndexEntry, error) {
	b := &pgx.Batch{}
	b.Queue(partitionQuery, topic[:], partition)
	b.Queue(`SELECT `+indexColumns+` FROM object_index i
		WHERE i.topic_id = $1 AND i.part = $2 AND i.end_offset <= $3 ORDER BY i.base_offset`, topic[:], partition, end)
	out, err := func() ([]metadata.IndexEntry, error) {
		br := s.pool.SendBatch(ctx, b)
		defer br.Close()
		if _, err := scanPartition(br.QueryRow(), partition); err != nil {
			return nil, err
		}
		rows, err := br.Query()
		if err != nil {
			return nil, err
		}
		return collectEntries(rows)
	}()
	if err != nil {
		return nil, fmt.Errorf("partition rows %x/%d: %w", topic, partition, err)
	}
	return out, nil
}

// ReplaceRows implements metadata.CompactionStore. It first locks the
// partition rows of every source in (topic, partition) order — the lock
// order of floe_commit_object — so that a concurrent AdvanceLogStart or
// DeleteTopic of those partitions runs wholly before or wholly after it and
// never deletes the sources while leaving the replacement rows behind.
func (s *Store) ReplaceRows(ctx context.Context, r metadata.Replacement) error {
	if err := r.Validate(); err != nil {
		return err
	}
	var keys []sqlutil.RunKey
	seen := map[sqlutil.RunKey]bool{}
	for _, src := range r.Sources {
		k := sqlutil.RunKey{Topic: src.TopicID, Partition: src.Partition}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		logStart := map[sqlutil.RunKey]int64{}
		for _, k := range keys {
			var ls int64
			err := tx.QueryRow(ctx, `SELECT log_start_offset FROM partitions WHERE topic_id = $1 AND part = $2 FOR UPDATE`,
				k.Topic[:], k.Partition).Scan(&ls)
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: partition %x/%d is gone", metadata.ErrConflict, k.Topic, k.Partition)
			}
			if err != nil {
				return err
			}
			logStart[k] = ls
		}
		for _, src := range r.Sources {
			got, err := scanEntry(tx.QueryRow(ctx, `SELECT `+indexColumns+` FROM object_index i
				WHERE i.topic_id = $1 AND i.part = $2 AND i.base_offset = $3`, src.TopicID[:], src.Partition, src.BaseOffset))
			if errors.Is(err, pgx.ErrNoRows) || (err == nil && got != src) {
				return fmt.Errorf("%w: row %x/%d@%d", metadata.ErrConflict, src.TopicID, src.Partition, src.BaseOffset)
			}
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM object_index WHERE topic_id = $1 AND part = $2 AND base_offset = $3`,
				src.TopicID[:], src.Partition, src.BaseOffset); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO objects (key, size, agent_id, level) VALUES ($1, $2, $3, $4)`,
			r.Key, r.Size, compactorAgentID, r.Level); err != nil {
			return err
		}
		for _, e := range r.Rows {
			if e.EndOffset <= logStart[sqlutil.RunKey{Topic: e.TopicID, Partition: e.Partition}] {
				continue
			}
			if _, err := tx.Exec(ctx, `INSERT INTO object_index
				(topic_id, part, base_offset, end_offset, object_key, byte_offset, byte_length, batches, min_ts, max_ts)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				e.TopicID[:], e.Partition, e.BaseOffset, e.EndOffset, r.Key,
				e.ByteOffset, e.ByteLength, e.Batches, e.MinTimestamp, e.MaxTimestamp); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `UPDATE objects o SET state = $1, delete_after = now() + $2 * interval '1 millisecond'
			WHERE o.key = ANY($3) AND o.state = $4
			  AND NOT EXISTS (SELECT 1 FROM object_index i WHERE i.object_key = o.key)`,
			metadata.ObjectReplaced, r.Grace.Milliseconds(), r.SourceKeys(), metadata.ObjectLive)
		return err
	})
	if err != nil {
		return fmt.Errorf("replace rows with %s: %w", r.Key, err)
	}
	return nil
}

// AdvanceLogStart implements metadata.CompactionStore. The partition row is
// locked first, which orders it against commits and ReplaceRows on the same
// partition.
func (s *Store) AdvanceLogStart(ctx context.Context, topic metadata.TopicID, partition int32, offset int64) (metadata.PartitionState, error) {
	var p metadata.PartitionState
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		p, err = scanPartition(tx.QueryRow(ctx, partitionQuery+` FOR UPDATE`, topic[:], partition), partition)
		if err != nil {
			return err
		}
		start := max(p.LogStartOffset, min(offset, p.NextOffset))
		if start == p.LogStartOffset {
			return nil
		}
		p.LogStartOffset = start
		if _, err := tx.Exec(ctx, `UPDATE partitions SET log_start_offset = $1 WHERE topic_id = $2 AND part = $3`,
			start, topic[:], partition); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM object_index WHERE topic_id = $1 AND part = $2 AND end_offset <= $3`,
			topic[:], partition, start)
		return err
	})
	if err != nil {
		return p, fmt.Errorf("advance log start %x/%d to %d: %w", topic, partition, offset, err)
	}
	return p, nil
}

// MarkUnreferenced implements metadata.CompactionStore.
func (s *Store) MarkUnreferenced(ctx context.Context, minAge, grace time.Duration) (int, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE objects o SET state = $1, delete_after = now() + $2 * interval '1 millisecond'
		WHERE o.state = $3 AND o.created_at <= now() - $4 * interval '1 millisecond'
		  AND NOT EXISTS (SELECT 1 FROM object_index i WHERE i.object_key = o.key)`,
		metadata.ObjectReplaced, grace.Milliseconds(), metadata.ObjectLive, minAge.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("mark unreferenced: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// ForgetObjects implements metadata.CompactionStore.
func (s *Store) ForgetObjects(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM objects WHERE state = $1 AND key = ANY($2)`, metadata.ObjectReplaced, keys); err != nil {
		return fmt.Errorf("forget objects: %w", err)
	}
	return nil
}

// KnownObjects implements metadata.CompactionStore.
func (s *Store) KnownObjects(ctx context.Context, keys []string) (map[string]bool, error) {
	known := make(map[string]bool)
	if len(keys) == 0 {
		return known, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT key FROM objects WHERE key = ANY($1)`, keys)
	if err != nil {
		return nil, fmt.Errorf("known objects: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("known objects: %w", err)
		}
		known[k] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("known objects: %w", err)
	}
	return known, nil
}

// AcquireLease implements metadata.CompactionStore; expiry is judged by the
// database clock, so compactors with skewed clocks agree.
func (s *Store) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO compactor_leases (name, owner, expires_at)
		VALUES ($1, $2, now() + $3 * interval '1 millisecond')
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
		WHERE compactor_leases.owner = excluded.owner OR compactor_leases.expires_at <= now()`,
		name, owner, ttl.Milliseconds())
	if err != nil {
		return false, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	return tag.RowsAffected() > 0, nil
}

// ReleaseLease implements metadata.CompactionStore.
func (s *Store) ReleaseLease(ctx context.Context, name, owner string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM compactor_leases WHERE name = $1 AND owner = $2`, name, owner); err != nil {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	return nil
}

// Leases implements metadata.CompactionStore.
func (s *Store) Leases(ctx context.Context) ([]metadata.Lease, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, owner, expires_at FROM compactor_leases WHERE expires_at > now() ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("leases: %w", err)
	}
	defer rows.Close()
	var out []metadata.Lease
	for rows.Next() {
		var l metadata.Lease
		if err := rows.Scan(&l.Name, &l.Owner, &l.Expires); err != nil {
			return nil, fmt.Errorf("leases: %w", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("leases: %w", err)
	}
	return out, nil
}

// CountIndexRows implements metadata.CompactionStore.
func (s *Store) CountIndexRows(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM object_index`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count index rows: %w", err)
	}
	return n, nil
}
