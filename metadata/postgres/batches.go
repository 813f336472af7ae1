package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgconn"

	"floe/metadata"
	"floe/metadata/internal/sqlstore"
)

var _ sqlstore.Batches = batches{}

// batches is sqlstore.Batches over arrays: one statement (one round trip,
// one implicit transaction) per chunk, however many rows it holds.
type batches struct{ pool poolExec }

// poolExec is the part of the pool batches uses.
type poolExec interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// UpsertGroupOffsets implements sqlstore.Batches. DISTINCT ON keeps one
// row per partition: ON CONFLICT cannot touch a row twice in one
// statement; the last occurrence wins as in Kafka (and a later chunk
// overwrites an earlier one).
func (b batches) UpsertGroupOffsets(ctx context.Context, group string, offsets []metadata.GroupOffset) error {
	c := newOffsetColumns(offsets)
	_, err := b.pool.Exec(ctx, `INSERT INTO group_offsets (group_id, topic, part, committed, leader_epoch, metadata, commit_time)
		SELECT DISTINCT ON (t, p) $1, t, p, o, e, m, now()
		  FROM unnest($2::text[], $3::int[], $4::bigint[], $5::int[], $6::bytea[]) WITH ORDINALITY AS u(t, p, o, e, m, n)
		 ORDER BY t, p, n DESC
		ON CONFLICT (group_id, topic, part) DO UPDATE SET committed = EXCLUDED.committed,
		  leader_epoch = EXCLUDED.leader_epoch, metadata = EXCLUDED.metadata, commit_time = EXCLUDED.commit_time`,
		group, c.topics, c.parts, c.offsets, c.epochs, c.metas)
	return err
}

// UpsertTxnOffsets implements sqlstore.Batches, as UpsertGroupOffsets.
func (b batches) UpsertTxnOffsets(ctx context.Context, txnID, group string, offsets []metadata.GroupOffset) error {
	c := newOffsetColumns(offsets)
	metas := make([]string, len(offsets)) // txn_offsets.metadata is text
	for i, o := range offsets {
		metas[i] = o.Metadata
	}
	_, err := b.pool.Exec(ctx, `INSERT INTO txn_offsets (txn_id, group_id, topic, part, committed, leader_epoch, metadata)
		SELECT DISTINCT ON (t, p) $1, $2, t, p, o, e, m
		  FROM unnest($3::text[], $4::int[], $5::bigint[], $6::int[], $7::text[]) WITH ORDINALITY AS u(t, p, o, e, m, n)
		 ORDER BY t, p, n DESC
		ON CONFLICT (txn_id, group_id, topic, part) DO UPDATE SET committed = EXCLUDED.committed,
		  leader_epoch = EXCLUDED.leader_epoch, metadata = EXCLUDED.metadata`,
		txnID, group, c.topics, c.parts, c.offsets, c.epochs, metas)
	return err
}

// DeleteGroupOffsets implements sqlstore.Batches.
func (b batches) DeleteGroupOffsets(ctx context.Context, group string, parts []metadata.TopicPartition) error {
	topics := make([]string, len(parts))
	ps := make([]int32, len(parts))
	for i, p := range parts {
		topics[i], ps[i] = p.Topic, p.Partition
	}
	_, err := b.pool.Exec(ctx, `DELETE FROM group_offsets o USING unnest($2::text[], $3::int[]) AS u(t, p)
		WHERE o.group_id = $1 AND o.topic = u.t AND o.part = u.p`, group, topics, ps)
	return err
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
