package compactor

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"floe/internal/bufpool"
	"floe/kafkaproto"
	"floe/metadata"
	"floe/storage"
)

// merges plans merge jobs from the live objects and runs them one by one,
// renewing the lease between them. A job with a row it cannot read is
// skipped and reported (reportUnreadable), and the others still run; its
// objects stay as they are.
//
// Once the merges of a round have run for an Interval, no further merge
// starts: the rest wait for the next round, which follows at once, after
// retention and key compaction. A backlog of merges — paced ones in floe dev
// take seconds each beside a busy agent — would otherwise hold back the
// round's other jobs for minutes, and with them the compaction of a
// cleanup.policy=compact topic that clients wait for.
func (c *Compactor) merges(ctx context.Context, l *metadata.JobLease) error {
	objs, err := c.store.Objects(ctx, metadata.ObjectLive)
	if err != nil {
		return err
	}
	start := time.Now()
	for i, job := range PlanMerges(objs, c.cfg.Plan, c.now()) {
		if i > 0 && time.Since(start) >= c.cfg.Interval {
			return nil
		}
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
// level: it streams each source object's rows, grouped by partition in
// offset order, into the PUT of the new object (writeMerged), then swaps
// the index rows in one metadata transaction. The batches are copied byte
// for byte, so a fetch returns the same bytes before and after, except in
// topics whose compression.type names a codec: their batches are
// recompressed into it, with the same records and offsets.
//
// If the swap fails because a source row changed (retention, a topic
// deletion), the new object is deleted and the job is abandoned; the next
// round plans again. If the process dies between PUT and swap, the object
// is an orphan that GC deletes after the grace period.
//
// Each step (reading one window of a source, the PUT's end and the swap)
// is paced (see pacer) so that a merge yields to a busy agent in the same
// process.
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
	key := storage.NewObjectKey()
	size, runs, laid, err := c.writeMerged(ctx, key, rows, p)
	if err != nil {
		return err
	}
	newRows := mergedRows(laid, runs, c.cfg.MaxRowBytes)
	if err := p.step(ctx); err != nil {
		return err
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

// writeMerged PUTs the object of rows (sorted by compareRows) under key
// and returns its size, its runs and rows as laid out in it (their
// ByteLength what was written). The object is streamed: its size is known
// from the rows before a byte is read, and a goroutine writes its batches,
// read through one window per source object (sources), into the PUT as
// the bucket takes them. So a merge holds its windows, about
// MergeBufferBytes, and the bucket's upload buffer (an S3 part), however
// large its objects; a merge that held its sources whole took up to
// MaxBytes (256 MiB) of memory. Rows of topics whose compression.type
// names a codec are read and recompressed first (recompressRows), since
// their size is known only then; they are held, up to another
// MergeBufferBytes. Bytes that contradict their row fail the PUT, which
// stores nothing, with an *unreadableError.
func (c *Compactor) writeMerged(ctx context.Context, key string, rows []metadata.IndexEntry, p *pacer) (int64, []storage.Run, []metadata.IndexEntry, error) {
	srcs := c.sources(rows)
	defer func() {
		for _, s := range srcs { // the writer is done with them
			s.pool.Put(s.buf)
		}
	}()
	recoded, err := c.recompressRows(ctx, rows, srcs, p)
	if err != nil {
		return 0, nil, nil, err
	}
	laid := slices.Clone(rows)
	var body int64
	nruns := 0
	for i, r := range rows {
		if b, ok := recoded[i]; ok {
			laid[i].ByteLength = int64(len(b))
		}
		body += laid[i].ByteLength
		if r.ByteLength > 0 && (i == 0 || rows[i-1].TopicID != r.TopicID || rows[i-1].Partition != r.Partition) {
			nruns++
		}
	}
	size := storage.ObjectSize(body, nruns)

	pr, pw := io.Pipe()
	var runs []storage.Run
	written := make(chan error, 1)
	go func() {
		err := func() error {
			w := storage.NewStreamWriter(pw)
			for i, r := range rows {
				var err error
				if b, ok := recoded[i]; ok {
					_, err = kafkaproto.WalkBatches(b, r.BaseOffset, func(h kafkaproto.BatchHeader, b []byte, _ int64) error {
						return w.Add(storage.TopicID(r.TopicID), r.Partition, b, int64(h.LastOffsetDelta)+1, h.FirstTimestamp, h.MaxTimestamp)
					})
				} else {
					err = copyRow(ctx, w, srcs[r.ObjectKey], r, p)
				}
				if err != nil {
					return err
				}
			}
			var err error
			runs, err = w.Finish()
			return err
		}()
		pw.CloseWithError(err) // nil: the PUT reads EOF
		written <- err
	}()
	putErr := storage.PutStream(ctx, c.bucket, key, size, pr)
	// A PUT that stopped reading early leaves the writer blocked on the
	// pipe: closing it ends the writer.
	pr.CloseWithError(errPutDone)
	err = <-written
	if err != nil && !errors.Is(err, errPutDone) {
		return 0, nil, nil, err // the PUT failed on it, storing nothing
	}
	if putErr != nil {
		return 0, nil, nil, fmt.Errorf("put %s: %w", key, putErr)
	}
	return size, runs, laid, nil
}

// errPutDone ends a merge's writer when its PUT stopped reading.
var errPutDone = errors.New("put done")

// source reads the rows of one object of a merge, in byte order, through
// a window of the object's bytes: the rows sorted by compareRows visit
// each object's runs in the order they lie in it (objects are laid out by
// topic id and partition), so every byte is GET once, a window at a time.
type source struct {
	bucket storage.Bucket
	key    string
	end    int64 // the end of the last row read from it
	window int64
	// data is the bytes [from, from+len(data)) of the object, in buf,
	// which each window is read into (storage.ReadRange) rather than
	// allocated afresh: merges run one at a time and take their windows
	// from the compactor's pool, so a merge's windows are the last one's.
	from int64
	data []byte
	buf  []byte
	pool *bufpool.Pool // where buf comes from and goes back to (the compactor's windows)
}

// sources returns one source per object of rows, each with a window of
// MergeBufferBytes shared out over them (at least 64 KiB).
func (c *Compactor) sources(rows []metadata.IndexEntry) map[string]*source {
	srcs := map[string]*source{}
	for _, r := range rows {
		s, ok := srcs[r.ObjectKey]
		if !ok {
			s = &source{bucket: c.bucket, key: r.ObjectKey, pool: c.windows}
			srcs[r.ObjectKey] = s
		}
		s.end = max(s.end, r.ByteOffset+r.ByteLength)
	}
	window := max(c.cfg.MergeBufferBytes/int64(len(srcs)), 64<<10)
	for _, s := range srcs {
		s.window = window
	}
	return srcs
}

// read returns the n bytes at pos, valid until the next read: from the
// window, or from a new one read from pos into the source's buffer (a step
// of the pacer). A batch larger than the window is read whole, into a
// buffer of its size.
func (s *source) read(ctx context.Context, pos, n int64, p *pacer) ([]byte, error) {
	if pos >= s.from && pos+n <= s.from+int64(len(s.data)) {
		return s.data[pos-s.from : pos-s.from+n], nil
	}
	s.data = nil
	if err := p.step(ctx); err != nil {
		return nil, err
	}
	length := max(min(s.window, s.end-pos), n)
	if int64(cap(s.buf)) < length {
		s.pool.Put(s.buf)
		s.buf = s.pool.Get(int(length))
	}
	data := s.buf[:length]
	if err := storage.ReadRange(ctx, s.bucket, s.key, pos, data); err != nil {
		return nil, fmt.Errorf("read %s [%d,%d): %w", s.key, pos, pos+length, err)
	}
	s.from, s.data = pos, data
	return data[:n], nil
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

// copyRow writes the batches of one source row to w (eachBatch).
func copyRow(ctx context.Context, w *storage.StreamWriter, src *source, r metadata.IndexEntry, p *pacer) error {
	return eachBatch(ctx, src, r, p, func(h kafkaproto.BatchHeader, b []byte) error {
		return w.Add(storage.TopicID(r.TopicID), r.Partition, b, int64(h.LastOffsetDelta)+1, h.FirstTimestamp, h.MaxTimestamp)
	})
}

// eachBatch calls fn with each batch of one source row, read through src
// (b is valid during the call), checking that they span exactly the row's
// offsets: a mismatch means the row and its bytes disagree, and merging
// them would corrupt what fetches return. Such bytes return an
// *unreadableError; an error from fn is returned as is. Merges copy
// batches whole and decode records only to recompress them (recompress.go).
func eachBatch(ctx context.Context, src *source, r metadata.IndexEntry, p *pacer, fn func(h kafkaproto.BatchHeader, b []byte) error) error {
	pos, end, base := r.ByteOffset, r.ByteOffset+r.ByteLength, r.BaseOffset
	for pos < end {
		if end-pos < kafkaproto.BatchHeaderSize {
			return unreadable(r, fmt.Errorf("%d bytes at offset %d, less than a batch header", end-pos, base))
		}
		hdr, err := src.read(ctx, pos, kafkaproto.BatchHeaderSize, p)
		if err != nil {
			return err
		}
		h, err := kafkaproto.ParseBatchHeader(hdr)
		if err != nil {
			return unreadable(r, err)
		}
		size := int64(h.TotalSize())
		if h.Magic != 2 || size < kafkaproto.BatchHeaderSize || size > end-pos {
			return unreadable(r, fmt.Errorf("batch at offset %d: magic %d, %d bytes of %d left", base, h.Magic, size, end-pos))
		}
		batch, err := src.read(ctx, pos, size, p)
		if err != nil {
			return err
		}
		var ferr error
		next, err := kafkaproto.WalkBatches(batch, base, func(h kafkaproto.BatchHeader, b []byte, _ int64) error {
			ferr = fn(h, b)
			return ferr
		})
		if ferr != nil {
			return ferr
		}
		if err != nil {
			return unreadable(r, err)
		}
		base, pos = next, pos+size
	}
	if base != r.EndOffset {
		return unreadable(r, fmt.Errorf("batches span %d offsets", base-r.BaseOffset))
	}
	return nil
}

// mergedRows computes the index rows of the merged object: rows (sorted by
// compareRows) were added in that order, so each partition's run holds
// their bytes back to back. Source rows whose offsets are contiguous
// collapse into one row; a gap (offsets of that partition in an object not
// merged here) starts a new row, because the fetch path walks batches from
// a row's base offset and must not walk across it. So does a row that
// would grow past maxRow bytes (0: no bound): readers take a row whole —
// a fetch reads its bytes into the read cache and its answer, key
// compaction and the Iceberg converter decode it — so rows stay about the
// size of an agent's flush instead of a partition's whole share of a
// merged object (up to --max-merge-bytes).
func mergedRows(rows []metadata.IndexEntry, runs []storage.Run, maxRow int64) []metadata.IndexEntry {
	var out []metadata.IndexEntry
	ri := 0
	for _, run := range runs {
		pos := run.Offset
		for ri < len(rows) && rows[ri].TopicID == metadata.TopicID(run.TopicID) && rows[ri].Partition == run.Partition {
			r := rows[ri]
			ri++
			if n := len(out); n > 0 {
				last := &out[n-1]
				if last.TopicID == r.TopicID && last.Partition == r.Partition && last.EndOffset == r.BaseOffset &&
					(maxRow <= 0 || last.ByteLength+r.ByteLength <= maxRow) {
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
