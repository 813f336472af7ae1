package nemesis

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Target is something the nemesis may crash, restart, pause and resume.
type Target interface {
	Name() string
	// Kill stops it at once (kill -9, or PostgreSQL's immediate shutdown).
	Kill() error
	// Start starts it again and waits until it is ready.
	Start(ctx context.Context) error
	// Pause and Resume stop and continue it (SIGSTOP, SIGCONT).
	Pause() error
	Resume() error
}

// Process is a server process started from a command line, optionally
// inside a network namespace, with its output appended to a log file. It is
// killed with the runner (Pdeathsig).
type Process struct {
	name  string
	ns    string   // network namespace, "" for the root one
	argv  []string // command and arguments
	env   []string
	log   string // log file path
	ready func(ctx context.Context) error

	mu     sync.Mutex // guards cmd and exited
	cmd    *exec.Cmd
	exited chan struct{}
}

// NewProcess describes a process; Start runs it. ready, if not nil, is
// polled after a start until it returns nil.
func NewProcess(name, ns string, argv, env []string, logPath string, ready func(context.Context) error) *Process {
	return &Process{name: name, ns: ns, argv: argv, env: env, log: logPath, ready: ready}
}

// Name names the process in the timeline.
func (p *Process) Name() string { return p.name }

// Start runs the process and waits for it to be ready (60 s at most).
func (p *Process) Start(ctx context.Context) error {
	argv := p.argv
	if p.ns != "" {
		argv = append([]string{"ip", "netns", "exec", p.ns}, argv...)
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "=== %s start %s\n", time.Now().UTC().Format(time.RFC3339Nano), p.name)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(exited)
	}()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	if p.ready == nil {
		return nil
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := p.ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before it was ready (see %s)", p.name, p.log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 60s: %w", p.name, err)
		}
	}
}

func (p *Process) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.exited
}

// Kill sends SIGKILL (resuming a paused process is not needed: SIGKILL ends
// a stopped one) and waits for it to be gone.
func (p *Process) Kill() error {
	cmd, exited := p.current()
	if cmd == nil {
		return errors.New(p.name + " never started")
	}
	_ = cmd.Process.Kill()
	<-exited
	return nil
}

// Stop sends SIGCONT and SIGTERM, and SIGKILL after grace.
func (p *Process) Stop(grace time.Duration) {
	cmd, exited := p.current()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Pause sends SIGSTOP.
func (p *Process) Pause() error { return p.signal(syscall.SIGSTOP) }

// Resume sends SIGCONT.
func (p *Process) Resume() error { return p.signal(syscall.SIGCONT) }

func (p *Process) signal(s syscall.Signal) error {
	cmd, exited := p.current()
	if cmd == nil {
		return errors.New(p.name + " never started")
	}
	select {
	case <-exited:
		return errors.New(p.name + " is not running")
	default:
	}
	return cmd.Process.Signal(s)
}

// HTTPReady returns a readiness check: GET url answers 200.
func HTTPReady(url string) func(context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// Funcs is a Target made of functions (PostgreSQL, stopped and started by
// pg_ctl, and paused through its postmaster's pid).
type Funcs struct {
	N                   string
	KillF, PauseF, ResF func() error
	StartF              func(ctx context.Context) error
}

// Name names the target.
func (f *Funcs) Name() string { return f.N }

// Kill calls KillF.
func (f *Funcs) Kill() error { return f.KillF() }

// Start calls StartF.
func (f *Funcs) Start(ctx context.Context) error { return f.StartF(ctx) }

// Pause calls PauseF.
func (f *Funcs) Pause() error { return f.PauseF() }

// Resume calls ResF.
func (f *Funcs) Resume() error { return f.ResF() }

var _ Target = (*Process)(nil)
var _ Target = (*Funcs)(nil)
