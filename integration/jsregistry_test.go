package integration

import (
	"os/exec"
	"strings"
	"testing"
)

// TestConfluentSchemaRegistryJS runs jsregistry/registry.js
// (@kafkajs/confluent-schema-registry 3.9.0 and kafkajs 2.2.4) against
// floe dev's registry and Kafka listener: register, evolve and refuse,
// encode and decode for Avro, JSON Schema and Protobuf, the id look-ups,
// a subject-level compatibility set through the package, and a produce and
// consume round trip through topics with full value validation, bad
// records refused by the broker.
func TestConfluentSchemaRegistryJS(t *testing.T) {
	node, dir := npmInstall(t, "jsregistry")
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	cmd := exec.Command(node, "registry.js", p.Addr, p.RegistryAddr)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("@kafkajs/confluent-schema-registry: %v\n%s\nfloe log:\n%s", err, out, p.Log())
	}
	// Each record the script expects refused was refused for its reason.
	for _, c := range []struct{ topic, reason string }{
		{"js-orders", "unknown_id"},
		{"js-orders", "wrong_subject"},
		{"js-orders", "invalid"},
		{"js-people", "invalid"},
		{"js-items", "bad_index"}, // the package's Protobuf framing: no message indexes
	} {
		series := `floe_agent_schema_validation_failures_total{reason="` + c.reason + `",topic="` + c.topic + `"}`
		if got := p.metric(t, series); got != 1 {
			t.Errorf("%s = %v, want 1", series, got)
		}
	}
}
