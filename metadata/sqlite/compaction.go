package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"floe/metadata"
)

// compactorAgentID is the agent_id recorded for objects the compactor writes.
const compactorAgentID = "compactor"

const objectColumns = `key, size, level, created_at, state, delete_after`

func scanObject(row interface{ Scan(...any) error }) (metadata.ObjectInfo, error) {
	var (
		o              metadata.ObjectInfo
		created, after int64
	)
	if err := row.Scan(&o.Key, &o.Size, &o.Level, &created, &o.State, &after); err != nil {
		return o, err
	}
	o.CreatedAt = time.UnixMilli(created)
	if after != 0 {
		o.DeleteAfter = time.UnixMilli(after)
	}
	return o, nil
}

func (s *Store) queryObjects(ctx context.Context, what, query string, args ...any) ([]metadata.ObjectInfo, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
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
		`SELECT `+objectColumns+` FROM objects WHERE state = ? ORDER BY created_at, key`, state)
}

// DeletableObjects implements metadata.CompactionStore.
func (s *Store) DeletableObjects(ctx context.Context, limit int) ([]metadata.ObjectInfo, error) {
	return s.queryObjects(ctx, "deletable objects",
		`SELECT `+objectColumns+` FROM objects WHERE state = ? AND delete_after <= ?
		 ORDER BY delete_after, key LIMIT ?`, metadata.ObjectReplaced, s.now().UnixMilli(), limit)
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

func stringArgs(keys []string) []any {
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	return args
}

func collectEntries(rows *sql.Rows) ([]metadata.IndexEntry, error) {
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
	rows, err := s.r.QueryContext(ctx, `SELECT `+indexColumns+` FROM object_index
		WHERE object_key IN (`+placeholders(len(keys))+`) ORDER BY topic_id, part, base_offset`, stringArgs(keys)...)
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
	var out []metadata.IndexEntry
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		if _, err := partitionState(ctx, tx, topic, partition); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+indexColumns+` FROM object_index
			WHERE topic_id = ? AND part = ? AND end_offset <= ? ORDER BY base_offset`, topic[:], partition, end)
		if err != nil {
			return err
		}
		out, err = collectEntries(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("partition rows %x/%d: %w", topic, partition, err)
	}
	return out, nil
}

// ReplaceRows implements metadata.CompactionStore in one IMMEDIATE
// transaction: the file-wide write lock makes the compare-and-swap of the
// source rows atomic against every other writer.
func (s *Store) ReplaceRows(ctx context.Context, r metadata.Replacement) error {
	if err := r.Validate(); err != nil {
		return err
	}
	now := s.now()
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		sel, err := tx.PrepareContext(ctx, `SELECT `+indexColumns+` FROM object_index WHERE topic_id = ? AND part = ? AND base_offset = ?`)
		if err != nil {
			return err
		}
		defer sel.Close()
		del, err := tx.PrepareContext(ctx, `DELETE FROM object_index WHERE topic_id = ? AND part = ? AND base_offset = ?`)
		if err != nil {
			return err
		}
		defer del.Close()
		for _, src := range r.Sources {
			got, err := scanEntry(sel.QueryRowContext(ctx, src.TopicID[:], src.Partition, src.BaseOffset))
			if errors.Is(err, sql.ErrNoRows) || (err == nil && got != src) {
				return fmt.Errorf("%w: row %x/%d@%d", metadata.ErrConflict, src.TopicID, src.Partition, src.BaseOffset)
			}
			if err != nil {
				return err
			}
			if _, err := del.ExecContext(ctx, src.TopicID[:], src.Partition, src.BaseOffset); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO objects (key, size, agent_id, created_at, level) VALUES (?, ?, ?, ?, ?)`,
			r.Key, r.Size, compactorAgentID, now.UnixMilli(), r.Level); err != nil {
			return err
		}
		ins, err := tx.PrepareContext(ctx, `INSERT INTO object_index
			(topic_id, part, base_offset, end_offset, object_key, byte_offset, byte_length, batches, min_ts, max_ts)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer ins.Close()
		for _, e := range r.Rows {
			p, err := partitionState(ctx, tx, e.TopicID, e.Partition)
			if err != nil {
				return err
			}
			if e.EndOffset <= p.LogStartOffset {
				continue
			}
			if _, err := ins.ExecContext(ctx, e.TopicID[:], e.Partition, e.BaseOffset, e.EndOffset, r.Key,
				e.ByteOffset, e.ByteLength, e.Batches, e.MinTimestamp, e.MaxTimestamp); err != nil {
				return err
			}
		}
		mark, err := tx.PrepareContext(ctx, `UPDATE objects SET state = ?, delete_after = ?
			WHERE key = ? AND state = ? AND NOT EXISTS (SELECT 1 FROM object_index WHERE object_key = ?)`)
		if err != nil {
			return err
		}
		defer mark.Close()
		for _, k := range r.SourceKeys() {
			if _, err := mark.ExecContext(ctx, metadata.ObjectReplaced, now.Add(r.Grace).UnixMilli(), k, metadata.ObjectLive, k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("replace rows with %s: %w", r.Key, err)
	}
	return nil
}

// AdvanceLogStart implements metadata.CompactionStore.
func (s *Store) AdvanceLogStart(ctx context.Context, topic metadata.TopicID, partition int32, offset int64) (metadata.PartitionState, error) {
	var p metadata.PartitionState
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var err error
		p, err = partitionState(ctx, tx, topic, partition)
		if err != nil {
			return err
		}
		start := max(p.LogStartOffset, min(offset, p.NextOffset))
		if start == p.LogStartOffset {
			return nil
		}
		p.LogStartOffset = start
		if _, err := tx.ExecContext(ctx, `UPDATE partitions SET log_start_offset = ? WHERE topic_id = ? AND part = ?`,
			start, topic[:], partition); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM object_index WHERE topic_id = ? AND part = ? AND end_offset <= ?`,
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
	var n int64
	now := s.now()
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE objects SET state = ?, delete_after = ?
			WHERE state = ? AND created_at <= ? AND NOT EXISTS (SELECT 1 FROM object_index WHERE object_key = objects.key)`,
			metadata.ObjectReplaced, now.Add(grace).UnixMilli(), metadata.ObjectLive, now.Add(-minAge).UnixMilli())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mark unreferenced: %w", err)
	}
	return int(n), nil
}

// ForgetObjects implements metadata.CompactionStore.
func (s *Store) ForgetObjects(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM objects WHERE state = ? AND key IN (`+placeholders(len(keys))+`)`,
			append([]any{metadata.ObjectReplaced}, stringArgs(keys)...)...)
		return err
	})
	if err != nil {
		return fmt.Errorf("forget objects: %w", err)
	}
	return nil
}

// KnownObjects implements metadata.CompactionStore.
func (s *Store) KnownObjects(ctx context.Context, keys []string) (map[string]bool, error) {
	known := make(map[string]bool)
	// Chunks stay far below SQLite's limit on bound parameters.
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), 500)]
		keys = keys[len(chunk):]
		rows, err := s.r.QueryContext(ctx, `SELECT key FROM objects WHERE key IN (`+placeholders(len(chunk))+`)`, stringArgs(chunk)...)
		if err != nil {
			return nil, fmt.Errorf("known objects: %w", err)
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return nil, fmt.Errorf("known objects: %w", err)
			}
			known[k] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("known objects: %w", err)
		}
	}
	return known, nil
}

// AcquireLease implements metadata.CompactionStore.
func (s *Store) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	var n int64
	now := s.now()
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO compactor_leases (name, owner, expires_at) VALUES (?1, ?2, ?3)
			ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
			WHERE compactor_leases.owner = excluded.owner OR compactor_leases.expires_at <= ?4`,
			name, owner, now.Add(ttl).UnixMilli(), now.UnixMilli())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	return n > 0, nil
}

// ReleaseLease implements metadata.CompactionStore.
func (s *Store) ReleaseLease(ctx context.Context, name, owner string) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM compactor_leases WHERE name = ? AND owner = ?`, name, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	return nil
}

// Leases implements metadata.CompactionStore.
func (s *Store) Leases(ctx context.Context) ([]metadata.Lease, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name, owner, expires_at FROM compactor_leases WHERE expires_at > ? ORDER BY name`,
		s.now().UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("leases: %w", err)
	}
	defer rows.Close()
	var out []metadata.Lease
	for rows.Next() {
		var (
			l  metadata.Lease
			ms int64
		)
		if err := rows.Scan(&l.Name, &l.Owner, &ms); err != nil {
			return nil, fmt.Errorf("leases: %w", err)
		}
		l.Expires = time.UnixMilli(ms)
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
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM object_index`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count index rows: %w", err)
	}
	return n, nil
}
