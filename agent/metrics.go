package agent

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"floe/storage"
)

// metrics are the agent's Prometheus metrics, registered on a registry of
// the agent's own (several agents can live in one test process).
type metrics struct {
	reg *prometheus.Registry

	connections       prometheus.Gauge
	writeBuffers      prometheus.Gauge
	readBuffers       prometheus.Gauge
	requestBytes      prometheus.Counter
	responseBytes     prometheus.Counter
	requestSeconds    *prometheus.HistogramVec
	producedBytes     prometheus.Counter
	producedRecords   prometheus.Counter
	fetchedBytes      prometheus.Counter
	fetchedRecords    prometheus.Counter
	headReads         prometheus.Counter
	produceSeconds    prometheus.Histogram
	fetchSeconds      prometheus.Histogram
	flushes           prometheus.Counter
	flushErrors       prometheus.Counter
	flushBytes        prometheus.Histogram
	flushSeconds      prometheus.Histogram
	commitSeconds     prometheus.Histogram
	bufferedBytes     prometheus.Gauge
	backpressureWaits prometheus.Counter
	bucketOps         *prometheus.CounterVec
	bucketBytes       *prometheus.CounterVec
	bucketSeconds     *prometheus.HistogramVec
	liveAgents        prometheus.Gauge
	limitHits         *prometheus.CounterVec
	schemaFailures    *prometheus.CounterVec
	authSuccesses     *prometheus.CounterVec
	authFailures      *prometheus.CounterVec
	memoryBudget      *prometheus.GaugeVec
}

// newMetrics makes the agent's metrics; budgets are its memory budgets
// (Config.MemoryBudgets), exported as constant gauges so that a benchmark
// or an operator compares the process's resident size with what the
// budgets allow without knowing its flags.
func newMetrics(budgets []MemoryBudget) *metrics {
	latency := prometheus.ExponentialBuckets(0.0005, 2, 16) // 0.5 ms .. 16 s
	m := &metrics{
		reg:               prometheus.NewRegistry(),
		connections:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "floe_agent_connections", Help: "Open Kafka connections."}),
		writeBuffers:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "floe_agent_connection_write_buffers", Help: "Kafka connections holding a write buffer: those writing answers (idle ones hold none)."}),
		readBuffers:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "floe_agent_connection_read_buffers", Help: "Kafka connections holding a read buffer: those that sent something within the last second."}),
		requestBytes:      prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_agent_request_bytes_total", Help: "Bytes of Kafka requests read."}),
		responseBytes:     prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_agent_response_bytes_total", Help: "Bytes of Kafka responses written."}),
		requestSeconds:    prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "floe_agent_request_duration_seconds", Help: "Time to answer a Kafka request, by API key.", Buckets: latency}, []string{"api_key"}),
		producedBytes:     prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_agent_produced_bytes_total", Help: "Record batch bytes accepted by Produce."}),
		producedRecords:   prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_agent_produced_records_total", Help: "Records accepted by Produce."}),
		fetchedBytes:      prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_agent_fetched_bytes_total", Help: "Record batch bytes returned by Fetch."}),
		fetchedRecords:    prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_agent_fetched_records_total", Help: "Offsets spanned by the batches Fetch returned."}),
		headReads:         prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_agent_fetch_head_reads_total", Help: "Partitions of fetches served from this agent's own last commit, without an index look-up."}),
		produceSeconds:    prometheus.NewHistogram(prometheus.HistogramOpts{Name: "floe_agent_produce_duration_seconds", Help: "Produce latency (acks>0), from request to answer.", Buckets: latency}),
		fetchSeconds:      prometheus.NewHistogram(prometheus.HistogramOpts{Name: "floe_agent_fetch_duration_seconds", Help: "Fetch latency including long-poll waits.", Buckets: latency}),
		flushes:           prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_agent_flushes_total", Help: "Flushed objects committed."}),
		flushErrors:       prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_agent_flush_errors_total", Help: "Flushes whose PUT or commit failed."}),
		flushBytes:        prometheus.NewHistogram(prometheus.HistogramOpts{Name: "floe_agent_flush_size_bytes", Help: "Size of flushed objects.", Buckets: prometheus.ExponentialBuckets(1024, 4, 10)}),
		flushSeconds:      prometheus.NewHistogram(prometheus.HistogramOpts{Name: "floe_agent_flush_duration_seconds", Help: "Flush duration: PUT, wait for the previous commit, commit.", Buckets: latency}),
		commitSeconds:     prometheus.NewHistogram(prometheus.HistogramOpts{Name: "floe_agent_metadata_commit_duration_seconds", Help: "Metadata commit latency of a flush.", Buckets: latency}),
		bufferedBytes:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "floe_agent_buffered_bytes", Help: "Produced bytes held in memory (pending and in flight)."}),
		backpressureWaits: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_agent_backpressure_waits_total", Help: "Times a produce waited for buffer room."}),
		bucketOps:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_storage_requests_total", Help: "Object store requests, by operation."}, []string{"op"}),
		bucketBytes:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_storage_bytes_total", Help: "Object store bytes, by operation."}, []string{"op"}),
		bucketSeconds:     prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "floe_storage_request_duration_seconds", Help: "Object store request latency, by operation.", Buckets: latency}, []string{"op"}),
		liveAgents:        prometheus.NewGauge(prometheus.GaugeOpts{Name: "floe_agent_live_agents", Help: "Live agents in the cluster as last seen."}),
		schemaFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_agent_schema_validation_failures_total",
			Help: "Produced records refused by schema validation, by topic and reason (unframed, unknown_id, wrong_subject, bad_index, invalid)."}, []string{"topic", "reason"}),
		limitHits:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_agent_limit_hits_total", Help: "Requests or connections refused, cut or clamped by a configured limit, by limit."}, []string{"limit"}),
		authSuccesses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_agent_sasl_authentications_total", Help: "Successful SASL authentications (re-authentications included), by mechanism."}, []string{"mechanism"}),
		authFailures:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_agent_sasl_authentication_failures_total", Help: "Failed SASL authentications, by mechanism."}, []string{"mechanism"}),
		memoryBudget:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "floe_agent_memory_budget_bytes", Help: "The memory budgets of the agent and what else runs in its process, by budget (see Config.MemoryBudgets)."}, []string{"budget"}),
	}
	for _, b := range budgets {
		m.memoryBudget.WithLabelValues(b.Name).Set(float64(b.Bytes))
	}
	m.reg.MustRegister(m.connections, m.writeBuffers, m.readBuffers, m.requestBytes, m.responseBytes, m.requestSeconds,
		m.producedBytes, m.producedRecords, m.fetchedBytes, m.fetchedRecords, m.headReads, m.produceSeconds, m.fetchSeconds,
		m.flushes, m.flushErrors, m.flushBytes, m.flushSeconds, m.commitSeconds,
		m.bufferedBytes, m.backpressureWaits, m.bucketOps, m.bucketBytes, m.bucketSeconds, m.liveAgents, m.limitHits, m.schemaFailures,
		m.authSuccesses, m.authFailures, m.memoryBudget,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// registerCache exports the read cache's counters: its hit rate is what
// says whether consumers of old data cost object-store GETs.
func (m *metrics) registerCache(c *storage.Cache) {
	for _, st := range []struct {
		name, help string
		gauge      bool
		value      func(storage.CacheStats) int64
	}{
		{"floe_agent_read_cache_hits_total", "Read-cache look-ups that started no object-store GET: cached, or joined a GET in flight.",
			false, func(s storage.CacheStats) int64 { return s.Hits }},
		{"floe_agent_read_cache_misses_total", "Read-cache look-ups that started a GET (to the zone's owning agent or the object store).",
			false, func(s storage.CacheStats) int64 { return s.Misses }},
		{"floe_agent_read_cache_evictions_total", "Ranges dropped from the read cache to stay within its budget.",
			false, func(s storage.CacheStats) int64 { return s.Evictions }},
		{"floe_agent_read_cache_bytes", "Bytes of the ranges the read cache holds.",
			true, func(s storage.CacheStats) int64 { return s.Bytes }},
		// Read-ahead (readahead.go): its GETs are in none of the above.
		{"floe_agent_read_ahead_gets_total", "GETs read-ahead started for consumers catching up on old data.",
			false, func(s storage.CacheStats) int64 { return s.AheadGets }},
		{"floe_agent_read_ahead_bytes_total", "Bytes read-ahead GETs brought into the read cache.",
			false, func(s storage.CacheStats) int64 { return s.AheadBytes }},
		{"floe_agent_read_ahead_hits_total", "Reads served by a range read-ahead brought in (or was bringing in): the first read of each such range.",
			false, func(s storage.CacheStats) int64 { return s.AheadHits }},
		{"floe_agent_read_ahead_evicted_total", "Ranges read-ahead brought in that were evicted before anyone read them.",
			false, func(s storage.CacheStats) int64 { return s.AheadEvicted }},
		{"floe_agent_read_ahead_unread_bytes", "Bytes of the cached ranges read-ahead brought in that nobody read yet.",
			true, func(s storage.CacheStats) int64 { return s.AheadUnread }},
	} {
		f := func() float64 { return float64(st.value(c.Stats())) }
		if st.gauge {
			m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: st.name, Help: st.help}, f))
		} else {
			m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: st.name, Help: st.help}, f))
		}
	}
}

func (m *metrics) observeRequest(key int16, d time.Duration) {
	m.requestSeconds.WithLabelValues(strconv.Itoa(int(key))).Observe(d.Seconds())
}

// observeBucket counts and times an object store request
// (storage.Metered): floe_storage_requests_total and _bytes_total by
// operation, failures as op_error, and the request's seconds.
func (m *metrics) observeBucket(op string, n int64, d time.Duration, err error) {
	if err != nil {
		op += "_error"
	}
	m.bucketOps.WithLabelValues(op).Inc()
	m.bucketBytes.WithLabelValues(op).Add(float64(n))
	m.bucketSeconds.WithLabelValues(op).Observe(d.Seconds())
}
