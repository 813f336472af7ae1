package integration

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKafkajs runs js/roundtrip.js (kafkajs 2.2.4, non-flexible versions
// only) against `floe dev`: brokers, topics create/list/delete, produce with
// none and gzip, fetch by partition, offsets.
func TestKafkajs(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not installed")
	}
	dir, _ := filepath.Abs("js")
	install := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--silent")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	cmd := exec.Command(node, "roundtrip.js", p.Addr)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("kafkajs round trip: %v\n%s\nfloe log:\n%s", err, out, p.Log())
	}
}
