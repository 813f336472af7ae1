package compactor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"floe/metadata"
	"floe/topicconfig"
)

// retention advances the log start offset of every partition of every
// topic whose cleanup.policy includes delete. Like Kafka, which deletes
// whole segments, it drops whole index rows from the oldest on: a row goes
// when its newest record is older than retention.ms, or when the rows above
// the log start would still hold at least retention.bytes without it (as
// Kafka deletes a segment only if the rest still holds retention.bytes). A row that is not
// eligible stops the walk, so the log start never skips over live data.
// Objects left without rows are reclaimed by GC.
func (c *Compactor) retention(ctx context.Context, l *metadata.JobLease) error {
	topics, err := c.store.Topics(ctx)
	if err != nil {
		return err
	}
	defaults := c.defaults.Get()
	now := c.now()
	for _, t := range topics {
		del, _ := defaults.Policies(t.Configs)
		if !del {
			continue
		}
		retMs := defaults.Int(t.Configs, topicconfig.RetentionMs)
		retBytes := defaults.Int(t.Configs, topicconfig.RetentionBytes)
		if retMs < 0 && retBytes < 0 {
			continue
		}
		if err := l.Renew(ctx); err != nil {
			return err
		}
		hold, held, err := c.hold(ctx, t)
		if err != nil {
			return err
		}
		parts, err := c.store.Partitions(ctx, t.ID)
		if errors.Is(err, metadata.ErrUnknownTopic) {
			continue // deleted meanwhile
		}
		if err != nil {
			return err
		}
		for _, p := range parts {
			rows, err := c.store.PartitionRows(ctx, t.ID, p.Partition, p.NextOffset)
			if errors.Is(err, metadata.ErrUnknownTopic) {
				break
			}
			if err != nil {
				return err
			}
			start := retentionStart(rows, p.LogStartOffset, now, retMs, retBytes)
			if held && start > hold[p.Partition] {
				// Records not yet in the topic's Iceberg table stay.
				c.metrics.retentionHeld.Inc()
				c.reportHeld(t.Name, p.Partition, start, hold[p.Partition])
				start = hold[p.Partition]
			}
			if start <= p.LogStartOffset {
				continue
			}
			if _, err := c.store.AdvanceLogStart(ctx, t.ID, p.Partition, start); err != nil {
				if errors.Is(err, metadata.ErrUnknownTopic) {
					break
				}
				return err
			}
			c.metrics.logStartMoves.Inc()
			c.log.Debug("retention", "topic", t.Name, "partition", p.Partition, "log_start", start)
		}
	}
	return nil
}

// retentionStart returns the log start offset retention allows for a
// partition whose rows (in offset order) are given: the end of the longest
// prefix of rows each expired by time or removable for size.
// retMs or retBytes < 0 disables that limit.
func retentionStart(rows []metadata.IndexEntry, logStart int64, now time.Time, retMs, retBytes int64) int64 {
	var total int64
	for _, r := range rows {
		if r.EndOffset > logStart {
			total += r.ByteLength
		}
	}
	start := logStart
	cutoff := now.UnixMilli() - retMs
	for _, r := range rows {
		if r.EndOffset <= start {
			continue
		}
		expired := retMs >= 0 && r.MaxTimestamp < cutoff
		tooBig := retBytes >= 0 && total-r.ByteLength >= retBytes
		if !expired && !tooBig {
			break
		}
		start = r.EndOffset
		total -= r.ByteLength
	}
	return start
}

// hold is Config.RetentionHold for topic t: what retention and key
// compaction must keep for the topic's Iceberg table.
func (c *Compactor) hold(ctx context.Context, t metadata.Topic) (map[int32]int64, bool, error) {
	if c.cfg.RetentionHold == nil {
		return nil, false, nil
	}
	hold, held, err := c.cfg.RetentionHold(ctx, t)
	if err != nil {
		return nil, false, fmt.Errorf("hold of %s: %w", t.Name, err)
	}
	return hold, held, nil
}
