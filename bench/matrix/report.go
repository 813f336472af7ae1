package main

import (
	"fmt"
	"strings"
	"time"

	"floe/bench"
)

// targetResult is one issue-7 target and what this run measured for it.
type targetResult struct {
	Target   string `json:"target"`
	Measured string `json:"measured"`
	// Status is "met", "not met" or "not measured".
	Status string `json:"status"`
}

func find(ss []*scenario, name string) *scenario {
	for _, s := range ss {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// byKind returns the scenario's floe result, its kfake result and its raw
// PUT result (nil where absent).
func byKind(s *scenario) (floe, kfake, raw *bench.Result) {
	for _, r := range s.Results {
		switch {
		case r.Kind == "raw-put":
			raw = r
		case r.Label == "kfake":
			kfake = r
		default:
			floe = r
		}
	}
	return
}

func status(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

func evaluate(ss []*scenario) []targetResult {
	var out []targetResult
	missing := func(t string) { out = append(out, targetResult{t, "–", "not measured"}) }

	// The target is the agent's ingest (pg-minio-produce); the same ratio
	// with a consumer reading meanwhile (pg-minio-max) is shown beside it.
	for _, name := range []string{"pg-minio-produce", "pg-minio-max"} {
		t := "one agent over MinIO ≥ 0.8× raw MinIO PUT throughput at the same object size (" + name + ")"
		s := find(ss, name)
		if s == nil {
			missing(t)
			continue
		}
		f, _, raw := byKind(s)
		if f == nil || raw == nil || raw.Produced.MBPerS <= 0 {
			missing(t)
			continue
		}
		r := f.Produced.MBPerS / raw.Produced.MBPerS
		out = append(out, targetResult{t, fmt.Sprintf("%.1f MB/s vs %.1f MB/s raw (%d B objects, %d PUTs at once): %.2f×",
			f.Produced.MBPerS, raw.Produced.MBPerS, raw.RawPut.ObjectSize, raw.RawPut.Concurrency, r), status(r >= 0.8)})
	}

	t := "floe dev ≥ 2× kfake's throughput on the same bench"
	if s := find(ss, "dev-max"); s != nil {
		if f, k, _ := byKind(s); f != nil && k != nil && k.Produced.MBPerS > 0 {
			r := f.Produced.MBPerS / k.Produced.MBPerS
			out = append(out, targetResult{t, fmt.Sprintf("%.1f MB/s vs kfake %.1f MB/s: %.2f×", f.Produced.MBPerS, k.Produced.MBPerS, r), status(r >= 2)})
		} else {
			missing(t)
		}
	} else {
		missing(t)
	}

	for _, name := range []string{"dev-rate", "pg-minio-rate", "dev-s3-latency"} {
		s := find(ss, name)
		t1 := "produce p99 ≤ flush interval + PUT p99 + 20 ms (" + name + ")"
		t2 := "end-to-end p99 ≤ produce p99 + 20 ms (" + name + ")"
		if s == nil {
			missing(t1)
			missing(t2)
			continue
		}
		f, _, raw := byKind(s)
		if f == nil || f.ProduceLatency == nil || f.E2ELatency == nil {
			missing(t1)
			missing(t2)
			continue
		}
		putP99, src := 0.0, ""
		switch {
		case raw != nil:
			putP99, src = raw.RawPut.Latency.P99, "raw PUT baseline"
		case f.Storage != nil && f.Storage.PutP99Ms > 0:
			putP99, src = f.Storage.PutP99Ms, "agent histogram bound"
		}
		flush := float64(s.FlushInterval) / 1e6
		limit := flush + putP99 + 20
		out = append(out, targetResult{t1, fmt.Sprintf("%.1f ms vs %.0f + %.1f (%s) + 20 = %.1f ms",
			f.ProduceLatency.P99, flush, putP99, src, limit), status(f.ProduceLatency.P99 <= limit)})
		if _, k, _ := byKind(s); k != nil && k.ProduceLatency != nil {
			// The same client against kfake (a broker that answers at
			// once) shows the client's own queueing: linger, its
			// scheduling on a shared machine. What is left is the
			// broker's share.
			t := "produce p99 − kfake's produce p99 (the client's own queueing) ≤ flush interval + PUT p99 + 20 ms (" + name + ")"
			d := f.ProduceLatency.P99 - k.ProduceLatency.P99
			out = append(out, targetResult{t, fmt.Sprintf("%.1f − %.1f = %.1f ms vs %.1f ms",
				f.ProduceLatency.P99, k.ProduceLatency.P99, d, limit), status(d <= limit)})
		}
		out = append(out, targetResult{t2, fmt.Sprintf("%.1f ms vs %.1f + 20 = %.1f ms",
			f.E2ELatency.P99, f.ProduceLatency.P99, f.ProduceLatency.P99+20), status(f.E2ELatency.P99 <= f.ProduceLatency.P99+20)})
	}

	for _, name := range []string{"dev-max", "pg-minio-max"} {
		t := "no per-record allocation (" + name + ", whole agent process, produce + fetch)"
		s := find(ss, name)
		if s == nil {
			missing(t)
			continue
		}
		f, _, _ := byKind(s)
		if f == nil || f.Storage == nil || f.Produced.Records == 0 {
			missing(t)
			continue
		}
		a := f.Storage.Mallocs / float64(f.Produced.Records)
		out = append(out, targetResult{t, fmt.Sprintf("%.2f allocations and %.0f bytes allocated per record",
			a, f.Storage.AllocBytes/float64(f.Produced.Records)), status(a < 1)})
	}

	// Issue 19: an agent on PostgreSQL + MinIO within 2× of the CPU the
	// raw PUT baseline's client spends storing the same bytes.
	for _, name := range []string{"pg-minio-produce", "pg-minio-max"} {
		t := "agent CPU per GB ≤ 2× the raw-PUT baseline's CPU per GB (" + name + ")"
		s := find(ss, name)
		if s == nil {
			missing(t)
			continue
		}
		a, r := agentCPUPerGB(s), rawCPUPerGB(s)
		if a <= 0 || r <= 0 {
			missing(t)
			continue
		}
		out = append(out, targetResult{t, fmt.Sprintf("%.2f vs %.2f CPU-s/GB: %.2f×", a, r, a/r), status(a/r <= 2)})
	}
	// Issue 19: every scenario's peak RSS within its memory budgets.
	for _, s := range ss {
		t := "peak RSS ≤ sum of memory budgets + 64 MiB (" + s.Name + ")"
		if s.BudgetBytes <= 0 || s.PeakRSSBytes <= 0 {
			missing(t)
			continue
		}
		limit := s.BudgetBytes + 64<<20
		out = append(out, targetResult{t, fmt.Sprintf("%.0f MiB vs %.0f + 64 = %.0f MiB", s.PeakRSSBytes/(1<<20), s.BudgetBytes/(1<<20), limit/(1<<20)),
			status(s.PeakRSSBytes <= limit)})
	}

	t = "under overload producers get backpressure and memory stays within the buffer budget plus a fixed overhead"
	if s := find(ss, "dev-overload"); s != nil {
		if f, _, _ := byKind(s); f != nil && f.Storage != nil {
			st := f.Storage
			// "Fixed overhead" is taken as 64 MiB over the idle process:
			// room for the runtime, caches and connections, not for
			// requests queued beyond the budget.
			limit := s.IdleRSS + float64(s.BufferBytes) + 64<<20
			ok := st.BackpressureWaits > 0 && st.PeakBufferedBytes <= float64(s.BufferBytes) && st.PeakRSSBytes <= limit
			out = append(out, targetResult{t, fmt.Sprintf("%.0f backpressure waits; peak buffered %.1f MiB of a %.0f MiB budget; RSS %.0f MiB idle → %.0f MiB peak (limit taken as idle + budget + 64 MiB = %.0f MiB)",
				st.BackpressureWaits, st.PeakBufferedBytes/(1<<20), float64(s.BufferBytes)/(1<<20), s.IdleRSS/(1<<20), st.PeakRSSBytes/(1<<20), limit/(1<<20)), status(ok)})
		} else {
			missing(t)
		}
	} else {
		missing(t)
	}
	return out
}

// agentCPUPerGB is the agent's CPU-seconds per GB its floe run produced.
func agentCPUPerGB(s *scenario) float64 {
	f, _, _ := byKind(s)
	if f == nil || f.Produced.Bytes <= 0 || s.AgentCPUSeconds <= 0 {
		return 0
	}
	return s.AgentCPUSeconds / (float64(f.Produced.Bytes) / 1e9)
}

// rawCPUPerGB is the raw PUT baseline's CPU-seconds per GB it stored.
func rawCPUPerGB(s *scenario) float64 {
	_, _, raw := byKind(s)
	if raw == nil || raw.RawPut == nil || raw.Produced.Bytes <= 0 || raw.RawPut.CPUSeconds <= 0 {
		return 0
	}
	return raw.RawPut.CPUSeconds / (float64(raw.Produced.Bytes) / 1e9)
}

func lat(l *bench.Latency) (p50, p99, p999, max string) {
	if l == nil || l.Count == 0 {
		return "–", "–", "–", "–"
	}
	f := func(v float64) string { return fmt.Sprintf("%.3g", v) }
	return f(l.P50), f(l.P99), f(l.P999), f(l.Max)
}

func renderMarkdown(gen time.Time, m bench.Machine, ss []*scenario, targets []targetResult, goBench string, d time.Duration, compare []*compareRun, cc compareConfig) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Benchmarks\n\n")
	w("Generated by `make bench` on %s. Rerun it to refresh every figure on this page;\n", gen.Format("2006-01-02 15:04 MST"))
	w("each scenario's full JSON and a self-contained HTML latency chart are in [bench/](bench/).\n\n")
	w("**Machine:** %d CPUs (%s), %s memory, %s, %s/%s. The load generator, the agent, PostgreSQL,\n", m.CPUs, m.CPU, m.Memory, m.Go, m.OS, m.Arch)
	w("MinIO and the in-process kfake baseline all share these cores, so the absolute figures are\n")
	w("those of a small laptop-class box; the ratios are what the targets compare.\n\n")
	w("## How it measures\n\n")
	w("- `floe bench e2e` runs franz-go producers (1 KiB random records, 16 partitions, 2 producer\n")
	w("  clients, linger 5 ms, acks=all) and one consumer reading the topic from the start, for %v each\n", d)
	w("  after a 2 s warm-up at the same rate (`--warmup`): the warm-up's records are produced and\n")
	w("  consumed but left out of the latencies, which would otherwise show the clients' start\n")
	w("  (connections, metadata, and franz-go's one batch per partition until its first ack).\n")
	w("- **Closed loop** runs send as fast as the broker acknowledges (up to 50 000 records buffered and 5\n")
	w("  requests in flight per producer): their throughput is the figure; their latency is mostly\n  client-side queueing.\n")
	w("- **Fixed-rate** runs (`--rate`) are free of coordinated omission: each record carries its\n")
	w("  *scheduled* send time in a header, produce latency is ack time − scheduled time and end-to-end\n")
	w("  latency is consume time − scheduled time, so a stall shows up in the tail. Their producers may\n")
	w("  have 64 requests in flight (`--inflight 64`): a request is answered once its object is stored,\n")
	w("  up to a flush interval + PUT + commit after it arrives, and a producer sending one every ~5 ms\n")
	w("  (linger) needs that many to keep sending (Little's law). With the clients' usual 5 it stalls\n")
	w("  after 25 ms and its records wait for a second flush: p99 ≈ 2 × (interval + PUT).\n")
	w("- Latencies are kept in a log-linear (HDR-style) histogram, within 0.8%% of the true value.\n")
	w("- Object-store and metadata figures are deltas of the agent's `/metrics` over the run:\n")
	w("  `floe_storage_requests_total`, `floe_storage_bytes_total`, `floe_agent_flushes_total`,\n")
	w("  `floe_agent_metadata_commit_duration_seconds_count`, `go_memstats_mallocs_total`.\n")
	w("- Baselines run right after, once the agent is stopped (a dev agent goes on compacting what it\n")
	w("  was sent, which would slow them): **kfake** (franz-go's in-memory broker, in the bench process)\n")
	w("  under the same load, and **raw PUT**: PUTs straight to the same bucket at the agent's measured\n")
	w("  bytes per PUT and its flush concurrency. `floe bench … --kfake --raw-put-bucket URL` runs all\n")
	w("  three in one invocation; the matrix splits them with `--baselines-only` for that reason.\n\n")
	w("Reading the figures:\n\n")
	w("- `floe dev` runs the compactor inside the agent process; its merges compete with produce and\n")
	w("  fetch for the same two cores and show up in the dev profiles.\n")
	w("- The raw PUT target compares the agent's ingest (pg-minio-produce: producers only) with PUTs\n")
	w("  from memory. On this box the agent's run also feeds the load generator, PostgreSQL and MinIO\n")
	w("  from the same two cores, while the raw run gives MinIO nearly all of them; the agent's own\n")
	w("  CPU per GB (under each run's table) is the figure that does not depend on the box.\n")
	w("- In the scenarios' baselines kfake runs inside the `floe bench` process, so it shares the load\n")
	w("  generator's CPU and its CPU is not comparable with floe's; the broker comparison below runs\n")
	w("  every broker in its own process and compares their own CPU-seconds. The machine is shared with\n")
	w("  other work (see the load averages): figures move by tens of percent from run to run, so compare\n")
	w("  ratios within one run, and CPU-seconds before throughput.\n")
	w("- Peak RSS targets read the agent's own peak resident size (VmHWM from /proc, over its life to the\n")
	w("  end of the floe run) against the sum of its memory budgets as it exports them\n")
	w("  (`floe_agent_memory_budget_bytes`: request, idle buffers, fetch, read cache, and in floe dev its\n")
	w("  in-process compactor's and converter's). The raw-PUT CPU target compares the agent's CPU per GB with\n")
	w("  the raw PUT client's own process CPU per GB stored (getrusage around its PUTs). Both PUT through\n")
	w("  floe's S3 client, with a checksum MinIO checks: the raw PUTs' is the CRC32 the AWS SDK computes over\n")
	w("  every byte; the agent's is the CRC-32C it folds from its batches' own CRCs, without that pass\n")
	w("  (docs/architecture.md, Object format).\n")
	w("- \"allocs/record\" is the agent process's `go_memstats_mallocs_total` delta divided by records\n")
	w("  produced: produce, fetch, metadata, object store client and compactor together, so it bounds the\n")
	w("  produce path's own allocations from above.\n")
	w("- Where the consumer could not read every record within the drain time (30 s after sending\n")
	w("  stops) the run counts one error and the end-to-end tail is that of the records it did read.\n\n")
	w("## Targets (issues 7 and 19)\n\n| target | measured | status |\n|---|---|---|\n")
	for _, t := range targets {
		w("| %s | %s | **%s** |\n", t.Target, t.Measured, t.Status)
	}
	w("\n")
	renderCompare(w, compare, cc)
	for _, s := range ss {
		w("## %s\n\n", s.Title)
		w("```\n%s\n%s\n", s.AgentCommand, s.BenchCommand)
		if s.BaselineCommand != "" {
			w("# then, with the agent stopped:\n%s\n", s.BaselineCommand)
		}
		w("```\n\n")
		if s.LoadBefore != "" {
			w("Load average (1/5/15 min) before the run: %s, after: %s.\n\n", s.LoadBefore, s.LoadAfter)
		}
		w("| run | records/s | MB/s | produce p50 / p99 / p99.9 / max ms | end-to-end p50 / p99 / p99.9 / max ms | PUT/s | bytes/PUT | commits | allocs/record | peak RSS MiB | errors |\n")
		w("|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range s.Results {
			p := strings.Join(func() []string { a, b, c, d := lat(r.ProduceLatency); return []string{a, b, c, d} }(), " / ")
			e := strings.Join(func() []string { a, b, c, d := lat(r.E2ELatency); return []string{a, b, c, d} }(), " / ")
			puts, bpp, commits, allocs, rss := "–", "–", "–", "–", "–"
			if st := r.Storage; st != nil {
				puts, bpp, commits = fmt.Sprintf("%.1f", st.PutsPerS), fmt.Sprintf("%.0f", st.BytesPerPut), fmt.Sprintf("%.0f", st.Commits)
				if r.Produced.Records > 0 {
					allocs = fmt.Sprintf("%.2f", st.Mallocs/float64(r.Produced.Records))
				}
				rss = fmt.Sprintf("%.0f", st.PeakRSSBytes/(1<<20))
			}
			if rp := r.RawPut; rp != nil {
				puts, bpp = fmt.Sprintf("%.1f", rp.PutsPerS), fmt.Sprint(rp.ObjectSize)
			}
			w("| %s | %.0f | %.2f | %s | %s | %s | %s | %s | %s | %s | %d |\n", r.Label, r.Produced.RecordsPerS, r.Produced.MBPerS,
				p, e, puts, bpp, commits, allocs, rss, r.Errors)
		}
		if s.AgentCPUSeconds > 0 && len(s.Results) > 0 && s.Results[0].Produced.Bytes > 0 {
			gb := float64(s.Results[0].Produced.Bytes) / 1e9
			w("\nAgent CPU during the floe run: %.2f s user+system for %.3f GB produced = **%.1f CPU-s/GB**.\n", s.AgentCPUSeconds, gb, s.AgentCPUSeconds/gb)
			if s.MachineCPUAvailable > 0 {
				rest := s.MachineCPUSeconds - s.AgentCPUSeconds - s.BenchCPUSeconds
				w("Whole machine over the same run: %.1f of %.1f CPU-s busy (%.0f%%): agent %.1f, load generator %.1f, stores and everything else %.1f.\n",
					s.MachineCPUSeconds, s.MachineCPUAvailable, 100*s.MachineCPUSeconds/s.MachineCPUAvailable,
					s.AgentCPUSeconds, s.BenchCPUSeconds, rest)
			}
		}
		if r := rawCPUPerGB(s); r > 0 {
			_, _, raw := byKind(s)
			w("Raw PUT baseline's own process CPU: %.2f s for %.3f GB stored = **%.1f CPU-s/GB**.\n", raw.RawPut.CPUSeconds, float64(raw.Produced.Bytes)/1e9, r)
		}
		if s.PeakRSSBytes > 0 {
			w("Agent peak RSS (VmHWM) over its life to the end of the floe run: **%.0f MiB**; its memory budgets sum to %.0f MiB.\n", s.PeakRSSBytes/(1<<20), s.BudgetBytes/(1<<20))
		}
		w("\nChart: [bench/%s.html](bench/%s.html) · data: [bench/%s.json](bench/%s.json)\n\n", s.Name, s.Name, s.Name, s.Name)
		if s.ProfileTop != "" {
			w("CPU profile of the agent process over its whole life in this scenario (the floe run, then idle\n")
			w("while the baselines run), `go tool pprof -top -cum`, first 40 rows; flat view and the rest in\n")
			w("[bench/pprof-%s.txt](bench/pprof-%s.txt), raw profile `bench/pprof-%s.cpu`:\n\n```\n", s.Name, s.Name, s.Name)
			lines := strings.Split(strings.TrimSpace(s.ProfileTop), "\n")
			w("%s\n```\n\n", strings.Join(lines[:min(len(lines), 50)], "\n"))
		}
	}
	if goBench != "" {
		w("## Go benchmarks of the hot paths\n\n`go test -run '^$' -bench . -benchmem` over kafkaproto, storage, metadata and agent:\n\n```\n%s\n```\n", strings.TrimSpace(goBench))
	}
	return b.String()
}
