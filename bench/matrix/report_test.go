package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"floe/agent"
	"floe/bench"
)

func TestEvaluateTargets(t *testing.T) {
	l := func(p99 float64) *bench.Latency { return &bench.Latency{Count: 10, P50: p99 / 2, P99: p99, Max: p99} }
	floe := func(mbps, prodP99, e2eP99 float64) *bench.Result {
		return &bench.Result{Label: "floe dev", Kind: "kafka", Produced: bench.Throughput{Records: 1000, Bytes: 5e8, MBPerS: mbps},
			ProduceLatency: l(prodP99), E2ELatency: l(e2eP99), Storage: &bench.Storage{Mallocs: 500, AllocBytes: 1e6}}
	}
	raw := func(mbps, p99 float64) *bench.Result {
		return &bench.Result{Label: "raw PUT", Kind: "raw-put", Produced: bench.Throughput{MBPerS: mbps, Bytes: 1e9},
			RawPut: &bench.RawPutResult{ObjectSize: 100, Concurrency: 4, Latency: *l(p99), CPUSeconds: 1}}
	}
	ss := []*scenario{
		// 0.9 CPU-s for 0.5 GB is 1.8 CPU-s/GB against the raw PUT's 1.
		{Name: "pg-minio-produce", AgentCPUSeconds: 0.9, Results: []*bench.Result{floe(90, 0, 0), raw(100, 50)}},
		{Name: "pg-minio-max", AgentCPUSeconds: 1.1, Results: []*bench.Result{floe(70, 0, 0), raw(100, 50)}},
		{Name: "dev-max", AgentCPUSeconds: 2, BudgetBytes: 100 << 20, PeakRSSBytes: 164 << 20, Results: []*bench.Result{floe(30, 0, 0), {Label: "kfake", Kind: "kafka", Produced: bench.Throughput{MBPerS: 20}}}},
		// 250 + 50 + 20 = 320 ms allowed; e2e within 20 ms of produce.
		{Name: "pg-minio-rate", FlushInterval: 250 * time.Millisecond, Results: []*bench.Result{floe(10, 319, 330), raw(100, 50)}},
		{Name: "dev-overload", BufferBytes: 16 << 20, IdleRSS: 30 << 20, BudgetBytes: 100 << 20, PeakRSSBytes: 165 << 20,
			Results: []*bench.Result{{Label: "floe dev", Kind: "kafka", Storage: &bench.Storage{BackpressureWaits: 3, PeakBufferedBytes: 16 << 20, PeakRSSBytes: 200 << 20}}}},
	}
	got := map[string]string{}
	for _, tr := range evaluate(ss) {
		got[tr.Target] = tr.Status
	}
	want := map[string]string{
		"one agent over MinIO ≥ 0.8× raw MinIO PUT throughput at the same object size (pg-minio-produce)":           "met",
		"one agent over MinIO ≥ 0.8× raw MinIO PUT throughput at the same object size (pg-minio-max)":               "not met",
		"floe dev ≥ 2× kfake's throughput on the same bench":                                                        "not met",
		"produce p99 ≤ flush interval + PUT p99 + 20 ms (pg-minio-rate)":                                            "met",
		"end-to-end p99 ≤ produce p99 + 20 ms (pg-minio-rate)":                                                      "met",
		"produce p99 ≤ flush interval + PUT p99 + 20 ms (dev-rate)":                                                 "not measured",
		"no per-record allocation (dev-max, whole agent process, produce + fetch)":                                  "met",
		"under overload producers get backpressure and memory stays within the buffer budget plus a fixed overhead": "not met",
		"agent CPU per GB ≤ 2× the raw-PUT baseline's CPU per GB (pg-minio-produce)":                                "met",
		"agent CPU per GB ≤ 2× the raw-PUT baseline's CPU per GB (pg-minio-max)":                                    "not met",
		"peak RSS ≤ sum of memory budgets + 64 MiB (dev-max)":                                                       "met",
		"peak RSS ≤ sum of memory budgets + 64 MiB (dev-overload)":                                                  "not met",
		"peak RSS ≤ sum of memory budgets + 64 MiB (pg-minio-rate)":                                                 "not measured",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	md := renderMarkdown(time.Unix(0, 0), bench.Machine{CPUs: 2}, ss, evaluate(ss), "BenchmarkX 1 ns/op", time.Second, nil, compareConfig{})
	for _, s := range []string{"## Targets (issues 7 and 19)", "| floe dev | 0 | 90.00 |", "BenchmarkX", "bench/dev-overload.html",
		"2.00 s user+system for 0.500 GB produced = **4.0 CPU-s/GB**"} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q", s)
		}
	}
}

func TestEvaluateCompare(t *testing.T) {
	run := func(broker, mode string, rate, cpu float64) *compareRun {
		return &compareRun{Broker: broker, Mode: mode, Rate: rate, BrokerCPUSeconds: cpu,
			Result: &bench.Result{Produced: bench.Throughput{Bytes: 2e9}}}
	}
	runs := []*compareRun{
		run("floe dev", "produce", 0, 2), run("kfake", "produce", 0, 4), // 1 vs 2 CPU-s/GB: 0.5×
		run("floe dev", "produce", 10000, 9), run("kfake", "produce", 10000, 4), // 2.25×
		run("floe dev", "e2e", 0, 3), run("kfake", "e2e", 0, 4), // 0.75×
		run("floe dev", "e2e", 1000, 1),
	}
	// floe dev's closed-loop floors: 0.6 CPU-s/GB under produce (its 1 is
	// 1.67×), 0.5 under e2e (its 1.5 is 3×).
	runs[0].Floor = floor(1.2, 2e9, 0)
	runs[4].Floor = floor(1, 2e9, 0)
	got := map[string]string{}
	for _, tr := range evaluateCompare(runs) {
		got[tr.Target] = tr.Status + ": " + tr.Measured
	}
	want := map[string]string{
		"floe dev's CPU per GB ≤ 0.5× kfake's, each its own process (closed loop, produce)": "met: 1.00 vs 2.00 CPU-s/GB: 0.50×",
		"floe dev's CPU per GB ≤ 2× kfake's at 10000 records/s (produce)":                   "not met: 4.50 vs 2.00 CPU-s/GB: 2.25×",
		"floe dev's CPU per GB ≤ 0.5× kfake's, each its own process (closed loop, e2e)":     "not met: 1.50 vs 2.00 CPU-s/GB: 0.75×",
		"floe dev's CPU per GB ≤ 2× kfake's at 1000 records/s (e2e)":                        "not measured: –",
		"floe dev's CPU per GB ≤ 2× its file-write floor (closed loop, produce)":            "met: 1.00 vs 0.60 CPU-s/GB: 1.67×",
		"floe dev's CPU per GB ≤ 2× its file-write floor (closed loop, e2e)":                "not met: 1.50 vs 0.50 CPU-s/GB: 3.00×",
	}
	if len(got) != len(want) {
		t.Errorf("%d targets, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}

	// A floor that was skipped, or never run, is not measured.
	runs[0].Floor = &compareFloor{Skipped: "no PUTs"}
	runs[4].Floor = nil
	for _, tr := range evaluateCompare(runs) {
		if strings.Contains(tr.Target, "file-write floor") && tr.Status != "not measured" {
			t.Errorf("%s: %s without a floor", tr.Target, tr.Status)
		}
	}
}

// floor is a file-write floor of cpu seconds for bytes written, paced at
// rate PUTs/s (0: back to back).
func floor(cpu float64, bytes int64, rate float64) *compareFloor {
	return &compareFloor{Command: "floe bench produce --baselines-only", LoadBefore: "0.50", LoadAfter: "0.75",
		Result: &bench.Result{Kind: "raw-put", Produced: bench.Throughput{Bytes: bytes, MBPerS: 300},
			ProduceLatency: &bench.Latency{Count: 10, P50: 40, P99: 90},
			RawPut:         &bench.RawPutResult{ObjectSize: 4_000_000, Concurrency: 4, CPUSeconds: cpu, Rate: rate}}}
}

func TestRenderCompareShowsTheFloor(t *testing.T) {
	run := func(broker string, rate, cpu float64) *compareRun {
		return &compareRun{Broker: broker, Mode: bench.ModeProduce, Rate: rate, BrokerCPUSeconds: cpu, LoadBefore: "1", LoadAfter: "2",
			Result: &bench.Result{Produced: bench.Throughput{Bytes: 1e9}}}
	}
	// floe dev 4.4 CPU-s/GB, its floor 2.2, kfake 2: the floor alone is
	// over the 1.0 the 0.5× target allows.
	f, k := run("floe dev", 0, 4.4), run("kfake", 0, 2)
	f.Floor = floor(4.4, 2e9, 0)
	fr := run("floe dev", 1000, 9)
	fr.Floor = floor(0.5, 1e8, 25)
	runs := []*compareRun{f, k, fr, run("kfake", 1000, 5)}
	cc := compareConfig{Modes: []string{bench.ModeProduce}, Rates: []float64{0, 1000}}
	render := func() string {
		var b strings.Builder
		renderCompare(func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }, runs, cc)
		return b.String()
	}
	md := render()
	for _, s := range []string{
		"| floe dev | closed loop | 0 | 0.0 | 4.40 | **4.40** |",
		"| floe dev's floor: raw file writes | closed loop: 4 × 4.00 MB files, back to back | – | 300.0 | 4.40 | **2.20** | 40 / 90 (PUT) | – | – | – | 0 | 0.50 → 0.75 |",
		"| floe dev's floor: raw file writes | 1000 records/s: 4 × 4.00 MB files, 25 PUTs/s as floe dev | – | 300.0 | 0.50 | **5.00** |",
		"# floe dev's floor: raw file writes, after it with the broker stopped:\nfloe bench produce --baselines-only\n",
		"floe dev spent 4.40 CPU-s/GB and kfake 2.00",
		"cost **2.20 CPU-s/GB**, 1.10× kfake's whole",
		"at most 1.00 CPU-s/GB: less than storing the bytes durably costs",
		"floe dev spent 2.00× its floor: 2.20 CPU-s/GB on the rest",
		"Each fixed-rate floe dev row has its own floor row",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("comparison lacks %q:\n%s", s, md)
		}
	}
	// Each floor row follows its own floe dev row.
	if i, j := strings.Index(md, "| floe dev | closed loop"), strings.Index(md, "| floe dev's floor: raw file writes | closed loop"); i < 0 || j < i || strings.Contains(md[i:j], "| kfake |") {
		t.Errorf("the closed-loop floor row does not follow floe dev's:\n%s", md)
	}

	// A floor under half kfake's leaves room, and the prose says how much.
	f.Floor = floor(1.2, 2e9, 0)
	if md := render(); !strings.Contains(md, "at most 1.00 CPU-s/GB: 0.40 CPU-s/GB over the file writes") || strings.Contains(md, "no code in floe can meet it") {
		t.Errorf("a floor of 0.6 CPU-s/GB against kfake's 2:\n%s", md)
	}
	// No floor: no floor row, no floor prose.
	f.Floor, fr.Floor = nil, &compareFloor{Skipped: "no PUTs"}
	if md := render(); strings.Contains(md, floorName) || strings.Contains(md, "The floor.") {
		t.Errorf("floor shown without one:\n%s", md)
	}
}

func TestFloorArgs(t *testing.T) {
	r := &compareRun{Mode: bench.ModeE2E, Result: &bench.Result{Produced: bench.Throughput{Seconds: 2.4},
		Storage: &bench.Storage{Puts: 10, BytesPerPut: 123456.7, PutsPerS: 41.26}}}
	conc := fmt.Sprint(agent.DevConfig().MaxInflightFlushes)
	args, skipped := floorArgs(r, "/d/b", "/d/f.json")
	if want := "bench e2e --baselines-only --quiet --raw-put-bucket file:///d/b --raw-put-size 123456 --raw-put-concurrency " + conc +
		" --raw-put-duration 5s --json /d/f.json"; strings.Join(args, " ") != want || skipped != "" {
		t.Errorf("closed loop: %q (%q), want %q", args, skipped, want)
	}
	// A fixed-rate run's floor keeps its PUT rate, for about as long.
	r.Rate, r.Result.Produced.Seconds = 1000, 19.6
	args, _ = floorArgs(r, "/d/b", "/d/f.json")
	if got := strings.Join(args, " "); !strings.HasSuffix(got, "--raw-put-duration 20s --json /d/f.json --raw-put-rate 41.3") {
		t.Errorf("fixed rate: %q", got)
	}
	r.Result.Storage = nil
	if args, skipped := floorArgs(r, "/d/b", "/d/f.json"); args != nil || skipped == "" {
		t.Errorf("no metrics: %q, %q", args, skipped)
	}
}

func TestSplitArgs(t *testing.T) {
	load, base := splitArgs([]string{"--duration", "5s", "--kfake", "--raw-put-concurrency", "4", "--rate", "10"})
	if strings.Join(load, " ") != "--duration 5s --rate 10" ||
		strings.Join(base, " ") != "--duration 5s --rate 10 --kfake --raw-put-concurrency 4" {
		t.Errorf("load %q baseline %q", load, base)
	}
	if _, base := splitArgs([]string{"--rate", "10"}); base != nil {
		t.Errorf("baseline %q without baseline flags", base)
	}
}
