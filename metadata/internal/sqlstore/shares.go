package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

const shareColumns = `topic_id, part, start_offset, state_epoch, ranges`

func scanShare(r Row) (metadata.SharePartitionState, error) {
	var (
		st  metadata.SharePartitionState
		id  []byte
		raw string
	)
	if err := r.Scan(&id, &st.Partition, &st.StartOffset, &st.StateEpoch, &raw); err != nil {
		return st, err
	}
	tid, err := sqlutil.TopicIDFromBytes(id)
	if err != nil {
		return st, err
	}
	st.Topic = tid
	st.Ranges, err = metadata.DecodeShareRanges(raw)
	return st, err
}

// ShareStates implements metadata.ShareStore: one read per partition on
// the read pool, no transaction.
func (s *Store) ShareStates(ctx context.Context, group string, parts []metadata.ShareKey) ([]metadata.SharePartitionState, error) {
	var out []metadata.SharePartitionState
	for _, k := range parts {
		st, err := scanShare(s.db.Read().QueryRow(ctx, `SELECT `+shareColumns+` FROM share_partitions
			WHERE group_id = $1 AND topic_id = $2 AND part = $3`, group, k.Topic[:], k.Partition))
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("share states of %s: %w", group, err)
		}
		out = append(out, st)
	}
	return out, nil
}

// GroupShareStates implements metadata.ShareStore.
func (s *Store) GroupShareStates(ctx context.Context, group string) ([]metadata.SharePartitionState, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+shareColumns+` FROM share_partitions WHERE group_id = $1
		ORDER BY topic_id, part`, group)
	out, err := collect(rows, err, scanShare)
	if err != nil {
		return nil, fmt.Errorf("share states of %s: %w", group, err)
	}
	return out, nil
}

// errShareRace ends a transaction whose insert of a new share-partition
// met a concurrent one: it is run again, and then finds the row.
var errShareRace = errors.New("share partition created concurrently")

// UpdateShares implements metadata.ShareStore: one write transaction that
// reads the store clock, locks the partitions' rows one by one in sorted
// order, runs update, and writes back only what changed.
func (s *Store) UpdateShares(ctx context.Context, group string, parts []metadata.ShareKey,
	update func(now time.Time, states map[metadata.ShareKey]*metadata.SharePartitionState) error) error {
	keys := slices.Clone(parts)
	slices.SortFunc(keys, func(a, b metadata.ShareKey) int {
		if c := bytes.Compare(a.Topic[:], b.Topic[:]); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	keys = slices.Compact(keys)
	var err error
	for range 5 {
		err = s.db.WriteTx(ctx, func(q Querier) error { return s.updateShares(ctx, q, group, keys, update) })
		if !errors.Is(err, errShareRace) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("update share states of %s: %w", group, err)
	}
	return nil
}

func (s *Store) updateShares(ctx context.Context, q Querier, group string, keys []metadata.ShareKey,
	update func(now time.Time, states map[metadata.ShareKey]*metadata.SharePartitionState) error) error {
	var now time.Time
	if err := q.QueryRow(ctx, `SELECT `+s.d.Now()).Scan(Time(&now)); err != nil {
		return err
	}
	states := make(map[metadata.ShareKey]*metadata.SharePartitionState, len(keys))
	before := make(map[metadata.ShareKey]metadata.SharePartitionState, len(keys))
	for _, k := range keys {
		st, err := scanShare(q.QueryRow(ctx, `SELECT `+shareColumns+` FROM share_partitions
			WHERE group_id = $1 AND topic_id = $2 AND part = $3`+s.d.ForUpdate(), group, k.Topic[:], k.Partition))
		if errors.Is(err, sql.ErrNoRows) {
			states[k] = nil
			continue
		}
		if err != nil {
			return err
		}
		before[k] = metadata.SharePartitionState{ShareKey: k, StartOffset: st.StartOffset, StateEpoch: st.StateEpoch,
			Ranges: slices.Clone(st.Ranges)}
		states[k] = &st
	}
	if err := update(now, states); err != nil {
		return err
	}
	for _, k := range keys {
		st := states[k]
		old, had := before[k]
		switch {
		case st == nil && !had:
		case st == nil || st.StartOffset < 0:
			if had {
				if _, err := q.Exec(ctx, `DELETE FROM share_partitions WHERE group_id = $1 AND topic_id = $2 AND part = $3`,
					group, k.Topic[:], k.Partition); err != nil {
					return err
				}
			}
		case !had:
			n, err := q.Exec(ctx, `INSERT INTO share_partitions (group_id, topic_id, part, start_offset, state_epoch, ranges, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, `+s.d.Now()+`) ON CONFLICT (group_id, topic_id, part) DO NOTHING`,
				group, k.Topic[:], k.Partition, st.StartOffset, st.StateEpoch, metadata.EncodeShareRanges(st.Ranges))
			if err != nil {
				return err
			}
			if n == 0 {
				return errShareRace
			}
		case old.StartOffset != st.StartOffset || old.StateEpoch != st.StateEpoch || !slices.Equal(old.Ranges, st.Ranges):
			if _, err := q.Exec(ctx, `UPDATE share_partitions SET start_offset = $4, state_epoch = $5, ranges = $6,
				updated_at = `+s.d.Now()+` WHERE group_id = $1 AND topic_id = $2 AND part = $3`,
				group, k.Topic[:], k.Partition, st.StartOffset, st.StateEpoch, metadata.EncodeShareRanges(st.Ranges)); err != nil {
				return err
			}
		}
	}
	return nil
}

// DeleteShareStates implements metadata.ShareStore.
func (s *Store) DeleteShareStates(ctx context.Context, group string, topics []metadata.TopicID) error {
	var err error
	if topics == nil {
		_, err = s.db.Write().Exec(ctx, `DELETE FROM share_partitions WHERE group_id = $1`, group)
	} else {
		err = s.db.WriteTx(ctx, func(q Querier) error {
			for _, t := range topics {
				if _, err := q.Exec(ctx, `DELETE FROM share_partitions WHERE group_id = $1 AND topic_id = $2`, group, t[:]); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("delete share states of %s: %w", group, err)
	}
	return nil
}

var _ metadata.ShareStore = (*Store)(nil)
