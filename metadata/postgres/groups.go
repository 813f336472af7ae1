package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

// CommitOffsets implements metadata.GroupStore: one statement (one round
// trip, one implicit transaction) per metadata.OffsetChunk offsets (see
// there for why that is safe).
func (s *Store) CommitOffsets(ctx context.Context, group string, offsets []metadata.GroupOffset) error {
	for chunk := range slices.Chunk(offsets, metadata.OffsetChunk) {
		c := newOffsetColumns(chunk)
		// DISTINCT ON keeps one row per partition: ON CONFLICT cannot touch a
		// row twice in one statement; the last occurrence wins as in Kafka
		// (and a later chunk overwrites an earlier one).
		_, err := s.pool.Exec(ctx, `INSERT INTO group_offsets (group_id, topic, part, committed, leader_epoch, metadata, commit_time)
			SELECT DISTINCT ON (t, p) $1, t, p, o, e, m, now()
			  FROM unnest($2::text[], $3::int[], $4::bigint[], $5::int[], $6::bytea[]) WITH ORDINALITY AS u(t, p, o, e, m, n)
			 ORDER BY t, p, n DESC
			ON CONFLICT (group_id, topic, part) DO UPDATE SET committed = EXCLUDED.committed,
			  leader_epoch = EXCLUDED.leader_epoch, metadata = EXCLUDED.metadata, commit_time = EXCLUDED.commit_time`,
			group, c.topics, c.parts, c.offsets, c.epochs, c.metas)
		if err != nil {
			return fmt.Errorf("commit offsets of %s: %w", group, err)
		}
	}
	return nil
}

// offsetColumns are offsets as column arrays, for unnest.
type offsetColumns struct {
	topics  []string
	parts   []int32
	offsets []int64
	epochs  []int32
	metas   [][]byte
}

func newOffsetColumns(offsets []metadata.GroupOffset) offsetColumns {
	c := offsetColumns{
		topics:  make([]string, len(offsets)),
		parts:   make([]int32, len(offsets)),
		offsets: make([]int64, len(offsets)),
		epochs:  make([]int32, len(offsets)),
		metas:   make([][]byte, len(offsets)),
	}
	for i, o := range offsets {
		c.topics[i], c.parts[i], c.offsets[i], c.epochs[i], c.metas[i] = o.Topic, o.Partition, o.Offset, o.LeaderEpoch, []byte(o.Metadata)
	}
	return c
}

// FetchOffsets implements metadata.GroupStore.
func (s *Store) FetchOffsets(ctx context.Context, group string) ([]metadata.GroupOffset, error) {
	rows, err := s.pool.Query(ctx, `SELECT topic, part, committed, leader_epoch, metadata, commit_time
		FROM group_offsets WHERE group_id = $1 ORDER BY topic, part`, group)
	if err != nil {
		return nil, fmt.Errorf("fetch offsets of %s: %w", group, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (metadata.GroupOffset, error) {
		var (
			o  metadata.GroupOffset
			md []byte
		)
		err := row.Scan(&o.Topic, &o.Partition, &o.Offset, &o.LeaderEpoch, &md, &o.CommitTime)
		o.Metadata = string(md)
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("fetch offsets of %s: %w", group, err)
	}
	return out, nil
}

// DeleteOffsets implements metadata.GroupStore.
func (s *Store) DeleteOffsets(ctx context.Context, group string, parts []metadata.TopicPartition) error {
	if len(parts) == 0 {
		return nil
	}
	topics := make([]string, len(parts))
	ps := make([]int32, len(parts))
	for i, p := range parts {
		topics[i], ps[i] = p.Topic, p.Partition
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM group_offsets o USING unnest($2::text[], $3::int[]) AS u(t, p)
		WHERE o.group_id = $1 AND o.topic = u.t AND o.part = u.p`, group, topics, ps)
	if err != nil {
		return fmt.Errorf("delete offsets of %s: %w", group, err)
	}
	return nil
}

// SaveGroup implements metadata.GroupStore.
func (s *Store) SaveGroup(ctx context.Context, g metadata.GroupRecord) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO groups (group_id, protocol_type, state_name, empty, state, updated_at)
		VALUES ($1, $2, $3, $4, $5, now()) ON CONFLICT (group_id) DO UPDATE SET protocol_type = EXCLUDED.protocol_type,
		state_name = EXCLUDED.state_name, empty = EXCLUDED.empty, state = EXCLUDED.state, updated_at = now()`,
		g.Group, g.ProtocolType, g.StateName, g.Empty, g.State)
	if err != nil {
		return fmt.Errorf("save group %s: %w", g.Group, err)
	}
	return nil
}

const groupColumns = `group_id, protocol_type, state_name, empty, state, updated_at`

func scanGroup(row pgx.Row) (metadata.GroupRecord, error) {
	var (
		g  metadata.GroupRecord
		ts *time.Time
	)
	if err := row.Scan(&g.Group, &g.ProtocolType, &g.StateName, &g.Empty, &g.State, &ts); err != nil {
		return g, err
	}
	if ts != nil {
		g.UpdatedAt = *ts
	}
	return g, nil
}

// LoadGroup implements metadata.GroupStore.
func (s *Store) LoadGroup(ctx context.Context, group string) (metadata.GroupRecord, error) {
	g, err := scanGroup(s.pool.QueryRow(ctx, `SELECT `+groupColumns+` FROM groups WHERE group_id = $1`, group))
	if errors.Is(err, pgx.ErrNoRows) {
		err = metadata.ErrNotFound
	}
	if err != nil {
		return metadata.GroupRecord{}, fmt.Errorf("load group %s: %w", group, err)
	}
	return g, nil
}

// Groups implements metadata.GroupStore.
func (s *Store) Groups(ctx context.Context) ([]metadata.GroupRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+groupColumns+` FROM groups
		UNION ALL
		SELECT DISTINCT o.group_id, '', 'Empty', true, NULL::bytea, NULL::timestamptz FROM group_offsets o
		 WHERE NOT EXISTS (SELECT 1 FROM groups g WHERE g.group_id = o.group_id)
		ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (metadata.GroupRecord, error) { return scanGroup(row) })
	if err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	return out, nil
}

// DeleteGroup implements metadata.GroupStore in one statement.
func (s *Store) DeleteGroup(ctx context.Context, group string) error {
	var n int64
	err := s.pool.QueryRow(ctx, `WITH g AS (DELETE FROM groups WHERE group_id = $1 RETURNING 1),
		o AS (DELETE FROM group_offsets WHERE group_id = $1 RETURNING 1)
		SELECT (SELECT count(*) FROM g) + (SELECT count(*) FROM o)`, group).Scan(&n)
	if err == nil && n == 0 {
		err = metadata.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("delete group %s: %w", group, err)
	}
	return nil
}

// ExpireOffsets implements metadata.GroupStore in one transaction.
func (s *Store) ExpireOffsets(ctx context.Context, retention time.Duration) ([]string, error) {
	var names []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `WITH o AS (
				DELETE FROM group_offsets o WHERE commit_time < now() - $1::bigint * interval '1 microsecond'
				   AND NOT EXISTS (SELECT 1 FROM groups g WHERE g.group_id = o.group_id
				       AND (NOT g.empty OR g.updated_at >= now() - $1::bigint * interval '1 microsecond'))
				RETURNING group_id)
			SELECT DISTINCT group_id FROM o ORDER BY 1`, retention.Microseconds())
		if err != nil {
			return err
		}
		names, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		// A second statement sees the offsets the first deleted as gone.
		rows, err = tx.Query(ctx, `DELETE FROM groups g WHERE empty AND updated_at < now() - $1::bigint * interval '1 microsecond'
			AND NOT EXISTS (SELECT 1 FROM group_offsets o WHERE o.group_id = g.group_id) RETURNING group_id`, retention.Microseconds())
		if err != nil {
			return err
		}
		more, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, m := range more {
			found := false
			for _, n := range names {
				found = found || n == m
			}
			if !found {
				names = append(names, m)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("expire offsets: %w", err)
	}
	return names, nil
}

// AcquireCoordinatorLease implements metadata.GroupStore in one upsert: the
// row is taken over only when it is ours or expired; the epoch grows on each
// new tenure.
func (s *Store) AcquireCoordinatorLease(ctx context.Context, name, owner string, ttl time.Duration) (metadata.CoordinatorLease, error) {
	l := metadata.CoordinatorLease{Name: name, Owner: owner}
	err := s.pool.QueryRow(ctx, `INSERT INTO coordinator_leases AS c (name, owner, expires_at, epoch)
		VALUES ($1, $2, now() + $3::bigint * interval '1 microsecond', 1)
		ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at,
		  epoch = CASE WHEN c.owner = EXCLUDED.owner AND c.expires_at > now() THEN c.epoch ELSE c.epoch + 1 END
		WHERE c.owner = EXCLUDED.owner OR c.expires_at <= now()
		RETURNING expires_at, epoch`, name, owner, ttl.Microseconds()).Scan(&l.Expires, &l.Epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.pool.QueryRow(ctx, `SELECT owner, expires_at, epoch FROM coordinator_leases WHERE name = $1`, name).
			Scan(&l.Owner, &l.Expires, &l.Epoch)
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
	rows, err := s.pool.Query(ctx, `UPDATE coordinator_leases SET expires_at = now() + $2::bigint * interval '1 microsecond'
		WHERE owner = $1 AND expires_at > now() RETURNING name, expires_at, epoch`, owner, ttl.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("renew leases of %s: %w", owner, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (metadata.CoordinatorLease, error) {
		l := metadata.CoordinatorLease{Owner: owner}
		err := row.Scan(&l.Name, &l.Expires, &l.Epoch)
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
	if _, err := s.pool.Exec(ctx, `UPDATE coordinator_leases SET expires_at = '-infinity' WHERE name = $1 AND owner = $2`,
		name, owner); err != nil {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	return nil
}

// GroupConfigs implements metadata.GroupStore.
func (s *Store) GroupConfigs(ctx context.Context, group string) (map[string]string, error) {
	var raw string
	err := s.pool.QueryRow(ctx, `SELECT configs::text FROM group_configs WHERE group_id = $1`, group).Scan(&raw)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("group configs of %s: %w", group, err)
	}
	c, err := sqlutil.DecodeConfigs(raw)
	if err != nil {
		return nil, fmt.Errorf("group configs of %s: %w", group, err)
	}
	return c, nil
}

// UpdateGroupConfigs implements metadata.GroupStore. A group without
// configs has no row to lock, so the row is inserted empty first (ON
// CONFLICT DO NOTHING waits for a concurrent first insert to commit) and
// then locked FOR UPDATE; concurrent updates of a group, its first ones
// included, apply one after the other. Should a concurrent update remove
// the row between the two statements, they are run again.
func (s *Store) UpdateGroupConfigs(ctx context.Context, group string, update func(map[string]string) (map[string]string, error)) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var raw string
		for {
			if _, err := tx.Exec(ctx, `INSERT INTO group_configs (group_id, configs) VALUES ($1, '{}')
				ON CONFLICT (group_id) DO NOTHING`, group); err != nil {
				return err
			}
			err := tx.QueryRow(ctx, `SELECT configs::text FROM group_configs WHERE group_id = $1 FOR UPDATE`, group).Scan(&raw)
			if errors.Is(err, pgx.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			break
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
			_, err = tx.Exec(ctx, `DELETE FROM group_configs WHERE group_id = $1`, group)
			return err
		}
		cfg, err := sqlutil.EncodeConfigs(next)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE group_configs SET configs = $2::text::jsonb WHERE group_id = $1`, group, cfg)
		return err
	})
	if err != nil {
		return fmt.Errorf("update configs of group %s: %w", group, err)
	}
	return nil
}
