package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"floe/metadata"
)

// The look-ups that are not the fetch path's (ListOffsets by time, the
// commit counter). Lookup itself stays in each store: PostgreSQL sends its
// two reads as one batch, SQLite runs statements prepared at Open.

// CommitCount implements metadata.Store: PostgreSQL spreads the counter
// over several rows so that concurrent commits do not queue on one.
func (s *Store) CommitCount(ctx context.Context) (int64, error) {
	var c int64
	if err := s.db.Read().QueryRow(ctx, `SELECT CAST(coalesce(sum(value), 0) AS bigint) FROM counters WHERE name = 'commits'`).
		Scan(&c); err != nil {
		return 0, fmt.Errorf("commit count: %w", err)
	}
	return c, nil
}

// LookupTimestamp implements metadata.Store. Entries wholly below the log
// start offset are ignored; ErrUnknownTopic if the partition does not exist.
func (s *Store) LookupTimestamp(ctx context.Context, topic metadata.TopicID, partition int32, ts int64) (metadata.IndexEntry, error) {
	e, err := s.lookupOne(ctx, topic, partition, `SELECT `+IndexColumns+` FROM object_index i
		JOIN partitions p ON p.topic_id = i.topic_id AND p.part = i.part
		WHERE i.topic_id = $1 AND i.part = $2 AND i.end_offset > p.log_start_offset AND i.max_ts >= $3
		ORDER BY i.base_offset LIMIT 1`, ts)
	if err != nil {
		return e, fmt.Errorf("lookup %x/%d timestamp %d: %w", topic, partition, ts, err)
	}
	return e, nil
}

// LookupMaxTimestamp implements metadata.Store; ErrUnknownTopic if the
// partition does not exist.
func (s *Store) LookupMaxTimestamp(ctx context.Context, topic metadata.TopicID, partition int32) (metadata.IndexEntry, error) {
	e, err := s.lookupOne(ctx, topic, partition, `SELECT `+IndexColumns+` FROM object_index i
		JOIN partitions p ON p.topic_id = i.topic_id AND p.part = i.part
		WHERE i.topic_id = $1 AND i.part = $2 AND i.end_offset > p.log_start_offset
		ORDER BY i.max_ts DESC, i.base_offset LIMIT 1`)
	if err != nil {
		return e, fmt.Errorf("lookup %x/%d max timestamp: %w", topic, partition, err)
	}
	return e, nil
}

// lookupOne runs query (with topic, partition, extra... as arguments),
// which joins the partition row for its log start, and returns its single
// row. Only without one is the partition read, to tell ErrNotFound from
// ErrUnknownTopic: a found entry costs one statement.
func (s *Store) lookupOne(ctx context.Context, topic metadata.TopicID, partition int32, query string, extra ...any) (metadata.IndexEntry, error) {
	e, err := ScanEntry(s.db.Read().QueryRow(ctx, query, append([]any{topic[:], partition}, extra...)...))
	if !errors.Is(err, sql.ErrNoRows) {
		return e, err
	}
	if _, err := ScanPartition(s.db.Read().QueryRow(ctx, PartitionQuery, topic[:], partition), partition); err != nil {
		return e, err
	}
	return e, metadata.ErrNotFound
}
