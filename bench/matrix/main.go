// Command matrix is `make bench`: it runs floe's standard benchmark
// matrix and writes the results under docs/. It starts what each scenario
// needs — `floe dev`; a throwaway PostgreSQL and MinIO (the same harnesses
// the integration tests use) with `floe agent` on them — runs `floe bench`
// against it with the kfake and raw-PUT baselines, profiles the agent
// (pprof) during the closed-loop runs, and writes docs/bench/*.json,
// docs/bench/*.html, the profiles, and docs/benchmarks.md.
//
// It only starts servers on 127.0.0.1, in temporary directories it
// removes, and stops everything it started.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"floe/bench"
	"floe/bench/harness"
	"floe/internal/freeport"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "matrix:", err)
		os.Exit(1)
	}
}

// scenario is one row group of the matrix: an agent configuration and a
// load.
type scenario struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	// Store is "dev" (SQLite + directory) or "pg-minio".
	Store     string   `json:"store"`
	AgentArgs []string `json:"agent_args"`
	BenchArgs []string `json:"bench_args"`
	Profile   bool     `json:"profile"`
	// Mode is the `floe bench` mode; empty means e2e.
	Mode string `json:"mode"`
	// FlushInterval is the agent's, for the latency target.
	FlushInterval time.Duration `json:"flush_interval_ns"`
	// BufferBytes is the agent's budget, for the overload target.
	BufferBytes int64 `json:"buffer_bytes,omitempty"`

	// Filled in by running.
	AgentCommand string `json:"agent_command"`
	BenchCommand string `json:"bench_command"`
	// BaselineCommand runs the baselines after the agent has stopped.
	BaselineCommand string  `json:"baseline_command,omitempty"`
	IdleRSS         float64 `json:"idle_rss_bytes"`
	// BudgetBytes is the sum of the agent's memory budgets (its
	// floe_agent_memory_budget_bytes gauges) and PeakRSSBytes its
	// process's peak resident size over the floe run (VmHWM).
	BudgetBytes  float64 `json:"memory_budget_bytes,omitempty"`
	PeakRSSBytes float64 `json:"peak_rss_bytes,omitempty"`
	// LoadBefore and LoadAfter are /proc/loadavg around the run: other
	// work on the machine shows up there, and in the figures.
	LoadBefore string `json:"loadavg_before"`
	LoadAfter  string `json:"loadavg_after"`
	// AgentCPUSeconds is the user+system CPU time the agent process spent
	// during the floe run (from /proc, 0 if unavailable): per GB produced
	// it is the cost figure least disturbed by other work on the machine.
	AgentCPUSeconds float64 `json:"agent_cpu_seconds,omitempty"`
	// BenchCPUSeconds is the load generator's (the floe bench process)
	// over the same run, and MachineCPUSeconds every core's busy time
	// (/proc/stat): what is left is the stores (MinIO, PostgreSQL) and
	// anything else running. MachineCPUAvailable is cores × wall time, so
	// busy/available near 1 means the run was CPU-bound.
	BenchCPUSeconds     float64         `json:"bench_cpu_seconds,omitempty"`
	MachineCPUSeconds   float64         `json:"machine_cpu_seconds,omitempty"`
	MachineCPUAvailable float64         `json:"machine_cpu_available_seconds,omitempty"`
	Results             []*bench.Result `json:"results"`
	ProfileTop          string          `json:"-"`
}

func matrix(d time.Duration) []*scenario {
	ds := d.String()
	common := []string{"--duration", ds, "--warmup", "2s", "--partitions", "16", "--record-size", "1024", "--producers", "2", "--linger", "5ms"}
	with := func(extra ...string) []string { return append(append([]string{}, common...), extra...) }
	// The fixed-rate runs let each producer pipeline 64 requests (Kafka's
	// max.in.flight.requests.per.connection; floe reads up to 64 ahead per
	// connection): with linger 5 ms a producer sends a request every ~5 ms,
	// and each is answered once its object is stored, up to a flush
	// interval + PUT + commit later (250 + ~100 ms), so by Little's law it
	// needs ~70 in flight to keep sending; at the clients' default of 5
	// the producer stalls and its records wait a second flush interval.
	rate := func(extra ...string) []string { return with(append([]string{"--inflight", "64"}, extra...)...) }
	return []*scenario{
		{Name: "dev-max", Title: "floe dev, closed loop (max throughput)", Store: "dev", Profile: true,
			FlushInterval: 5 * time.Millisecond,
			BenchArgs:     with("--kfake", "--raw-put-concurrency", "4")},
		{Name: "dev-rate", Title: "floe dev, 10 000 records/s (latency)", Store: "dev",
			FlushInterval: 5 * time.Millisecond,
			BenchArgs:     rate("--rate", "10000", "--kfake", "--raw-put-concurrency", "4", "--raw-put-duration", "5s")},
		{Name: "pg-minio-max", Title: "agent on PostgreSQL + MinIO, closed loop (max throughput)", Store: "pg-minio", Profile: true,
			FlushInterval: 250 * time.Millisecond,
			BenchArgs:     with("--raw-put-concurrency", "4")},
		// The raw PUT baseline only writes: the agent's ingest is compared
		// with it without a consumer taking the same cores.
		{Name: "pg-minio-produce", Title: "agent on PostgreSQL + MinIO, closed-loop produce only (ingest throughput)", Store: "pg-minio",
			FlushInterval: 250 * time.Millisecond, Mode: bench.ModeProduce,
			BenchArgs: with("--raw-put-concurrency", "4")},
		{Name: "pg-minio-rate", Title: "agent on PostgreSQL + MinIO, 10 000 records/s (latency)", Store: "pg-minio",
			FlushInterval: 250 * time.Millisecond,
			BenchArgs:     rate("--rate", "10000", "--kfake", "--raw-put-concurrency", "4", "--raw-put-duration", "5s")},
		{Name: "dev-s3-latency", Title: "floe dev with 100 ms added to every object-store request (S3-like), 10 000 records/s",
			Store: "dev", FlushInterval: 100 * time.Millisecond,
			AgentArgs: []string{"--bucket-latency", "100ms", "--flush-interval", "100ms", "--flush-concurrency", "8"},
			BenchArgs: rate("--rate", "10000", "--kfake", "--raw-put-concurrency", "8", "--raw-put-latency", "100ms", "--raw-put-duration", "5s")},
		{Name: "dev-overload", Title: "overload: 400 ms per request, one flush at a time, 16 MiB buffer, closed-loop produce",
			Store: "dev", FlushInterval: 5 * time.Millisecond, BufferBytes: 16 << 20, Mode: bench.ModeProduce,
			AgentArgs: []string{"--bucket-latency", "400ms", "--flush-concurrency", "1", "--buffer-bytes", "16777216", "--flush-bytes", "4194304"},
			BenchArgs: with()},
	}
}

func run() error {
	floeBin := flag.String("floe", "bin/floe", "the floe `binary` to benchmark")
	out := flag.String("out", "docs", "`directory` for benchmarks.md; results go to DIR/bench/")
	dur := flag.Duration("duration", 10*time.Second, "sending time of each run")
	settle := flag.Duration("settle", 20*time.Second, "pause between scenarios, after dropping the last one's data, for the disk to settle")
	only := flag.String("only", "", "comma-separated scenario names to run, \"compare\" for the broker comparison (default: all)")
	var cc compareConfig
	flag.StringVar(&cc.NatsServer, "nats-server", "", "the nats-server `binary` for the broker comparison (empty: compare floe dev and kfake only)")
	flag.Int64Var(&cc.Records, "compare-records", 1_000_000, "records of each closed-loop comparison run, and the most a fixed-rate one sends")
	flag.DurationVar(&cc.MaxDuration, "compare-max-duration", time.Minute, "a closed-loop comparison run stops sending after this long")
	flag.DurationVar(&cc.RateDuration, "compare-rate-duration", 20*time.Second, "a fixed-rate comparison run sends min(--compare-records, rate × this)")
	rates := flag.String("compare-rates", "0,1000,10000,50000", "comparison loads in records/s, 0 for closed loop")
	modes := flag.String("compare-modes", "produce,e2e", "comparison modes")
	flag.DurationVar(&cc.Settle, "compare-settle", 2*time.Second, "pause before each comparison run, after a sync, for the disk to settle")
	flag.Parse()
	for _, f := range strings.Split(*rates, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || r < 0 {
			return fmt.Errorf("--compare-rates: %q", f)
		}
		cc.Rates = append(cc.Rates, r)
	}
	for _, m := range strings.Split(*modes, ",") {
		if m != bench.ModeProduce && m != bench.ModeE2E {
			return fmt.Errorf("--compare-modes: %q: want produce or e2e", m)
		}
		cc.Modes = append(cc.Modes, m)
	}
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	bin, err := filepath.Abs(*floeBin)
	if err != nil {
		return err
	}
	resDir := filepath.Join(*out, "bench")
	if err := os.MkdirAll(resDir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "floe-bench-matrix-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var scenarios []*scenario
	for _, s := range matrix(*dur) {
		if *only == "" || strings.Contains(","+*only+",", ","+s.Name+",") {
			scenarios = append(scenarios, s)
		}
	}
	var pgMinio *harness.Servers
	for _, s := range scenarios {
		if s.Store == "pg-minio" && pgMinio == nil {
			if pgMinio, err = harness.StartServers(tmp, "floe-bench"); err != nil {
				return err
			}
			defer pgMinio.Stop()
		}
	}

	for i, s := range scenarios {
		fmt.Fprintf(os.Stderr, "\n== %s: %s\n", s.Name, s.Title)
		// The scenario before wrote gigabytes (its agent and its raw-PUT
		// baseline): drop them and wait for the kernel to write back what
		// is dirty, or its writeback stalls this scenario's fsyncs (the
		// dev-rate p99 read 203-323 ms right after dev-max, 46-65 ms alone or
		// after a 20 s pause).
		if i > 0 {
			quietDisk(tmp, *settle)
		}
		if err := runScenario(ctx, bin, tmp, resDir, fmt.Sprint(i), s, pgMinio); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	var compare []*compareRun
	if *only == "" || strings.Contains(","+*only+",", ",compare,") {
		fmt.Fprintf(os.Stderr, "\n== broker comparison\n")
		if len(scenarios) > 0 {
			quietDisk(tmp, *settle)
		}
		if compare, err = runCompare(ctx, bin, tmp, cc); err != nil {
			return err
		}
		if err := writeCompare(resDir, compare); err != nil {
			return err
		}
	}
	rep := struct {
		Generated time.Time      `json:"generated"`
		Machine   bench.Machine  `json:"machine"`
		Scenarios []*scenario    `json:"scenarios"`
		Targets   []targetResult `json:"targets"`
	}{time.Now().UTC(), bench.ThisMachine(), scenarios, append(evaluate(scenarios), evaluateCompare(compare)...)}
	f, err := os.Create(filepath.Join(resDir, "results.json"))
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	goBench, _ := os.ReadFile(filepath.Join(resDir, "go-bench.txt"))
	md := renderMarkdown(rep.Generated, rep.Machine, scenarios, rep.Targets, string(goBench), *dur, compare, cc)
	if err := os.WriteFile(filepath.Join(*out, "benchmarks.md"), []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "\nwrote %s and %s\n", filepath.Join(*out, "benchmarks.md"), resDir)
	return nil
}

func runScenario(ctx context.Context, bin, tmp, resDir, id string, s *scenario, srv *harness.Servers) error {
	kafka, err := freeport.Addr()
	if err != nil {
		return err
	}
	httpAddr, err := freeport.Addr()
	if err != nil {
		return err
	}
	var args, env []string
	var rawBucket string
	switch s.Store {
	case "dev":
		dir := filepath.Join(tmp, "dev-"+id)
		args = []string{"dev", "--data-dir", dir}
		rawBucket = "file://" + filepath.Join(tmp, "raw-"+id)
	case "pg-minio":
		meta, bucket, err := srv.Fresh(ctx)
		if err != nil {
			return err
		}
		args = []string{"agent", "--metadata", meta, "--bucket", bucket}
		env = srv.MinIO.Env()
		rawBucket = bucket
	}
	args = append(append(args, "--kafka-addr", kafka, "--http-addr", httpAddr, "--log-level", "warn"), s.AgentArgs...)
	s.AgentCommand = "floe " + strings.Join(harness.Redact(args), " ")
	profile := ""
	if s.Profile {
		profile = filepath.Join(resDir, "pprof-"+s.Name+".cpu")
		args = append(args, "--cpu-profile", profile)
	}
	agent, err := harness.Start(ctx, bin, args, env, filepath.Join(tmp, "agent-"+id+".log"))
	if err != nil {
		return err
	}
	defer agent.Stop()
	if err := harness.WaitReady(ctx, httpAddr, agent.Exited()); err != nil {
		return agent.Failed(err)
	}
	if m, err := bench.Scrape(ctx, "http://"+httpAddr+"/metrics"); err == nil {
		s.IdleRSS = m["process_resident_memory_bytes"]
		s.BudgetBytes = m.Sum("floe_agent_memory_budget_bytes")
	}

	// The agent's run first, alone; then the agent is stopped (its
	// profile written) and the baselines run on a quiet machine: a dev
	// agent keeps compacting what it was sent, which would slow them.
	jsonPath := filepath.Join(resDir, s.Name+".json")
	loadArgs, base := splitArgs(s.BenchArgs)
	mode := s.Mode
	if mode == "" {
		mode = bench.ModeE2E
	}
	bargs := append([]string{"bench", mode, "--brokers", kafka, "--metrics-url", "http://" + httpAddr + "/metrics",
		"--label", labelOf(s), "--json", jsonPath}, loadArgs...)
	s.BenchCommand = "floe " + strings.Join(harness.Redact(bargs), " ")
	s.LoadBefore = harness.LoadAvg()
	defer func() { s.LoadAfter = harness.LoadAvg() }()
	cpuBefore, cpuErr := harness.CPUSeconds(agent.Pid())
	busyBefore, totalBefore, machineErr := harness.MachineCPUSeconds()
	benchCPU, err := runBench(ctx, bin, env, bargs)
	if err != nil {
		return fmt.Errorf("%w\nagent log:\n%s", err, agent.Log())
	}
	if cpuAfter, err := harness.CPUSeconds(agent.Pid()); err == nil && cpuErr == nil {
		s.AgentCPUSeconds = cpuAfter - cpuBefore
	}
	if _, peak, err := harness.Memory(agent.Pid()); err == nil {
		s.PeakRSSBytes = float64(peak)
	}
	if busyAfter, totalAfter, err := harness.MachineCPUSeconds(); err == nil && machineErr == nil {
		s.MachineCPUSeconds, s.MachineCPUAvailable = busyAfter-busyBefore, totalAfter-totalBefore
	}
	s.BenchCPUSeconds = benchCPU
	if err := agent.Stop(); err != nil {
		return fmt.Errorf("stop agent: %w", err)
	}
	rep, err := readReport(jsonPath)
	if err != nil {
		return err
	}
	if len(base) > 0 {
		if containsArg(base, "--raw-put-concurrency") {
			size := 1 << 20
			if st := rep.Results[0].Storage; st != nil && st.BytesPerPut > 0 {
				size = int(st.BytesPerPut)
			}
			base = append(base, "--raw-put-bucket", rawBucket, "--raw-put-size", fmt.Sprint(size))
		}
		basePath := filepath.Join(tmp, s.Name+"-baselines.json")
		bb := append([]string{"bench", mode, "--baselines-only", "--json", basePath}, base...)
		s.BaselineCommand = "floe " + strings.Join(harness.Redact(bb), " ")
		if _, err := runBench(ctx, bin, env, bb); err != nil {
			return err
		}
		brep, err := readReport(basePath)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, brep.Results...)
		rep.Command += "; " + brep.Command
	}
	s.Results = rep.Results
	rep.Title = s.Title
	if err := writeReport(rep, jsonPath, filepath.Join(resDir, s.Name+".html")); err != nil {
		return err
	}
	if profile != "" {
		// Cumulative first: it names the floe functions the time goes to;
		// the flat view below it names the leaf work (copies, syscalls).
		cum, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=60", bin, profile).CombinedOutput()
		if err != nil {
			return fmt.Errorf("pprof: %w\n%s", err, cum)
		}
		flat, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=30", bin, profile).CombinedOutput()
		if err != nil {
			return fmt.Errorf("pprof: %w\n%s", err, flat)
		}
		s.ProfileTop = string(cum)
		text := "# go tool pprof -top -cum\n" + string(cum) + "\n# go tool pprof -top\n" + string(flat)
		if err := os.WriteFile(filepath.Join(resDir, "pprof-"+s.Name+".txt"), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// runBench runs `floe bench …` and returns the CPU time it used.
func runBench(ctx context.Context, bin string, env, args []string) (float64, error) {
	b := exec.CommandContext(ctx, bin, args...)
	b.Env = append(os.Environ(), env...)
	b.Stdout, b.Stderr = os.Stderr, os.Stderr
	if err := b.Run(); err != nil {
		return 0, fmt.Errorf("floe %s: %w", strings.Join(args[:2], " "), err)
	}
	return (b.ProcessState.UserTime() + b.ProcessState.SystemTime()).Seconds(), nil
}

func readReport(path string) (*bench.Report, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep bench.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rep.Results) == 0 {
		return nil, fmt.Errorf("%s: no results", path)
	}
	return &rep, nil
}

// writeReport writes the scenario's merged report as JSON and HTML.
func writeReport(rep *bench.Report, jsonPath, htmlPath string) error {
	for path, write := range map[string]func(io.Writer) error{jsonPath: rep.WriteJSON, htmlPath: rep.WriteHTML} {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// splitArgs separates a scenario's bench flags into the load flags and the
// baseline flags (--kfake, and --raw-put-* with their values); baseline is
// nil when there are none, else the load flags followed by them, since the
// baselines run under the same load.
func splitArgs(args []string) (load, baseline []string) {
	var base []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--kfake":
			base = append(base, a)
		case strings.HasPrefix(a, "--raw-put-") && i+1 < len(args):
			base = append(base, a, args[i+1])
			i++
		default:
			load = append(load, a)
		}
	}
	if len(base) == 0 {
		return load, nil
	}
	return load, append(append([]string{}, load...), base...)
}

func labelOf(s *scenario) string {
	if s.Store == "dev" {
		return "floe dev"
	}
	return "floe agent (PG+MinIO)"
}

func containsArg(args []string, a string) bool {
	for _, x := range args {
		if x == a {
			return true
		}
	}
	return false
}

// quietDisk removes the data earlier scenarios left under tmp (agent data
// directories and raw-PUT buckets; the MinIO and PostgreSQL servers' own
// directories stay), flushes dirty pages to disk and waits settle.
func quietDisk(tmp string, settle time.Duration) {
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, "dev-") || strings.HasPrefix(n, "raw-") {
			os.RemoveAll(filepath.Join(tmp, n))
		}
	}
	syscall.Sync()
	time.Sleep(settle)
}
