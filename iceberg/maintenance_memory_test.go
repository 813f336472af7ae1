package iceberg

import (
	"flag"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"floe/metadata"
)

// maintainMemoryFileSize is TestMaintainMemoryWithinBudget's target file
// size.
var maintainMemoryFileSize = flag.Int64("maintain-memory-file-size", 16<<20,
	"TestMaintainMemoryWithinBudget's target file size in bytes")

// TestMaintainMemoryWithinBudget: maintenance compacting small files of
// varied orders (a sixteenth of the target file size each, written by
// cycles at that size) into files of -maintain-memory-file-size bytes, a
// group of about one such file, holds no more live heap (cycleMeter) than
// ConverterConfig.MemoryBytes, for a binary table and each typed format;
// the rows are all kept.
func TestMaintainMemoryWithinBudget(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("converts and compacts 56 MiB of records per format; a bound of the plain build")
	}
	fileSize := *maintainMemoryFileSize
	for _, f := range orderFormats {
		t.Run(f.name, func(t *testing.T) {
			e := f.env(t)
			e.conv.cfg.TargetFileSize = fileSize / 16
			written := f.produce(t, e, fileSize*7/2)
			l, err := metadata.AcquireJobLease(e.ctx, e.store, "iceberg/orders", "test", 60e9)
			if err != nil || l == nil {
				t.Fatal(err)
			}
			if err := e.conv.cycle(e.ctx, l, e.topic); err != nil {
				t.Fatal(err)
			}
			if n := testutil.CollectAndCount(e.conv.metrics.dlq); n != 0 {
				t.Fatalf("records went to the dead-letter table (%d reasons)", n)
			}
			files, rows, bytes := e.dataFiles()
			e.conv.cfg.TargetFileSize = fileSize
			var m cycleMeter
			m.measure(t, func() error { return e.conv.Maintain(e.ctx, l, e.topic) })
			after, afterRows, afterBytes := e.dataFiles()
			budget := e.conv.cfg.MemoryBytes()
			t.Logf("%d MiB of records in %d files (%.1f MiB) compacted into %d (%.1f MiB): %.1f MiB live, budget %.1f MiB",
				written>>20, files, float64(bytes)/(1<<20), after, float64(afterBytes)/(1<<20),
				float64(m.live)/(1<<20), float64(budget)/(1<<20))
			if n := testutil.ToFloat64(e.conv.metrics.maint.WithLabelValues("orders", "compact", "ok")); n != 1 {
				t.Fatalf("maintenance_total{step=compact,result=ok} = %v", n)
			}
			if bytes < fileSize/2 || files-after < e.conv.cfg.Maintenance.CompactMinFiles-1 {
				t.Fatalf("%d files of %.1f MiB compacted into %d: not a group of a file of %d MiB",
					files, float64(bytes)/(1<<20), after, fileSize>>20)
			}
			if afterRows != rows {
				t.Fatalf("%d rows before compaction, %d after", rows, afterRows)
			}
			if int64(m.live) > budget {
				t.Fatalf("maintenance held %.1f MiB live, over the budget (MemoryBytes) of %.1f MiB",
					float64(m.live)/(1<<20), float64(budget)/(1<<20))
			}
		})
	}
}

// dataFiles is the number of data files of the orders table, their rows
// and their bytes.
func (e *typedEnv) dataFiles() (files int, rows, bytes int64) {
	e.t.Helper()
	tbl, err := e.conv.cat.Load(e.ctx, "orders")
	if err != nil {
		e.t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, task := range tasks {
		rows += task.File.Count()
		bytes += task.File.FileSizeBytes()
	}
	return len(tasks), rows, bytes
}
