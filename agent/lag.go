package agent

// Consumer lag, exported where an alert can see it. Every LagInterval each
// agent computes, for the groups placed on it (the coordinator placement:
// one agent per group, whether the group is loaded or only has committed
// offsets), per committed partition:
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

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"floe/metadata"
	"floe/topicconfig"
)

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

// lagMonitor computes the samples and serves them as a collector.
type lagMonitor struct {
	a *Agent

	mu      sync.Mutex
	samples []lagSample
}

func (m *lagMonitor) Describe(ch chan<- *prometheus.Desc) {
	ch <- lagRecordsDesc
	ch <- lagSecondsDesc
	ch <- headroomDesc
}

func (m *lagMonitor) Collect(ch chan<- prometheus.Metric) {
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

// run scans every LagInterval until the agent stops; it is owned by the
// Agent's WaitGroup.
func (m *lagMonitor) run() {
	defer m.a.wg.Done()
	if m.a.cfg.LagInterval <= 0 {
		return
	}
	t := time.NewTicker(m.a.cfg.LagInterval)
	defer t.Stop()
	for {
		select {
		case <-m.a.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(m.a.ctx, m.a.cfg.LagInterval)
		samples, err := m.scan(ctx, time.Now())
		cancel()
		if err != nil {
			m.a.log.Warn("computing consumer lag failed", "err", err)
			continue
		}
		m.mu.Lock()
		m.samples = samples
		m.mu.Unlock()
	}
}

// scan computes the samples of the groups placed on this agent.
func (m *lagMonitor) scan(ctx context.Context, now time.Time) ([]lagSample, error) {
	a := m.a
	groups, err := a.store.Groups(ctx)
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
		if ts.t, ts.err = a.store.Topic(ctx, name); ts.err == nil {
			ts.parts, ts.err = a.store.Partitions(ctx, ts.t.ID)
		}
		topics[name] = ts
		return ts
	}
	var out []lagSample
	for _, g := range groups {
		if a.coordinatorFor(g.Group).ID != a.id || a.isDraining() {
			continue
		}
		offs, err := a.store.FetchOffsets(ctx, g.Group)
		if err != nil {
			return nil, err
		}
		for _, o := range offs {
			if len(out) >= lagMaxSeries {
				a.log.Warn("consumer lag: too many partitions to report; the rest are left out", "max", lagMaxSeries)
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
				es, err := a.store.Lookup(ctx, ts.t.ID, o.Partition, max(o.Offset, ps.LogStartOffset), 1, 1)
				if err == nil && len(es) > 0 && es[0].MinTimestamp > 0 {
					age = max(now.Sub(time.UnixMilli(es[0].MinTimestamp)), 0)
				}
			}
			s.seconds = age.Seconds()
			if ret := a.defaults.Get().Int(ts.t.Configs, topicconfig.RetentionMs); ret >= 0 {
				s.headroom, s.hasHeadroom = (time.Duration(ret)*time.Millisecond - age).Seconds(), true
			}
			out = append(out, s)
		}
	}
	return out, nil
}
