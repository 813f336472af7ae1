package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"floe/internal/bench"
	"floe/metadata/pgtest"
	"floe/storage/miniotest"
)

// servers is a throwaway PostgreSQL and MinIO, started once per run.
type servers struct {
	pg        *pgtest.Server
	minio     *miniotest.Server
	stopMinio func()
	pgDir     string
	seq       int
}

func startServers(tmp string) (*servers, error) {
	// pgtest's directory must be traversable by the postgres user.
	pgDir, err := os.MkdirTemp("", "floe-scale-pg-")
	if err != nil {
		return nil, err
	}
	pg, err := pgtest.StartServer(pgDir)
	if err != nil {
		os.RemoveAll(pgDir)
		return nil, fmt.Errorf("postgres: %w (run `make postgres`)", err)
	}
	mdir := filepath.Join(tmp, "minio")
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		return nil, err
	}
	mi, stop, err := miniotest.StartProcess(mdir)
	if err != nil {
		pg.Stop()
		os.RemoveAll(pgDir)
		return nil, fmt.Errorf("minio: %w", err)
	}
	return &servers{pg: pg, minio: mi, stopMinio: stop, pgDir: pgDir}, nil
}

func (s *servers) stop() {
	s.stopMinio()
	s.pg.Stop()
	os.RemoveAll(s.pgDir)
}

// fresh returns a new database and bucket, so scenarios never share state.
func (s *servers) fresh(ctx context.Context) (metaURL, bucketURL string, err error) {
	s.seq++
	name := fmt.Sprintf("floe-scale-%d", s.seq)
	if metaURL, err = s.pg.CreateDB(ctx, strings.ReplaceAll(name, "-", "_")); err != nil {
		return "", "", err
	}
	if err := s.minio.CreateBucket(ctx, name); err != nil {
		return "", "", err
	}
	return metaURL, s.minio.URL(name), nil
}

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
	done    chan error
}

func startAgent(ctx context.Context, s agentSpec) (*proc, error) {
	kafka, err := freeAddr()
	if err != nil {
		return nil, err
	}
	httpAddr, err := freeAddr()
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
	p := &proc{cmd: cmd, kafka: kafka, http: httpAddr, done: make(chan error, 1),
		command: "floe " + strings.Join(redact(args), " ")}
	go func() { p.done <- cmd.Wait() }()
	if err := waitReady(ctx, httpAddr, p.done); err != nil {
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
	case err := <-p.done:
		p.done <- err
		return err
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

// rss is the process's resident set size in bytes (VmRSS), and its peak
// (VmHWM), from /proc/PID/status.
func rss(pid int) (cur, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			cur = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return cur, peak
}

// openFDs counts the entries of /proc/PID/fd.
func openFDs(pid int) int {
	e, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(e)
}

// cpuSeconds returns the user+system CPU time of process pid so far, from
// /proc/PID/stat (fields 14 and 15, in USER_HZ ticks of 1/100 s).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100
}

// selfCPUSeconds is this process's own CPU time (the load generator's).
func selfCPUSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// loadavg returns the 1, 5 and 15 minute load averages.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// freeDiskBytes is the space left for unprivileged users on dir's file system.
func freeDiskBytes(dir string) int64 {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitReady(ctx context.Context, httpAddr string, exited chan error) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("agent exited: %v", err)
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/readyz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("agent not ready after 60s")
}

// redact replaces temporary paths and store URLs in commands written to
// the docs.
func redact(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "postgres://"):
			a = "postgres://…"
		case strings.HasPrefix(a, "s3://"):
			a = "s3://BUCKET?endpoint=…"
		case strings.HasPrefix(a, os.TempDir()):
			a = "DIR"
		}
		out[i] = a
	}
	return out
}
