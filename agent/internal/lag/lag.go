// Package lag exports consumer lag where an alert can see it. Every
// interval (the agent's LagInterval) each agent computes, for the groups
// placed on it (the coordinator placement: one agent per group, whether
// the group is loaded or only has committed offsets), per committed
// partition:
//
//   - floe_group_lag_records: the high watermark minus the committed
//     offset, as kadm's Lag and kafka-consumer-groups.sh compute it;
//   - floe_group_lag_seconds: the age of the first unconsumed record (by
//     its index entry's smallest timestamp, so at most one flush run
//     older than the record itself), 0 when nothing is unconsumed;
//   - floe_partition_retention_headroom_seconds: retention.ms minus that
//     age — how long until retention deletes a record the group has not
//     read yet (absent for topics kept forever); an alert fires before
//     the consumer falls behind retention.
//
// Cost per scan: one listing of the groups, one offsets read per placed
// group, one partitions read per topic they name, and one index look-up
// per lagging partition, at most lagMaxSeries partitions per agent. The
// values are kept as a snapshot that scrapes read, so a group that moved
// to another agent leaves this agent's series at the next scan.
//
// The package needs no Agent: five reads of the store, the groups' placement,
// the topic defaults, a clock and a logger (Config). It must never import
// package agent, and it writes nothing.
package lag

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"floe/metadata"
	"floe/topicconfig"
)

// Store is the part of metadata.Store a scan reads.
type Store interface {
	Groups(ctx context.Context) ([]metadata.GroupRecord, error)
	FetchOffsets(ctx context.Context, group string) ([]metadata.GroupOffset, error)
	Topic(ctx context.Context, name string) (metadata.Topic, error)
	Partitions(ctx context.Context, topic metadata.TopicID) ([]metadata.PartitionState, error)
	Lookup(ctx context.Context, topic metadata.TopicID, partition int32, offset int64, maxBytes int64, limit int) ([]metadata.IndexEntry, error)
}

var _ Store = metadata.Store(nil)

// Config is what a Monitor needs from the agent.
type Config struct {
	Store Store
	// Placed reports whether a group's lag is reported here: the group is
	// placed on this agent, which is not leaving the fleet.
	Placed func(group string) bool
	// Defaults are the topic configs' defaults (retention.ms), the
	// cluster's dynamic ones included.
	Defaults *topicconfig.Live
	// Interval is how often the lag is computed; zero turns it off.
	Interval time.Duration
	// Now is the clock (time.Now).
	Now func() time.Time
	Log *slog.Logger
}

// lagMaxSeries bounds the partitions one agent reports per scan.
const lagMaxSeries = 20_000

var (
	lagRecordsDesc = prometheus.NewDesc("floe_group_lag_records",
		"Records between a consumer group's committed offset and the partition's high watermark (groups coordinated here).",
		[]string{"group", "topic", "partition"}, nil)
	lagSecondsDesc = prometheus.NewDesc("floe_group_lag_seconds",
		"Age of the first record a consumer group has not consumed (0 when caught up).",
		[]string{"group", "topic", "partition"}, nil)
	headroomDesc = prometheus.NewDesc("floe_partition_retention_headroom_seconds",
		"Time until retention deletes the first record the group has not consumed (retention.ms minus its age; negative: already deleted).",
		[]string{"group", "topic", "partition"}, nil)
)

type lagSample struct {
	group, topic string
	partition    int32
	records      int64
	seconds      float64
	headroom     float64
	hasHeadroom  bool
}

// Monitor computes the samples and serves them as a prometheus.Collector.
//
// Locking: mu guards samples, replaced whole by each scan; Collect reads
// the slice it finds.
type Monitor struct {
	cfg Config

	mu      sync.Mutex
	samples []lagSample
}

var _ prometheus.Collector = (*Monitor)(nil)

// New returns a Monitor that reports nothing until its first scan.
func New(cfg Config) *Monitor { return &Monitor{cfg: cfg} }

// Describe implements prometheus.Collector.
func (m *Monitor) Describe(ch chan<- *prometheus.Desc) {
	ch <- lagRecordsDesc
	ch <- lagSecondsDesc
	ch <- headroomDesc
}

// Collect implements prometheus.Collector: the last scan's samples.
func (m *Monitor) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	samples := m.samples
	m.mu.Unlock()
	for _, s := range samples {
		p := strconv.Itoa(int(s.partition))
		ch <- prometheus.MustNewConstMetric(lagRecordsDesc, prometheus.GaugeValue, float64(s.records), s.group, s.topic, p)
		ch <- prometheus.MustNewConstMetric(lagSecondsDesc, prometheus.GaugeValue, s.seconds, s.group, s.topic, p)
		if s.hasHeadroom {
			ch <- prometheus.MustNewConstMetric(headroomDesc, prometheus.GaugeValue, s.headroom, s.group, s.topic, p)
		}
	}
}

// Run scans every Interval until ctx ends.
func (m *Monitor) Run(ctx context.Context) {
	if m.cfg.Interval <= 0 {
		return
	}
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sctx, cancel := context.WithTimeout(ctx, m.cfg.Interval)
		samples, err := m.scan(sctx, m.cfg.Now())
		cancel()
		if err != nil {
			m.cfg.Log.Warn("computing consumer lag failed", "err", err)
			continue
		}
		m.mu.Lock()
		m.samples = samples
		m.mu.Unlock()
	}
}

// scan computes the samples of the groups placed on this agent.
func (m *Monitor) scan(ctx context.Context, now time.Time) ([]lagSample, error) {
	store := m.cfg.Store
	groups, err := store.Groups(ctx)
	if err != nil {
		return nil, err
	}
	type topicState struct {
		t     metadata.Topic
		parts []metadata.PartitionState
		err   error
	}
	topics := map[string]*topicState{}
	topicOf := func(name string) *topicState {
		if ts, ok := topics[name]; ok {
			return ts
		}
		ts := &topicState{}
		if ts.t, ts.err = store.Topic(ctx, name); ts.err == nil {
			ts.parts, ts.err = store.Partitions(ctx, ts.t.ID)
		}
		topics[name] = ts
		return ts
	}
	var out []lagSample
	for _, g := range groups {
		if !m.cfg.Placed(g.Group) {
			continue
		}
		offs, err := store.FetchOffsets(ctx, g.Group)
		if err != nil {
			return nil, err
		}
		for _, o := range offs {
			if len(out) >= lagMaxSeries {
				m.cfg.Log.Warn("consumer lag: too many partitions to report; the rest are left out", "max", lagMaxSeries)
				return out, nil
			}
			ts := topicOf(o.Topic)
			if ts.err != nil || o.Partition < 0 || int(o.Partition) >= len(ts.parts) || o.Offset < 0 {
				continue // a deleted topic, or nothing committed
			}
			ps := ts.parts[o.Partition]
			s := lagSample{group: g.Group, topic: o.Topic, partition: o.Partition, records: max(ps.NextOffset-o.Offset, 0)}
			var age time.Duration
			if s.records > 0 {
				es, err := store.Lookup(ctx, ts.t.ID, o.Partition, max(o.Offset, ps.LogStartOffset), 1, 1)
				if err == nil && len(es) > 0 && es[0].MinTimestamp > 0 {
					age = max(now.Sub(time.UnixMilli(es[0].MinTimestamp)), 0)
				}
			}
			s.seconds = age.Seconds()
			if ret := m.cfg.Defaults.Get().Int(ts.t.Configs, topicconfig.RetentionMs); ret >= 0 {
				s.headroom, s.hasHeadroom = (time.Duration(ret)*time.Millisecond - age).Seconds(), true
			}
			out = append(out, s)
		}
	}
	return out, nil
}
