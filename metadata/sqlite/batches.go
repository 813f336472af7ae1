package sqlite

import (
	"context"
	"database/sql"

	"floe/metadata"
	"floe/metadata/internal/sqlstore"
)

var _ sqlstore.Batches = batches{}

// batches is sqlstore.Batches on the writer's prepared statements: one
// statement compiled once, run per row, one transaction per chunk (a
// 100,000-partition OffsetCommit would otherwise compile its statement
// 100,000 times).
type batches struct{ s *Store }

// UpsertGroupOffsets implements sqlstore.Batches.
func (b batches) UpsertGroupOffsets(ctx context.Context, group string, offsets []metadata.GroupOffset) error {
	now := b.s.now().UnixMilli()
	return b.s.writeStmtTx(ctx, func(t *wtx) error {
		for _, o := range offsets {
			if err := t.exec(stUpsertGroupOffset, group, o.Topic, o.Partition, o.Offset, o.LeaderEpoch, o.Metadata, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// UpsertTxnOffsets implements sqlstore.Batches.
func (b batches) UpsertTxnOffsets(ctx context.Context, txnID, group string, offsets []metadata.GroupOffset) error {
	return b.s.writeStmtTx(ctx, func(t *wtx) error {
		for _, o := range offsets {
			if err := t.exec(stUpsertTxnOffset, txnID, group, o.Topic, o.Partition, o.Offset, o.LeaderEpoch, o.Metadata); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteGroupOffsets implements sqlstore.Batches.
func (b batches) DeleteGroupOffsets(ctx context.Context, group string, parts []metadata.TopicPartition) error {
	return b.s.writeTx(ctx, func(tx *sql.Tx) error {
		del, err := tx.PrepareContext(ctx, `DELETE FROM group_offsets WHERE group_id = ? AND topic = ? AND part = ?`)
		if err != nil {
			return err
		}
		defer del.Close()
		for _, p := range parts {
			if _, err := del.ExecContext(ctx, group, p.Topic, p.Partition); err != nil {
				return err
			}
		}
		return nil
	})
}
