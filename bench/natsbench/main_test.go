package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"floe/bench"

	"floe/internal/freeport"
)

// startNats runs the nats-server of FLOE_NATS_BIN (make bench's) with
// JetStream on free 127.0.0.1 ports, stopped at cleanup, and returns its
// URL; without it the test skips.
func startNats(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("FLOE_NATS_BIN")
	if bin == "" {
		t.Skip("FLOE_NATS_BIN not set (make nats-server builds it; make exports it)")
	}
	ports := make([]int, 2)
	for i := range ports {
		var err error
		if ports[i], err = freeport.Get(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	cfg := fmt.Sprintf("listen: 127.0.0.1:%d\nhttp: 127.0.0.1:%d\njetstream: {store_dir: %q}\n", ports[0], ports[1], filepath.Join(dir, "js"))
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return startCmd(t, exec.Command(bin, "-c", conf), ports)
}

// startCmd starts cmd, a nats-server on ports (client, monitoring), and
// waits until its JetStream is up.
func startCmd(t *testing.T, cmd *exec.Cmd, ports []int) string {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz?js-enabled-only=true", ports[1]))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return fmt.Sprintf("nats://127.0.0.1:%d", ports[0])
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats-server not healthy: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Every record published is acknowledged once, read back once, and has
// both its latencies recorded, closed loop and at a fixed rate.
func TestLoadE2E(t *testing.T) {
	url := startNats(t)
	for _, rate := range []float64{0, 2000} {
		cfg := bench.DefaultConfig()
		cfg.Brokers, cfg.Mode, cfg.Records, cfg.Duration, cfg.Rate = []string{url}, bench.ModeE2E, 1000, time.Minute, rate
		cfg.RecordSize, cfg.MaxBuffered = 100, 64
		res, err := load(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Errors != 0 || res.Sent != 1000 || res.Produced.Records != 1000 || res.Produced.Bytes != 100_000 ||
			res.Consumed == nil || res.Consumed.Records != 1000 || res.Consumed.Bytes != 100_000 {
			t.Fatalf("rate %v: sent %d, produced %+v, consumed %+v, errors %d (%s)", rate, res.Sent, res.Produced, res.Consumed, res.Errors, res.FirstError)
		}
		if res.ProduceLatency.Count != 1000 || res.E2ELatency.Count != 1000 {
			t.Fatalf("rate %v: %d produce and %d end-to-end latencies, want 1000 each", rate, res.ProduceLatency.Count, res.E2ELatency.Count)
		}
	}
}
