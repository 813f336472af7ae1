package postgres

import (
	"context"
	"fmt"
	"slices"

	"floe/metadata"
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
