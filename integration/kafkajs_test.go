package integration

import (
	"os/exec"
	"strings"
	"testing"
)

// TestKafkajs runs js/roundtrip.js (kafkajs 2.2.4, non-flexible versions
// only) against `floe dev`: brokers, topics create/list/delete, produce with
// none and gzip, fetch by partition, offsets.
func TestKafkajs(t *testing.T) {
	node, dir := npmInstall(t, "js")
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	cmd := exec.Command(node, "roundtrip.js", p.Addr)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("kafkajs round trip: %v\n%s\nfloe log:\n%s", err, out, p.Log())
	}
}
