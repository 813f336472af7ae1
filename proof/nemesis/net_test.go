package nemesis

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if missing := HaveTools(); len(missing) > 0 {
		if os.Getenv("FLOE_REQUIRE_SERVERS") == "1" {
			t.Fatalf("missing %v (FLOE_REQUIRE_SERVERS=1; run `make deps`)", missing)
		}
		t.Skipf("missing %v; run `make deps`", missing)
	}
}

// dial connects from agent i's namespace to addr, true if it connected
// within a second.
func dial(t *testing.T, n *Net, i int, addr string) bool {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("ip", "netns", "exec", n.AgentNS(i), "timeout", "1", "bash", "-c",
		fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", host, port))
	return cmd.Run() == nil
}

// TestPartitionHeals: an agent reaches a server in the root namespace; a
// partition from that server's port (each direction) cuts it off, its heal
// restores it, and Close leaves nothing behind.
func TestPartitionHeals(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	n, err := NewNet(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			n.Close()
		}
	})
	ln, err := net.Listen("tcp", n.RootIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	if !dial(t, n, 0, ln.Addr().String()) {
		t.Fatal("agent 0 cannot reach the root namespace")
	}
	for _, d := range []Direction{Both, Inbound, Outbound} {
		r, err := n.Partition(ctx, 0, d, Peer{IP: n.RootIP, RemotePort: port})
		if err != nil {
			t.Fatal(err)
		}
		if dial(t, n, 0, ln.Addr().String()) {
			t.Errorf("%s partition: agent 0 still connects", d)
		}
		if !dial(t, n, 1, ln.Addr().String()) {
			t.Errorf("%s partition of agent 0 cut agent 1 off", d)
		}
		if err := r.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if !dial(t, n, 0, ln.Addr().String()) {
			t.Errorf("%s partition healed: agent 0 cannot connect", d)
		}
	}
	closed = true
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out), nsPrefix+n.ID+"-") {
		t.Errorf("namespaces left after Close:\n%s", out)
	}
	out, _ = exec.Command("ip", "-o", "link", "show").Output()
	if strings.Contains(string(out), linkPrefix+n.ID) {
		t.Errorf("links left after Close:\n%s", out)
	}
}

// TestCleanStale removes what a dead run left, and leaves a live run's.
func TestCleanStale(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	dead := 4194000 // a pid no process has: the loop below makes sure
	for alive(dead) {
		dead++
	}
	ns := fmt.Sprintf("%s%d-hub", nsPrefix, dead)
	link := fmt.Sprintf("%s%dr", linkPrefix, dead)
	live := fmt.Sprintf("%s%d-x", nsPrefix, os.Getpid())
	for _, c := range [][]string{
		{"ip", "netns", "add", ns},
		{"ip", "netns", "add", live},
		{"ip", "link", "add", link, "type", "veth", "peer", "name", fmt.Sprintf("%s%dh", linkPrefix, dead)},
	} {
		if err := run(ctx, c[0], c[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		run(ctx, "ip", "netns", "del", live)
		run(ctx, "ip", "netns", "del", ns)
		run(ctx, "ip", "link", "del", link)
	})
	if err := CleanStale(ctx); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out), ns) || !strings.Contains(string(out), live) {
		t.Errorf("after CleanStale:\n%s", out)
	}
	if exec.Command("ip", "link", "show", link).Run() == nil {
		t.Errorf("link %s left", link)
	}
}
