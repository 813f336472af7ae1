package lag

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"floe/metadata"
	"floe/metadata/sqlite"
	"floe/topicconfig"
)

// TestScan: one scan over a real store, at a fixed now, reports exactly the
// placed groups' committed partitions: records behind the high watermark,
// the age of the first unconsumed record (its run's smallest timestamp),
// the retention headroom (the topic's own retention.ms, or the default;
// none for a topic kept forever), and nothing for groups placed elsewhere,
// deleted topics or partitions that do not exist.
func TestScan(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })

	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ms := func(ago time.Duration) int64 { return now.Add(-ago).UnixMilli() }
	hour, err := store.CreateTopic(ctx, "hour", 2, map[string]string{"retention.ms": "3600000"})
	if err != nil {
		t.Fatal(err)
	}
	forever, err := store.CreateTopic(ctx, "forever", 1, map[string]string{"retention.ms": "-1"})
	if err != nil {
		t.Fatal(err)
	}
	dflt, err := store.CreateTopic(ctx, "default", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	// hour/0: offsets 0-9 written 20 min ago, 10-19 written 5 min ago;
	// hour/1: 0-9; forever/0: 0-4, 30 min ago; default/0: 0-4, 1 min ago.
	runs := []metadata.RunCommit{
		{TopicID: hour.ID, Partition: 0, ByteLength: 100, Batches: 1, Records: 10, MinTimestamp: ms(20 * time.Minute), MaxTimestamp: ms(19 * time.Minute)},
		{TopicID: hour.ID, Partition: 1, ByteOffset: 100, ByteLength: 100, Batches: 1, Records: 10, MinTimestamp: ms(20 * time.Minute), MaxTimestamp: ms(19 * time.Minute)},
		{TopicID: forever.ID, Partition: 0, ByteOffset: 200, ByteLength: 100, Batches: 1, Records: 5, MinTimestamp: ms(30 * time.Minute), MaxTimestamp: ms(30 * time.Minute)},
		{TopicID: dflt.ID, Partition: 0, ByteOffset: 300, ByteLength: 100, Batches: 1, Records: 5, MinTimestamp: ms(time.Minute), MaxTimestamp: ms(time.Minute)},
	}
	if _, err := store.CommitObject(ctx, metadata.ObjectCommit{Key: "o1", Size: 400, AgentID: "a", Runs: runs}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CommitObject(ctx, metadata.ObjectCommit{Key: "o2", Size: 100, AgentID: "a", Runs: []metadata.RunCommit{
		{TopicID: hour.ID, Partition: 0, ByteLength: 100, Batches: 1, Records: 10, MinTimestamp: ms(5 * time.Minute), MaxTimestamp: ms(4 * time.Minute)},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateTopic(ctx, "gone", 1, nil); err != nil {
		t.Fatal(err)
	}
	commit := func(group string, offs ...metadata.GroupOffset) {
		t.Helper()
		if err := store.CommitOffsets(ctx, group, offs); err != nil {
			t.Fatal(err)
		}
	}
	off := func(topic string, p int32, o int64) metadata.GroupOffset {
		return metadata.GroupOffset{Topic: topic, Partition: p, Offset: o, LeaderEpoch: -1}
	}
	commit("here", off("hour", 0, 12), off("hour", 1, 10), off("forever", 0, 0), off("default", 0, 5),
		off("hour", 7, 0), off("gone", 0, 0))
	commit("early", off("hour", 0, 3))
	commit("elsewhere", off("hour", 0, 0))
	if err := store.DeleteTopic(ctx, "gone"); err != nil {
		t.Fatal(err)
	}

	defaults := topicconfig.KafkaDefaults()
	defaults.Retention = 24 * time.Hour
	m := New(Config{
		Store:    store,
		Placed:   func(g string) bool { return g != "elsewhere" },
		Defaults: topicconfig.NewLive(defaults),
		Interval: time.Second,
		Now:      func() time.Time { return now },
		Log:      slog.New(slog.DiscardHandler),
	})
	samples, err := m.scan(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	m.samples = samples
	want := []string{
		`floe_group_lag_records{group="early",partition="0",topic="hour"} 17`,
		`floe_group_lag_records{group="here",partition="0",topic="default"} 0`,
		`floe_group_lag_records{group="here",partition="0",topic="forever"} 5`,
		`floe_group_lag_records{group="here",partition="0",topic="hour"} 8`,
		`floe_group_lag_records{group="here",partition="1",topic="hour"} 0`,
		`floe_group_lag_seconds{group="early",partition="0",topic="hour"} 1200`,
		`floe_group_lag_seconds{group="here",partition="0",topic="default"} 0`,
		`floe_group_lag_seconds{group="here",partition="0",topic="forever"} 1800`,
		`floe_group_lag_seconds{group="here",partition="0",topic="hour"} 300`,
		`floe_group_lag_seconds{group="here",partition="1",topic="hour"} 0`,
		`floe_partition_retention_headroom_seconds{group="early",partition="0",topic="hour"} 2400`,
		`floe_partition_retention_headroom_seconds{group="here",partition="0",topic="default"} 86400`,
		`floe_partition_retention_headroom_seconds{group="here",partition="0",topic="hour"} 3300`,
		`floe_partition_retention_headroom_seconds{group="here",partition="1",topic="hour"} 3600`,
	}
	if got := gathered(t, m); !slices.Equal(got, want) {
		t.Fatalf("series:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRunOff: a zero interval turns the monitor off: Run returns at once
// and nothing is reported.
func TestRunOff(t *testing.T) {
	m := New(Config{Interval: 0})
	m.Run(context.Background())
	if got := gathered(t, m); len(got) != 0 {
		t.Fatalf("series of a monitor turned off: %v", got)
	}
}

// gathered is every series m serves, as `name{labels} value`, sorted.
func gathered(t *testing.T, m *Monitor) []string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			var labels []string
			for _, lp := range s.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			out = append(out, fmt.Sprintf("%s{%s} %v", mf.GetName(), strings.Join(labels, ","), s.GetGauge().GetValue()))
		}
	}
	slices.Sort(out)
	return out
}
