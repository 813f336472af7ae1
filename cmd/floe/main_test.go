package main

import (
	"testing"
	"time"

	"floe/agent"
)

// TestFlagsFromEnvironment checks that FLOE_<NAME> fills flags not given on
// the command line, and that the command line wins.
func TestFlagsFromEnvironment(t *testing.T) {
	t.Setenv("FLOE_FLUSH_INTERVAL", "42ms")
	t.Setenv("FLOE_KAFKA_ADDR", "127.0.0.1:1111")
	t.Setenv("FLOE_DEFAULT_PARTITIONS", "7")
	t.Setenv("FLOE_AUTO_CREATE_TOPICS", "true")
	f := agentFlags{cfg: agent.DefaultConfig()}
	fs := newFlagSet("agent", "test")
	f.register(fs)
	if err := parse(fs, []string{"--kafka-addr", "127.0.0.1:2222"}); err != nil {
		t.Fatal(err)
	}
	if f.cfg.FlushInterval != 42*time.Millisecond {
		t.Errorf("flush interval %v, want 42ms from FLOE_FLUSH_INTERVAL", f.cfg.FlushInterval)
	}
	if f.cfg.KafkaAddr != "127.0.0.1:2222" {
		t.Errorf("kafka addr %q, want the command line's", f.cfg.KafkaAddr)
	}
	if f.cfg.DefaultPartitions != 7 || !f.cfg.AutoCreateTopics {
		t.Errorf("default partitions %d, auto-create %v", f.cfg.DefaultPartitions, f.cfg.AutoCreateTopics)
	}
}

func TestBadEnvironmentValue(t *testing.T) {
	t.Setenv("FLOE_FLUSH_INTERVAL", "soon")
	f := agentFlags{cfg: agent.DefaultConfig()}
	fs := newFlagSet("agent", "test")
	f.register(fs)
	if err := parse(fs, nil); err == nil {
		t.Fatal("a bad FLOE_FLUSH_INTERVAL was accepted")
	}
}
