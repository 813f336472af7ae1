package workload

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"

	"floe/proof/history"
)

// saramaMeters: sarama's metrics start go-metrics' meter arbiter, a
// goroutine of the process that never ends.
var saramaMeters = goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick")

// TestRunSaramaAgainstKfake runs a sarama assign and a sarama subscribe
// worker for ten seconds against kfake alongside franz-go workers of every
// kind, and the two sarama workers alone for three, and checks both
// histories valid with nothing unseen; the run alone shows that sarama's
// sends, polls and subscribes are ok ops.
func TestRunSaramaAgainstKfake(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 13 seconds")
	}
	defer goleak.VerifyNone(t, franzGoFetchManager, saramaMeters)
	for _, tc := range []struct {
		name             string
		kinds            []Kind
		workers, saramas int
		d                time.Duration
	}{
		{"mixed", nil, 8, 2, 10 * time.Second},
		{"alone", []Kind{KindAssign, KindSubscribe}, 2, 2, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cfg := testConfig(c, tc.d)
			cfg.Workers, cfg.Kinds, cfg.SaramaWorkers = tc.workers, tc.kinds, tc.saramas
			res := runAndCheck(t, cfg)
			for _, f := range []history.F{history.Send, history.Poll, history.Assign, history.Subscribe} {
				if res.Stats.OpsByF[f] == 0 {
					t.Errorf("no %s op in %v", f, res.Stats.OpsByF)
				}
			}
			t.Logf("ops by kind %v, by outcome %v", res.Stats.OpsByF, res.Stats.OpsByType)
		})
	}
}
