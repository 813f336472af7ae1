package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// WaitReady polls a floe process's /readyz until it answers 200, for a
// minute at most; exited (nil for none) is closed if the process ends
// first.
func WaitReady(ctx context.Context, httpAddr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("agent exited before it was ready")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/readyz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("agent not ready after 60s")
}

// CPUSeconds returns the user+system CPU time of process pid so far, from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s: Linux
// reports USER_HZ, which is 100 on every architecture).
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime %q %q", pid, f[11], f[12])
	}
	return (utime + stime) / 100, nil
}

// Memory returns process pid's resident set size (VmRSS) and its peak
// (VmHWM) in bytes, from /proc/PID/status.
func Memory(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	found := 0
	for l := range strings.SplitSeq(string(b), "\n") {
		name, v, ok := strings.Cut(l, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s %q", pid, name, v)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s: %w", pid, name, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS and VmHWM", pid)
	}
	return rss, peak, nil
}

// OpenFDs counts process pid's open file descriptors (/proc/PID/fd), -1
// if they cannot be read.
func OpenFDs(pid int) int {
	e, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(e)
}

// MachineCPUSeconds returns the busy and total CPU time of all cores so
// far, from the first line of /proc/stat (user nice system idle iowait irq
// softirq steal, in USER_HZ ticks); idle and iowait are not busy.
func MachineCPUSeconds() (busy, total float64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var ticks [8]float64
	for i := range ticks {
		if ticks[i], err = strconv.ParseFloat(f[i+1], 64); err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		total += ticks[i]
	}
	busy = total - ticks[3] - ticks[4]
	return busy / 100, total / 100, nil
}

// LoadAvg returns the 1, 5 and 15 minute load averages, or "" off Linux.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// Redact replaces temporary paths and store URLs in a command written to
// the docs.
func Redact(args []string) []string {
	out := make([]string, len(args))
	tmp := os.TempDir()
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "postgres://"):
			a = "postgres://…"
		case strings.HasPrefix(a, "s3://"):
			a = "s3://BUCKET?endpoint=…"
		case strings.HasPrefix(a, "file://") && strings.Contains(a, tmp):
			a = "file://DIR"
		case strings.Contains(a, tmp):
			a = "DIR"
		}
		out[i] = a
	}
	return out
}
