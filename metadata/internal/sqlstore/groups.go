package sqlstore

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
	for chunk := range slices.Chunk(offsets, metadata.OffsetChunk) {
		if err := s.b.UpsertGroupOffsets(ctx, group, chunk); err != nil {
			return fmt.Errorf("commit offsets of %s: %w", group, err)
		}
	}
	return nil
}

// DeleteOffsets implements metadata.GroupStore, metadata.OffsetChunk
// partitions per transaction.
func (s *Store) DeleteOffsets(ctx context.Context, group string, parts []metadata.TopicPartition) error {
	for chunk := range slices.Chunk(parts, metadata.OffsetChunk) {
		if err := s.b.DeleteGroupOffsets(ctx, group, chunk); err != nil {
			return fmt.Errorf("delete offsets of %s: %w", group, err)
		}
	}
	return nil
}

// FetchOffsets implements metadata.GroupStore.
func (s *Store) FetchOffsets(ctx context.Context, group string) ([]metadata.GroupOffset, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT topic, part, committed, leader_epoch, metadata, commit_time
		FROM group_offsets WHERE group_id = $1 ORDER BY topic, part`, group)
	out, err := collect(rows, err, func(r Row) (metadata.GroupOffset, error) {
		var (
			o  metadata.GroupOffset
			md []byte // bytea on PostgreSQL
		)
		err := r.Scan(&o.Topic, &o.Partition, &o.Offset, &o.LeaderEpoch, &md, Time(&o.CommitTime))
		o.Metadata = string(md)
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("fetch offsets of %s: %w", group, err)
	}
	return out, nil
}

// SaveGroup implements metadata.GroupStore.
func (s *Store) SaveGroup(ctx context.Context, g metadata.GroupRecord) error {
	_, err := s.db.Write().Exec(ctx, `INSERT INTO groups (group_id, protocol_type, state_name, empty, state, updated_at)
		VALUES ($1, $2, $3, $4, $5, `+s.d.Now()+`) ON CONFLICT (group_id) DO UPDATE SET protocol_type = excluded.protocol_type,
		state_name = excluded.state_name, empty = excluded.empty, state = excluded.state, updated_at = excluded.updated_at`,
		g.Group, g.ProtocolType, g.StateName, g.Empty, g.State)
	if err != nil {
		return fmt.Errorf("save group %s: %w", g.Group, err)
	}
	return nil
}

const groupColumns = `group_id, protocol_type, state_name, empty, state, updated_at`

func scanGroup(row Row) (metadata.GroupRecord, error) {
	var g metadata.GroupRecord
	err := row.Scan(&g.Group, &g.ProtocolType, &g.StateName, &g.Empty, &g.State, Time(&g.UpdatedAt))
	return g, err
}

// LoadGroup implements metadata.GroupStore.
func (s *Store) LoadGroup(ctx context.Context, group string) (metadata.GroupRecord, error) {
	g, err := scanGroup(s.db.Read().QueryRow(ctx, `SELECT `+groupColumns+` FROM groups WHERE group_id = $1`, group))
	if err := noRows(err, metadata.ErrNotFound); err != nil {
		return metadata.GroupRecord{}, fmt.Errorf("load group %s: %w", group, err)
	}
	return g, nil
}

// Groups implements metadata.GroupStore: the saved groups and, as empty
// groups without a record, those that only have committed offsets.
func (s *Store) Groups(ctx context.Context) ([]metadata.GroupRecord, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+groupColumns+` FROM groups
		UNION ALL
		SELECT DISTINCT o.group_id, '', 'Empty', true, CAST(NULL AS bytea), CAST(NULL AS timestamptz) FROM group_offsets o
		 WHERE NOT EXISTS (SELECT 1 FROM groups g WHERE g.group_id = o.group_id)
		ORDER BY 1`)
	out, err := collect(rows, err, scanGroup)
	if err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	return out, nil
}

// DeleteGroup implements metadata.GroupStore.
func (s *Store) DeleteGroup(ctx context.Context, group string) error {
	err := s.db.WriteTx(ctx, func(q Querier) error {
		n1, err := q.Exec(ctx, `DELETE FROM groups WHERE group_id = $1`, group)
		if err != nil {
			return err
		}
		n2, err := q.Exec(ctx, `DELETE FROM group_offsets WHERE group_id = $1`, group)
		return affected(n1+n2, err, metadata.ErrNotFound)
	})
	if err != nil {
		return fmt.Errorf("delete group %s: %w", group, err)
	}
	return nil
}

// ExpireOffsets implements metadata.GroupStore in one write transaction.
// The names come back sorted.
func (s *Store) ExpireOffsets(ctx context.Context, retention time.Duration) ([]string, error) {
	cutoff := s.d.Now() + ` - ` + s.d.Micros("$1")
	var names []string
	err := s.db.WriteTx(ctx, func(q Querier) error {
		scan := func(r Row) (g string, err error) { return g, r.Scan(&g) }
		rows, err := q.Query(ctx, `DELETE FROM group_offsets AS o WHERE commit_time < `+cutoff+`
			AND NOT EXISTS (SELECT 1 FROM groups g WHERE g.group_id = o.group_id
			    AND (NOT g.empty OR g.updated_at >= `+cutoff+`))
			RETURNING group_id`, retention.Microseconds())
		offsets, err := collect(rows, err, scan)
		if err != nil {
			return err
		}
		// A second statement sees the offsets the first deleted as gone.
		rows, err = q.Query(ctx, `DELETE FROM groups AS g WHERE empty AND updated_at < `+cutoff+`
			AND NOT EXISTS (SELECT 1 FROM group_offsets o WHERE o.group_id = g.group_id)
			RETURNING group_id`, retention.Microseconds())
		records, err := collect(rows, err, scan)
		if err != nil {
			return err
		}
		names = append(offsets, records...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("expire offsets: %w", err)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// AcquireCoordinatorLease implements metadata.GroupStore in one upsert: the
// row is taken over only when it is ours or expired; the epoch grows on each
// new tenure.
func (s *Store) AcquireCoordinatorLease(ctx context.Context, name, owner string, ttl time.Duration) (metadata.CoordinatorLease, error) {
	l := metadata.CoordinatorLease{Name: name, Owner: owner}
	now := s.d.Now()
	err := s.db.Write().QueryRow(ctx, `INSERT INTO coordinator_leases AS c (name, owner, expires_at, epoch)
		VALUES ($1, $2, `+now+` + `+s.d.Micros("$3")+`, 1)
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at,
		  epoch = CASE WHEN c.owner = excluded.owner AND c.expires_at > `+now+` THEN c.epoch ELSE c.epoch + 1 END
		WHERE c.owner = excluded.owner OR c.expires_at <= `+now+`
		RETURNING expires_at, epoch`, name, owner, ttl.Microseconds()).Scan(Time(&l.Expires), &l.Epoch)
	if errors.Is(err, sql.ErrNoRows) {
		err = s.db.Read().QueryRow(ctx, `SELECT owner, expires_at, epoch FROM coordinator_leases WHERE name = $1`, name).
			Scan(&l.Owner, Time(&l.Expires), &l.Epoch)
		if err == nil {
			return l, fmt.Errorf("acquire lease %s: %w", name, metadata.ErrLeaseHeld)
		}
	}
	if err != nil {
		return metadata.CoordinatorLease{}, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	return l, nil
}

// RenewCoordinatorLeases implements metadata.GroupStore.
func (s *Store) RenewCoordinatorLeases(ctx context.Context, owner string, ttl time.Duration) ([]metadata.CoordinatorLease, error) {
	rows, err := s.db.Write().Query(ctx, `UPDATE coordinator_leases SET expires_at = `+s.d.Now()+` + `+s.d.Micros("$2")+`
		WHERE owner = $1 AND expires_at > `+s.d.Now()+` RETURNING name, expires_at, epoch`, owner, ttl.Microseconds())
	out, err := collect(rows, err, func(r Row) (metadata.CoordinatorLease, error) {
		l := metadata.CoordinatorLease{Owner: owner}
		err := r.Scan(&l.Name, Time(&l.Expires), &l.Epoch)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("renew leases of %s: %w", owner, err)
	}
	return out, nil
}

// ReleaseCoordinatorLease implements metadata.GroupStore. The row is kept
// (expired) so that the epoch keeps growing across owners.
func (s *Store) ReleaseCoordinatorLease(ctx context.Context, name, owner string) error {
	if _, err := s.db.Write().Exec(ctx, `UPDATE coordinator_leases SET expires_at = `+s.d.Expired()+` WHERE name = $1 AND owner = $2`,
		name, owner); err != nil {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	return nil
}

// GroupConfigs implements metadata.GroupStore.
func (s *Store) GroupConfigs(ctx context.Context, group string) (map[string]string, error) {
	c, err := s.configRow(ctx, "group_configs", "group_id", group)
	if err != nil {
		return nil, fmt.Errorf("group configs of %s: %w", group, err)
	}
	return c, nil
}

// UpdateGroupConfigs implements metadata.GroupStore (updateConfigRow).
func (s *Store) UpdateGroupConfigs(ctx context.Context, group string, update func(map[string]string) (map[string]string, error)) error {
	if err := s.updateConfigRow(ctx, "group_configs", "group_id", group, update); err != nil {
		return fmt.Errorf("update configs of group %s: %w", group, err)
	}
	return nil
}

// ClusterConfigs implements metadata.ClusterConfigStore: the row of
// broker "", the cluster default.
func (s *Store) ClusterConfigs(ctx context.Context) (map[string]string, error) {
	c, err := s.configRow(ctx, "broker_configs", "broker", "")
	if err != nil {
		return nil, fmt.Errorf("cluster configs: %w", err)
	}
	return c, nil
}

// UpdateClusterConfigs implements metadata.ClusterConfigStore
// (updateConfigRow).
func (s *Store) UpdateClusterConfigs(ctx context.Context, update func(map[string]string) (map[string]string, error)) error {
	if err := s.updateConfigRow(ctx, "broker_configs", "broker", "", update); err != nil {
		return fmt.Errorf("update cluster configs: %w", err)
	}
	return nil
}

// configRow reads the configs of one row of a configs table (a key column
// and a JSON configs column): never nil, empty when the row is absent.
// table and col are the callers' constants, never input.
func (s *Store) configRow(ctx context.Context, table, col, key string) (map[string]string, error) {
	var raw string
	err := s.db.Read().QueryRow(ctx, `SELECT `+s.d.JSONText("configs")+` FROM `+table+` WHERE `+col+` = $1`, key).Scan(&raw)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	return sqlutil.DecodeConfigs(raw)
}

// updateConfigRow changes one row of a configs table in one transaction.
// A key without configs has no row to lock, so the row is inserted empty
// first (ON CONFLICT DO NOTHING waits on PostgreSQL for a concurrent first
// insert to commit) and then locked FOR UPDATE; concurrent updates of a
// key, its first ones included, apply one after the other. Should a
// concurrent update remove the row between the two statements, they are
// run again. No configs left removes the row. (SQLite's write
// transaction holds the database's write lock throughout.)
func (s *Store) updateConfigRow(ctx context.Context, table, col, key string, update func(map[string]string) (map[string]string, error)) error {
	return s.db.WriteTx(ctx, func(q Querier) error {
		var raw string
		for {
			if _, err := q.Exec(ctx, `INSERT INTO `+table+` (`+col+`, configs) VALUES ($1, `+s.d.JSON("'{}'")+`)
				ON CONFLICT (`+col+`) DO NOTHING`, key); err != nil {
				return err
			}
			err := q.QueryRow(ctx, `SELECT `+s.d.JSONText("configs")+` FROM `+table+` WHERE `+col+` = $1`+s.d.ForUpdate(), key).Scan(&raw)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			break
		}
		cfg, n, err := updateConfigs(raw, update)
		if err != nil {
			return err
		}
		if n == 0 {
			_, err = q.Exec(ctx, `DELETE FROM `+table+` WHERE `+col+` = $1`, key)
			return err
		}
		_, err = q.Exec(ctx, `UPDATE `+table+` SET configs = `+s.d.JSON("$2")+` WHERE `+col+` = $1`, key, cfg)
		return err
	})
}
