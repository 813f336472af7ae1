package compactor

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"floe/metadata"
)

// metrics are the compactor's Prometheus metrics, on a registry of its own
// (a compactor runs inside `floe dev` beside an agent with its own).
type metrics struct {
	reg *prometheus.Registry

	jobs           *prometheus.CounterVec
	objects        *prometheus.GaugeVec
	objectBytes    *prometheus.GaugeVec
	indexRows      prometheus.Gauge
	lag            prometheus.Gauge
	merges         prometheus.Counter
	mergedObjects  prometheus.Counter
	mergedBytes    prometheus.Counter
	pacedSeconds   prometheus.Counter
	conflicts      prometheus.Counter
	deleted        *prometheus.CounterVec
	reclaimedBytes prometheus.Counter
	orphanScans    prometheus.Counter
	logStartMoves  prometheus.Counter
	retentionHeld  prometheus.Counter
	keyCompactions prometheus.Counter
	removedRecords prometheus.Counter
	unreadable     *prometheus.CounterVec

	recompressed      prometheus.Counter
	recompressSkipped prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg:            prometheus.NewRegistry(),
		jobs:           prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_compactor_jobs_total", Help: "Job runs by job and result (ok, error, skipped: leased by another compactor)."}, []string{"job", "result"}),
		objects:        prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "floe_compactor_objects", Help: "Objects by level and state."}, []string{"level", "state"}),
		objectBytes:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "floe_compactor_object_bytes", Help: "Bytes of objects by level and state."}, []string{"level", "state"}),
		indexRows:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "floe_compactor_index_rows", Help: "Rows of the object index."}),
		lag:            prometheus.NewGauge(prometheus.GaugeOpts{Name: "floe_compactor_lag_seconds", Help: "Age of the oldest live level-0 object (0 when none)."}),
		merges:         prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_compactor_merges_total", Help: "Merged objects committed."}),
		mergedObjects:  prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_compactor_merged_source_objects_total", Help: "Source objects replaced by merges."}),
		mergedBytes:    prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_compactor_merged_bytes_total", Help: "Bytes written by merges."}),
		pacedSeconds:   prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_compactor_paced_seconds_total", Help: "Time jobs paused to yield to a busy agent in the same process."}),
		conflicts:      prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_compactor_swap_conflicts_total", Help: "Swaps abandoned because a source row changed meanwhile."}),
		deleted:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_compactor_deleted_objects_total", Help: "Objects deleted from the bucket, by reason (replaced, orphan)."}, []string{"reason"}),
		reclaimedBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_compactor_reclaimed_bytes_total", Help: "Bytes of objects deleted from the bucket."}),
		orphanScans:    prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_compactor_orphan_scans_total", Help: "Listings of the bucket's objects for orphans (once per grace period)."}),
		logStartMoves:  prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_compactor_retention_advances_total", Help: "Partition log start offsets advanced by retention."}),
		retentionHeld:  prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_compactor_retention_held_total", Help: "Times retention kept expired records of a partition because its topic's Iceberg table does not have them yet."}),
		keyCompactions: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_compactor_key_compactions_total", Help: "Partitions key-compacted."}),
		removedRecords: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_compactor_key_compaction_removed_records_total", Help: "Records removed by key compaction (superseded or expired tombstones)."}),
		unreadable: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_compactor_unreadable_partitions_total",
			Help: "Partitions a job skipped because their stored bytes could not be read (batches that do not frame, records that do not decode), by job."}, []string{"job"}),
		recompressed: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_compactor_recompressed_batches_total",
			Help: "Batches merges and key compaction wrote in their topic's compression.type rather than the codec they came in."}),
		recompressSkipped: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_compactor_recompress_skipped_batches_total",
			Help: "Batches a merge kept in their own codec because their CRC or records did not hold."}),
	}
	m.reg.MustRegister(m.jobs, m.objects, m.objectBytes, m.indexRows, m.lag, m.merges, m.mergedObjects, m.mergedBytes, m.pacedSeconds,
		m.conflicts, m.deleted, m.reclaimedBytes, m.orphanScans, m.logStartMoves, m.retentionHeld, m.keyCompactions, m.removedRecords, m.unreadable,
		m.recompressed, m.recompressSkipped)
	return m
}

// levelState labels the per-level gauges.
type levelState struct{ level, state string }

// refreshGauges sets the per-level gauges from the store. Live level-0
// objects are always shown, at 0 when there are none, so the series exist
// from the first round on; series whose objects are all gone are removed
// after the others are set, so a scrape never finds the gauges empty
// half-way through a refresh.
func (c *Compactor) refreshGauges(ctx context.Context) error {
	counts := map[levelState]float64{{"0", metadata.ObjectLive}: 0}
	sizes := map[levelState]float64{{"0", metadata.ObjectLive}: 0}
	var oldest time.Time
	for _, state := range []string{metadata.ObjectLive, metadata.ObjectReplaced} {
		objs, err := c.store.Objects(ctx, state)
		if err != nil {
			return err
		}
		for _, o := range objs {
			k := levelState{strconv.Itoa(o.Level), state}
			counts[k]++
			sizes[k] += float64(o.Size)
			if state == metadata.ObjectLive && o.Level == 0 && (oldest.IsZero() || o.CreatedAt.Before(oldest)) {
				oldest = o.CreatedAt
			}
		}
	}
	c.gaugeMu.Lock()
	for k, n := range counts {
		c.metrics.objects.WithLabelValues(k.level, k.state).Set(n)
		c.metrics.objectBytes.WithLabelValues(k.level, k.state).Set(sizes[k])
	}
	for k := range c.gaugeKeys {
		if _, ok := counts[k]; !ok {
			c.metrics.objects.DeleteLabelValues(k.level, k.state)
			c.metrics.objectBytes.DeleteLabelValues(k.level, k.state)
		}
	}
	c.gaugeKeys = counts
	c.gaugeMu.Unlock()
	if oldest.IsZero() {
		c.metrics.lag.Set(0)
	} else {
		c.metrics.lag.Set(c.now().Sub(oldest).Seconds())
	}
	n, err := c.store.CountIndexRows(ctx)
	if err != nil {
		return err
	}
	c.metrics.indexRows.Set(float64(n))
	return nil
}
