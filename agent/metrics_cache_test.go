package agent

import (
	"context"
	"testing"

	"floe/storage/mem"
)

// The read cache's counters are on /metrics (they were kept by the cache
// but never exported, so no dashboard could show a hit rate): a first read
// of a range misses, a second hits, and the cached bytes are counted.
func TestReadCacheMetricsExported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bucket := mem.New()
	ta := newTestAgent(t, bucket)
	const key = "cache-metrics-object"
	if err := bucket.Put(ctx, key, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	read := func(name string) float64 {
		t.Helper()
		mfs, err := ta.metrics.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				m := mf.GetMetric()[0]
				if c := m.GetCounter(); c != nil {
					return c.GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
		t.Fatalf("%s not exported", name)
		return 0
	}
	hits0, misses0 := read("floe_agent_read_cache_hits_total"), read("floe_agent_read_cache_misses_total")
	bytes0 := read("floe_agent_read_cache_bytes")
	for range 2 {
		if _, err := ta.cache.GetRange(ctx, key, 100, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if got := read("floe_agent_read_cache_misses_total") - misses0; got != 1 {
		t.Errorf("misses went up by %v, want 1", got)
	}
	if got := read("floe_agent_read_cache_hits_total") - hits0; got != 1 {
		t.Errorf("hits went up by %v, want 1", got)
	}
	if got := read("floe_agent_read_cache_bytes") - bytes0; got != 1000 {
		t.Errorf("cached bytes went up by %v, want 1000", got)
	}
	if st := ta.cache.Stats(); read("floe_agent_read_cache_evictions_total") != float64(st.Evictions) {
		t.Errorf("evictions exported %v, the cache counts %d", read("floe_agent_read_cache_evictions_total"), st.Evictions)
	}
}
