package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"

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
	*harness.Proc
	kafka   string
	http    string
	command string
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
	hp, err := harness.Start(context.WithoutCancel(ctx), s.bin, args, s.env, s.logPath)
	if err != nil {
		return nil, err
	}
	p := &proc{Proc: hp, kafka: kafka, http: httpAddr, command: "floe " + strings.Join(harness.Redact(args), " ")}
	if err := harness.WaitReady(ctx, httpAddr, p.Exited()); err != nil {
		return nil, p.Failed(err)
	}
	return p, nil
}

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
