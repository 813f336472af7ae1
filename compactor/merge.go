package compactor

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"floe/kafkaproto"
	"floe/metadata"
	"floe/storage"
)

// merges plans merge jobs from the live objects and runs them one by one,
// renewing the lease between them. A job with a row it cannot read is
// skipped and reported (reportUnreadable), and the others still run; its
// objects stay as they are.
func (c *Compactor) merges(ctx context.Context, l *metadata.JobLease) error {
	objs, err := c.store.Objects(ctx, metadata.ObjectLive)
	if err != nil {
		return err
	}
	for _, job := range PlanMerges(objs, c.cfg.Plan, c.now()) {
		if err := l.Renew(ctx); err != nil {
			return err
		}
		if err := c.merge(ctx, job); err != nil {
			var ue *unreadableError
			if errors.As(err, &ue) {
				c.reportUnreadable(jobMerge, "", ue)
				continue
			}
			return fmt.Errorf("merge %d objects of level %d: %w", len(job.Keys), job.Level, err)
		}
	}
	return nil
}

// merge rewrites the rows of job's objects into one object of the next
// level: it reads each source object's rows with one ranged GET, lays them out
// grouped by partition in offset order, PUTs the object, then swaps the
// index rows in one metadata transaction. The batches are copied byte for
// byte, so a fetch returns the same bytes before and after.
//
// If the swap fails because a source row changed (retention, a topic
// deletion), the new object is deleted and the job is abandoned; the next
// round plans again. If the process dies between PUT and swap, the object
// is an orphan that GC deletes after the grace period.
//
// Each step (reading one source, laying out, PUT and swap) is paced (see
// pacer) so that a merge yields to a busy agent in the same process.
func (c *Compactor) merge(ctx context.Context, job MergeJob) error {
	p := c.newPacer()
	// The swap is the last step; pause after it too, before the next job.
	defer func() { _ = p.step(ctx) }()
	start := time.Now()
	rows, err := c.store.ObjectRows(ctx, job.Keys)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil // unreferenced already; GC marks and deletes them
	}
	slices.SortFunc(rows, compareRows)
	bodies, err := c.readSources(ctx, rows, p)
	if err != nil {
		return err
	}
	w := storage.NewObjectWriter()
	for _, r := range rows {
		b := bodies[r.ObjectKey]
		if err := addRow(w, r, b.data[r.ByteOffset-b.from:r.ByteOffset-b.from+r.ByteLength]); err != nil {
			return err
		}
	}
	// PUT as parts: the sources' bytes are not copied into one buffer.
	size := w.Size()
	parts, runs := w.FinishParts(nil)
	newRows := mergedRows(rows, runs)
	if err := p.step(ctx); err != nil {
		return err
	}
	key := storage.NewObjectKey()
	if err := c.bucket.Put(ctx, key, parts...); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	// An unknown object older than the grace period is deleted as an orphan
	// (by any compactor's GC); a swap this late could publish rows into an
	// object that is already gone. Half the grace period leaves a margin
	// for clock differences between the PUT and the listing.
	if time.Since(start) > c.cfg.Grace/2 {
		c.deleteQuietly(ctx, key)
		return fmt.Errorf("merge took %v, more than half the grace period %v: abandoned", time.Since(start), c.cfg.Grace)
	}
	err = c.store.ReplaceRows(ctx, metadata.Replacement{
		Sources: rows, Key: key, Size: size, Level: job.Level + 1,
		Rows: newRows, Grace: c.cfg.Grace,
	})
	if errors.Is(err, metadata.ErrConflict) {
		c.metrics.conflicts.Inc()
		c.deleteQuietly(ctx, key)
		c.log.Info("merge abandoned: sources changed", "level", job.Level, "objects", len(job.Keys))
		return nil
	}
	if err != nil {
		// The swap may or may not have committed: leave the object. If it
		// did not, GC deletes it as an orphan after the grace period.
		return err
	}
	c.metrics.merges.Inc()
	c.metrics.mergedObjects.Add(float64(len(job.Keys)))
	c.metrics.mergedBytes.Add(float64(size))
	c.log.Debug("merged", "key", key, "level", job.Level+1, "sources", len(job.Keys),
		"rows_before", len(rows), "rows_after", len(newRows), "bytes", size)
	return nil
}

// sourceBody is the bytes [from, from+len(data)) of one source object.
type sourceBody struct {
	from int64
	data []byte
}

// readSources GETs, for each source object, the one byte range spanning all
// its rows: one request per object rather than one per (object,
// partition), since a merge usually takes every row of its objects.
func (c *Compactor) readSources(ctx context.Context, rows []metadata.IndexEntry, p *pacer) (map[string]sourceBody, error) {
	type span struct{ lo, hi int64 }
	spans := map[string]span{}
	var order []string
	for _, r := range rows {
		sp, ok := spans[r.ObjectKey]
		if !ok {
			order = append(order, r.ObjectKey)
			sp = span{r.ByteOffset, r.ByteOffset + r.ByteLength}
		}
		spans[r.ObjectKey] = span{min(sp.lo, r.ByteOffset), max(sp.hi, r.ByteOffset+r.ByteLength)}
	}
	bodies := make(map[string]sourceBody, len(spans))
	for _, key := range order {
		if err := p.step(ctx); err != nil {
			return nil, err
		}
		sp := spans[key]
		data, err := c.bucket.GetRange(ctx, key, sp.lo, sp.hi-sp.lo)
		if err != nil {
			return nil, fmt.Errorf("read %s [%d,%d): %w", key, sp.lo, sp.hi, err)
		}
		if int64(len(data)) != sp.hi-sp.lo {
			return nil, fmt.Errorf("read %s [%d,%d): got %d bytes", key, sp.lo, sp.hi, len(data))
		}
		bodies[key] = sourceBody{from: sp.lo, data: data}
	}
	return bodies, nil
}

func (c *Compactor) deleteQuietly(ctx context.Context, key string) {
	if err := c.bucket.Delete(context.WithoutCancel(ctx), key); err != nil {
		c.log.Warn("delete abandoned object failed; GC will remove it", "key", key, "err", err)
	}
}

// compareRows orders rows by topic id, partition and base offset: the order
// ObjectWriter lays out a partition's batches in (it keeps Add order within
// a partition).
func compareRows(a, b metadata.IndexEntry) int {
	if c := bytes.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Partition, b.Partition); c != 0 {
		return c
	}
	return cmp.Compare(a.BaseOffset, b.BaseOffset)
}

// addRow adds the batches of one source row to w, checking that they span
// exactly the row's offsets: a mismatch means the row and its bytes
// disagree, and merging them would corrupt what fetches return. Such bytes
// return an *unreadableError. Merges copy batches whole and never decode
// their records.
func addRow(w *storage.ObjectWriter, r metadata.IndexEntry, data []byte) error {
	end, err := kafkaproto.WalkBatches(data, r.BaseOffset, func(h kafkaproto.BatchHeader, batch []byte, _ int64) error {
		w.Add(storage.TopicID(r.TopicID), r.Partition, batch, int64(h.LastOffsetDelta)+1, h.FirstTimestamp, h.MaxTimestamp)
		return nil
	})
	if err != nil {
		return unreadable(r, err)
	}
	if end != r.EndOffset {
		return unreadable(r, fmt.Errorf("batches span %d offsets", end-r.BaseOffset))
	}
	return nil
}

// mergedRows computes the index rows of the merged object: rows (sorted by
// compareRows) were added in that order, so each partition's run holds
// their bytes back to back. Source rows whose offsets are contiguous
// collapse into one row; a gap (offsets of that partition in an object not
// merged here) starts a new row, because the fetch path walks batches from
// a row's base offset and must not walk across it.
func mergedRows(rows []metadata.IndexEntry, runs []storage.Run) []metadata.IndexEntry {
	var out []metadata.IndexEntry
	ri := 0
	for _, run := range runs {
		pos := run.Offset
		for ri < len(rows) && rows[ri].TopicID == metadata.TopicID(run.TopicID) && rows[ri].Partition == run.Partition {
			r := rows[ri]
			ri++
			if n := len(out); n > 0 {
				last := &out[n-1]
				if last.TopicID == r.TopicID && last.Partition == r.Partition && last.EndOffset == r.BaseOffset {
					last.EndOffset = r.EndOffset
					last.ByteLength += r.ByteLength
					last.Batches += r.Batches
					last.MinTimestamp = min(last.MinTimestamp, r.MinTimestamp)
					last.MaxTimestamp = max(last.MaxTimestamp, r.MaxTimestamp)
					pos += r.ByteLength
					continue
				}
			}
			out = append(out, metadata.IndexEntry{
				TopicID: r.TopicID, Partition: r.Partition,
				BaseOffset: r.BaseOffset, EndOffset: r.EndOffset,
				ByteOffset: pos, ByteLength: r.ByteLength, Batches: r.Batches,
				MinTimestamp: r.MinTimestamp, MaxTimestamp: r.MaxTimestamp,
			})
			pos += r.ByteLength
		}
	}
	return out
}
