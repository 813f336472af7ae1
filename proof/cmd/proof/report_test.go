package main

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"floe/proof/checker"
	"floe/proof/history"
	"floe/proof/nemesis"
)

// TestReportWrites: the report of a tiny run holds its parameters, the
// fault counts and timeline, the check, the tables' comparison and the
// latency in numbers and as a plot; the history reads back.
func TestReportWrites(t *testing.T) {
	s := time.Second
	h := history.History{
		{Process: 0, Type: history.OK, F: history.Send, Invoke: int64(s), Complete: int64(s + 3*time.Millisecond),
			Mops: []history.Mop{history.SendAt(0, 0, 1)}},
		{Process: 1, Type: history.OK, F: history.Poll, Invoke: int64(20 * s), Complete: int64(20*s + time.Millisecond),
			Mops: []history.Mop{history.PollMop(map[history.Key][]history.Pair{0: {{Offset: 0, Value: 1}}})}},
	}
	h.Reindex()
	res, err := checker.Check(h, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	polled := map[history.Key]map[int64]int64{0: {0: 1}}
	ic := compare([]row{{key: 0, off: 0, val: "1"}}, polled, map[history.Key]int64{0: 0}, map[int64]history.Type{1: history.OK}, false)
	cp := compare([]row{{key: 0, off: 0, val: "1"}, {key: 0, off: 0, val: "1"}}, polled, map[history.Key]int64{0: 0}, map[int64]history.Type{1: history.OK}, true)
	cp.At = "10s"
	ic.Checkpoints = []icebergResult{cp}
	if ic.Bad() != 1 || cp.Duplicate != 1 {
		t.Fatalf("compare: %+v", ic)
	}
	dir := t.TempDir()
	rep := report{
		cfg: config{Duration: 30 * s, Seed: 7, Agents: 3, Kinds: []nemesis.Kind{nemesis.KillAgent}, Checkpoint: 10 * s, agentTTL: 3 * s},
		out: outcome{Valid: false, Check: res, Iceberg: &ic, Injected: map[nemesis.Kind]int{nemesis.KillAgent: 1}},
		h:   h,
		timeline: []nemesis.Event{
			{At: 2 * s, Kind: nemesis.KillAgent, Action: "start", Target: "agent1", Detail: "for 5s"},
			{At: 7 * s, Kind: nemesis.KillAgent, Action: "heal", Target: "agent1"},
		},
	}
	if err := rep.write(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"INVALID", "-seed 7", "| `kill-agent` | 1 |", "| 2.0s | start | `kill-agent` | agent1 | for 5s |",
		"Kafka history check: valid", "| 10s | 2 | 1 | 0 | 1 |", "kill-agent agent1 |", "latency.svg"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	f, err := os.Open(filepath.Join(dir, "history.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := history.ReadJSON(zr); err != nil || len(back) != len(h) {
		t.Errorf("history read back: %d ops, %v", len(back), err)
	}
	if svg, err := os.ReadFile(filepath.Join(dir, "latency.svg")); err != nil || strings.Count(string(svg), "<circle") != 2 {
		t.Errorf("latency.svg: %v, %d dots", err, strings.Count(string(svg), "<circle"))
	}
}
