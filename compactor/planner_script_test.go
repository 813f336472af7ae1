package compactor

// The interpreter of the merge planning scripts in testdata/plan (see
// docs/architecture.md, Tests).

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"floe/internal/scripttest"
	"floe/metadata"
)

// TestScripts runs the scripts: config sets PlanConfig, objects (or add)
// lists the store's objects oldest first, one a line ("key level=0
// size=10 age=5m [replaced]"), plan prints the jobs PlanMerges chooses.
func TestScripts(t *testing.T) {
	scripttest.Walk(t, "testdata/plan", func(t *testing.T) func(*testing.T, *datadriven.TestData) string {
		now := time.Unix(1_000_000, 0)
		cfg := PlanConfig{FanIn: 32, MaxWait: time.Minute, MaxLevel: 2}
		var objs []metadata.ObjectInfo
		return func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "config":
				scripttest.Known(t, d, "fan-in", "max-wait", "max-level", "max-bytes")
				cfg.FanIn = int(scripttest.Int(t, d, "fan-in", int64(cfg.FanIn)))
				cfg.MaxWait = scripttest.Dur(t, d, "max-wait", cfg.MaxWait)
				cfg.MaxLevel = int(scripttest.Int(t, d, "max-level", int64(cfg.MaxLevel)))
				cfg.MaxBytes = scripttest.Int(t, d, "max-bytes", cfg.MaxBytes)
				return "ok"
			case "objects", "add":
				if d.Cmd == "objects" {
					objs = nil
				}
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					if line == "" {
						continue
					}
					key, args, err := datadriven.ParseLine(line)
					if err != nil {
						d.Fatalf(t, "%v", err)
					}
					o := scriptObject(t, &datadriven.TestData{Pos: d.Pos, Cmd: key, CmdArgs: args}, now)
					objs = append(objs, o)
				}
				return fmt.Sprintf("%d objects", len(objs))
			case "advance":
				by, err := time.ParseDuration(scripttest.Arg(d))
				if err != nil {
					d.Fatalf(t, "advance: %v", err)
				}
				now = now.Add(by)
				return "ok"
			case "plan":
				var b strings.Builder
				for _, j := range PlanMerges(objs, cfg, now) {
					fmt.Fprintf(&b, "L%d -> L%d: %s (%d bytes)\n", j.Level, j.Level+1, strings.Join(j.Keys, " "), j.Bytes)
				}
				if b.Len() == 0 {
					return "no merges"
				}
				return strings.TrimSuffix(b.String(), "\n")
			default:
				d.Fatalf(t, "unknown command %q", d.Cmd)
				return ""
			}
		}
	})
}

// scriptObject is one object line: its key is the command.
func scriptObject(t *testing.T, d *datadriven.TestData, now time.Time) metadata.ObjectInfo {
	scripttest.Known(t, d, "level", "size", "age", "replaced")
	o := metadata.ObjectInfo{Key: d.Cmd, Level: int(scripttest.Int(t, d, "level", 0)), Size: scripttest.Int(t, d, "size", 1),
		CreatedAt: now.Add(-scripttest.Dur(t, d, "age", 0)), State: metadata.ObjectLive}
	if d.HasArg("replaced") {
		o.State = metadata.ObjectReplaced
	}
	return o
}
