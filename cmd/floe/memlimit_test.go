package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"floe/agent"
)

func TestCgroupMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, v string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tc := range []struct {
		files []string
		want  int64
	}{
		{[]string{write("v2", "536870912\n")}, 512 << 20},
		{[]string{write("v2max", "max\n")}, 0},
		{[]string{filepath.Join(dir, "absent"), write("v1", "1073741824\n")}, 1 << 30},
		{[]string{write("v1unlimited", "9223372036854771712\n")}, 0},
		{[]string{write("junk", "lots\n")}, 0},
		{[]string{filepath.Join(dir, "absent")}, 0},
	} {
		if got := cgroupMemoryLimit(tc.files); got != tc.want {
			t.Errorf("%v: %d, want %d", tc.files, got, tc.want)
		}
	}
}

func TestMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		sum, cgroup int64
		want        int64
		from        string
	}{
		{200 << 20, 0, 200 << 20, "budgets"},
		{200 << 20, 1 << 30, 200 << 20, "budgets"},
		// Budgets over the container's nine tenths: the container wins.
		{1 << 30, 1 << 30, 1 << 30 / 10 * 9, "cgroup"},
		{0, 1 << 30, 1 << 30 / 10 * 9, "cgroup"},
		{0, 0, 0, ""},
	} {
		got, from := memoryLimit(tc.sum, tc.cgroup)
		if got != tc.want || from != tc.from {
			t.Errorf("memoryLimit(%d, %d) = %d, %q; want %d, %q", tc.sum, tc.cgroup, got, from, tc.want, tc.from)
		}
	}
}

// TestDevMemoryBudgets: floe dev's budgets sum to what the docs say, and
// each names a flag floe dev has.
func TestDevMemoryBudgets(t *testing.T) {
	f := agentFlags{cfg: agent.DevConfig(), compactor: devCompactorFlags(), iceberg: devIcebergFlags()}
	devMemory(&f.cfg)
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	f.register(fs)
	f.compactor.register(fs, "compactor-")
	f.iceberg.register(fs, true)
	bs := f.memoryBudgets()
	for _, b := range bs {
		if fs.Lookup(b.Flag) == nil {
			t.Errorf("budget %q names --%s, which floe dev does not have", b.Name, b.Flag)
		}
	}
	// 32 request + 16 idle + 32 fetch + 64 cache + 8 read-ahead + 16
	// merges + 3 × 16 key compaction + 72 iceberg (32 MiB files / 2 +
	// 56; docs/architecture.md, Memory).
	if got := agent.SumBudgets(bs); got != 288<<20 {
		t.Errorf("floe dev's budgets sum to %d MiB, want 288: %+v", got>>20, bs)
	}
	f.iceberg.enabled = false
	if got := agent.SumBudgets(f.memoryBudgets()); got != 216<<20 {
		t.Errorf("without Iceberg, floe dev's budgets sum to %d MiB, want 216", got>>20)
	}
}
