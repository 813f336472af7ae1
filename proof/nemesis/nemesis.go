package nemesis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The fault kinds. Partitions pick a direction (both, in, out) at random.
const (
	PartitionPostgres Kind = "partition-postgres" // one agent, or a random set of them, from PostgreSQL
	PartitionMinIO    Kind = "partition-minio"    // one agent, or a random set of them, from MinIO
	PartitionClients  Kind = "partition-clients"  // the Kafka listeners of one or more agents from the clients
	PartitionAgents   Kind = "partition-agents"   // a minority or majority of the agents from the others
	Loss              Kind = "loss"               // random loss of an agent's packets (iptables statistic)
	Delay             Kind = "delay"              // tc netem latency on an agent's link (when the kernel has netem)
	PauseAgent        Kind = "pause-agent"        // SIGSTOP an agent past its lease TTLs, then SIGCONT
	KillAgent         Kind = "kill-agent"         // kill -9 an agent, restart it
	KillCompactor     Kind = "kill-compactor"     // kill -9 the compactor, restart it
	RestartPostgres   Kind = "restart-postgres"   // pg_ctl stop -m immediate, start
	KillMinIO         Kind = "kill-minio"         // kill -9 MinIO, restart it
	PauseMinIO        Kind = "pause-minio"        // SIGSTOP MinIO, then SIGCONT
)

// AllKinds lists every fault kind.
var AllKinds = []Kind{PartitionPostgres, PartitionMinIO, PartitionClients, PartitionAgents, Loss, Delay,
	PauseAgent, KillAgent, KillCompactor, RestartPostgres, KillMinIO, PauseMinIO}

// ParseKinds parses a comma-separated list of kinds ("all" for AllKinds).
func ParseKinds(s string) ([]Kind, error) {
	if s == "" || s == "all" {
		return AllKinds, nil
	}
	var ks []Kind
	for f := range strings.SplitSeq(s, ",") {
		k := Kind(strings.TrimSpace(f))
		found := false
		for _, a := range AllKinds {
			found = found || a == k
		}
		if !found {
			return nil, fmt.Errorf("unknown fault kind %q", k)
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// Cluster is what the nemesis acts on.
type Cluster struct {
	Net       *Net
	Agents    []Target // agent i runs in Net.AgentNS(i)
	Compactor Target
	Postgres  Target
	MinIO     Target
	PGPort    int // on Net.RootIP
	MinIOPort int // on Net.RootIP
	KafkaPort int // each agent's Kafka listener
	HTTPPort  int // each agent's HTTP listener (peers' read cache)
	AgentTTL  time.Duration
}

// Config is a schedule's configuration.
type Config struct {
	Seed  uint64
	Kinds []Kind
	// Gap is the longest quiet time between two faults (a fault starts
	// after a uniform random gap in [Gap/4, Gap]); 10s by default.
	Gap time.Duration
	// Hold is the longest time a fault lasts ([Hold/4, Hold]; 15s). Pauses
	// of agents last at least twice AgentTTL, whatever Hold.
	Hold time.Duration
	// Concurrency is how many schedules run at once (1): each picks its
	// faults from its own random stream, and a fault whose targets another
	// one holds is skipped, so that faults overlap but never act on one
	// process or namespace twice. With more than one, which faults overlap
	// depends on timing: a seed no longer replays the schedule exactly.
	Concurrency int
	Logger      *slog.Logger
}

// Event is one line of the timeline.
type Event struct {
	At     time.Duration `json:"at_ns"` // since the nemesis started
	Wall   time.Time     `json:"wall"`
	Kind   Kind          `json:"kind"`
	Action string        `json:"action"` // "start" or "heal"
	Target string        `json:"target"`
	Detail string        `json:"detail,omitempty"`
	Err    string        `json:"error,omitempty"`
}

// Nemesis runs a random schedule of faults on a cluster.
type Nemesis struct {
	c     Cluster
	cfg   Config
	start time.Time

	mu       sync.Mutex // guards timeline, injected and busy
	timeline []Event
	injected map[Kind]int
	busy     map[string]bool // targets of the faults in progress
}

// New returns a nemesis; Run starts its schedule.
func New(c Cluster, cfg Config) *Nemesis {
	if cfg.Gap <= 0 {
		cfg.Gap = 10 * time.Second
	}
	if cfg.Hold <= 0 {
		cfg.Hold = 15 * time.Second
	}
	if len(cfg.Kinds) == 0 {
		cfg.Kinds = AllKinds
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Concurrency = max(cfg.Concurrency, 1)
	var kinds []Kind
	for _, k := range cfg.Kinds {
		if k == Delay && (c.Net == nil || !c.Net.Netem) {
			cfg.Logger.Warn("no tc netem in this kernel: delay faults left out")
			continue
		}
		kinds = append(kinds, k)
	}
	cfg.Kinds = kinds
	return &Nemesis{c: c, cfg: cfg, injected: map[Kind]int{}, busy: map[string]bool{}}
}

// Timeline returns the events so far.
func (n *Nemesis) Timeline() []Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Event(nil), n.timeline...)
}

// Injected counts the faults started per kind.
func (n *Nemesis) Injected() map[Kind]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := make(map[Kind]int, len(n.injected))
	for k, v := range n.injected {
		m[k] = v
	}
	return m
}

func (n *Nemesis) log(k Kind, action, target, detail string, err error) {
	e := Event{At: time.Since(n.start), Wall: time.Now().UTC(), Kind: k, Action: action, Target: target, Detail: detail}
	if err != nil {
		e.Err = err.Error()
	}
	n.mu.Lock()
	n.timeline = append(n.timeline, e)
	if action == "start" && err == nil {
		n.injected[k]++
	}
	n.mu.Unlock()
	n.cfg.Logger.Info("nemesis", "kind", k, "action", action, "target", target, "detail", detail, "err", err)
}

func between(rng *rand.Rand, max time.Duration) time.Duration {
	lo := max / 4
	return lo + time.Duration(rng.Int64N(int64(max-lo)+1))
}

// claim marks targets busy, false if one of them already is.
func (n *Nemesis) claim(targets []string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, t := range targets {
		if n.busy[t] {
			return false
		}
	}
	for _, t := range targets {
		n.busy[t] = true
	}
	return true
}

func (n *Nemesis) release(targets []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, t := range targets {
		delete(n.busy, t)
	}
}

// Run runs Config.Concurrency schedules until ctx ends. Each injects
// faults one at a time, each held then healed; the faults in progress when
// ctx ends are healed before Run returns. A schedule follows Config.Kinds
// in a shuffled round, so that every kind occurs once per round.
func (n *Nemesis) Run(ctx context.Context) {
	n.start = time.Now()
	var wg sync.WaitGroup
	for i := range n.cfg.Concurrency {
		rng := rand.New(rand.NewPCG(n.cfg.Seed, 0x6e656d65+uint64(i)))
		wg.Go(func() { n.schedule(ctx, rng) })
	}
	wg.Wait()
}

func (n *Nemesis) schedule(ctx context.Context, rng *rand.Rand) {
	var round []Kind
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(between(rng, n.cfg.Gap)):
		}
		if len(n.cfg.Kinds) == 0 {
			continue
		}
		if len(round) == 0 {
			round = append([]Kind(nil), n.cfg.Kinds...)
			rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		k := round[0]
		round = round[1:]
		n.one(ctx, rng, k)
	}
}

// one injects a fault of kind k, holds it, and heals it.
func (n *Nemesis) one(ctx context.Context, rng *rand.Rand, k Kind) {
	hold := between(rng, n.cfg.Hold)
	agent := rng.IntN(len(n.c.Agents))
	aname := fmt.Sprintf("agent%d", agent)
	dirs := []Direction{Both, Inbound, Outbound}
	dir := dirs[rng.IntN(len(dirs))]
	var heal func(context.Context) error
	var target, detail string
	var err error
	ip := ""
	if n.c.Net != nil {
		ip = n.c.Net.RootIP
	}
	// group is the agents a partition cuts off: agent alone or, as often,
	// a random set of one to all of them (a majority of the agents cut off
	// from PostgreSQL, say); for partition-agents, a minority or majority
	// from the rest.
	group := []int{agent}
	if rng.IntN(2) == 1 {
		group = rng.Perm(len(n.c.Agents))[:1+rng.IntN(len(n.c.Agents))]
		slices.Sort(group)
	}
	partition := func(peersOf func(i int) []Peer) {
		names := make([]string, len(group))
		var all []*Rules
		for j, i := range group {
			names[j] = fmt.Sprintf("agent%d", i)
			if err != nil {
				continue
			}
			var r *Rules
			r, err = n.c.Net.Partition(ctx, i, dir, peersOf(i)...)
			all = append(all, r)
		}
		target, detail = strings.Join(names, ","), "direction "+string(dir)
		heal = func(ctx context.Context) error {
			var errs []error
			for _, r := range all {
				errs = append(errs, r.Heal(ctx))
			}
			return errors.Join(errs...)
		}
	}
	fixed := func(p Peer) func(int) []Peer { return func(int) []Peer { return []Peer{p} } }
	process := func(t Target, pause bool) {
		target = t.Name()
		if pause {
			err = t.Pause()
			heal = func(context.Context) error { return t.Resume() }
			return
		}
		err = t.Kill()
		heal = t.Start
	}
	if k == PartitionAgents && len(group) == len(n.c.Agents) {
		group = group[:len(group)-1] // someone must be on the other side
	}
	var claims []string
	switch k {
	case PartitionPostgres, PartitionMinIO, PartitionClients, PartitionAgents:
		for _, i := range group {
			claims = append(claims, fmt.Sprintf("agent%d", i))
		}
	case Loss, Delay, PauseAgent, KillAgent:
		claims = []string{aname}
	case KillCompactor:
		claims = []string{"compactor"}
	case RestartPostgres:
		claims = []string{"postgres"}
	case KillMinIO, PauseMinIO:
		claims = []string{"minio"}
	}
	if !n.claim(claims) {
		return // another schedule's fault holds a target
	}
	defer n.release(claims)
	switch k {
	case PartitionPostgres:
		partition(fixed(Peer{IP: ip, RemotePort: n.c.PGPort}))
	case PartitionMinIO:
		partition(fixed(Peer{IP: ip, RemotePort: n.c.MinIOPort}))
	case PartitionClients:
		partition(fixed(Peer{IP: ip, LocalPort: n.c.KafkaPort}))
	case PartitionAgents:
		partition(func(int) []Peer {
			var peers []Peer
			for i := range n.c.Agents {
				if !slices.Contains(group, i) {
					peers = append(peers, Peer{IP: n.c.Net.AgentIP(i)})
				}
			}
			return peers
		})
	case Loss:
		p := 0.05 + 0.25*rng.Float64()
		target, detail = aname, fmt.Sprintf("loss %.0f%%", p*100)
		var r *Rules
		r, err = n.c.Net.Loss(ctx, agent, p)
		heal = r.Heal
	case Delay:
		d := time.Duration(50+rng.IntN(450)) * time.Millisecond
		target, detail = aname, fmt.Sprintf("delay %v ± %v", d, d/4)
		heal, err = n.c.Net.Delay(ctx, agent, d, d/4)
	case PauseAgent:
		hold = max(hold, 2*n.c.AgentTTL+between(rng, n.c.AgentTTL))
		process(n.c.Agents[agent], true)
	case KillAgent:
		process(n.c.Agents[agent], false)
	case KillCompactor:
		process(n.c.Compactor, false)
	case RestartPostgres:
		hold = min(hold, 5*time.Second)
		process(n.c.Postgres, false)
	case KillMinIO:
		hold = min(hold, 5*time.Second)
		process(n.c.MinIO, false)
	case PauseMinIO:
		process(n.c.MinIO, true)
	}
	detail = strings.TrimSpace(detail + fmt.Sprintf(" for %v", hold.Round(time.Millisecond)))
	n.log(k, "start", target, detail, err)
	if err != nil {
		if heal != nil {
			_ = heal(context.Background())
		}
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(hold):
	}
	// Healing outlives ctx: a run that ends mid-fault still heals.
	hctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var herr error
	for try := range 3 {
		if herr = heal(hctx); herr == nil {
			break
		}
		if try < 2 {
			time.Sleep(time.Second)
		}
	}
	n.log(k, "heal", target, "", herr)
}
