package agent

// The group coordinator: which agent coordinates a group, the lease that
// makes that exclusive, loading a group's state from the store when taking
// it over, persisting it on every change, and the background loops
// (timeouts, hand-off, offsets expiry).
//
// Placement: rendezvous hashing of the group id over the live agents
// (Agent.coordinatorFor). The hash alone can disagree for a moment between
// agents with different views of the live set; the lease in the metadata
// store (named metadata.GroupLeaseName) is what makes coordination
// exclusive. The lease lifecycle (acquire, renewal, local trust, epoch
// fencing, expiry, hand-off) is the leased owner's (package
// agent/internal/lease), shared with the transaction coordinator.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"floe/agent/group"
	"floe/agent/internal/lag"
	"floe/agent/internal/lease"
	"floe/agent/internal/ring"
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
	// storeTimeout bounds the store calls made while a group or a
	// transactional id is locked (lease.Owner.Timeout).
	storeTimeout = 10 * time.Second
	// expireInterval is how often the lowest-numbered agent expires offsets.
	expireInterval = time.Minute
)

// coordinator holds the groups this agent coordinates.
//
// Locking: mu guards the groups map only (it is the leased owner's map,
// read directly by liveState and groupConfigsChanged); each groupEntry's
// lock (its lease.State's) guards its state machines and lease fields and
// is held across the store I/O that persists them, so a group's changes
// reach the store in order. Lock order: an entry's lock may be taken while
// holding nothing, or before c.mu, never the reverse.
type coordinator struct {
	a *Agent
	// retention is offsets.retention.minutes (offsetsRetention; tests
	// shorten it).
	retention time.Duration
	gcfg      group.Config
	// ccfg is the KIP-848 settings of groups that set no group configs;
	// limits bounds what group configs may set (group_configs.go).
	ccfg   group.ConsumerConfig
	limits consumerLimits
	// lag reports the lag of the groups placed here.
	lag *lag.Monitor
	// shares is the share sessions and share-group configs of the
	// members fetching from this agent (share.go).
	shares *shares

	mu     sync.Mutex
	groups map[string]*groupEntry
	leases *lease.Owner[*groupEntry]
}

// groupEntry is one coordinated (or being loaded) group; the fields below
// lease.State are guarded by its lock.
type groupEntry struct {
	id string
	lease.State

	g      *group.Group         // classic protocol state; nil until loaded
	cg     *group.ConsumerGroup // KIP-848 state; nil unless the group uses it
	sg     *group.ShareGroup    // KIP-932 state; nil unless a share group
	exists bool                 // the store knew the group, or a member joined
	// configs are the group's configs as last read from the store (nil
	// until read), at configsRead; configsStale, set without e's lock by an
	// alter through this agent, asks for them to be read again.
	configs      map[string]string
	configsRead  time.Time
	configsStale atomic.Bool
}

func newCoordinator(a *Agent) *coordinator {
	c := &coordinator{a: a, retention: offsetsRetention, groups: map[string]*groupEntry{}, shares: newShares(a)}
	c.lag = lag.New(lag.Config{
		Store:    a.store,
		Placed:   func(g string) bool { return c.isOwner(g) && !a.isDraining() },
		Defaults: a.defaults,
		Interval: a.cfg.LagInterval,
		Now:      time.Now,
		Log:      a.log,
	})
	a.metrics.reg.MustRegister(c.lag)
	c.leases = lease.New(a.leaseConfig(), &c.mu, c.groups, lease.Hooks[*groupEntry]{
		Kind:     "group",
		Name:     metadata.GroupLeaseName,
		NewEntry: func(id string) *groupEntry { return &groupEntry{id: id} },
		Load:     c.load,
		Unload:   c.unload,
		Save:     c.persist,
		Idle: func(e *groupEntry, now time.Time) bool {
			return e.isEmpty() && now.Sub(e.LastUsed()) > idleGroupRelease
		},
		Tick: c.tick,
	})
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

// coordinatorFor is the live agent that should coordinate key (a group id
// or a transactional id), by rendezvous hashing, so losing or adding an
// agent moves only the keys it owned or now owns.
func (a *Agent) coordinatorFor(key string) metadata.Agent {
	return ring.Rendezvous(key, a.liveAgents())
}

// leaseConfig is what the coordinators' leased owners use of the agent.
func (a *Agent) leaseConfig() lease.Config {
	return lease.Config{
		Store:   a.store,
		ID:      a.id,
		Owns:    func(key string) bool { return a.coordinatorFor(key).ID == a.id },
		Now:     time.Now,
		Log:     a.log,
		TTL:     a.cfg.AgentTTL,
		Timeout: storeTimeout,
	}
}

// ownerOf is the live agent that should coordinate group (rendezvous
// hash, shared with the transaction coordinator: Agent.coordinatorFor).
func (c *coordinator) ownerOf(groupID string) metadata.Agent { return c.a.coordinatorFor(groupID) }

func (c *coordinator) isOwner(groupID string) bool { return c.leases.Owns(groupID) }

// with runs fn on a group this agent coordinates, with the entry locked,
// the lease held and the state loaded (lease.Owner.With); afterwards changed
// state is saved. It returns NOT_COORDINATOR when another agent should
// coordinate the group or holds its lease, COORDINATOR_NOT_AVAILABLE when
// the store fails or takes longer than storeTimeout.
func (c *coordinator) with(ctx context.Context, groupID string, fn func(e *groupEntry, now time.Time)) *kerr.Error {
	return c.leases.With(ctx, groupID, func(ctx context.Context, e *groupEntry, now time.Time) *kerr.Error {
		fn(e, now)
		c.persist(ctx, e)
		return nil
	})
}

func (c *coordinator) load(ctx context.Context, e *groupEntry, now time.Time) error {
	rec, err := c.a.store.LoadGroup(ctx, e.id)
	if errors.Is(err, metadata.ErrNotFound) {
		offs, err := c.a.store.FetchOffsets(ctx, e.id)
		if err != nil {
			return err
		}
		e.g, e.cg, e.sg, e.exists = group.New(e.id, c.gcfg), nil, nil, len(offs) > 0
		if e.exists {
			e.g.MarkExists() // Kafka keeps an empty group for committed offsets
		}
		return nil
	}
	if err != nil {
		return err
	}
	e.exists = true
	e.cg, e.sg = nil, nil
	if rec.ProtocolType == shareProtocolType {
		if err := c.readGroupConfigs(ctx, e, now); err != nil {
			return err
		}
		sg, err := group.RestoreShareGroup(e.id, c.shareConfig(e.configs), rec.State, now)
		if err != nil {
			return err
		}
		e.g, e.sg = group.New(e.id, c.gcfg), sg
		return nil
	}
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

// persist (e locked) saves the group if its durable state changed.
func (c *coordinator) persist(ctx context.Context, e *groupEntry) {
	if e.g == nil {
		return
	}
	var rec metadata.GroupRecord
	if e.sg != nil {
		if !e.sg.TakeChanged() {
			return
		}
		rec = metadata.GroupRecord{Group: e.id, ProtocolType: shareProtocolType, StateName: e.sg.StateName(),
			Empty: e.sg.IsEmpty(), State: e.sg.Snapshot()}
	} else if e.cg != nil {
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

// unload (e locked) forgets a group's state: parked requests are told to
// find the coordinator again.
func (c *coordinator) unload(e *groupEntry) {
	if e.g != nil {
		e.g.Abandon(kerr.NotCoordinator)
	}
	e.g, e.cg, e.sg = nil, nil, nil
}

// run is the coordinator's background loop (lease.Owner.Run), owned by
// the Agent's WaitGroup; it also expires offsets every expireInterval.
func (c *coordinator) run() {
	defer c.a.wg.Done()
	c.a.wg.Add(1)
	go func() { defer c.a.wg.Done(); c.lag.Run(c.a.ctx) }()
	nextExpire := time.Now().Add(expireInterval)
	c.leases.Run(c.a.ctx, groupTick, func(now time.Time) {
		if !now.Before(nextExpire) {
			nextExpire = now.Add(expireInterval)
			c.expireOffsets()
		}
	})
}

// tick (entry locked, lease trusted) runs the state machines' timeouts and
// saves what they changed.
func (c *coordinator) tick(ctx context.Context, e *groupEntry, now time.Time) {
	e.g.Tick(now)
	if e.cg != nil || e.sg != nil {
		counts, err := c.topicCounts(ctx)
		if err == nil && e.cg != nil {
			e.cg.Tick(now, counts)
		}
		if err == nil && e.sg != nil {
			if gone := e.sg.Tick(now, counts); len(gone) > 0 {
				c.releaseShareMembers(ctx, e.id, gone)
			}
		}
	}
	c.persist(ctx, e)
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
func (c *coordinator) close(ctx context.Context) { c.leases.Close(ctx) }
