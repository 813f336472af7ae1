package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

// CommitOffsets implements metadata.GroupStore, metadata.OffsetChunk
// offsets per transaction (see there for why that is safe).
func (s *Store) CommitOffsets(ctx context.Context, group string, offsets []metadata.GroupOffset) error {
	now := s.now().UnixMilli()
	for chunk := range slices.Chunk(offsets, metadata.OffsetChunk) {
		err := s.writeStmtTx(ctx, func(t *wtx) error {
			for _, o := range chunk {
				if err := t.exec(stUpsertGroupOffset, group, o.Topic, o.Partition, o.Offset, o.LeaderEpoch, o.Metadata, now); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("commit offsets of %s: %w", group, err)
		}
	}
	return nil
}

// FetchOffsets implements metadata.GroupStore.
func (s *Store) FetchOffsets(ctx context.Context, group string) ([]metadata.GroupOffset, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT topic, part, committed, leader_epoch, metadata, commit_time
		FROM group_offsets WHERE group_id = ? ORDER BY topic, part`, group)
	if err != nil {
		return nil, fmt.Errorf("fetch offsets of %s: %w", group, err)
	}
	defer rows.Close()
	var out []metadata.GroupOffset
	for rows.Next() {
		var (
			o  metadata.GroupOffset
			ct int64
		)
		if err := rows.Scan(&o.Topic, &o.Partition, &o.Offset, &o.LeaderEpoch, &o.Metadata, &ct); err != nil {
			return nil, fmt.Errorf("fetch offsets of %s: %w", group, err)
		}
		o.CommitTime = time.UnixMilli(ct)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fetch offsets of %s: %w", group, err)
	}
	return out, nil
}

// DeleteOffsets implements metadata.GroupStore.
func (s *Store) DeleteOffsets(ctx context.Context, group string, parts []metadata.TopicPartition) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		for _, p := range parts {
			if _, err := tx.ExecContext(ctx, `DELETE FROM group_offsets WHERE group_id = ? AND topic = ? AND part = ?`,
				group, p.Topic, p.Partition); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete offsets of %s: %w", group, err)
	}
	return nil
}

// SaveGroup implements metadata.GroupStore.
func (s *Store) SaveGroup(ctx context.Context, g metadata.GroupRecord) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO groups (group_id, protocol_type, state_name, empty, state, updated_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (group_id) DO UPDATE SET protocol_type = excluded.protocol_type,
		state_name = excluded.state_name, empty = excluded.empty, state = excluded.state, updated_at = excluded.updated_at`,
		g.Group, g.ProtocolType, g.StateName, g.Empty, g.State, s.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("save group %s: %w", g.Group, err)
	}
	return nil
}

func scanGroup(row interface{ Scan(...any) error }) (metadata.GroupRecord, error) {
	var (
		g  metadata.GroupRecord
		ts int64
	)
	if err := row.Scan(&g.Group, &g.ProtocolType, &g.StateName, &g.Empty, &g.State, &ts); err != nil {
		return g, err
	}
	g.UpdatedAt = time.UnixMilli(ts)
	return g, nil
}

// LoadGroup implements metadata.GroupStore.
func (s *Store) LoadGroup(ctx context.Context, group string) (metadata.GroupRecord, error) {
	g, err := scanGroup(s.r.QueryRowContext(ctx, `SELECT group_id, protocol_type, state_name, empty, state, updated_at
		FROM groups WHERE group_id = ?`, group))
	if errors.Is(err, sql.ErrNoRows) {
		err = metadata.ErrNotFound
	}
	if err != nil {
		return metadata.GroupRecord{}, fmt.Errorf("load group %s: %w", group, err)
	}
	return g, nil
}

// Groups implements metadata.GroupStore.
func (s *Store) Groups(ctx context.Context) ([]metadata.GroupRecord, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT group_id, protocol_type, state_name, empty, state, updated_at FROM groups
		UNION ALL
		SELECT DISTINCT o.group_id, '', 'Empty', 1, NULL, 0 FROM group_offsets o
		 WHERE NOT EXISTS (SELECT 1 FROM groups g WHERE g.group_id = o.group_id)
		ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	defer rows.Close()
	var out []metadata.GroupRecord
	for rows.Next() {
		g, err := scanGroup(rows)
		if err != nil {
			return nil, fmt.Errorf("groups: %w", err)
		}
		if g.UpdatedAt.UnixMilli() == 0 {
			g.UpdatedAt = time.Time{}
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	return out, nil
}

// DeleteGroup implements metadata.GroupStore.
func (s *Store) DeleteGroup(ctx context.Context, group string) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		r1, err := tx.ExecContext(ctx, `DELETE FROM groups WHERE group_id = ?`, group)
		if err != nil {
			return err
		}
		r2, err := tx.ExecContext(ctx, `DELETE FROM group_offsets WHERE group_id = ?`, group)
		if err != nil {
			return err
		}
		n1, _ := r1.RowsAffected()
		n2, _ := r2.RowsAffected()
		if n1+n2 == 0 {
			return metadata.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete group %s: %w", group, err)
	}
	return nil
}

// ExpireOffsets implements metadata.GroupStore.
func (s *Store) ExpireOffsets(ctx context.Context, retention time.Duration) ([]string, error) {
	cutoff := s.now().Add(-retention).UnixMilli()
	var names []string
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `DELETE FROM group_offsets AS o WHERE commit_time < ?
			AND NOT EXISTS (SELECT 1 FROM groups g WHERE g.group_id = o.group_id AND (g.empty = 0 OR g.updated_at >= ?))
			RETURNING group_id`, cutoff, cutoff)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for rows.Next() {
			var g string
			if err := rows.Scan(&g); err != nil {
				rows.Close()
				return err
			}
			if !seen[g] {
				seen[g] = true
				names = append(names, g)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.QueryContext(ctx, `DELETE FROM groups AS g WHERE empty = 1 AND updated_at < ?
			AND NOT EXISTS (SELECT 1 FROM group_offsets o WHERE o.group_id = g.group_id)
			RETURNING group_id`, cutoff)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var g string
			if err := rows.Scan(&g); err != nil {
				return err
			}
			if !seen[g] {
				seen[g] = true
				names = append(names, g)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("expire offsets: %w", err)
	}
	return names, nil
}

// AcquireCoordinatorLease implements metadata.GroupStore.
func (s *Store) AcquireCoordinatorLease(ctx context.Context, name, owner string, ttl time.Duration) (metadata.CoordinatorLease, error) {
	now := s.now()
	var l metadata.CoordinatorLease
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var (
			cur   string
			exp   int64
			epoch int64
		)
		err := tx.QueryRowContext(ctx, `SELECT owner, expires_at, epoch FROM coordinator_leases WHERE name = ?`, name).
			Scan(&cur, &exp, &epoch)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			epoch = 1
		case err != nil:
			return err
		case cur != owner && exp > now.UnixMilli():
			l = metadata.CoordinatorLease{Name: name, Owner: cur, Expires: time.UnixMilli(exp), Epoch: epoch}
			return metadata.ErrLeaseHeld
		case cur != owner || exp <= now.UnixMilli():
			epoch++ // a new tenure, even for the same owner after expiry
		}
		l = metadata.CoordinatorLease{Name: name, Owner: owner, Expires: time.UnixMilli(now.Add(ttl).UnixMilli()), Epoch: epoch}
		_, err = tx.ExecContext(ctx, `INSERT INTO coordinator_leases (name, owner, expires_at, epoch) VALUES (?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at, epoch = excluded.epoch`,
			name, owner, l.Expires.UnixMilli(), epoch)
		return err
	})
	if errors.Is(err, metadata.ErrLeaseHeld) {
		return l, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	if err != nil {
		return metadata.CoordinatorLease{}, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	return l, nil
}

// RenewCoordinatorLeases implements metadata.GroupStore.
func (s *Store) RenewCoordinatorLeases(ctx context.Context, owner string, ttl time.Duration) ([]metadata.CoordinatorLease, error) {
	now := s.now()
	exp := now.Add(ttl).UnixMilli()
	var out []metadata.CoordinatorLease
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `UPDATE coordinator_leases SET expires_at = ?
			WHERE owner = ? AND expires_at > ? RETURNING name, epoch`, exp, owner, now.UnixMilli())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			l := metadata.CoordinatorLease{Owner: owner, Expires: time.UnixMilli(exp)}
			if err := rows.Scan(&l.Name, &l.Epoch); err != nil {
				return err
			}
			out = append(out, l)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("renew leases of %s: %w", owner, err)
	}
	return out, nil
}

// ReleaseCoordinatorLease implements metadata.GroupStore. The row is kept
// (expired) so that the epoch keeps growing across owners.
func (s *Store) ReleaseCoordinatorLease(ctx context.Context, name, owner string) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE coordinator_leases SET expires_at = 0 WHERE name = ? AND owner = ?`,
		name, owner); err != nil {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	return nil
}

// GroupConfigs implements metadata.GroupStore.
func (s *Store) GroupConfigs(ctx context.Context, group string) (map[string]string, error) {
	var raw string
	err := s.r.QueryRowContext(ctx, `SELECT configs FROM group_configs WHERE group_id = ?`, group).Scan(&raw)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("group configs of %s: %w", group, err)
	}
	c, err := sqlutil.DecodeConfigs(raw)
	if err != nil {
		return nil, fmt.Errorf("group configs of %s: %w", group, err)
	}
	return c, nil
}

// UpdateGroupConfigs implements metadata.GroupStore. The write transaction
// (BEGIN IMMEDIATE) holds the database's write lock from the read on, so
// concurrent updates apply one after the other, a group's first included.
func (s *Store) UpdateGroupConfigs(ctx context.Context, group string, update func(map[string]string) (map[string]string, error)) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var raw string
		err := tx.QueryRowContext(ctx, `SELECT configs FROM group_configs WHERE group_id = ?`, group).Scan(&raw)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		cur, err := sqlutil.DecodeConfigs(raw)
		if err != nil {
			return err
		}
		next, err := update(cur)
		if err != nil {
			return err
		}
		if len(next) == 0 {
			_, err = tx.ExecContext(ctx, `DELETE FROM group_configs WHERE group_id = ?`, group)
			return err
		}
		cfg, err := sqlutil.EncodeConfigs(next)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO group_configs (group_id, configs) VALUES (?, ?)
			ON CONFLICT (group_id) DO UPDATE SET configs = excluded.configs`, group, cfg)
		return err
	})
	if err != nil {
		return fmt.Errorf("update configs of group %s: %w", group, err)
	}
	return nil
}
