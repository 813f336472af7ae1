// Package integration holds floe's black-box tests: real floe processes,
// real PostgreSQL and MinIO servers, real Kafka clients.
package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"floe/internal/freeport"
)

// floeBin is the floe binary built once by TestMain.
var floeBin string

func TestMain(m *testing.M) {
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	if os.Getenv("FLOE_SHARE_HELPER") != "" {
		// This binary runs again as a client process of a test
		// (TestShareHelperConsumer): it needs no floe of its own.
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "floe-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	floeBin = filepath.Join(dir, "floe")
	build := exec.Command("go", "build", "-o", floeBin, "floe/cmd/floe")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build floe:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freePort returns a port on 127.0.0.1 no other server of this test
// binary (agents, PostgreSQL, MinIO) was given.
func freePort(t testing.TB) int {
	t.Helper()
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// proc is one running floe process.
type proc struct {
	t        testing.TB
	args     []string
	env      []string
	Addr     string // Kafka listener
	HTTPAddr string
	// RegistryAddr is the schema registry's listener (dev and agent).
	RegistryAddr string
	cmd          *exec.Cmd
	logMu        sync.Mutex
	log          strings.Builder
	exited       chan struct{}
}

// startFloe runs `floe <args...>` with fresh Kafka and HTTP ports (unless
// the args name them) and waits until it is ready. The process is stopped
// at cleanup.
func startFloe(t testing.TB, args ...string) *proc {
	t.Helper()
	return startFloeEnv(t, nil, args...)
}

// startFloeEnv is startFloe with extra environment variables.
func startFloeEnv(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, env: env}
	p.Addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p.HTTPAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p.args = append(args, "--kafka-addr", p.Addr, "--http-addr", p.HTTPAddr)
	if len(args) > 0 && (args[0] == "dev" || args[0] == "agent") && !slices.Contains(args, "--schema-registry-addr") {
		p.RegistryAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p.args = append(p.args, "--schema-registry-addr", p.RegistryAddr)
	}
	p.start()
	t.Cleanup(func() { p.Stop() })
	return p
}

func (p *proc) start() {
	t := p.t
	t.Helper()
	p.cmd = exec.Command(floeBin, p.args...)
	p.cmd.Env = append(os.Environ(), p.env...)
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.logMu.Lock()
			p.log.WriteString(sc.Text())
			p.log.WriteByte('\n')
			p.logMu.Unlock()
		}
	}()
	go func() {
		p.cmd.Wait()
		pw.Close()
		close(p.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-p.exited:
			t.Fatalf("floe %v exited early:\n%s", p.args, p.Log())
		default:
		}
		resp, err := http.Get("http://" + p.HTTPAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("floe %v not ready after 30s:\n%s", p.args, p.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Log returns what the process printed so far.
func (p *proc) Log() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return p.log.String()
}

// Stop sends SIGTERM and waits for a clean exit (SIGKILL after 30 s).
func (p *proc) Stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
		p.t.Errorf("floe did not stop within 30s of SIGTERM:\n%s", p.Log())
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *proc) Kill() {
	p.cmd.Process.Kill()
	<-p.exited
}

// Restart starts the process again with the same arguments and ports.
func (p *proc) Restart() {
	p.Stop()
	p.start()
}

// Alive reports whether the process is still running.
func (p *proc) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// metric reads one series from /metrics, named exactly as exposed
// (e.g. `floe_storage_requests_total{op="put"}`); absent is 0.
func (p *proc) metric(t testing.TB, series string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + p.HTTPAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && name == series {
			var v float64
			fmt.Sscan(value, &v)
			return v
		}
	}
	return 0
}

// metricsText returns the whole /metrics page.
func (p *proc) metricsText(t testing.TB) string {
	t.Helper()
	resp, err := http.Get("http://" + p.HTTPAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func testContext(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// missingTool skips the test because a tool the Makefile builds is missing
// (what says which, missing why), or fails it under FLOE_REQUIRE_SERVERS=1,
// where make has built everything.
func missingTool(t testing.TB, what, missing, target string) {
	t.Helper()
	if os.Getenv("FLOE_REQUIRE_SERVERS") == "1" {
		t.Fatalf("%s: %s (make %s builds it)", what, missing, target)
	}
	t.Skipf("%s: %s (make %s builds it)", what, missing, target)
}

// npmInstall installs the pinned packages of integration/<folder> with npm ci
// (its package-lock.json names no registry host) and returns node's path and
// the folder's absolute path. Without node and npm the test is skipped.
func npmInstall(t testing.TB, folder string) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not installed")
	}
	dir, err = filepath.Abs(folder)
	if err != nil {
		t.Fatal(err)
	}
	install := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--silent")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", folder, err, out)
	}
	return node, dir
}
