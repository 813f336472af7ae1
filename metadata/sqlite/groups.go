package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"floe/metadata"
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
