package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"floe/agent"
	"floe/bench"
	"floe/bench/harness"
	"floe/internal/freeport"
)

// The broker comparison runs the same load against floe dev, franz-go's
// kfake and NATS JetStream (twice: its default fsync interval and
// sync_interval: always), each broker in its own process, started fresh
// for every run and stopped after it, so that the broker's CPU time
// (utime+stime from /proc/PID/stat around the load) and its peak resident
// size (VmHWM) are its own and nothing else's: the load generator runs in
// another process (floe bench for the Kafka brokers, natsbench for NATS).

// compareConfig is the comparison's load.
type compareConfig struct {
	// Records is each closed-loop run's record count, and the most a
	// fixed-rate run sends; a closed-loop run also stops sending after
	// MaxDuration (JetStream with sync always takes minutes for 1M).
	Records     int64
	MaxDuration time.Duration
	// RateDuration bounds a fixed-rate run: it sends min(Records, rate ×
	// RateDuration) records.
	RateDuration time.Duration
	Rates        []float64 // 0 is closed loop
	Modes        []string  // bench.ModeProduce, bench.ModeE2E
	Settle       time.Duration
	NatsServer   string // the nats-server binary; empty skips NATS
}

// compareBroker is one broker of the comparison.
type compareBroker struct {
	Name string `json:"name"`
	// Kind is "floe", "kfake" or "nats".
	Kind string `json:"kind"`
	// NatsSync is nats-server's jetstream sync_interval ("" for its
	// default, 2 minutes).
	NatsSync string `json:"nats_sync,omitempty"`
}

// compareRun is one broker under one load.
type compareRun struct {
	Broker        string  `json:"broker"`
	Kind          string  `json:"kind"`
	Mode          string  `json:"mode"`
	Rate          float64 `json:"rate"`
	Records       int64   `json:"records"`
	BrokerCommand string  `json:"broker_command"`
	LoadCommand   string  `json:"load_command"`
	LoadBefore    string  `json:"loadavg_before"`
	LoadAfter     string  `json:"loadavg_after"`
	// BrokerCPUSeconds is the broker process's user+system time over the
	// load; LoadCPUSeconds the load generator's whole run.
	BrokerCPUSeconds float64       `json:"broker_cpu_seconds"`
	LoadCPUSeconds   float64       `json:"load_cpu_seconds"`
	PeakRSSBytes     float64       `json:"peak_rss_bytes"`
	Result           *bench.Result `json:"result"`
	// Floor is floe dev's file-write floor, measured right after its run
	// (nil for the other brokers).
	Floor *compareFloor `json:"floor,omitempty"`
}

// compareFloor is what writing floe dev's objects costs with nothing else
// running: right after the floe dev run, with the broker stopped and its
// data removed, `floe bench --baselines-only --raw-put-bucket file://…`
// in its own process writes objects of the run's bytes per PUT into a
// file bucket (storage/file, as floe dev does: write, fsync, rename), as
// many at once as floe dev flushes at once, for about as long as the run,
// at the run's PUT rate when the load had a fixed rate. Its CPU per GB
// (almost all kernel time in write and fsync) is the least a broker that
// stores those bytes durably in that way can spend, whatever its code.
type compareFloor struct {
	Command    string        `json:"command"`
	LoadBefore string        `json:"loadavg_before"`
	LoadAfter  string        `json:"loadavg_after"`
	Result     *bench.Result `json:"result"`
	// Skipped says why there is no floor (the run's metrics had no PUTs).
	Skipped string `json:"skipped,omitempty"`
}

// CPUPerGB is the floor's CPU-seconds per GB written (0 if unknown).
func (f *compareFloor) CPUPerGB() float64 {
	if f == nil || f.Result == nil || f.Result.RawPut == nil || f.Result.Produced.Bytes <= 0 || f.Result.RawPut.CPUSeconds <= 0 {
		return 0
	}
	return f.Result.RawPut.CPUSeconds / (float64(f.Result.Produced.Bytes) / 1e9)
}

// CPUPerGB is the broker's CPU-seconds per GB produced (0 if unknown).
func (r *compareRun) CPUPerGB() float64 {
	if r.Result == nil || r.Result.Produced.Bytes <= 0 {
		return 0
	}
	return r.BrokerCPUSeconds / (float64(r.Result.Produced.Bytes) / 1e9)
}

func compareBrokers(natsServer string) []compareBroker {
	bs := []compareBroker{{Name: "floe dev", Kind: "floe"}, {Name: "kfake", Kind: "kfake"}}
	if natsServer != "" {
		bs = append(bs, compareBroker{Name: "NATS JetStream (fsync every 2 min)", Kind: "nats"},
			compareBroker{Name: "NATS JetStream (sync always)", Kind: "nats", NatsSync: "always"})
	}
	return bs
}

// runCompare runs every broker under every load and returns the runs.
func runCompare(ctx context.Context, floeBin, tmp string, cc compareConfig) ([]*compareRun, error) {
	kfakeBin := filepath.Join(tmp, "kfakeserver")
	natsBin := filepath.Join(tmp, "natsbench")
	for bin, pkg := range map[string]string{kfakeBin: "./bench/kfakeserver", natsBin: "./bench/natsbench"} {
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build %s: %w\n%s", pkg, err, out)
		}
	}
	var runs []*compareRun
	for _, mode := range cc.Modes {
		for _, rate := range cc.Rates {
			for _, b := range compareBrokers(cc.NatsServer) {
				n := cc.Records
				if rate > 0 {
					n = min(n, int64(rate*cc.RateDuration.Seconds()))
				}
				r := &compareRun{Broker: b.Name, Kind: b.Kind, Mode: mode, Rate: rate, Records: n}
				fmt.Fprintf(os.Stderr, "\n== compare: %s, %s, %s, %d records\n", b.Name, mode, rateName(rate), n)
				syscall.Sync()
				time.Sleep(cc.Settle)
				if err := compareOne(ctx, floeBin, kfakeBin, natsBin, tmp, cc, b, r); err != nil {
					return nil, fmt.Errorf("compare %s %s %s: %w", b.Name, mode, rateName(rate), err)
				}
				runs = append(runs, r)
			}
		}
	}
	return runs, nil
}

func rateName(rate float64) string {
	if rate <= 0 {
		return "closed loop"
	}
	return fmt.Sprintf("%.0f records/s", rate)
}

// compareOne starts the broker, runs the load against it and stops it.
func compareOne(ctx context.Context, floeBin, kfakeBin, natsBin, tmp string, cc compareConfig, b compareBroker, r *compareRun) error {
	dir, err := os.MkdirTemp(tmp, "compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr, err := freeport.Addr()
	if err != nil {
		return err
	}
	var args []string
	var ready func() error
	var httpAddr string
	switch b.Kind {
	case "floe":
		if httpAddr, err = freeport.Addr(); err != nil {
			return err
		}
		args = []string{floeBin, "dev", "--data-dir", filepath.Join(dir, "data"), "--kafka-addr", addr, "--http-addr", httpAddr, "--log-level", "warn"}
		ready = func() error { return harness.WaitReady(ctx, httpAddr, nil) }
	case "kfake":
		_, port, _ := net.SplitHostPort(addr)
		args = []string{kfakeBin, "--port", port}
		ready = func() error { return waitTCP(ctx, addr) }
	case "nats":
		monitor, err := freeport.Addr()
		if err != nil {
			return err
		}
		conf := filepath.Join(dir, "nats.conf")
		if err := os.WriteFile(conf, []byte(natsConfig(addr, monitor, filepath.Join(dir, "js"), b.NatsSync)), 0o644); err != nil {
			return err
		}
		args = []string{cc.NatsServer, "-c", conf}
		ready = func() error { return waitNats(ctx, monitor) }
	}
	r.BrokerCommand = strings.Join(harness.Redact(append([]string{filepath.Base(args[0])}, args[1:]...)), " ")
	if b.Kind == "nats" {
		r.BrokerCommand += "  # " + strings.ReplaceAll(natsConfig("127.0.0.1:PORT", "127.0.0.1:PORT", "DIR", b.NatsSync), "\n", " ")
	}
	broker, err := harness.Start(ctx, args[0], args[1:], nil, filepath.Join(dir, "broker.log"))
	if err != nil {
		return err
	}
	defer broker.Stop()
	if err := ready(); err != nil {
		return broker.Failed(err)
	}

	jsonPath := filepath.Join(dir, "load.json")
	d := cc.MaxDuration
	if r.Rate > 0 {
		d = cc.RateDuration
	}
	common := []string{"--records", fmt.Sprint(r.Records), "--duration", d.String(), "--partitions", "16", "--record-size", "1024",
		"--producers", "2", "--label", b.Name, "--json", jsonPath}
	if r.Rate > 0 {
		common = append(common, "--rate", fmt.Sprint(r.Rate))
	}
	var load []string
	if b.Kind == "nats" {
		load = append([]string{natsBin, "--url", "nats://" + addr, "--mode", r.Mode}, common...)
	} else {
		load = append([]string{floeBin, "bench", r.Mode, "--brokers", addr, "--linger", "5ms", "--quiet"}, common...)
		if b.Kind == "floe" {
			// For the agent's bytes and PUTs per second, which the floor
			// below repeats: read before and after only, since every
			// scrape costs floe CPU that kfake is not asked to spend (at
			// 1,000 records/s, two a second were a tenth of floe dev's);
			// peak memory comes from /proc.
			load = append(load, "--metrics-url", "http://"+httpAddr+"/metrics", "--metrics-sample-interval", "0")
		}
		if r.Rate > 0 {
			// As the matrix's fixed-rate scenarios: enough requests in
			// flight to keep sending while earlier ones wait for a flush.
			load = append(load, "--inflight", "64")
		}
	}
	r.LoadCommand = strings.Join(harness.Redact(append([]string{filepath.Base(load[0])}, load[1:]...)), " ")
	r.LoadBefore = harness.LoadAvg()
	before, err := harness.CPUSeconds(broker.Pid())
	if err != nil {
		return err
	}
	if r.LoadCPUSeconds, err = runBench(ctx, load[0], nil, load[1:]); err != nil {
		return fmt.Errorf("%w\nbroker log:\n%s", err, broker.Log())
	}
	after, err := harness.CPUSeconds(broker.Pid())
	if err != nil {
		return err
	}
	r.BrokerCPUSeconds = after - before
	r.LoadAfter = harness.LoadAvg()
	_, peak, err := harness.Memory(broker.Pid())
	if err != nil {
		return err
	}
	r.PeakRSSBytes = float64(peak)
	if err := broker.Stop(); err != nil {
		return fmt.Errorf("stop broker: %w", err)
	}
	rep, err := readReport(jsonPath)
	if err != nil {
		return err
	}
	r.Result = rep.Results[0]
	if b.Kind == "floe" {
		// The floor runs on a disk as quiet as the broker's run had:
		// its data gone, written back, settled.
		if err := os.RemoveAll(filepath.Join(dir, "data")); err != nil {
			return err
		}
		syscall.Sync()
		time.Sleep(cc.Settle)
		if r.Floor, err = compareFloorRun(ctx, floeBin, dir, r); err != nil {
			return fmt.Errorf("floor: %w", err)
		}
	}
	return nil
}

// floorArgs is the `floe bench` command line of floe dev's file-write
// floor after run r, writing into bucketDir and its report to jsonPath,
// or nil and why there is none.
func floorArgs(r *compareRun, bucketDir, jsonPath string) ([]string, string) {
	st := r.Result.Storage
	if st == nil || st.BytesPerPut <= 0 || st.Puts <= 0 {
		return nil, "the floe dev run's metrics had no PUTs"
	}
	// floe dev runs with DevConfig's flush concurrency (the comparison
	// passes no --flush-concurrency): as many files written at once.
	conc := agent.DevConfig().MaxInflightFlushes
	d := max(5*time.Second, time.Duration(r.Result.Produced.Seconds*float64(time.Second)).Round(time.Second))
	args := []string{"bench", r.Mode, "--baselines-only", "--quiet", "--raw-put-bucket", "file://" + bucketDir,
		"--raw-put-size", fmt.Sprint(int(st.BytesPerPut)), "--raw-put-concurrency", fmt.Sprint(conc),
		"--raw-put-duration", d.String(), "--json", jsonPath}
	if r.Rate > 0 {
		if st.PutsPerS <= 0 {
			return nil, "the floe dev run's metrics had no PUT rate"
		}
		args = append(args, "--raw-put-rate", fmt.Sprintf("%.1f", st.PutsPerS))
	}
	return args, ""
}

// compareFloorRun measures floe dev's file-write floor after run r (see
// compareFloor), in a bucket under dir.
func compareFloorRun(ctx context.Context, floeBin, dir string, r *compareRun) (*compareFloor, error) {
	jsonPath := filepath.Join(dir, "floor.json")
	args, skipped := floorArgs(r, filepath.Join(dir, "floor-bucket"), jsonPath)
	if args == nil {
		fmt.Fprintf(os.Stderr, "compare: no file-write floor: %s\n", skipped)
		return &compareFloor{Skipped: skipped}, nil
	}
	f := &compareFloor{Command: "floe " + strings.Join(harness.Redact(args), " "), LoadBefore: harness.LoadAvg()}
	if _, err := runBench(ctx, floeBin, nil, args); err != nil {
		return nil, err
	}
	f.LoadAfter = harness.LoadAvg()
	rep, err := readReport(jsonPath)
	if err != nil {
		return nil, err
	}
	f.Result = rep.Results[0]
	if f.Result.RawPut == nil {
		return nil, fmt.Errorf("%s: not a raw PUT result", jsonPath)
	}
	return f, nil
}

// natsConfig is a one-node JetStream server on addr with its monitoring
// endpoint on monitor; sync "" keeps the default fsync interval.
func natsConfig(addr, monitor, storeDir, sync string) string {
	js := fmt.Sprintf("store_dir: %q", storeDir)
	if sync != "" {
		js += ", sync_interval: " + sync
	}
	return fmt.Sprintf("listen: %s\nhttp: %s\njetstream: {%s}\n", addr, monitor, js)
}

func waitTCP(ctx context.Context, addr string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var d net.Dialer
		if c, err := d.DialContext(ctx, "tcp", addr); err == nil {
			return c.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nothing listening on %s after 30s", addr)
}

// waitNats waits for the server's JetStream to be up (its /healthz).
func waitNats(ctx context.Context, monitor string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+monitor+"/healthz?js-enabled-only=true", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("nats-server not healthy after 30s")
}

// writeCompare writes the runs to DIR/compare.json.
func writeCompare(resDir string, runs []*compareRun) error {
	b, err := json.MarshalIndent(runs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(resDir, "compare.json"), append(b, '\n'), 0o644)
}

// findRun returns the run of kind under mode and rate, or nil.
func findRun(runs []*compareRun, broker, mode string, rate float64) *compareRun {
	for _, r := range runs {
		if r.Broker == broker && r.Mode == mode && r.Rate == rate {
			return r
		}
	}
	return nil
}

// evaluateCompare is issue 19's CPU targets: floe dev's CPU per GB at most
// half kfake's closed loop, and within 2× of it at every fixed rate; and,
// closed loop, within 2× of floe dev's own file-write floor, the target a
// durable broker can meet where the floor alone is near kfake's total.
func evaluateCompare(runs []*compareRun) []targetResult {
	if len(runs) == 0 {
		return nil
	}
	var out []targetResult
	seen := map[string]bool{}
	for _, r := range runs {
		key := r.Mode + fmt.Sprint(r.Rate)
		if seen[key] {
			continue
		}
		seen[key] = true
		t, limit := fmt.Sprintf("floe dev's CPU per GB ≤ 0.5× kfake's, each its own process (closed loop, %s)", r.Mode), 0.5
		if r.Rate > 0 {
			t, limit = fmt.Sprintf("floe dev's CPU per GB ≤ 2× kfake's at %s (%s)", rateName(r.Rate), r.Mode), 2
		}
		f, k := findRun(runs, "floe dev", r.Mode, r.Rate), findRun(runs, "kfake", r.Mode, r.Rate)
		if f == nil || k == nil || f.CPUPerGB() <= 0 || k.CPUPerGB() <= 0 {
			out = append(out, targetResult{t, "–", "not measured"})
			continue
		}
		ratio := f.CPUPerGB() / k.CPUPerGB()
		out = append(out, targetResult{t, fmt.Sprintf("%.2f vs %.2f CPU-s/GB: %.2f×", f.CPUPerGB(), k.CPUPerGB(), ratio), status(ratio <= limit)})
	}
	for _, r := range runs {
		if r.Broker != "floe dev" || r.Rate != 0 {
			continue
		}
		t := fmt.Sprintf("floe dev's CPU per GB ≤ 2× its file-write floor (closed loop, %s)", r.Mode)
		fl := r.Floor.CPUPerGB()
		if r.CPUPerGB() <= 0 || fl <= 0 {
			out = append(out, targetResult{t, "–", "not measured"})
			continue
		}
		ratio := r.CPUPerGB() / fl
		out = append(out, targetResult{t, fmt.Sprintf("%.2f vs %.2f CPU-s/GB: %.2f×", r.CPUPerGB(), fl, ratio), status(ratio <= 2)})
	}
	return out
}

// floorName is the name of the file-write floor's row in the table.
const floorName = "floe dev's floor: raw file writes"

// floorLoad describes the floor's load for its row: writers × object size,
// back to back or at a PUT rate.
func floorLoad(r *compareRun) string {
	rp := r.Floor.Result.RawPut
	pace := "back to back"
	if rp.Rate > 0 {
		pace = fmt.Sprintf("%.0f PUTs/s as floe dev", rp.Rate)
	}
	return fmt.Sprintf("%s: %d × %.2f MB files, %s", rateName(r.Rate), rp.Concurrency, float64(rp.ObjectSize)/1e6, pace)
}

// floorProse says, with the run's figures, what floe dev's closed-loop
// floor under mode means for the kfake target; "" if not measured.
func floorProse(runs []*compareRun, mode string) string {
	f, k := findRun(runs, "floe dev", mode, 0), findRun(runs, "kfake", mode, 0)
	if f == nil || k == nil || f.Floor.CPUPerGB() <= 0 || k.CPUPerGB() <= 0 || f.CPUPerGB() <= 0 {
		return ""
	}
	fl, kf, fd := f.Floor.CPUPerGB(), k.CPUPerGB(), f.CPUPerGB()
	rp := f.Floor.Result.RawPut
	var b strings.Builder
	fmt.Fprintf(&b, "**The floor.** Closed loop, floe dev spent %.2f CPU-s/GB and kfake %.2f. Writing floe dev's objects and\n", fd, kf)
	fmt.Fprintf(&b, "nothing else (that run's %.2f MB per PUT, %d at once, as files the way floe dev writes them: write,\n", float64(rp.ObjectSize)/1e6, rp.Concurrency)
	fmt.Fprintf(&b, "fsync, rename), in its own process with the broker stopped, cost **%.2f CPU-s/GB**, %.2f× kfake's whole\n", fl, fl/kf)
	limit := 0.5 * kf
	fmt.Fprintf(&b, "broker. The 0.5× kfake target asks floe dev for at most %.2f CPU-s/GB: ", limit)
	if fl >= limit {
		fmt.Fprintf(&b, "less than storing the bytes durably costs\n")
		fmt.Fprintf(&b, "on this machine before any broker code runs, so no code in floe can meet it here (kfake keeps records in\n")
		fmt.Fprintf(&b, "memory and writes nothing). ")
	} else {
		fmt.Fprintf(&b, "%.2f CPU-s/GB over the file writes for\n", limit-fl)
		fmt.Fprintf(&b, "everything else the broker does. ")
	}
	fmt.Fprintf(&b, "floe dev spent %.2f× its floor: %.2f CPU-s/GB on the rest of the broker (network, Kafka\n", fd/fl, fd-fl)
	fmt.Fprintf(&b, "protocol, batching, metadata commits, compaction).")
	for _, r := range runs {
		if r.Broker == "floe dev" && r.Mode == mode && r.Rate > 0 {
			fmt.Fprintf(&b, " Each fixed-rate floe dev row has its own floor row: files of that run's bytes per\n")
			fmt.Fprintf(&b, "PUT at the PUT rate floe dev had (`--raw-put-rate`), since PUTs back to back would measure another load.")
			break
		}
	}
	return b.String()
}

// renderCompare writes the comparison's section of benchmarks.md.
func renderCompare(w func(string, ...any), runs []*compareRun, cc compareConfig) {
	if len(runs) == 0 {
		return
	}
	w("## Broker comparison: CPU per GB, each broker its own process\n\n")
	w("The same load against floe dev, franz-go's kfake (in memory, not durable) and NATS JetStream\n")
	w("(file storage, one replica; its default fsync every 2 minutes, and `sync_interval: always`):\n")
	w("1 KiB random records, 16 partitions (NATS: 16 subjects of one stream), 2 producer connections;\n")
	w("closed-loop runs send %d records (or stop sending after %v), fixed-rate runs min(%d, rate × %v)\n", cc.Records, cc.MaxDuration, cc.Records, cc.RateDuration)
	w("(natsbench also stops sending at the end of that time when the server falls behind). Every run starts\n")
	w("its broker afresh in its own process (kfake through `bench/kfakeserver`) and stops it\n")
	w("after; the load generator is another process (`floe bench` for the Kafka brokers, `natsbench`,\n")
	w("the same load on the nats.go JetStream client, for NATS). **Broker CPU** is the broker process's\n")
	w("utime+stime from /proc/PID/stat before and after the load, **peak RSS** its VmHWM, so neither\n")
	w("depends on how the load generator shares the two cores; throughput does (it is bounded by the\n")
	w("load generator as much as by the broker). A NATS publish is acknowledged per message; a Kafka\n")
	w("producer's per batch (linger 5 ms). `make bench` runs it; alone:\n\n")
	w("```\ngo run ./bench/matrix --only compare --nats-server $(NATS_BIN) --out DIR [--compare-records N --compare-rate-duration D]\n")
	seen := map[string]bool{}
	for _, r := range runs {
		if !seen[r.Broker] {
			seen[r.Broker] = true
			w("# %s, e.g.:\n%s\n%s\n", r.Broker, r.BrokerCommand, r.LoadCommand)
			if r.Floor != nil && r.Floor.Command != "" {
				w("# %s, after it with the broker stopped:\n%s\n", floorName, r.Floor.Command)
			}
		}
	}
	w("```\n\n")
	for _, mode := range cc.Modes {
		w("### %s\n\n", map[string]string{bench.ModeProduce: "Produce only", bench.ModeE2E: "With a consumer reading from the start (e2e)"}[mode])
		w("| broker | load | records/s | MB/s | broker CPU-s | **CPU-s/GB** | produce p50 / p99 ms | end-to-end p50 / p99 ms | peak RSS MiB | load generator CPU-s | errors | load avg before → after |\n")
		w("|---|---|---:|---:|---:|---:|---|---|---:|---:|---:|---|\n")
		for _, rate := range cc.Rates {
			for _, r := range runs {
				if r.Mode != mode || r.Rate != rate || r.Result == nil {
					continue
				}
				res := r.Result
				p50, p99, _, _ := lat(res.ProduceLatency)
				e50, e99, _, _ := lat(res.E2ELatency)
				w("| %s | %s | %.0f | %.1f | %.2f | **%.2f** | %s / %s | %s / %s | %.0f | %.1f | %d | %s → %s |\n",
					r.Broker, rateName(r.Rate), res.Produced.RecordsPerS, res.Produced.MBPerS, r.BrokerCPUSeconds, r.CPUPerGB(),
					p50, p99, e50, e99, r.PeakRSSBytes/(1<<20), r.LoadCPUSeconds, res.Errors, r.LoadBefore, r.LoadAfter)
				if fl := r.Floor; fl.CPUPerGB() > 0 {
					fr := fl.Result
					p50, p99, _, _ := lat(fr.ProduceLatency)
					w("| %s | %s | – | %.1f | %.2f | **%.2f** | %s / %s (PUT) | – | – | – | %d | %s → %s |\n",
						floorName, floorLoad(r), fr.Produced.MBPerS, fr.RawPut.CPUSeconds, fl.CPUPerGB(), p50, p99, fr.Errors, fl.LoadBefore, fl.LoadAfter)
				}
			}
		}
		w("\n")
		if p := floorProse(runs, mode); p != "" {
			w("%s\n\n", p)
		}
	}
	w("Data: [bench/compare.json](bench/compare.json). floe dev's per-flush fixed cost before and after the\n")
	w("adaptive flush, same command at 1k/10k/50k records/s: [bench/adaptive-flush/](bench/adaptive-flush/README.md).\n")
	w("The fixed rates for 80 s instead of 20 s (past floe dev's compactor grace period, so with its\n")
	w("deletes): [bench/fixed-rate-80s/](bench/fixed-rate-80s/README.md).\n\n")
}
