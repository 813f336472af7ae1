package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Proc is a server process a benchmark started (a floe agent, kfake, a
// nats-server), its output in a log file.
type Proc struct {
	Cmd     *exec.Cmd
	LogPath string
	exited  chan struct{}
	err     error // the exit status, once exited is closed
	stopped bool
}

// Start runs name with args and the extra environment env, its output
// appended to logPath.
func Start(ctx context.Context, name string, args, env []string, logPath string) (*Proc, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child has its own descriptor
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{Cmd: cmd, LogPath: logPath, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Exited is closed once the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Log is what the process wrote so far.
func (p *Proc) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

// Failed wraps err with the process's log, for a process that did not come
// up.
func (p *Proc) Failed(err error) error {
	p.Stop()
	return fmt.Errorf("%w\n%s", err, p.Log())
}

// Stop sends SIGTERM and waits a minute at most for the process to exit,
// then kills it. Its exit status is the error; a death by the signal itself
// (kfakeserver and nats-server may die of it) is none. Stopping again
// returns nil.
func (p *Proc) Stop() error {
	if p.stopped {
		return nil
	}
	p.stopped = true
	p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		var ee *exec.ExitError
		if errors.As(p.err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
			return nil
		}
		return p.err
	case <-time.After(60 * time.Second):
		p.Cmd.Process.Kill()
		<-p.exited
		return errors.New(p.Cmd.Path + " did not stop within 60s of SIGTERM")
	}
}
