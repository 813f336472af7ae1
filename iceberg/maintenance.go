package iceberg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"floe/metadata"
)

// MaintenanceConfig says how a table is kept small and fast to plan.
type MaintenanceConfig struct {
	// Every is how often a table is maintained (0: never).
	Every time.Duration
	// KeepSnapshots snapshots are always kept; older ones go once they are
	// older than SnapshotAge (time travel reaches back that far).
	KeepSnapshots int
	SnapshotAge   time.Duration
	// OrphanAge is how old a file the table does not reference must be
	// before it is deleted: longer than any cycle takes between writing a
	// Parquet file and committing it.
	OrphanAge time.Duration
	// CompactMinFiles small files of one partition are rewritten into
	// files of the converter's TargetFileSize.
	CompactMinFiles int
}

// DefaultMaintenanceConfig maintains every hour, keeps a day of snapshots
// (and at least 10), deletes orphans after a day.
func DefaultMaintenanceConfig() MaintenanceConfig {
	return MaintenanceConfig{
		Every:           time.Hour,
		KeepSnapshots:   10,
		SnapshotAge:     24 * time.Hour,
		OrphanAge:       24 * time.Hour,
		CompactMinFiles: 8,
	}
}

// maybeMaintain maintains t's table if Every has passed since this process
// last did.
func (c *Converter) maybeMaintain(ctx context.Context, l *metadata.JobLease, t metadata.Topic) error {
	m := c.cfg.Maintenance
	if m.Every <= 0 {
		return nil
	}
	name := TableName(t.Name)
	c.mu.Lock()
	last, ok := c.lastMaint[name]
	due := !ok || c.now().Sub(last) >= m.Every
	if due {
		c.lastMaint[name] = c.now()
	}
	c.mu.Unlock()
	if !due {
		return nil
	}
	return c.Maintain(ctx, l, t)
}

// Maintain runs the maintenance steps on t's table: compact small data
// files, rewrite manifests, expire snapshots, delete orphan files. Each step
// is a commit of its own on a freshly loaded table (the converter's offsets
// are a table property, which none of them changes); a failed step is
// counted and the next one still runs.
func (c *Converter) Maintain(ctx context.Context, l *metadata.JobLease, t metadata.Topic) error {
	err := c.maintain(ctx, l, TableName(t.Name))
	if !topicTypedConfig(t).typed() {
		return err
	}
	// A typed table's dead-letter table, once it exists, is kept as well.
	if _, lerr := c.cat.loadNamed(ctx, DLQTableName(t.Name)); errors.Is(lerr, catalog.ErrNoSuchTable) {
		return err
	}
	return errors.Join(err, c.maintain(ctx, l, DLQTableName(t.Name)))
}

// maintain runs the maintenance steps on the table named name.
func (c *Converter) maintain(ctx context.Context, l *metadata.JobLease, name string) error {
	m := c.cfg.Maintenance
	steps := []struct {
		name string
		fn   func(*table.Table) error
	}{
		{"compact", func(tbl *table.Table) error { return c.compact(ctx, tbl) }},
		{"rewrite-manifests", func(tbl *table.Table) error {
			if tbl.CurrentSnapshot() == nil {
				return nil
			}
			txn := tbl.NewTransaction()
			if _, err := txn.RewriteManifests(ctx); err != nil {
				return err
			}
			_, err := txn.Commit(ctx)
			return err
		}},
		{"expire-snapshots", func(tbl *table.Table) error {
			txn := tbl.NewTransaction()
			if err := txn.ExpireSnapshots(table.WithRetainLast(max(m.KeepSnapshots, 1)), table.WithOlderThan(m.SnapshotAge)); err != nil {
				return err
			}
			_, err := txn.Commit(ctx)
			return err
		}},
		{"delete-orphans", func(tbl *table.Table) error {
			res, err := tbl.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(m.OrphanAge))
			c.metrics.orphans.WithLabelValues(name).Add(float64(len(res.DeletedFiles)))
			return err
		}},
	}
	var first error
	for _, s := range steps {
		if err := l.Renew(ctx); err != nil {
			return err
		}
		tbl, err := c.cat.loadNamed(ctx, name)
		if err == nil {
			err = s.fn(tbl)
		}
		result := "ok"
		if err != nil {
			result = "failed"
			c.log.Warn("iceberg maintenance step failed", "table", name, "step", s.name, "err", err)
			if first == nil {
				first = fmt.Errorf("maintenance %s: %w", s.name, err)
			}
		}
		c.metrics.maint.WithLabelValues(name, s.name, result).Inc()
	}
	return first
}

// compact rewrites tbl's small data files into files of TargetFileSize,
// holding what a cycle does (ConverterConfig.MemoryBytes): compaction's
// groups are a partition's small files packed up to TargetFileSize, and
// each is rewritten in turn, read a file at a time in batches of about
// batchBytes (compactBatchRows) and written as a cycle writes
// (writeTable: its row groups, pages and dictionaries; one batch queued).
// The groups are committed together, in one snapshot.
func (c *Converter) compact(ctx context.Context, tbl *table.Table) error {
	m := c.cfg.Maintenance
	cc := compaction.DefaultConfig()
	cc.TargetFileSizeBytes = c.cfg.TargetFileSize
	cc.MinFileSizeBytes = c.cfg.TargetFileSize * 3 / 4
	cc.MaxFileSizeBytes = c.cfg.TargetFileSize * 9 / 5
	cc.MinInputFiles = uint(max(m.CompactMinFiles, 2))
	plan, err := compaction.Analyze(ctx, tbl, cc)
	if err != nil || len(plan.Groups) == 0 {
		return err
	}
	wt, err := writeTable(tbl, c.cfg.TargetFileSize)
	if err != nil {
		return err
	}
	txn := tbl.NewTransaction()
	rw := txn.NewRewrite(nil)
	for _, g := range plan.Groups {
		rows, err := compactBatchRows(ctx, tbl, g.Tasks)
		if err != nil {
			return err
		}
		gr, err := table.ExecuteCompactionGroup(ctx, wt,
			table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes},
			table.WithCompactionTargetFileSize(c.cfg.TargetFileSize), table.WithCompactionScanConcurrency(1),
			table.WithCompactionArrowBatchSize(rows), table.WithCompactionRecordBatchBufferSize(1))
		if err != nil {
			return err
		}
		rw.ApplyResult(gr)
	}
	if err := rw.Commit(ctx); err != nil {
		return err
	}
	_, err = txn.Commit(ctx)
	return err
}

// compactBatchRows is how many rows make a batch of about batchBytes in
// tasks' files: batchBytes over the widest row, on average, of any of
// their row groups (from the Parquet footers, their uncompressed bytes).
// iceberg-go reads batches of 131072 rows, a whole small file of 1 KiB
// records at once.
func compactBatchRows(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask) (int, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return 0, err
	}
	var widest int64 = 1
	for _, t := range tasks {
		f, err := fs.Open(t.File.FilePath())
		if err != nil {
			return 0, err
		}
		r, err := file.NewParquetReader(f)
		if err != nil {
			f.Close()
			return 0, fmt.Errorf("read the footer of %s: %w", t.File.FilePath(), err)
		}
		for i := range r.NumRowGroups() {
			rg := r.MetaData().RowGroup(i)
			if n := rg.NumRows(); n > 0 {
				widest = max(widest, (rg.TotalByteSize()+n-1)/n)
			}
		}
		if err := r.Close(); err != nil {
			return 0, err
		}
	}
	return int(max(batchBytes/widest, 1)), nil
}
