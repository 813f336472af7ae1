package compactor

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func pacedSeconds(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestPacerPausesOnlyWhileBusy(t *testing.T) {
	var busy atomic.Bool
	c := &Compactor{cfg: Config{Busy: busy.Load, PaceRatio: 2, Grace: time.Minute}, metrics: newMetrics()}
	ctx := context.Background()

	// Idle foreground: no pause, however long the step.
	p := c.newPacer()
	time.Sleep(30 * time.Millisecond)
	start := time.Now()
	if err := p.step(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Millisecond {
		t.Fatalf("paused %v with the foreground idle", d)
	}

	// Busy: a 30 ms step is followed by a pause of twice that.
	busy.Store(true)
	p = c.newPacer()
	time.Sleep(30 * time.Millisecond)
	start = time.Now()
	if err := p.step(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 60*time.Millisecond || d > time.Second {
		t.Fatalf("paused %v after a 30 ms step at ratio 2, want about 60 ms", d)
	}
	if s := pacedSeconds(t, c.metrics.pacedSeconds); s < 0.06 {
		t.Fatalf("paced seconds %v, want at least 0.06", s)
	}

	// The pauses of one job are bounded by an eighth of the grace period.
	c.cfg.Grace = 80 * time.Millisecond
	p = c.newPacer()
	time.Sleep(50 * time.Millisecond)
	start = time.Now()
	_ = p.step(ctx)
	time.Sleep(50 * time.Millisecond)
	_ = p.step(ctx)
	if d := time.Since(start); d > 50*time.Millisecond+40*time.Millisecond {
		t.Fatalf("job paused %v in all, want at most grace/8 = 10 ms beyond its work", d-50*time.Millisecond)
	}

	// A cancelled job stops pausing at once.
	c.cfg.Grace = time.Hour
	p = c.newPacer()
	time.Sleep(20 * time.Millisecond)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.step(cctx); err == nil {
		t.Fatal("step returned no error with its context cancelled")
	}
}

// TestMergeYieldsToBusyAgent: with the foreground busy the merge pauses
// between its steps, and still produces the same bytes.
func TestMergeYieldsToBusyAgent(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Busy = func() bool { return true }
		c.PaceRatio = 1
	})
	tp, err := e.store.CreateTopic(e.ctx, "t", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range 4 {
		keys = append(keys, e.flush(tp.ID, map[int32][][]byte{
			0: {producerBatch(rec{value: "a"}, rec{value: "b"})},
			1: {producerBatch(rec{value: string(rune('c' + i))})},
		}))
	}
	before0, _ := e.fetchAll(tp.ID, 0)
	before1, _ := e.fetchAll(tp.ID, 1)
	if err := e.c.merge(e.ctx, MergeJob{Level: 0, Keys: keys}); err != nil {
		t.Fatal(err)
	}
	after0, _ := e.fetchAll(tp.ID, 0)
	after1, _ := e.fetchAll(tp.ID, 1)
	if !bytes.Equal(before0, after0) || !bytes.Equal(before1, after1) {
		t.Fatal("fetched bytes differ after a paced merge")
	}
	if objs, _ := e.count(); objs != 1 {
		t.Fatalf("%d live objects after merging 4, want 1", objs)
	}
	if pacedSeconds(t, e.c.metrics.pacedSeconds) <= 0 {
		t.Fatal("a merge beside a busy agent never paused")
	}
}
