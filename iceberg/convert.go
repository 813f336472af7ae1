package iceberg

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"floe/internal/periodic"
	"floe/kafkaproto"
	"floe/metadata"
	"floe/schemaregistry"
	"floe/storage"
)

// Table properties floe keeps on every topic table.
const (
	// propNextOffsets is the JSON object {"partition": next offset} of
	// what the table holds: every record of partition p below its value is
	// in the table (or was a control batch or aborted). It is committed
	// with the data files it covers, as a table property (the converter
	// resumes from it; maintenance leaves it alone) and in the summary of
	// the snapshot that added them.
	propNextOffsets = "floe.next-offsets"
	propTopic       = "floe.topic"
	propTopicID     = "floe.topic-id"
)

// ConverterConfig configures a Converter. Start from DefaultConverterConfig.
type ConverterConfig struct {
	// ID names this process as the owner of table leases.
	ID string
	// Interval is the pause between cycles (--iceberg-interval): how stale
	// a table may be.
	Interval time.Duration
	// LeaseTTL is how long a table lease lasts without renewal.
	LeaseTTL time.Duration
	// Default converts topics that do not set floe.iceberg.enabled.
	Default bool
	// TargetFileSize is the Parquet file size the writer aims at.
	TargetFileSize int64
	// CycleBytes bounds the record bytes (as stored, compressed) one cycle
	// reads from one table's topic, split evenly over its partitions, so a
	// backfill goes in steps that commit and memory stays bounded.
	CycleBytes int64
	// Maintenance is how often a table's snapshots are expired, manifests
	// rewritten, small files compacted and orphan files deleted.
	Maintenance MaintenanceConfig
}

// MemoryBytes bounds the heap one conversion cycle holds live (write.go):
// TargetFileSize/2 + 56 MiB, 120 MiB at the default 128 MiB files:
//
//   - the row group being written, compressed, until it is done: a
//     quarter of TargetFileSize, in a buffer grown by doubling, so up to
//     TargetFileSize/2 (a typed table's and its dead-letter table's row
//     groups together, dlqFileSize);
//   - the index row being decoded, up to 8 MiB (an agent's --flush-bytes,
//     the compactor's --max-row-bytes: a merged object is rows of at most
//     that), and the next one as it is read: 16 MiB;
//   - the Arrow batches in flight, six of up to 512 KiB (batchBytes) in
//     buffers grown by doubling: 6 MiB, and a dead-letter table's, an
//     eighth of that;
//   - two zstd encoders of about 7 MiB (pageZstd): a typed table's and its
//     dead-letter table's writers compress at the same time;
//   - each column's page and dictionary being encoded, up to 256 KiB each
//     (writePageBytes, writeDictBytes), about 8 MiB for the benchmarks'
//     twenty fields; and what the cycle allocates while a GC marks, which
//     that GC counts live: the rest of the fixed 56 MiB.
//
// Measured (TestConvertMemoryWithinBudget: 1 KiB orders of twenty varied
// fields, 8 MiB objects, a binary table and each typed format), live at
// most: 41 MiB at 4 MiB files (budget 58), 49 at 16 MiB (64), 60 at
// 32 MiB (72), 91 at 128 MiB (120).
//
// Maintenance has no term of its own: it runs after a table's cycle, in
// the same loop (RunOnce), never beside one, and holds less (compact):
// it writes as a cycle writes (writeTable, one batch queued), reads one
// small file at a time in batches of about batchBytes, and decodes no
// index rows. Measured (TestMaintainMemoryWithinBudget: the same orders
// in files of a sixteenth of the target, a group of about one target
// file compacted; each format at 16 MiB files, binary and Avro at the
// others), live at most: 21 MiB at 4 MiB files, 41 at 16 MiB, 46 at
// 32 MiB, 63 at 64 MiB, 87 at 128 MiB; with iceberg-go's write
// properties and reads, 94-120 MiB at 16 MiB files.
func (c ConverterConfig) MemoryBytes() int64 { return c.TargetFileSize/2 + convertFixedBytes }

// convertFixedBytes is the part of MemoryBytes that does not grow with
// the file size.
const convertFixedBytes = 56 << 20

// DefaultConverterConfig returns production defaults: a 60 s freshness.
func DefaultConverterConfig(id string) ConverterConfig {
	return ConverterConfig{
		ID:             id,
		Interval:       time.Minute,
		LeaseTTL:       time.Minute,
		TargetFileSize: 128 << 20,
		CycleBytes:     1 << 30,
		Maintenance:    DefaultMaintenanceConfig(),
	}
}

// Converter converts topics into tables, one cycle per table every Interval.
type Converter struct {
	cfg     ConverterConfig
	store   metadata.Store
	bucket  storage.Bucket
	cat     *Catalog
	schemas SchemaSource
	log     *slog.Logger
	metrics *metrics
	now     func() time.Time

	mu          sync.Mutex
	lastMaint   map[string]time.Time // per table
	foreignLogs map[string]time.Time // reportOnce's keys, last logged

	loop *periodic.Loop

	// afterDLQCommit, when set (tests), runs between a typed cycle's
	// dead-letter commit and its table commit; an error ends the cycle
	// there, as a crash would.
	afterDLQCommit func() error
}

// NewConverter returns a converter; it does nothing until Start or RunOnce.
func NewConverter(cfg ConverterConfig, store metadata.Store, bucket storage.Bucket, cat *Catalog, log *slog.Logger) *Converter {
	return &Converter{
		cfg: cfg, store: store, bucket: bucket, cat: cat,
		// Typed tables decode with the registry's schemas, read from
		// the same store as the agents' registry serves them.
		schemas:     schemaregistry.New(schemaregistry.Config{Store: store}),
		log:         log.With("component", "iceberg", "owner", cfg.ID),
		metrics:     newMetrics(),
		now:         time.Now,
		lastMaint:   map[string]time.Time{},
		foreignLogs: map[string]time.Time{},
	}
}

// Gatherer exposes the converter's metrics (floe_iceberg_*).
func (c *Converter) Gatherer() prometheus.Gatherer { return c.metrics.reg }

// Start runs cycles every Interval until Close.
func (c *Converter) Start(ctx context.Context) {
	c.loop = periodic.Start(ctx, c.cfg.Interval, c.RunOnce, func(err error) {
		c.log.Warn("iceberg cycle failed", "err", err)
	})
}

// Close stops the loop and waits for the running cycle.
func (c *Converter) Close() { c.loop.Close() }

// Enabled reports whether topic t is converted.
func (c *Converter) Enabled(t metadata.Topic) bool {
	if v, ok := t.Configs[ConfigEnabled]; ok {
		return v == "true"
	}
	return c.cfg.Default
}

// RunOnce runs one cycle of every enabled topic's table, each under its
// lease (a table another process holds is skipped). It returns the errors
// of the tables that failed; the others still ran.
func (c *Converter) RunOnce(ctx context.Context) error {
	topics, err := c.store.Topics(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range topics {
		if ctx.Err() != nil {
			break
		}
		if !c.Enabled(t) || metadata.IsInternalTopic(t.Name) {
			continue
		}
		name := TableName(t.Name)
		l, err := metadata.AcquireJobLease(ctx, c.store, "iceberg/"+name, c.cfg.ID, c.cfg.LeaseTTL)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if l == nil {
			continue
		}
		err = c.cycle(ctx, l, t)
		if err == nil {
			err = c.maybeMaintain(ctx, l, t)
		}
		if rerr := l.Release(ctx); rerr != nil {
			c.log.Warn("release table lease failed", "table", name, "err", rerr)
		}
		switch {
		case err == nil || ctx.Err() != nil:
		case errors.Is(err, metadata.ErrUnknownTopic):
			// The topic was deleted while its cycle ran: nothing is
			// left to convert, and its table is the deletion's to drop.
			c.log.Debug("topic deleted during its cycle", "table", name)
		default:
			errs = append(errs, fmt.Errorf("table %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// errForeign marks a table that belongs to another topic (one deleted and
// recreated under the same name, or one whose name maps to the same table).
var errForeign = errors.New("table belongs to another topic")

// errLayout marks a table whose layout (binary, typed, dead-letter) is
// not the one its topic's configs ask for.
var errLayout = errors.New("table has another layout")

// tableKind is a table's layout: its schema, its partition spec's
// columns, its floe.layout property.
type tableKind int

const (
	kindBinary tableKind = iota
	kindTyped
	kindDLQ
)

// table loads topic t's table, creating it if missing. A table whose
// floe.topic-id is another topic's returns errForeign.
func (c *Converter) table(ctx context.Context, t metadata.Topic) (*table.Table, error) {
	return c.tableOf(ctx, t, kindBinary, true)
}

// tableOf loads topic t's table of kind k, creating it if missing and
// create is set (else nil). A table whose floe.topic-id is another
// topic's returns errForeign; one of another layout errLayout.
func (c *Converter) tableOf(ctx context.Context, t metadata.Topic, k tableKind, create bool) (*table.Table, error) {
	name, sc, layout := TableName(t.Name), Schema(), ""
	switch k {
	case kindTyped:
		sc, layout = TypedSchema(), layoutTyped
	case kindDLQ:
		name, sc, layout = DLQTableName(t.Name), DLQSchema(), layoutDLQ
	}
	tbl, err := c.cat.loadNamed(ctx, name)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		if !create {
			return nil, nil
		}
		ps, pending, perr := tableSpec(t, k)
		if perr != nil {
			return nil, fmt.Errorf("topic %s: %s: %w", t.Name, ConfigPartitionSpec, perr)
		}
		props := iceberg.Properties{
			propTopic:   t.Name,
			propTopicID: hex.EncodeToString(t.ID[:]),
			// One manifest per commit otherwise; merged past 100.
			"commit.manifest-merge.enabled": "true",
			// Bound the metadata.json files each commit leaves behind.
			"write.metadata.delete-after-commit.enabled": "true",
			"write.metadata.previous-versions-max":       "20",
		}
		if layout != "" {
			props[propLayout] = layout
		}
		if pending != "" {
			props[propPendingSpec] = pending
		}
		tbl, err = c.cat.createNamed(ctx, name, sc, ps, props)
		if errors.Is(err, catalog.ErrTableAlreadyExists) {
			tbl, err = c.cat.loadNamed(ctx, name)
		}
	}
	if err != nil {
		return nil, err
	}
	if id := tbl.Properties()[propTopicID]; id != hex.EncodeToString(t.ID[:]) {
		return nil, fmt.Errorf("%w: %s (topic id %s, this topic %x)", errForeign, tbl.Properties()[propTopic], id, t.ID[:])
	}
	if got := tbl.Properties()[propLayout]; got != layout {
		return nil, fmt.Errorf("%w: table %s is %s, the topic's configs ask %s (drop the table to convert the topic afresh from its log start)",
			errLayout, name, layoutName(got), layoutName(layout))
	}
	return tbl, nil
}

// tableSpec is the partition spec a table of kind k is created with, and
// for a typed table, the spec left pending until value columns come
// (typedSpec). A dead-letter table, whose records have no value columns,
// takes the spec's terms over the Kafka columns.
func tableSpec(t metadata.Topic, k tableKind) (iceberg.PartitionSpec, string, error) {
	spec := DefaultPartitionSpec
	if s, ok := t.Configs[ConfigPartitionSpec]; ok {
		spec = s
	}
	switch k {
	case kindTyped:
		return typedSpec(spec)
	case kindDLQ:
		terms, err := parseSpecTerms(spec)
		if err != nil {
			return iceberg.PartitionSpec{}, "", err
		}
		terms = slices.DeleteFunc(terms, func(t specTerm) bool { return !slices.Contains(kafkaSpecColumns, t.col) })
		ps, err := bindSpec(spec, terms, DLQSchema(), false)
		return ps, "", err
	}
	ps, err := ParsePartitionSpec(spec)
	return ps, "", err
}

func layoutName(l string) string {
	if l == "" {
		return "binary"
	}
	return l
}

// NextOffsets returns the offsets a table holds records below, per
// partition (absent partitions: none yet).
func NextOffsets(tbl *table.Table) (map[int32]int64, error) {
	out := map[int32]int64{}
	v, ok := tbl.Properties()[propNextOffsets]
	if !ok {
		return out, nil
	}
	var m map[string]int64
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		return nil, fmt.Errorf("table %s: %s %q: %w", tbl.Identifier(), propNextOffsets, v, err)
	}
	for k, off := range m {
		p, err := strconv.ParseInt(k, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("table %s: %s: partition %q", tbl.Identifier(), propNextOffsets, k)
		}
		out[int32(p)] = off
	}
	return out, nil
}

func encodeOffsets(m map[int32]int64) string {
	s := make(map[string]int64, len(m))
	for p, off := range m {
		s[strconv.Itoa(int(p))] = off
	}
	b, _ := json.Marshal(s) // sorted keys
	return string(b)
}

// span is one partition's part of a cycle: records [from, to) are read,
// up to budget bytes; next is where the cycle got to.
type span struct {
	partition int32
	from, to  int64
	budget    int64
	next      int64
	aborted   []metadata.AbortedTxn
}

// cycle converts what topic t committed since the table's last commit.
func (c *Converter) cycle(ctx context.Context, l *metadata.JobLease, t metadata.Topic) error {
	name := TableName(t.Name)
	start := time.Now()
	if err := topicTypedConfig(t).supported(); err != nil {
		// Nothing is written in a layout the topic did not ask for; the
		// records wait (retention holds them) for a floe that converts it.
		c.metrics.cycles.WithLabelValues(name, "unsupported").Inc()
		c.reportOnce("unsupported/"+name, "topic not converted: its typed table config is not supported by this floe", name, err)
		return nil
	}
	if topicTypedConfig(t).typed() {
		return c.typedCycle(ctx, l, t)
	}
	tbl, err := c.table(ctx, t)
	if errors.Is(err, errForeign) || errors.Is(err, errLayout) {
		c.reportOnce(name, "topic not converted: its table belongs to another topic or has another layout (drop or rename the table, or rename the topic)", name, err)
		c.metrics.cycles.WithLabelValues(name, "foreign").Inc()
		return nil
	}
	if err != nil {
		c.failed(name, err)
		return err
	}
	spans, next, err := c.plan(ctx, t, tbl)
	if err != nil {
		c.failed(name, err)
		return err
	}
	if len(spans) == 0 {
		c.metrics.cycles.WithLabelValues(name, "idle").Inc()
		return c.updateLag(ctx, t, name, next)
	}
	as, err := arrowSchema()
	if err != nil {
		return err
	}
	var files []iceberg.DataFile
	var rows, bytes int64
	for df, err := range writeRecords(ctx, tbl, as, c.records(ctx, t, spans), c.cfg.TargetFileSize) {
		if err != nil {
			c.failed(name, err)
			return fmt.Errorf("write: %w", err)
		}
		files = append(files, df)
		rows += df.Count()
		bytes += df.FileSizeBytes()
	}
	for _, s := range spans {
		next[s.partition] = s.next
	}
	if err := l.Renew(ctx); err != nil {
		c.failed(name, err)
		return err // the files written are orphans
	}
	offsets := encodeOffsets(next)
	txn := tbl.NewTransaction()
	// Only on top of the snapshot this cycle read: a converter that lost
	// its lease cannot commit over the one that took it.
	if err := txn.AssertRefSnapshotID(""); err != nil {
		return err
	}
	if len(files) > 0 {
		if err := txn.AddDataFiles(ctx, files, iceberg.Properties{propNextOffsets: offsets, propTopic: t.Name}); err != nil {
			c.failed(name, err)
			return fmt.Errorf("add data files: %w", err)
		}
	}
	if err := txn.SetProperties(iceberg.Properties{propNextOffsets: offsets}); err != nil {
		return err
	}
	if _, err := txn.Commit(ctx); err != nil {
		if errors.Is(err, table.ErrCommitFailed) {
			c.metrics.conflicts.WithLabelValues(name).Inc()
			c.metrics.cycles.WithLabelValues(name, "conflict").Inc()
		} else {
			c.failed(name, err)
		}
		// Whether or not the catalog took it, the next cycle reads the
		// committed offsets and goes on from there.
		return fmt.Errorf("commit: %w", err)
	}
	c.metrics.cycles.WithLabelValues(name, "ok").Inc()
	c.metrics.commits.WithLabelValues(name).Inc()
	c.metrics.rows.WithLabelValues(name).Add(float64(rows))
	c.metrics.bytes.WithLabelValues(name).Add(float64(bytes))
	c.metrics.files.WithLabelValues(name).Add(float64(len(files)))
	c.log.Debug("iceberg commit", "table", name, "rows", rows, "files", len(files), "bytes", bytes,
		"offsets", offsets, "took", time.Since(start))
	return c.updateLag(ctx, t, name, next)
}

// failed counts a cycle of table name that ended with err: "deleted" when
// its topic went away while it ran, else "failed".
func (c *Converter) failed(name string, err error) {
	result := "failed"
	if errors.Is(err, metadata.ErrUnknownTopic) {
		result = "deleted"
	}
	c.metrics.cycles.WithLabelValues(name, result).Inc()
}

// plan returns the spans of partitions with records to convert, and the
// table's next offsets (to be advanced by the spans).
func (c *Converter) plan(ctx context.Context, t metadata.Topic, tbl *table.Table) ([]*span, map[int32]int64, error) {
	next, err := NextOffsets(tbl)
	if err != nil {
		return nil, nil, err
	}
	parts, err := c.store.Partitions(ctx, t.ID)
	if err != nil {
		return nil, nil, err
	}
	open, err := c.store.FirstOpenOffsets(ctx, t.ID)
	if err != nil {
		return nil, nil, err
	}
	var spans []*span
	budget := max(c.cfg.CycleBytes/int64(max(len(parts), 1)), 1)
	for _, p := range parts {
		from := next[p.Partition]
		if from < p.LogStartOffset {
			if from > 0 || p.LogStartOffset > 0 {
				c.log.Warn("records deleted before conversion: the table skips them",
					"table", TableName(t.Name), "partition", p.Partition, "from", from, "log_start", p.LogStartOffset)
				c.metrics.skipped.WithLabelValues(TableName(t.Name)).Add(float64(p.LogStartOffset - from))
			}
			from = p.LogStartOffset
		}
		to := p.NextOffset
		if o, ok := open[p.Partition]; ok && o < to {
			to = o // the last stable offset: an open transaction may still abort
		}
		next[p.Partition] = from
		if from >= to {
			continue
		}
		aborted, err := c.store.AbortedTxns(ctx, t.ID, p.Partition, from, to)
		if err != nil {
			return nil, nil, err
		}
		spans = append(spans, &span{partition: p.Partition, from: from, to: to, budget: budget, next: from, aborted: aborted})
	}
	return spans, next, nil
}

// records reads the spans' records in offset order, partition after
// partition, and yields them as Arrow record batches. Each span's next
// is advanced to where its reading stopped: to, or the end of the last
// index row read once the budget is spent.
func (c *Converter) records(ctx context.Context, t metadata.Topic, spans []*span) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		b, err := newBatchBuilder()
		if err != nil {
			yield(nil, err)
			return
		}
		defer b.release()
		stopped := false
		// A batch is cut as soon as it is full, inside an index row
		// too: a row of a merged object is many batches.
		err = c.walk(ctx, t, spans, func(r *rawRecord) error {
			b.add(r.partition, r.offset, r.ts, r.tsType, r.r)
			if b.full() && !yield(b.flush(), nil) {
				stopped = true
				return errStop
			}
			return nil
		}, func() bool { return !stopped })
		switch {
		case err != nil && !errors.Is(err, errStop):
			yield(nil, err)
		case !stopped && b.rows() > 0:
			yield(b.flush(), nil)
		}
	}
}

// walk reads the spans' records in offset order, partition after
// partition, calling add for each record a read_committed consumer sees
// and row after each index row (false stops the walk). Each span's next is
// advanced to where its reading stopped: to, or the end of the last index
// row read once the budget is spent.
func (c *Converter) walk(ctx context.Context, t metadata.Topic, spans []*span, add func(*rawRecord) error, row func() bool) error {
	for _, s := range spans {
		for s.next < s.to && s.budget > 0 {
			rows, err := c.store.Lookup(ctx, t.ID, s.partition, s.next, s.budget, 64)
			if err != nil {
				return fmt.Errorf("partition %d at %d: %w", s.partition, s.next, err)
			}
			if len(rows) == 0 {
				break
			}
			for _, r := range rows {
				if r.BaseOffset >= s.to || s.budget <= 0 {
					break
				}
				data, err := c.bucket.GetRange(ctx, r.ObjectKey, r.ByteOffset, r.ByteLength)
				if err != nil {
					return fmt.Errorf("read %s: %w", r.ObjectKey, err)
				}
				if err := c.rowRecords(r, data, s, add); err != nil {
					return fmt.Errorf("partition %d row at %d in %s: %w", s.partition, r.BaseOffset, r.ObjectKey, err)
				}
				s.budget -= r.ByteLength
				s.next = min(r.EndOffset, s.to)
				if !row() {
					return nil
				}
			}
		}
	}
	return nil
}

// rowRecords adds the records of one index row inside [s.next, s.to)
// that a read_committed consumer sees: no control batches, no records of
// aborted transactions.
func (c *Converter) rowRecords(r metadata.IndexEntry, data []byte, s *span, add func(*rawRecord) error) error {
	end, err := kafkaproto.WalkBatches(data, r.BaseOffset, func(h kafkaproto.BatchHeader, batch []byte, base int64) error {
		last := base + int64(h.LastOffsetDelta)
		if h.IsControl() || last < s.next || base >= s.to {
			return nil
		}
		if h.IsTransactional() && isAborted(s.aborted, h.ProducerID, base) {
			return nil
		}
		_, recs, err := kafkaproto.DecodeRecords(batch)
		if err != nil {
			return err
		}
		for i := range recs {
			off := base + int64(recs[i].OffsetDelta)
			if off < s.next || off >= s.to {
				continue
			}
			rec := rawRecord{partition: s.partition, offset: off, ts: h.RecordTimestamp(recs[i]), tsType: h.TimestampType(), r: &recs[i]}
			if err := add(&rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if end != r.EndOffset {
		return fmt.Errorf("batches end at %d, the index row at %d", end, r.EndOffset)
	}
	return nil
}

// isAborted reports whether a transactional batch of producer pid at
// offset off belongs to an aborted transaction.
func isAborted(aborted []metadata.AbortedTxn, pid, off int64) bool {
	for _, a := range aborted {
		if a.ProducerID == pid && off >= a.FirstOffset && off <= a.LastOffset {
			return true
		}
	}
	return false
}

// updateLag sets the lag gauges of a table after a cycle.
func (c *Converter) updateLag(ctx context.Context, t metadata.Topic, name string, next map[int32]int64) error {
	parts, err := c.store.Partitions(ctx, t.ID)
	if err != nil {
		return err
	}
	var lag int64
	oldest := int64(-1)
	for _, p := range parts {
		n := max(next[p.Partition], p.LogStartOffset)
		if n >= p.NextOffset {
			continue
		}
		lag += p.NextOffset - n
		rows, err := c.store.Lookup(ctx, t.ID, p.Partition, n, 1, 1)
		if err == nil && len(rows) > 0 && (oldest < 0 || rows[0].MinTimestamp < oldest) {
			oldest = rows[0].MinTimestamp
		}
	}
	c.metrics.lagOffsets.WithLabelValues(name).Set(float64(lag))
	secs := 0.0
	if oldest >= 0 {
		secs = max(c.now().Sub(time.UnixMilli(oldest)).Seconds(), 0)
	}
	c.metrics.lagSeconds.WithLabelValues(name).Set(secs)
	return nil
}

// reportOnce logs msg about table name at most once an hour per key.
func (c *Converter) reportOnce(key, msg, name string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if last, ok := c.foreignLogs[key]; ok && c.now().Sub(last) < time.Hour {
		return
	}
	c.foreignLogs[key] = c.now()
	c.log.Warn(msg, "table", name, "err", err)
}

// Hold returns, for an enabled topic, per partition the offset below which
// its records are in its table, so that retention keeps the rest; ok is
// false for topics that are not converted. A partition absent from the map
// holds everything (nothing converted yet).
func (c *Converter) Hold(ctx context.Context, t metadata.Topic) (map[int32]int64, bool, error) {
	if !c.Enabled(t) || metadata.IsInternalTopic(t.Name) {
		return nil, false, nil
	}
	tbl, err := c.cat.Load(ctx, t.Name)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return map[int32]int64{}, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	if tbl.Properties()[propTopicID] != hex.EncodeToString(t.ID[:]) {
		return nil, false, nil // not this topic's table: nothing to wait for
	}
	next, err := NextOffsets(tbl)
	return next, err == nil, err
}
