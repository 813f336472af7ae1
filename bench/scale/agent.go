package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"floe/bench"
	"floe/bench/harness"
	"floe/internal/freeport"
)

// agentSpec says how to start one floe process: `floe dev` on a data
// directory, or `floe agent` on a metadata and bucket URL.
type agentSpec struct {
	bin     string
	store   string // "dev" or "pg-minio"
	dataDir string // dev
	meta    string // pg-minio
	bucket  string // pg-minio
	env     []string
	extra   []string
	logPath string
}

// metaURL is the metadata store the agent uses, for direct row counts.
func (s agentSpec) metaURL() string {
	if s.store == "dev" {
		return "sqlite://" + filepath.Join(s.dataDir, "meta.db")
	}
	return s.meta
}

// proc is one running floe process.
type proc struct {
	cmd     *exec.Cmd
	kafka   string
	http    string
	command string
	exited  chan struct{} // closed when the process has exited
	err     error         // its exit status, once exited is closed
}

func startAgent(ctx context.Context, s agentSpec) (*proc, error) {
	kafka, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	httpAddr, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	var args []string
	if s.store == "dev" {
		args = []string{"dev", "--data-dir", s.dataDir}
	} else {
		args = []string{"agent", "--metadata", s.meta, "--bucket", s.bucket}
	}
	args = append(append(args, "--kafka-addr", kafka, "--http-addr", httpAddr, "--log-level", "warn"), s.extra...)
	cmd := exec.Command(s.bin, args...)
	cmd.Env = append(os.Environ(), s.env...)
	log, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, kafka: kafka, http: httpAddr, exited: make(chan struct{}),
		command: "floe " + strings.Join(harness.Redact(args), " ")}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	if err := harness.WaitReady(ctx, httpAddr, p.exited); err != nil {
		p.stop()
		text, _ := os.ReadFile(s.logPath)
		return nil, fmt.Errorf("%w\n%s", err, text)
	}
	return p, nil
}

// stop sends SIGTERM and waits for the process to exit (a minute at most).
func (p *proc) stop() error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(60 * time.Second):
		p.cmd.Process.Kill()
		return errors.New("agent did not stop within 60s")
	}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) metrics(ctx context.Context) (bench.Sample, error) {
	return bench.Scrape(ctx, "http://"+p.http+"/metrics")
}

// liveMemory collects the agent's garbage (twice: sync.Pool keeps what it
// held for one collection more) through --pprof's heap profile endpoint,
// then scrapes its metrics.
func (p *proc) liveMemory(ctx context.Context) (bench.Sample, error) {
	for range 2 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.http+"/debug/pprof/heap?gc=1", nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("collect garbage: %w", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("collect garbage: %s (was the agent started with --pprof?)", resp.Status)
		}
	}
	return p.metrics(ctx)
}

// freeDiskBytes is the space left for unprivileged users on dir's file system.
func freeDiskBytes(dir string) int64 {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// rss is the process's resident set size and its peak, in bytes (0 if
// /proc cannot tell).
func rss(pid int) (cur, peak int64) {
	cur, peak, _ = harness.Memory(pid)
	return cur, peak
}

// cpuSeconds is the process's user+system CPU time so far (0 if /proc
// cannot tell).
func cpuSeconds(pid int) float64 {
	s, _ := harness.CPUSeconds(pid)
	return s
}
