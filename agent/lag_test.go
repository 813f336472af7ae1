package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupLagMetrics: the lag the agent exports equals what kadm computes,
// and the seconds of lag grow while the group does not consume.
func TestGroupLagMetrics(t *testing.T) {
	ta := newTestAgent(t, nil, func(c *Config) {
		c.LagInterval = 100 * time.Millisecond
		c.TopicDefaults.Retention = time.Hour
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := ta.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ta.createTopic(t, cl, "lagged", 2)
	old := time.Now().Add(-10 * time.Minute)
	for i := range 30 {
		r := &kgo.Record{Topic: "lagged", Partition: int32(i % 2), Value: []byte{byte(i)}, Timestamp: old.Add(time.Duration(i) * time.Second)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "lagged", Partition: 0, At: 4, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "lagged", Partition: 1, At: 15, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "laggers", offs); err != nil {
		t.Fatal(err)
	}
	lags, err := adm.Lag(ctx, "laggers")
	if err != nil || lags.Error() != nil {
		t.Fatal(err, lags.Error())
	}
	// sample is what the metrics say of partition p (ok: it is reported).
	type series struct{ records, seconds, headroom float64 }
	sample := func(p int32) (series, bool) {
		labels := map[string]string{"group": "laggers", "topic": "lagged", "partition": fmt.Sprint(p)}
		s := series{
			records:  gatheredValue(t, ta.Agent, "floe_group_lag_records", labels),
			seconds:  gatheredValue(t, ta.Agent, "floe_group_lag_seconds", labels),
			headroom: gatheredValue(t, ta.Agent, "floe_partition_retention_headroom_seconds", labels),
		}
		return s, s.records >= 0
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range []int32{0, 1} {
		want, _ := lags["laggers"].Lag.Lookup("lagged", p)
		for {
			s, ok := sample(p)
			if ok && s.records == float64(want.Lag) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("partition %d: sample %+v, want kadm's lag %d", p, s, want.Lag)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	s0, _ := sample(0)
	s1, _ := sample(1)
	if s1.records != 0 || s1.seconds != 0 || s1.headroom != time.Hour.Seconds() {
		t.Fatalf("caught-up partition: %+v", s1)
	}
	// Partition 0's first unconsumed record is record 8, 8 s after old.
	if age := time.Since(old.Add(8 * time.Second)).Seconds(); s0.seconds < age-5 || s0.seconds > age+5 ||
		s0.headroom < time.Hour.Seconds()-s0.seconds-1 || s0.headroom > time.Hour.Seconds()-s0.seconds+1 {
		t.Fatalf("lagging partition: %+v, want about %.0f s of lag", s0, age)
	}
	for {
		s, _ := sample(0)
		if s.seconds > s0.seconds {
			break
		}
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatalf("seconds of lag stay at %v while the group does not consume", s.seconds)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gatheredValue is the value of the series of name with labels in a's
// registry (-1 when absent).
func gatheredValue(t *testing.T, a *Agent, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := a.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue series
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}
