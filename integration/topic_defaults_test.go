package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTopicDefaultsReportedAreEnforced: the retention.ms DescribeConfigs
// reports for a topic that sets none is the one the compactor enforces —
// floe dev's keep-forever, and a --retention given on the command line.
func TestTopicDefaultsReportedAreEnforced(t *testing.T) {
	for _, c := range []struct {
		args     []string
		reported string
		deletes  bool
	}{
		{nil, "-1", false},
		{[]string{"--retention", "300ms"}, "300", true},
	} {
		args := append([]string{"dev", "--data-dir", t.TempDir(), "--compactor-interval", "100ms"}, c.args...)
		dev := startFloe(t, args...)
		ctx := testContext(t, time.Minute)
		cl, err := kgo.NewClient(kgo.SeedBrokers(dev.Addr))
		if err != nil {
			t.Fatal(err)
		}
		adm := kadm.NewClient(cl)
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, "kept"); err != nil {
			t.Fatal(err)
		}
		rc, err := adm.DescribeTopicConfigs(ctx, "kept")
		if err != nil {
			t.Fatal(err)
		}
		v, err := rc.On("kept", nil)
		if err != nil {
			t.Fatal(err)
		}
		var reported string
		for _, kv := range v.Configs {
			if kv.Key == "retention.ms" {
				reported = kv.MaybeValue()
			}
		}
		if reported != c.reported {
			t.Fatalf("%v: retention.ms reported %q, want %q", c.args, reported, c.reported)
		}
		old := time.Now().Add(-time.Hour)
		for range 3 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "kept", Value: []byte("v"), Timestamp: old}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		// Three compactor rounds at least: the log start moves only if
		// retention.ms says so.
		time.Sleep(time.Second)
		starts, err := adm.ListStartOffsets(ctx, "kept")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := starts.Lookup("kept", 0)
		if deleted := o.Offset > 0; deleted != c.deletes {
			t.Fatalf("%v: reported retention.ms %s, log start %d after an hour-old produce (deleted %v, want %v)",
				c.args, reported, o.Offset, deleted, c.deletes)
		}
		cl.Close()
		dev.Stop()
	}
}
