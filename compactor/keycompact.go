package compactor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"

	"floe/kafkaproto"
	"floe/metadata"
	"floe/storage"
	"floe/topicconfig"
)

// Output batches of key compaction are cut at this many records or bytes,
// well below the default max.message.bytes (1 MiB) that clients size their
// fetch buffers by.
const (
	compactBatchRecords = 1000
	compactBatchBytes   = 256 << 10
)

// keyCompaction compacts every partition of the topics whose
// cleanup.policy includes compact and that have enough dirty data: rows
// outside key-compacted objects (new since the last pass) holding at least
// min.cleanable.dirty.ratio of the partition's bytes, or any dirty row in an
// object older than max.compaction.lag.ms (default: TopicDefaults), as
// Kafka's cleaner picks logs.
//
// A pass rewrites the partition's whole log below the high watermark read
// at its start, in memory (partitions larger than KeyCompactMaxBytes, as
// stored or decoded, are skipped with a warning): for each key only the record with the highest
// offset survives; a surviving tombstone (null value) is dropped once its
// timestamp is older than delete.retention.ms (Kafka counts from when the
// cleaner first saw it; floe uses the record's timestamp). Records without
// a key and the partition's last record are always kept, the latter so the
// log never ends in a gap that no row covers. Control batches are dropped.
//
// Offsets are preserved with gaps, as Kafka does: each output batch keeps
// its records' offsets, and its lastOffsetDelta reaches up to the next
// batch's base offset, so the fetch path's walk of batches (base +
// lastOffsetDelta + 1 from the row's base offset) stays exact and needed no
// change. A contiguous stretch of source rows with no surviving record gets
// no row at all; Lookup serves an offset in such a gap from the next row.
func (c *Compactor) keyCompaction(ctx context.Context, l *metadata.JobLease) error {
	topics, err := c.store.Topics(ctx)
	if err != nil {
		return err
	}
	defaults := c.defaults.Get()
	var objects map[string]metadata.ObjectInfo
	for _, t := range topics {
		if _, compact := defaults.Policies(t.Configs); !compact {
			continue
		}
		if objects == nil {
			objs, err := c.store.Objects(ctx, metadata.ObjectLive)
			if err != nil {
				return err
			}
			objects = make(map[string]metadata.ObjectInfo, len(objs))
			for _, o := range objs {
				objects[o.Key] = o
			}
		}
		parts, err := c.store.Partitions(ctx, t.ID)
		if errors.Is(err, metadata.ErrUnknownTopic) {
			continue
		}
		if err != nil {
			return err
		}
		hold, held, err := c.hold(ctx, t)
		if err != nil {
			return err
		}
		pol := compactPolicy{
			tombstoneMs: defaults.Int(t.Configs, topicconfig.DeleteRetentionMs),
			maxLagMs:    defaults.Int(t.Configs, topicconfig.MaxCompactionLagMs),
			dirtyRatio:  defaults.Float(t.Configs, topicconfig.MinCleanableDirtyRatio),
		}
		for _, p := range parts {
			if err := l.Renew(ctx); err != nil {
				return err
			}
			if held {
				// Superseded records not yet in the topic's Iceberg
				// table stay until they are: compact below the hold.
				p.NextOffset = min(p.NextOffset, hold[p.Partition])
			}
			if err := c.compactPartition(ctx, t, p, objects, pol); err != nil {
				if errors.Is(err, metadata.ErrUnknownTopic) {
					break
				}
				// One partition's bad bytes must not keep every other
				// compacted topic uncompacted: skip it, report it.
				var ue *unreadableError
				if errors.As(err, &ue) {
					c.reportUnreadable(jobCompact, t.Name, ue)
					continue
				}
				return fmt.Errorf("key compaction of %s/%d: %w", t.Name, p.Partition, err)
			}
		}
	}
	return nil
}

// compactPolicy is a topic's key compaction settings, in milliseconds.
type compactPolicy struct {
	tombstoneMs int64
	maxLagMs    int64
	dirtyRatio  float64
}

func (c *Compactor) compactPartition(ctx context.Context, t metadata.Topic, p metadata.PartitionState, objects map[string]metadata.ObjectInfo, pol compactPolicy) error {
	rows, err := c.store.PartitionRows(ctx, t.ID, p.Partition, p.NextOffset)
	if err != nil {
		return err
	}
	var total, dirty int64
	overdue := false
	now := c.now()
	for _, r := range rows {
		total += r.ByteLength
		o, ok := objects[r.ObjectKey]
		if ok && o.Level == KeyCompactedLevel {
			continue
		}
		dirty += r.ByteLength
		// An object newer than the listing is not overdue.
		if ok && now.Sub(o.CreatedAt).Milliseconds() >= pol.maxLagMs {
			overdue = true
		}
	}
	if dirty == 0 || (float64(dirty) < pol.dirtyRatio*float64(total) && !overdue) {
		return nil
	}
	if total > c.cfg.KeyCompactMaxBytes {
		c.log.Warn("partition too large to key-compact in memory", "topic", t.Name, "partition", p.Partition, "bytes", total)
		return nil
	}
	recs := make([][]keptRecord, len(rows)) // per source row, in offset order
	var decoded int64
	latest := map[string]int64{}
	var last int64 = -1
	for i, r := range rows {
		data, err := c.bucket.GetRange(ctx, r.ObjectKey, r.ByteOffset, r.ByteLength)
		if err != nil {
			return fmt.Errorf("read %s: %w", r.ObjectKey, err)
		}
		if recs[i], err = rowRecords(r, data); err != nil {
			return err // an *unreadableError: keyCompaction skips the partition
		}
		// The decoded records are held beside the stored bytes, and
		// compressed batches decode to many times their size: past the
		// same bound the partition is skipped, so that the pass holds at
		// most the stored bytes, the records and the output (a subset of
		// them), three times KeyCompactMaxBytes.
		if decoded += decodedSize(recs[i]); decoded > c.cfg.KeyCompactMaxBytes {
			c.log.Warn("partition too large to key-compact in memory", "topic", t.Name, "partition", p.Partition, "bytes", total, "decoded_bytes_over", decoded)
			return nil
		}
		for _, k := range recs[i] {
			if k.rec.Key != nil {
				latest[string(k.rec.Key)] = k.offset
			}
			last = k.offset
		}
	}
	if last < 0 {
		return nil // only control batches: nothing a consumer reads, nothing to gain
	}
	cutoff := now.UnixMilli() - pol.tombstoneMs
	b := newRowBuilder(t.ID, p.Partition)
	if cc, ok := c.defaults.Get().Compression(t.Configs); ok {
		b.codec = &cc
	}
	removed := 0
	for i := 0; i < len(rows); {
		// One segment: source rows with contiguous offsets.
		j := i + 1
		for j < len(rows) && rows[j].BaseOffset == rows[j-1].EndOffset {
			j++
		}
		b.startSegment(rows[i].BaseOffset, rows[j-1].EndOffset)
		for _, rs := range recs[i:j] {
			for _, k := range rs {
				keep := k.offset == last || k.rec.Key == nil ||
					(latest[string(k.rec.Key)] == k.offset && (k.rec.Value != nil || k.timestamp >= cutoff))
				if keep {
					b.add(k)
				} else {
					removed++
				}
			}
		}
		b.endSegment()
		i = j
	}
	size := b.w.Size()
	parts, runs, sum := b.w.FinishParts(nil)
	if len(runs) > 1 {
		return fmt.Errorf("key compaction wrote %d runs for one partition", len(runs))
	}
	key := storage.NewObjectKey()
	start := time.Now()
	if err := storage.PutSummed(ctx, c.bucket, key, sum, parts...); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if time.Since(start) > c.cfg.Grace/2 {
		c.deleteQuietly(ctx, key)
		return fmt.Errorf("key compaction PUT took more than half the grace period: abandoned")
	}
	err = c.store.ReplaceRows(ctx, metadata.Replacement{
		Sources: rows, Key: key, Size: size, Level: KeyCompactedLevel,
		Rows: b.rows, Grace: c.cfg.Grace,
	})
	if errors.Is(err, metadata.ErrConflict) {
		c.metrics.conflicts.Inc()
		c.deleteQuietly(ctx, key)
		return nil
	}
	if err != nil {
		return err
	}
	c.metrics.keyCompactions.Inc()
	c.metrics.removedRecords.Add(float64(removed))
	c.metrics.recompressed.Add(float64(b.recompressed))
	c.log.Debug("key-compacted", "topic", t.Name, "partition", p.Partition, "rows_before", len(rows),
		"rows_after", len(b.rows), "removed_records", removed, "key", key)
	return nil
}

// rowRecords decodes the records of one source row with their absolute
// offsets, walking batches from the row's base offset as the fetch path does.
// Bytes that do not parse return an *unreadableError.
func rowRecords(r metadata.IndexEntry, data []byte) ([]keptRecord, error) {
	var out []keptRecord
	end, err := kafkaproto.WalkBatches(data, r.BaseOffset, func(h kafkaproto.BatchHeader, batch []byte, base int64) error {
		if h.IsControl() {
			return nil
		}
		_, recs, err := kafkaproto.DecodeRecords(batch)
		if err != nil {
			return fmt.Errorf("batch at offset %d: %w", base, err)
		}
		for _, rec := range recs {
			if rec.OffsetDelta < 0 || rec.OffsetDelta > h.LastOffsetDelta {
				return fmt.Errorf("record offset delta %d outside batch", rec.OffsetDelta)
			}
			out = append(out, keptRecord{offset: base + int64(rec.OffsetDelta), timestamp: h.RecordTimestamp(rec), rec: rec})
		}
		return nil
	})
	if err != nil {
		return nil, unreadable(r, err)
	}
	if end != r.EndOffset {
		return nil, unreadable(r, fmt.Errorf("batches end at %d", end))
	}
	return out, nil
}

// decodedSize is the memory recs hold: their structs and the bytes of
// their keys, values and headers.
func decodedSize(recs []keptRecord) int64 {
	n := int64(len(recs)) * int64(unsafe.Sizeof(keptRecord{}))
	for _, k := range recs {
		n += int64(len(k.rec.Key) + len(k.rec.Value))
		for _, h := range k.rec.Headers {
			n += int64(unsafe.Sizeof(h)) + int64(len(h.Key)+len(h.Value))
		}
	}
	return n
}

// rowBuilder lays surviving records out as batches and index rows. Within
// a segment [segStart, segEnd) the batches cover every offset from the
// first batch's base to segEnd, so one row serves the segment; a segment
// without survivors gets no row.
type rowBuilder struct {
	topic     metadata.TopicID
	partition int32
	w         *storage.ObjectWriter
	rows      []metadata.IndexEntry
	pos       int64 // byte position of the next batch in the run
	// codec is the topic's compression.type, nil for producer: batches are
	// written uncompressed then (Kafka's cleaner keeps each batch's codec,
	// which floe's output batches, gathered from many, do not have).
	codec        *kafkaproto.Compression
	recompressed int // batches written in codec

	segEnd  int64
	cover   int64 // first offset the pending batch covers
	pending []keptRecord
	size    int // estimated bytes of pending
	open    bool
}

func newRowBuilder(topic metadata.TopicID, partition int32) *rowBuilder {
	return &rowBuilder{topic: topic, partition: partition, w: storage.NewObjectWriter()}
}

func (b *rowBuilder) startSegment(start, end int64) {
	b.segEnd, b.cover, b.open = end, start, false
}

// add queues a surviving record; a full pending batch is written first,
// covering up to this record.
func (b *rowBuilder) add(k keptRecord) {
	switch {
	case len(b.pending) > 0 && k.offset-b.cover >= math.MaxInt32:
		// A gap too wide for one batch's offset deltas: end the batch and
		// the row after the last pending record; a new row starts here.
		b.flush(b.pending[len(b.pending)-1].offset + 1)
		b.open = false
		b.cover = k.offset
	case len(b.pending) >= compactBatchRecords || b.size >= compactBatchBytes:
		b.flush(k.offset)
	case len(b.pending) == 0 && k.offset-b.cover >= math.MaxInt32:
		b.open = false
		b.cover = k.offset
	}
	b.pending = append(b.pending, k)
	b.size += 32 + len(k.rec.Key) + len(k.rec.Value)
	for _, h := range k.rec.Headers {
		b.size += len(h.Key) + len(h.Value) + 4
	}
}

// flush writes the pending batch covering [cover, upTo).
func (b *rowBuilder) flush(upTo int64) {
	batch := encodeBatch(b.cover, upTo-b.cover, b.pending)
	if b.codec != nil {
		// encodeBatch's batches always recompress: err is never set.
		if nb, ok, err := kafkaproto.Recompress(batch, *b.codec); err == nil && ok {
			batch = nb
			b.recompressed++
		}
	}
	h, _ := kafkaproto.ParseBatchHeader(batch)
	b.w.AddSummed(storage.TopicID(b.topic), b.partition, batch, kafkaproto.BatchChecksum(batch), upTo-b.cover, h.FirstTimestamp, h.MaxTimestamp)
	if !b.open {
		b.rows = append(b.rows, metadata.IndexEntry{
			TopicID: b.topic, Partition: b.partition,
			BaseOffset: b.cover, EndOffset: b.cover, ByteOffset: b.pos,
			MinTimestamp: h.FirstTimestamp, MaxTimestamp: h.MaxTimestamp,
		})
		b.open = true
	}
	r := &b.rows[len(b.rows)-1]
	r.EndOffset = upTo
	r.ByteLength += int64(len(batch))
	r.Batches++
	r.MinTimestamp = min(r.MinTimestamp, h.FirstTimestamp)
	r.MaxTimestamp = max(r.MaxTimestamp, h.MaxTimestamp)
	b.pos += int64(len(batch))
	b.cover = upTo
	b.pending = b.pending[:0]
	b.size = 0
}

// endSegment writes the last batch of the segment, covering to its end; if
// that span does not fit a batch, the batch ends after its last record and
// the rest of the segment is a gap.
func (b *rowBuilder) endSegment() {
	if len(b.pending) > 0 {
		end := b.segEnd
		if end-b.cover > math.MaxInt32 {
			end = b.pending[len(b.pending)-1].offset + 1
		}
		b.flush(end)
	}
	b.open = false
}
