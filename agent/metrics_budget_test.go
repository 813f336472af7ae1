package agent

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The memory budget gauges carry each configured budget, so a benchmark
// reading /metrics adds up what the agent was allowed.
func TestMemoryBudgetGauges(t *testing.T) {
	t.Parallel()
	cfg := DevConfig()
	cfg.BufferBytes, cfg.FetchBufferBytes, cfg.CacheBytes, cfg.ReadAheadBytes = 40<<20, 24<<20, 8<<20, 4<<20
	budgets := cfg.MemoryBudgets()
	m := newMetrics(budgets)
	if n := testutil.CollectAndCount(m.memoryBudget); n != len(budgets) {
		t.Fatalf("%d budget series, want %d", n, len(budgets))
	}
	want := map[string]float64{"request": 40 << 20, "idle buffers": 20 << 20, "fetch": 24 << 20, "read cache": 8 << 20, "read-ahead": 4 << 20}
	var sum float64
	for name, v := range want {
		got := testutil.ToFloat64(m.memoryBudget.WithLabelValues(name))
		if got != v {
			t.Errorf("budget %q = %v, want %v", name, got, v)
		}
		sum += got
	}
	if sum != float64(SumBudgets(budgets)) {
		t.Errorf("gauges sum to %v, SumBudgets says %d", sum, SumBudgets(budgets))
	}
}
