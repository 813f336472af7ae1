//go:build k8s

package k8stest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"floe/internal/freeport"
)

// podNet is the address range of every pod network the test makes: node i's bridge is
// 10.89.i.0/24 with the host at 10.89.i.1. No route to it exists outside this machine.
const podNet = "10.89.0.0/16"

// serviceNet is the apiserver's ClusterIP range. Nothing routes it here (no kube-proxy);
// the host drops it rather than letting it follow the default route off the machine.
const serviceNet = "10.96.0.0/16"

func bridgeName(i int) string        { return fmt.Sprintf("floe-br%d", i) }
func bridgeSubnet(i int) string      { return fmt.Sprintf("10.89.%d.0/24", i) }
func bridgeGateway(i int) net.IP     { return net.IPv4(10, 89, byte(i), 1).To4() }
func bridgeGatewayCIDR(i int) string { return bridgeGateway(i).String() + "/24" }

// run runs a host command and fails the test on error.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// hostNet makes the bridges (one per node, before the kubelets and CNI use them, so
// servers can listen on their gateways at once), a blackhole for the rest of podNet and
// for serviceNet, and FORWARD rules: pod to pod is accepted, anything else a pod sends
// past the host is dropped. Cleanup undoes each, in reverse.
func hostNet(t *testing.T, nodes int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("k8s-test needs root: bridges, iptables, containerd, kubelet")
	}
	undo := func(name string, args ...string) {
		t.Cleanup(func() {
			if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
				t.Logf("cleanup %s %s: %v %s", name, strings.Join(args, " "), err, out)
			}
		})
	}
	for i := range nodes {
		br := bridgeName(i)
		// A bridge left by a killed run: remove it first.
		_ = exec.Command("ip", "link", "del", br).Run()
		run(t, "ip", "link", "add", br, "type", "bridge")
		undo("ip", "link", "del", br)
		run(t, "ip", "addr", "add", bridgeGatewayCIDR(i), "dev", br)
		run(t, "ip", "link", "set", br, "up")
	}
	for _, n := range []string{podNet, serviceNet} {
		_ = exec.Command("ip", "route", "del", "unreachable", n).Run()
		run(t, "ip", "route", "add", "unreachable", n, "metric", "4000")
		undo("ip", "route", "del", "unreachable", n, "metric", "4000")
	}
	for _, rule := range [][]string{
		{"-s", podNet, "!", "-d", podNet, "-j", "DROP"},
		{"-s", podNet, "-d", podNet, "-j", "ACCEPT"},
	} {
		_ = exec.Command("iptables", append([]string{"-D", "FORWARD"}, rule...)...).Run()
		run(t, "iptables", append([]string{"-I", "FORWARD", "1"}, rule...)...)
		undo("iptables", append([]string{"-D", "FORWARD"}, rule...)...)
	}
}

// kubeletSysctls are what the kubelet sets on the host (its defaults for a node); the test
// puts back what they were.
var kubeletSysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"}

func saveSysctls(t *testing.T) {
	t.Helper()
	saved := map[string][]byte{}
	for _, k := range kubeletSysctls {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err != nil {
			t.Fatal(err)
		}
		saved[k] = b
	}
	t.Cleanup(func() {
		for k, v := range saved {
			if err := os.WriteFile("/proc/sys/"+k, v, 0o644); err != nil {
				t.Errorf("restore sysctl %s: %v", k, err)
			}
		}
	})
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// proc is a process the test started, with its output in a log file.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// start starts name with args, logging to dir/NAME.log, and stops it in cleanup (SIGTERM,
// SIGKILL after 15 s). Pdeathsig kills it should the test process die first.
func start(t *testing.T, dir, name, bin string, args []string, env ...string) *proc {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

func (p *proc) stop(t *testing.T) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		t.Logf("%s: no exit 15 s after SIGTERM, killing", p.name)
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// tail is the end of the process's log, for failure messages.
func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// waitFor polls cond every interval until it returns nil or timeout passes.
func waitFor(t *testing.T, what string, timeout, interval time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(interval)
	}
}

// forward accepts on addr and copies each connection to and from the address target
// returns at that moment (a server listening only on 127.0.0.1, or a ready endpoint of a
// Service). It stops in cleanup.
func forward(t *testing.T, addr string, target func() (string, error)) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	track := func(c net.Conn, add bool) {
		mu.Lock()
		defer mu.Unlock()
		if add {
			conns[c] = struct{}{}
		} else {
			delete(conns, c)
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				to, err := target()
				if err != nil {
					return
				}
				up, err := net.DialTimeout("tcp", to, 5*time.Second)
				if err != nil {
					return
				}
				defer up.Close()
				track(c, true)
				track(up, true)
				defer track(c, false)
				defer track(up, false)
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

// unmountUnder unmounts every mount below dir, deepest first (containerd's snapshots and
// the kubelet's volumes live there), so dir can be removed.
func unmountUnder(t *testing.T, dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Logf("mountinfo: %v", err)
		return
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			mounts = append(mounts, unescapeMount(fields[4]))
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			t.Logf("unmount %s: %v", m, err)
		}
	}
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// killShims ends the containerd shims whose command line names socket (the ones our
// containerd started; they outlive containerd by design) and the containers they run (the
// shims' children, each the first process of its PID namespace), by process id.
func killShims(t *testing.T, socket string) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	shims := map[int]bool{}
	defer func() {
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
			rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
			if f := strings.Fields(rest); len(f) > 1 {
				if ppid, _ := strconv.Atoi(f[1]); shims[ppid] {
					t.Logf("killing leftover container process %d", pid)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		for pid := range shims {
			t.Logf("killing leftover shim %d", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) == 0 || !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		for _, a := range args {
			if a == socket {
				shims[pid] = true
				break
			}
		}
	}
}

// ctxT is a context that ends with the test.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

// cgroupsLeft removes, in cleanup, the cgroups containerd made below /sys/fs/cgroup/*/k8s.io
// during the test that are still there (a container that was killed, not deleted).
func cgroupsLeft(t *testing.T) {
	before := map[string]bool{}
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/k8s.io/*")
	for _, d := range dirs {
		before[d] = true
	}
	t.Cleanup(func() {
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*/k8s.io/*")
		for _, d := range dirs {
			if st, err := os.Stat(d); err == nil && st.IsDir() && !before[d] {
				if err := os.Remove(d); err != nil {
					t.Logf("remove cgroup %s: %v", d, err)
				}
			}
		}
	})
}
