package agent

// The group coordinator: which agent coordinates a group, the lease that
// makes that exclusive, loading a group's state from the store when taking
// it over, persisting it on every change, and the background loops
// (timeouts, lease renewal, hand-off, offsets expiry).
//
// Placement: rendezvous hashing of the group id over the live agents (the
// highest hash of (group, node id) wins), so losing or adding an agent
// moves only the groups that agent owned or now owns. The hash alone can
// disagree for a moment between agents with different views of the live
// set; the lease in the metadata store (named metadata.GroupLeaseName) is
// what makes coordination exclusive. An agent serves a group only while it
// holds the lease, trusting it locally until renewal start + TTL - margin, so
// it stops before the store would let another agent take it.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"hash/fnv"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"floe/agent/group"
	"floe/metadata"
)

const (
	// offsetsRetention is Kafka's offsets.retention.minutes default (7
	// days): offsets of groups that stay empty that long are removed.
	offsetsRetention = 7 * 24 * time.Hour
	// groupTick is how often session and rebalance timeouts are checked.
	groupTick = 100 * time.Millisecond
	// idleGroupRelease drops an empty group from memory (and its lease)
	// after this long without requests.
	idleGroupRelease = time.Minute
	// storeTimeout bounds the store calls made while a group is locked.
	storeTimeout = 10 * time.Second
	// expireInterval is how often the lowest-numbered agent expires offsets.
	expireInterval = time.Minute
)

// coordinator holds the groups this agent coordinates.
//
// Locking: mu guards the groups map only; each groupEntry's mu guards its
// state machines and lease fields and is held across the store I/O that
// persists them, so a group's changes reach the store in order. Lock order:
// an entry's mu may be taken while holding nothing, or before c.mu, never
// the reverse.
type coordinator struct {
	a        *Agent
	leaseTTL time.Duration
	// retention is offsets.retention.minutes (offsetsRetention; tests
	// shorten it).
	retention time.Duration
	gcfg      group.Config
	// ccfg is the KIP-848 settings of groups that set no group configs;
	// limits bounds what group configs may set (group_configs.go).
	ccfg   group.ConsumerConfig
	limits consumerLimits

	mu     sync.Mutex
	groups map[string]*groupEntry
}

// groupEntry is one coordinated (or being loaded) group.
type groupEntry struct {
	id string

	mu         sync.Mutex
	g          *group.Group         // classic protocol state; nil until loaded
	cg         *group.ConsumerGroup // KIP-848 state; nil unless the group uses it
	epoch      int64                // lease epoch the state was loaded under
	leaseUntil time.Time            // local deadline of the lease
	exists     bool                 // the store knew the group, or a member joined
	lastUsed   time.Time
	gone       bool // removed from the map: callers must look again
	// configs are the group's configs as last read from the store (nil
	// until read), at configsRead; configsStale, set without e.mu by an
	// alter through this agent, asks for them to be read again.
	configs      map[string]string
	configsRead  time.Time
	configsStale atomic.Bool
}

func newCoordinator(a *Agent) *coordinator {
	c := &coordinator{a: a, leaseTTL: a.cfg.AgentTTL, retention: offsetsRetention, groups: map[string]*groupEntry{}}
	// The group settings are the agent's (Config.Group*); Kafka's defaults
	// in floe agent, shorter waits in floe dev.
	c.gcfg = group.Config{
		InitialRebalanceDelay: a.cfg.GroupInitialRebalanceDelay,
		MinSessionTimeout:     a.cfg.GroupMinSessionTimeout,
		MaxSessionTimeout:     a.cfg.GroupMaxSessionTimeout,
		MaxSize:               a.cfg.GroupMaxSize,
		NewMemberID:           newMemberID,
	}
	c.ccfg = group.ConsumerConfig{
		SessionTimeout:    a.cfg.ConsumerGroupSessionTimeout,
		HeartbeatInterval: a.cfg.ConsumerGroupHeartbeatInterval,
		NewMemberID:       func() string { return newMemberID("") },
	}
	c.limits = newConsumerLimits(&a.cfg)
	return c
}

// newMemberID is clientID-<random hex>, the shape Kafka uses.
func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	if clientID == "" {
		clientID = "member"
	}
	return clientID + "-" + hex.EncodeToString(b[:])
}

// ownerOf is the live agent that should coordinate group: rendezvous hash.
func (c *coordinator) ownerOf(groupID string) metadata.Agent {
	live := c.a.liveAgents()
	best, bestH := live[0], uint64(0)
	for i, l := range live {
		h := fnv.New64a()
		h.Write([]byte(groupID))
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(int(l.NodeID))))
		if v := h.Sum64(); i == 0 || v > bestH {
			best, bestH = l, v
		}
	}
	return best
}

func (c *coordinator) isOwner(groupID string) bool { return c.ownerOf(groupID).ID == c.a.id }

// with runs fn on a group this agent coordinates, with the entry locked,
// the lease held and the state loaded; afterwards changed state is saved.
// It returns NOT_COORDINATOR when another agent should coordinate the
// group, COORDINATOR_NOT_AVAILABLE while another agent still holds its
// lease or the store fails.
func (c *coordinator) with(ctx context.Context, groupID string, fn func(e *groupEntry, now time.Time)) *kerr.Error {
	if !c.isOwner(groupID) {
		return kerr.NotCoordinator
	}
	for {
		c.mu.Lock()
		e := c.groups[groupID]
		if e == nil {
			e = &groupEntry{id: groupID}
			c.groups[groupID] = e
		}
		c.mu.Unlock()

		e.mu.Lock()
		if e.gone {
			e.mu.Unlock()
			continue
		}
		// Bounded: the entry stays locked across these store calls.
		sctx, cancel := context.WithTimeout(ctx, storeTimeout)
		if err := c.ensureLease(sctx, e); err != nil {
			cancel()
			e.mu.Unlock()
			return err
		}
		now := time.Now()
		e.lastUsed = now
		fn(e, now)
		c.persist(sctx, e)
		cancel()
		e.mu.Unlock()
		return nil
	}
}

// ensureLease (e.mu held) makes sure this agent holds the group's lease
// and the state is loaded under the current tenure.
func (c *coordinator) ensureLease(ctx context.Context, e *groupEntry) *kerr.Error {
	start := time.Now()
	if e.g != nil && start.Before(e.leaseUntil) {
		return nil
	}
	l, err := c.a.store.AcquireCoordinatorLease(ctx, metadata.GroupLeaseName(e.id), c.a.id, c.leaseTTL)
	if err != nil {
		if !errors.Is(err, metadata.ErrLeaseHeld) {
			c.a.log.Warn("acquire group lease failed", "group", e.id, "err", err)
		}
		c.dropLocked(e)
		return kerr.CoordinatorNotAvailable
	}
	if e.g == nil || l.Epoch != e.epoch {
		if e.g != nil {
			// Another agent coordinated the group since we did: our state
			// is stale.
			e.g.Abandon(kerr.NotCoordinator)
		}
		if err := c.load(ctx, e, start); err != nil {
			c.a.log.Warn("load group failed", "group", e.id, "err", err)
			e.g = nil
			return kerr.CoordinatorNotAvailable
		}
		e.epoch = l.Epoch
		c.a.log.Info("coordinating group", "group", e.id, "lease_epoch", l.Epoch, "generation", e.g.Generation())
	}
	e.leaseUntil = c.localDeadline(start)
	return nil
}

// localDeadline is how long a lease renewed at start is trusted here: a
// margin before its expiry in the store, for clock-rate differences and
// the time the renewal took.
func (c *coordinator) localDeadline(start time.Time) time.Time {
	return start.Add(c.leaseTTL - c.leaseTTL/5)
}

func (c *coordinator) load(ctx context.Context, e *groupEntry, now time.Time) error {
	rec, err := c.a.store.LoadGroup(ctx, e.id)
	if errors.Is(err, metadata.ErrNotFound) {
		offs, err := c.a.store.FetchOffsets(ctx, e.id)
		if err != nil {
			return err
		}
		e.g, e.cg, e.exists = group.New(e.id, c.gcfg), nil, len(offs) > 0
		if e.exists {
			e.g.MarkExists() // Kafka keeps an empty group for committed offsets
		}
		return nil
	}
	if err != nil {
		return err
	}
	e.exists = true
	e.cg = nil
	if rec.ProtocolType == consumerProtocolType848 {
		// The members' restored sessions are the group's own.
		if err := c.readGroupConfigs(ctx, e, now); err != nil {
			return err
		}
		cg, err := group.RestoreConsumerGroup(e.id, applyGroupConfigs(c.ccfg, e.configs), rec.State, now)
		if err != nil {
			return err
		}
		e.g, e.cg = group.New(e.id, c.gcfg), cg
		return nil
	}
	if len(rec.State) == 0 {
		e.g = group.New(e.id, c.gcfg)
		e.g.MarkExists()
		return nil
	}
	g, err := group.Restore(e.id, c.gcfg, rec.State, now)
	if err != nil {
		return err
	}
	e.g = g
	return nil
}

// persist (e.mu held) saves the group if its durable state changed.
func (c *coordinator) persist(ctx context.Context, e *groupEntry) {
	if e.g == nil {
		return
	}
	var rec metadata.GroupRecord
	if e.cg != nil {
		if !e.cg.TakeChanged() {
			return
		}
		rec = metadata.GroupRecord{Group: e.id, ProtocolType: consumerProtocolType848, StateName: e.cg.StateName(),
			Empty: e.cg.IsEmpty(), State: e.cg.Snapshot()}
	} else {
		if !e.g.TakeChanged() {
			return
		}
		rec = metadata.GroupRecord{Group: e.id, ProtocolType: e.g.ProtocolType(), StateName: string(e.g.State()),
			Empty: e.g.IsEmpty(), State: e.g.Snapshot()}
	}
	e.exists = true
	if err := c.a.store.SaveGroup(ctx, rec); err != nil {
		c.a.log.Warn("save group failed", "group", e.id, "err", err)
	}
}

// dropLocked (e.mu held) forgets a group: parked requests are told to find
// the coordinator again.
func (c *coordinator) dropLocked(e *groupEntry) {
	if e.g != nil {
		e.g.Abandon(kerr.NotCoordinator)
	}
	e.g, e.cg, e.gone = nil, nil, true
	c.mu.Lock()
	if c.groups[e.id] == e {
		delete(c.groups, e.id)
	}
	c.mu.Unlock()
}

func (c *coordinator) entries() []*groupEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	es := make([]*groupEntry, 0, len(c.groups))
	for _, e := range c.groups {
		es = append(es, e)
	}
	return es
}

// run is the coordinator's background loop, owned by the Agent's WaitGroup.
func (c *coordinator) run() {
	defer c.a.wg.Done()
	tick := time.NewTicker(groupTick)
	defer tick.Stop()
	renewEvery := max(c.leaseTTL/3, 100*time.Millisecond)
	nextRenew := time.Now().Add(renewEvery)
	nextExpire := time.Now().Add(expireInterval)
	for {
		select {
		case <-c.a.ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		if !now.Before(nextRenew) {
			nextRenew = now.Add(renewEvery)
			c.renew()
		}
		if !now.Before(nextExpire) {
			nextExpire = now.Add(expireInterval)
			c.expireOffsets()
		}
		for _, e := range c.entries() {
			c.tickEntry(e)
		}
	}
}

func (c *coordinator) tickEntry(e *groupEntry) {
	ctx, cancel := context.WithTimeout(c.a.ctx, 5*time.Second)
	defer cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gone || e.g == nil {
		return
	}
	now := time.Now()
	if !now.Before(e.leaseUntil) {
		// The bulk renewal failed (a busy store) or the lease was lost.
		// Extending it ourselves keeps the group only if nobody took it
		// meanwhile (same epoch); otherwise stop serving it.
		l, err := c.a.store.AcquireCoordinatorLease(ctx, metadata.GroupLeaseName(e.id), c.a.id, c.leaseTTL)
		if err != nil || l.Epoch != e.epoch {
			c.a.log.Warn("group lease lost", "group", e.id, "err", err)
			c.dropLocked(e)
			return
		}
		e.leaseUntil = c.localDeadline(now)
	}
	if !c.isOwner(e.id) || (e.isEmpty() && now.Sub(e.lastUsed) > idleGroupRelease) {
		c.handOff(ctx, e)
		return
	}
	e.g.Tick(now)
	if e.cg != nil {
		counts, err := c.topicCounts(ctx)
		if err == nil {
			e.cg.Tick(now, counts)
		}
	}
	c.persist(ctx, e)
}

// handOff (e.mu held) saves and releases a group this agent should no
// longer coordinate, so its new owner can take it at once.
func (c *coordinator) handOff(ctx context.Context, e *groupEntry) {
	c.persist(ctx, e)
	c.dropLocked(e)
	if err := c.a.store.ReleaseCoordinatorLease(ctx, metadata.GroupLeaseName(e.id), c.a.id); err != nil {
		c.a.log.Warn("release group lease failed", "group", e.id, "err", err)
	}
}

func (c *coordinator) renew() {
	ctx, cancel := context.WithTimeout(c.a.ctx, c.leaseTTL/2)
	defer cancel()
	start := time.Now()
	// One call renews every coordinator lease of this agent, groups and
	// transactional ids alike; the transaction coordinator learns the
	// result from here rather than renewing the same rows again.
	held, err := c.a.store.RenewCoordinatorLeases(ctx, c.a.id, c.leaseTTL)
	if err != nil {
		c.a.log.Warn("renew coordinator leases failed", "err", err)
		return
	}
	ok := make(map[string]int64, len(held))
	for _, l := range held {
		ok[l.Name] = l.Epoch
	}
	for _, e := range c.entries() {
		e.mu.Lock()
		if ep, held := ok[metadata.GroupLeaseName(e.id)]; held && ep == e.epoch && e.g != nil {
			e.leaseUntil = c.localDeadline(start)
		}
		e.mu.Unlock()
	}
	if c.a.txn != nil {
		c.a.txn.renewed(ok, c.localDeadline(start))
	}
}

func (c *coordinator) expireOffsets() {
	live := c.a.liveAgents()
	if live[0].ID != c.a.id {
		return // one agent is enough
	}
	ctx, cancel := context.WithTimeout(c.a.ctx, 30*time.Second)
	defer cancel()
	names, err := c.a.store.ExpireOffsets(ctx, c.retention)
	if err != nil {
		c.a.log.Warn("expire group offsets failed", "err", err)
		return
	}
	if len(names) > 0 {
		c.a.log.Info("expired offsets of empty groups", "groups", len(names))
	}
}

// close hands every group off (saved, lease released) so that another
// agent takes them over without waiting for the leases to expire.
func (c *coordinator) close(ctx context.Context) {
	for _, e := range c.entries() {
		e.mu.Lock()
		if !e.gone {
			c.handOff(ctx, e)
		}
		e.mu.Unlock()
	}
}
