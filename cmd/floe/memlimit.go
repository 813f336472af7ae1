package main

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroupLimitFiles are where a container's memory limit is read: cgroup
// v2, then v1 (both as containers mount them, at the root).
var cgroupLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// setMemoryLimit gives the Go runtime a soft memory limit inside a
// container that has a memory limit and no GOMEMLIMIT (the Helm chart sets
// GOMEMLIMIT itself; `docker run --memory` does not): nine tenths of the
// limit, so that the garbage collector works harder before the kernel's
// OOM killer would. GOMEMLIMIT, when set, is the runtime's already and is
// left alone; so is a process without a limit. It returns the limit set
// (0 for none).
func setMemoryLimit(log *slog.Logger) int64 {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		log.Info("memory limit from GOMEMLIMIT", "limit", v)
		return 0
	}
	limit := cgroupMemoryLimit(cgroupLimitFiles)
	if limit <= 0 {
		return 0
	}
	soft := limit / 10 * 9
	debug.SetMemoryLimit(soft)
	log.Info("memory limit from the container's cgroup", "cgroup_bytes", limit, "soft_limit_bytes", soft)
	return soft
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
