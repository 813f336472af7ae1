package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"floe/proof/nemesis"
)

// TestProofShort is the proof in small: 45 s of the workload on three agents
// under one partition (an agent from PostgreSQL), one pause and one kill -9
// of an agent, checked, the tables compared, the report written.
func TestProofShort(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the proof needs root for network namespaces (ip netns); run as root, as `make test` does in CI")
	}
	if err := preflight(); err != nil {
		if os.Getenv("FLOE_REQUIRE_SERVERS") == "1" {
			t.Fatalf("%v (FLOE_REQUIRE_SERVERS=1; run `make deps`)", err)
		}
		t.Skipf("%v; run `make deps`", err)
	}
	out := t.TempDir()
	kinds := []nemesis.Kind{nemesis.PartitionPostgres, nemesis.PauseAgent, nemesis.KillAgent}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := run(ctx, config{
		Duration: 45 * time.Second, Agents: 3, Workers: 6, Topics: 2, Partitions: 2,
		Kinds: kinds, Gap: 3 * time.Second, Hold: 5 * time.Second, Settle: 10 * time.Second, Iceberg: true, Checkpoint: 15 * time.Second,
		out: out, logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("run took %v", time.Since(start).Round(time.Second))
	report, err := os.ReadFile(filepath.Join(out, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid {
		t.Fatalf("the run found anomalies:\n%s", report)
	}
	for _, k := range kinds {
		if res.Injected[k] == 0 {
			t.Errorf("no %s fault injected (%v)", k, res.Injected)
		}
	}
	if res.Check.Stats.Ops < 100 {
		t.Errorf("only %d ops", res.Check.Stats.Ops)
	}
	if ic := res.Iceberg; ic == nil || ic.Expected == 0 || ic.Rows < ic.Expected || len(ic.Checkpoints) == 0 {
		t.Errorf("iceberg check: %+v", res.Iceberg)
	}
	for _, f := range []string{"result.json", "history.jsonl.gz", "latency.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}
