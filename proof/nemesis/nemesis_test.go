package nemesis

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// fake records what the nemesis did to it.
func fake(name string, log *[]string) *Funcs {
	note := func(what string) func() error {
		return func() error { *log = append(*log, name+" "+what); return nil }
	}
	return &Funcs{N: name, KillF: note("kill"), PauseF: note("pause"), ResF: note("resume"),
		StartF: func(context.Context) error { *log = append(*log, name+" start"); return nil }}
}

func schedule(t *testing.T, seed uint64) ([]string, []Event) {
	t.Helper()
	var log []string
	c := Cluster{
		Agents:    []Target{fake("agent0", &log), fake("agent1", &log), fake("agent2", &log)},
		Compactor: fake("compactor", &log), Postgres: fake("postgres", &log), MinIO: fake("minio", &log),
		AgentTTL: time.Millisecond,
	}
	n := New(c, Config{Seed: seed, Kinds: []Kind{PauseAgent, KillAgent, KillCompactor, RestartPostgres, KillMinIO, PauseMinIO},
		Gap: 2 * time.Millisecond, Hold: 2 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	n.Run(ctx)
	return log, n.Timeline()
}

// TestScheduleReplays: one seed, one sequence of faults and targets; every
// fault is healed, in order, before the next starts.
func TestScheduleReplays(t *testing.T) {
	a, ta := schedule(t, 42)
	b, _ := schedule(t, 42)
	if len(a) < 12 {
		t.Fatalf("only %d actions in 300ms: %v", len(a), a)
	}
	n := min(len(a), len(b)) &^ 1 // whole faults: an action and its inverse
	if !slices.Equal(a[:n-2], b[:n-2]) {
		t.Errorf("same seed, different schedules:\n%v\n%v", a[:n], b[:n])
	}
	c, _ := schedule(t, 43)
	if slices.Equal(a[:10], c[:10]) {
		t.Errorf("seeds 42 and 43 gave the same schedule: %v", a[:10])
	}
	inverse := map[string]string{"kill": "start", "pause": "resume"}
	for i := 0; i+1 < len(a); i += 2 {
		var tgt, what, tgt2, what2 string
		splitAction(a[i], &tgt, &what)
		splitAction(a[i+1], &tgt2, &what2)
		if tgt != tgt2 || inverse[what] != what2 {
			t.Fatalf("action %d %q not healed by the next, %q", i, a[i], a[i+1])
		}
	}
	for i, e := range ta {
		want := "start"
		if i%2 == 1 {
			want = "heal"
		}
		if e.Action != want || e.Err != "" {
			t.Fatalf("timeline event %d: %+v, want a %s without error", i, e, want)
		}
	}
}

func splitAction(s string, target, what *string) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ' ' {
			*target, *what = s[:i], s[i+1:]
			return
		}
	}
}

func TestParseKinds(t *testing.T) {
	ks, err := ParseKinds("kill-agent, pause-minio")
	if err != nil || !slices.Equal(ks, []Kind{KillAgent, PauseMinIO}) {
		t.Errorf("ParseKinds: %v %v", ks, err)
	}
	if _, err := ParseKinds("kill-everything"); err == nil {
		t.Error("an unknown kind parsed")
	}
	if ks, _ := ParseKinds("all"); !slices.Equal(ks, AllKinds) {
		t.Errorf("all: %v", ks)
	}
}

// TestConcurrentSchedulesShareNoTarget: three schedules overlap their
// faults, but never act on a target another one's fault holds.
func TestConcurrentSchedulesShareNoTarget(t *testing.T) {
	var mu sync.Mutex
	down := map[string]bool{}
	var overlaps, faults int
	var violations []string
	target := func(name string) *Funcs {
		act := func(what string, up bool) error {
			mu.Lock()
			defer mu.Unlock()
			if up == !down[name] {
				violations = append(violations, name+" "+what)
			}
			if !up {
				faults++
				if len(down) > 0 {
					overlaps++
				}
				down[name] = true
			} else {
				delete(down, name)
			}
			return nil
		}
		return &Funcs{N: name, KillF: func() error { return act("kill", false) }, PauseF: func() error { return act("pause", false) },
			ResF: func() error { return act("resume", true) }, StartF: func(context.Context) error { return act("start", true) }}
	}
	c := Cluster{
		Agents:    []Target{target("agent0"), target("agent1"), target("agent2")},
		Compactor: target("compactor"), Postgres: target("postgres"), MinIO: target("minio"),
		AgentTTL: time.Millisecond,
	}
	n := New(c, Config{Seed: 1, Kinds: []Kind{PauseAgent, KillAgent, KillCompactor, RestartPostgres, KillMinIO, PauseMinIO},
		Gap: time.Millisecond, Hold: 4 * time.Millisecond, Concurrency: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	n.Run(ctx)
	mu.Lock()
	defer mu.Unlock()
	if len(violations) > 0 {
		t.Errorf("a target acted on twice: %v", violations)
	}
	if len(down) > 0 {
		t.Errorf("left down after Run: %v", down)
	}
	if faults < 20 || overlaps == 0 {
		t.Errorf("%d faults, %d overlapping: want many, some overlapping", faults, overlaps)
	}
}
