package postgres

import (
	"context"
	"fmt"
	"slices"

	"floe/metadata"
)

// PutTxnOffsets implements metadata.TxnStore, one statement per
// metadata.OffsetChunk offsets, shaped as CommitOffsets.
func (s *Store) PutTxnOffsets(ctx context.Context, txnID, group string, offsets []metadata.GroupOffset) error {
	for chunk := range slices.Chunk(offsets, metadata.OffsetChunk) {
		c := newOffsetColumns(chunk)
		metas := make([]string, len(chunk)) // txn_offsets.metadata is text
		for i, o := range chunk {
			metas[i] = o.Metadata
		}
		_, err := s.pool.Exec(ctx, `INSERT INTO txn_offsets (txn_id, group_id, topic, part, committed, leader_epoch, metadata)
			SELECT DISTINCT ON (t, p) $1, $2, t, p, o, e, m
			  FROM unnest($3::text[], $4::int[], $5::bigint[], $6::int[], $7::text[]) WITH ORDINALITY AS u(t, p, o, e, m, n)
			 ORDER BY t, p, n DESC
			ON CONFLICT (txn_id, group_id, topic, part) DO UPDATE SET committed = EXCLUDED.committed,
			  leader_epoch = EXCLUDED.leader_epoch, metadata = EXCLUDED.metadata`,
			txnID, group, c.topics, c.parts, c.offsets, c.epochs, metas)
		if err != nil {
			return fmt.Errorf("transactional offsets of %s: %w", txnID, err)
		}
	}
	return nil
}
