package main

import (
	"log/slog"
	"net/http"
	httppprof "net/http/pprof"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"floe/agent"
)

// cgroupLimitFiles are where a container's memory limit is read: cgroup
// v2, then v1 (both as containers mount them, at the root).
var cgroupLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// setMemoryLimit gives the Go runtime a soft memory limit: the sum of the
// process's memory budgets, so that the garbage collector runs before the
// heap's garbage takes it past them (with the default GOGC a heap of
// 400 MB live grew to 1 GB between collections). What the process holds
// outside the budgets — its mapped code (about 50 MiB of the binary
// resident), goroutine stacks, metadata caches, SQLite's pages — is the
// 64 MiB the budgets' sum is allowed beyond it; a limit above the sum
// took floe dev's peak to sum + 84 MiB (docs/architecture.md, Memory).
// Inside a container with a memory limit the soft limit is at most nine
// tenths of it, so that the collector works harder before the kernel's
// OOM killer would; budgets that do not fit there are logged. GOMEMLIMIT,
// when set, is the runtime's already and is left alone. It returns the
// limit set (0 for none).
func setMemoryLimit(log *slog.Logger, budgets []agent.MemoryBudget) int64 {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		log.Info("memory limit from GOMEMLIMIT", "limit", v)
		return 0
	}
	sum := agent.SumBudgets(budgets)
	soft, from := memoryLimit(sum, cgroupMemoryLimit(cgroupLimitFiles))
	if soft <= 0 {
		return 0
	}
	debug.SetMemoryLimit(soft)
	args := []any{"soft_limit_bytes", soft, "from", from, "budgets_bytes", sum}
	for _, b := range budgets {
		args = append(args, "--"+b.Flag+" ("+b.Name+")", b.Bytes)
	}
	if from == "cgroup" && sum > soft {
		log.Warn("memory budgets exceed nine tenths of the container's limit: lower them", args...)
	} else {
		log.Info("memory limit", args...)
	}
	return soft
}

// memoryLimit is the soft limit for budgets summing to sum under a
// container limit of cgroup bytes (0: none), and what decided it.
func memoryLimit(sum, cgroup int64) (int64, string) {
	soft, from := int64(0), ""
	if sum > 0 {
		soft, from = sum, "budgets"
	}
	if c := cgroup / 10 * 9; c > 0 && (soft == 0 || c < soft) {
		soft, from = c, "cgroup"
	}
	return soft, from
}

// devMemory lowers the agent's budgets for `floe dev`, to what a laptop
// running a broker beside everything else expects (the sum, with dev's
// compactor, is about 250 MiB; an agent's defaults sum to 512 MiB):
// 32 MiB of requests in flight still keeps four 8 MiB flushes going, and
// 8 MiB of read-ahead GETs keeps its sixteen GETs of runs of 512 KiB going.
func devMemory(c *agent.Config) {
	c.BufferBytes = 32 << 20
	c.FetchBufferBytes = 32 << 20
	c.CacheBytes = 64 << 20
	c.ReadAheadBytes = 8 << 20
	c.ReadAheadPartitionBytes = 4 << 20
}

// cgroupMemoryLimit is the first limit the files give, or 0: "max", a
// missing file and v1's "unlimited" (a page-rounded 2^63) are no limit.
func cgroupMemoryLimit(files []string) int64 {
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0
		}
		return n
	}
	return 0
}

// addPprof serves net/http/pprof's handlers under /debug/pprof/ on the
// agent's HTTP listener (--pprof), behind the listener's authentication:
// heap profiles are how the memory budgets were found and are checked.
func addPprof(c *agent.Config) {
	if c.HTTPHandlers == nil {
		c.HTTPHandlers = map[string]http.Handler{}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", httppprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", httppprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", httppprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", httppprof.Trace)
	c.HTTPHandlers["/debug/pprof/"] = mux
}

// memoryBudgets are the budgets of everything this process runs: the
// agent's, and in floe dev its compactor's and converter's, which are
// also given to the agent (Config.ProcessMemoryBudgets) so that its
// floe_agent_memory_budget_bytes gauges add up to the process's limit.
func (f *agentFlags) memoryBudgets() []agent.MemoryBudget {
	f.cfg.ProcessMemoryBudgets = nil
	if f.compactor != nil {
		f.cfg.ProcessMemoryBudgets = append(f.compactor.memoryBudgets("compactor-"), f.iceberg.memoryBudgets()...)
	}
	return f.cfg.MemoryBudgets()
}

// memoryBudgets is the Iceberg converter's, where it runs (floe dev, floe
// compactor): none when the catalog is off.
func (f *icebergFlags) memoryBudgets() []agent.MemoryBudget {
	if f == nil || !f.enabled {
		return nil
	}
	return []agent.MemoryBudget{{Name: "iceberg conversion", Flag: "iceberg-target-file-size", Bytes: f.conv.MemoryBytes()}}
}

// memoryBudgets are a compactor's: the windows of one merge (merges run
// one at a time) and what key compaction holds of the partition it
// rewrites in memory (three times --key-compact-max-bytes: the stored
// bytes, the decoded records and the output, each at most that). Flags are named with floe dev's prefix, or none.
func (f *compactorFlags) memoryBudgets(prefix string) []agent.MemoryBudget {
	return []agent.MemoryBudget{
		{Name: "merges", Flag: prefix + "merge-buffer-bytes", Bytes: f.cfg.MergeBufferBytes},
		// The stored bytes, their decoded records and the output.
		{Name: "key compaction", Flag: prefix + "key-compact-max-bytes", Bytes: 3 * f.cfg.KeyCompactMaxBytes},
	}
}
