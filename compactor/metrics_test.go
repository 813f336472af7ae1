package compactor

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"floe/metadata"
)

// TestObjectGauges: the per-level gauges exist from the first round, at 0
// with no objects, follow the objects as they are merged, and drop the
// series of a level that has none left.
func TestObjectGauges(t *testing.T) {
	e := newEnv(t, nil)
	if err := e.c.refreshGauges(e.ctx); err != nil {
		t.Fatal(err)
	}
	gauge := func(level, state string) float64 {
		return testutil.ToFloat64(e.c.metrics.objects.WithLabelValues(level, state))
	}
	if n := testutil.CollectAndCount(e.c.metrics.objects); n != 1 || gauge("0", metadata.ObjectLive) != 0 {
		t.Fatalf("empty store: %d series, level 0 live = %v; want the one series at 0", n, gauge("0", metadata.ObjectLive))
	}

	tp, err := e.store.CreateTopic(e.ctx, "t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for range 2 {
		keys = append(keys, e.flush(tp.ID, map[int32][][]byte{0: {producerBatch(rec{value: "v"})}}))
	}
	if err := e.c.refreshGauges(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := gauge("0", metadata.ObjectLive); got != 2 {
		t.Fatalf("level 0 live = %v after two flushes, want 2", got)
	}
	if err := e.c.merge(e.ctx, MergeJob{Level: 0, Keys: keys}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.refreshGauges(e.ctx); err != nil {
		t.Fatal(err)
	}
	if l0, l1, rep := gauge("0", metadata.ObjectLive), gauge("1", metadata.ObjectLive), gauge("0", metadata.ObjectReplaced); l0 != 0 || l1 != 1 || rep != 2 {
		t.Fatalf("after the merge: level 0 live %v, level 1 live %v, level 0 replaced %v; want 0, 1, 2", l0, l1, rep)
	}
	// A level with no objects left loses its series (the replaced ones,
	// once deleted); level 0 live stays.
	if err := e.store.ForgetObjects(e.ctx, keys); err != nil {
		t.Fatal(err)
	}
	if err := e.c.refreshGauges(e.ctx); err != nil {
		t.Fatal(err)
	}
	// Left: level 0 live (at 0) and level 1 live.
	if n := testutil.CollectAndCount(e.c.metrics.objects); n != 2 {
		t.Fatalf("%d series after the replaced objects were forgotten, want 2", n)
	}
}
