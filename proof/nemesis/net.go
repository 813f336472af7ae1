package nemesis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// nsPrefix starts every namespace a run creates: floeproof-<pid>-….
const nsPrefix = "floeproof-"

// linkPrefix starts every root-namespace link a run creates: fp<pid>….
const linkPrefix = "fp"

// Net is one run's network: a hub namespace with a bridge, the root
// namespace on it at RootIP, and one namespace per agent at AgentIP(i).
type Net struct {
	ID      string // the run's id: the runner's pid
	Subnet  string // 10.x.y
	RootIP  string
	Agents  int
	Netem   bool // whether the kernel offers tc netem
	created []string
	rootDev string
}

// HaveTools reports which of the commands the network needs are missing.
func HaveTools() []string {
	var missing []string
	for _, c := range []string{"ip", "iptables", "tc"} {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	return missing
}

func run(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func alive(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// CleanStale removes the namespaces and root links of runs whose runner is
// no longer alive (a run killed before its cleanup).
func CleanStale(ctx context.Context) error {
	var errs []error
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return fmt.Errorf("ip netns list: %w", err)
	}
	for line := range strings.Lines(string(out)) {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, nsPrefix)
		if !ok {
			continue
		}
		id, _, _ := strings.Cut(rest, "-")
		if pid, err := strconv.Atoi(id); err == nil && !alive(pid) {
			errs = append(errs, run(ctx, "ip", "netns", "del", name))
		}
	}
	out, err = exec.CommandContext(ctx, "ip", "-o", "link", "show").Output()
	if err != nil {
		return fmt.Errorf("ip link show: %w", err)
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		rest, ok := strings.CutPrefix(name, linkPrefix)
		if !ok || !strings.HasSuffix(rest, "r") {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSuffix(rest, "r")); err == nil && !alive(pid) {
			errs = append(errs, run(ctx, "ip", "link", "del", name))
		}
	}
	return errors.Join(errs...)
}

// NewNet builds the network of a run with the given number of agents. On an
// error what was built is removed.
func NewNet(ctx context.Context, agents int) (_ *Net, err error) {
	pid := os.Getpid()
	n := &Net{
		ID:     strconv.Itoa(pid),
		Subnet: fmt.Sprintf("10.%d.%d", 200+pid%50, (pid/50)%250),
		Agents: agents,
	}
	n.RootIP = n.Subnet + ".1"
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	hub := n.ns("hub")
	if err := n.addNS(ctx, hub); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"ip", "-n", hub, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", hub, "link", "set", "br0", "up"},
	}
	n.rootDev = linkPrefix + n.ID + "r"
	steps = append(steps,
		[]string{"ip", "link", "add", n.rootDev, "type", "veth", "peer", "name", linkPrefix + n.ID + "h"},
		[]string{"ip", "link", "set", linkPrefix + n.ID + "h", "netns", hub},
		[]string{"ip", "-n", hub, "link", "set", linkPrefix + n.ID + "h", "master", "br0", "up"},
		[]string{"ip", "addr", "add", n.RootIP + "/24", "dev", n.rootDev},
		[]string{"ip", "link", "set", n.rootDev, "up"},
	)
	for _, s := range steps {
		if err := run(ctx, s[0], s[1:]...); err != nil {
			return nil, err
		}
	}
	for i := range agents {
		ns := n.AgentNS(i)
		if err := n.addNS(ctx, ns); err != nil {
			return nil, err
		}
		a, b := fmt.Sprintf("%s%sa%d", linkPrefix, n.ID, i), fmt.Sprintf("%s%sb%d", linkPrefix, n.ID, i)
		for _, s := range [][]string{
			{"ip", "link", "add", a, "type", "veth", "peer", "name", b},
			{"ip", "link", "set", a, "netns", ns},
			{"ip", "link", "set", b, "netns", hub},
			{"ip", "-n", hub, "link", "set", b, "master", "br0", "up"},
			{"ip", "-n", ns, "link", "set", a, "name", "eth0"},
			{"ip", "-n", ns, "addr", "add", n.AgentIP(i) + "/24", "dev", "eth0"},
			{"ip", "-n", ns, "link", "set", "eth0", "up"},
			{"ip", "-n", ns, "link", "set", "lo", "up"},
		} {
			if err := run(ctx, s[0], s[1:]...); err != nil {
				return nil, err
			}
		}
	}
	err = run(ctx, "ip", "netns", "exec", n.AgentNS(0), "tc", "qdisc", "add", "dev", "eth0", "root", "netem", "delay", "1ms")
	if n.Netem = err == nil; n.Netem {
		_ = run(ctx, "ip", "netns", "exec", n.AgentNS(0), "tc", "qdisc", "del", "dev", "eth0", "root")
	}
	return n, nil
}

func (n *Net) ns(name string) string { return nsPrefix + n.ID + "-" + name }

func (n *Net) addNS(ctx context.Context, name string) error {
	if err := run(ctx, "ip", "netns", "add", name); err != nil {
		return err
	}
	n.created = append(n.created, name)
	return nil
}

// AgentNS is the namespace of agent i.
func (n *Net) AgentNS(i int) string { return n.ns("a" + strconv.Itoa(i)) }

// AgentIP is the address of agent i.
func (n *Net) AgentIP(i int) string { return fmt.Sprintf("%s.%d", n.Subnet, 10+i) }

// Close removes everything NewNet created: the namespaces (and with them
// their links and rules) and the root link.
func (n *Net) Close() error {
	ctx := context.Background()
	var errs []error
	if n.rootDev != "" {
		errs = append(errs, run(ctx, "ip", "link", "del", n.rootDev))
	}
	for i := len(n.created) - 1; i >= 0; i-- {
		errs = append(errs, run(ctx, "ip", "netns", "del", n.created[i]))
	}
	n.created = nil
	return errors.Join(errs...)
}

// Direction is which way a partition drops packets, seen from the agent.
type Direction string

// The directions of a partition.
const (
	Both     Direction = "both"
	Inbound  Direction = "in"
	Outbound Direction = "out"
)

// Peer is the other side of a partition: an address and, unless 0, a port
// on that side (a server the agent dials) or on the agent's side (a
// listener the peer dials).
type Peer struct {
	IP         string
	RemotePort int // a server port on the peer (PostgreSQL, MinIO)
	LocalPort  int // a listener port on the agent (Kafka)
}

// rules returns the iptables rule specs (without -A/-D) that drop traffic
// between the agent and p in direction d.
func (p Peer) rules(d Direction) [][]string {
	var out, in []string
	out = []string{"OUTPUT", "-d", p.IP}
	in = []string{"INPUT", "-s", p.IP}
	switch {
	case p.RemotePort != 0:
		port := strconv.Itoa(p.RemotePort)
		out = append(out, "-p", "tcp", "--dport", port)
		in = append(in, "-p", "tcp", "--sport", port)
	case p.LocalPort != 0:
		port := strconv.Itoa(p.LocalPort)
		out = append(out, "-p", "tcp", "--sport", port)
		in = append(in, "-p", "tcp", "--dport", port)
	}
	out = append(out, "-j", "DROP")
	in = append(in, "-j", "DROP")
	switch d {
	case Inbound:
		return [][]string{in}
	case Outbound:
		return [][]string{out}
	}
	return [][]string{out, in}
}

// Rules is a set of iptables rules in one agent's namespace, added by
// Apply and deleted by Heal.
type Rules struct {
	ns    string
	specs [][]string
}

// Partition drops traffic between agent i and the peers in direction d.
func (n *Net) Partition(ctx context.Context, i int, d Direction, peers ...Peer) (*Rules, error) {
	r := &Rules{ns: n.AgentNS(i)}
	for _, p := range peers {
		r.specs = append(r.specs, p.rules(d)...)
	}
	return r, r.apply(ctx)
}

// Loss drops a fraction p of agent i's outgoing and incoming packets.
func (n *Net) Loss(ctx context.Context, i int, p float64) (*Rules, error) {
	prob := strconv.FormatFloat(p, 'f', 3, 64)
	r := &Rules{ns: n.AgentNS(i), specs: [][]string{
		{"OUTPUT", "-o", "eth0", "-m", "statistic", "--mode", "random", "--probability", prob, "-j", "DROP"},
		{"INPUT", "-i", "eth0", "-m", "statistic", "--mode", "random", "--probability", prob, "-j", "DROP"},
	}}
	return r, r.apply(ctx)
}

func (r *Rules) apply(ctx context.Context) error {
	for j, s := range r.specs {
		if err := run(ctx, "ip", append([]string{"netns", "exec", r.ns, "iptables", "-A"}, s...)...); err != nil {
			r.specs = r.specs[:j]
			return errors.Join(err, r.Heal(ctx))
		}
	}
	return nil
}

// Heal deletes the rules.
func (r *Rules) Heal(ctx context.Context) error {
	var errs []error
	for _, s := range r.specs {
		errs = append(errs, run(ctx, "ip", append([]string{"netns", "exec", r.ns, "iptables", "-D"}, s...)...))
	}
	r.specs = nil
	return errors.Join(errs...)
}

// Delay adds latency (and jitter) to agent i's link with tc netem; Net.Netem
// says whether the kernel has it.
func (n *Net) Delay(ctx context.Context, i int, delay, jitter time.Duration) (heal func(context.Context) error, err error) {
	ns := n.AgentNS(i)
	if err := run(ctx, "ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "eth0", "root", "netem",
		"delay", delay.String(), jitter.String()); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		return run(ctx, "ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "eth0", "root")
	}, nil
}
