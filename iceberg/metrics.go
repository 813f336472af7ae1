package iceberg

import "github.com/prometheus/client_golang/prometheus"

// metrics are the converter's series, per table.
type metrics struct {
	reg        *prometheus.Registry
	cycles     *prometheus.CounterVec
	commits    *prometheus.CounterVec
	conflicts  *prometheus.CounterVec
	rows       *prometheus.CounterVec
	bytes      *prometheus.CounterVec
	files      *prometheus.CounterVec
	skipped    *prometheus.CounterVec
	lagOffsets *prometheus.GaugeVec
	lagSeconds *prometheus.GaugeVec
	maint      *prometheus.CounterVec
	orphans    *prometheus.CounterVec
	dlq        *prometheus.CounterVec
}

func newMetrics() *metrics {
	table := []string{"table"}
	m := &metrics{
		reg: prometheus.NewRegistry(),
		cycles: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_iceberg_cycles_total",
			Help: "Conversion cycles per table by result: ok (committed), idle (nothing new), conflict (the catalog refused the commit), failed, deleted (the topic was deleted while the cycle ran), foreign (the table belongs to another topic, or has another layout than the topic's configs ask), unsupported (the topic's typed table config is not converted by this floe)."},
			[]string{"table", "result"}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_iceberg_commits_total",
			Help: "Snapshots committed by conversion."}, table),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_iceberg_commit_conflicts_total",
			Help: "Commits the catalog refused because the table changed since the cycle read it."}, table),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_iceberg_rows_written_total",
			Help: "Rows committed into the table."}, table),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_iceberg_bytes_written_total",
			Help: "Bytes of Parquet data files committed."}, table),
		files: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_iceberg_files_written_total",
			Help: "Parquet data files committed."}, table),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_iceberg_skipped_offsets_total",
			Help: "Offsets deleted (DeleteRecords, or retention while conversion was off) before they were converted."}, table),
		lagOffsets: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "floe_iceberg_lag_offsets",
			Help: "Offsets committed to the topic and not yet in its table, over all partitions."}, table),
		lagSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "floe_iceberg_lag_seconds",
			Help: "Age of the oldest record not yet in the table (0 when none)."}, table),
		maint: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_iceberg_maintenance_total",
			Help: "Table maintenance steps by step and result."}, []string{"table", "step", "result"}),
		orphans: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_iceberg_orphan_files_deleted_total",
			Help: "Files under a table's location that no snapshot references (written by cycles that did not commit), deleted by maintenance."}, table),
		dlq: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_iceberg_dlq_records_total",
			Help: "Records committed into a typed table's dead-letter table (<table>__dlq), by reason: unframed, unknown_schema, unsupported_format, unmappable, incompatible_schema, does_not_decode."},
			[]string{"table", "reason"}),
	}
	m.reg.MustRegister(m.dlq, m.cycles, m.commits, m.conflicts, m.rows, m.bytes, m.files, m.skipped, m.lagOffsets, m.lagSeconds, m.maint, m.orphans)
	return m
}
