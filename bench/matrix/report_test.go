package main

import (
	"strings"
	"testing"
	"time"

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
	got := map[string]string{}
	for _, tr := range evaluateCompare(runs) {
		got[tr.Target] = tr.Status + ": " + tr.Measured
	}
	want := map[string]string{
		"floe dev's CPU per GB ≤ 0.5× kfake's, each its own process (closed loop, produce)": "met: 1.00 vs 2.00 CPU-s/GB: 0.50×",
		"floe dev's CPU per GB ≤ 2× kfake's at 10000 records/s (produce)":                   "not met: 4.50 vs 2.00 CPU-s/GB: 2.25×",
		"floe dev's CPU per GB ≤ 0.5× kfake's, each its own process (closed loop, e2e)":     "not met: 1.50 vs 2.00 CPU-s/GB: 0.75×",
		"floe dev's CPU per GB ≤ 2× kfake's at 1000 records/s (e2e)":                        "not measured: –",
	}
	if len(got) != len(want) {
		t.Errorf("%d targets, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
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
