package agent

// The leased owner shared by the group and transaction coordinators: a map
// of keyed entries, each served only while this agent holds the key's
// coordinator lease in the metadata store, with one lifecycle for both —
// acquire on first use, renew in bulk, trust the lease locally until a
// margin before its expiry, fence by epoch, hand off on a placement change
// or when idle, release on close.
//
// Expiry: once an entry's local trust ends (the bulk renewal failed or did
// not return its lease), nothing runs on it until the lease is acquired
// again, by the next request or the next tick, whichever comes first. The
// re-acquired lease keeps the entry's state only at the same epoch: the
// store bumps the epoch whenever a lease lapses or changes owner, so an
// unchanged epoch proves that nobody else could have served the key in
// between. A new epoch reloads the state from the store; a lease another
// agent holds, or a store that does not answer within timeout, drops the
// entry (its waiters are told NOT_COORDINATOR) and the request is answered
// NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE. Because the local trust ends
// a fifth of the TTL before the store's expiry, this agent has stopped
// acting for a key before any other agent can take its lease.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"floe/agent/internal/ring"
	"floe/metadata"
)

// coordinatorFor is the live agent that should coordinate key (a group id
// or a transactional id), by rendezvous hashing, so losing or adding an
// agent moves only the keys it owned or now owns.
func (a *Agent) coordinatorFor(key string) metadata.Agent {
	return ring.Rendezvous(key, a.liveAgents())
}

// leaseState is the lease bookkeeping every leased entry embeds. Its mu is
// the entry's lock: it guards these fields and the entry's own state, and
// is held across the store I/O of one operation, so the operations on one
// key run one at a time, in order.
type leaseState struct {
	key      string // set when the entry is made, never changed
	mu       sync.Mutex
	held     bool      // the state was loaded under the lease at epoch
	epoch    int64     // lease epoch the state was loaded under
	until    time.Time // local trust deadline of the lease
	lastUsed time.Time
	gone     bool // removed from the owner's map: callers must look again
}

func (s *leaseState) lease() *leaseState { return s }

// leasedEntry is what a leased owner holds: a struct embedding leaseState.
type leasedEntry interface{ lease() *leaseState }

// leaseHooks are what a coordinator adds to the lease lifecycle. Every hook
// runs with the entry locked.
type leaseHooks[E leasedEntry] struct {
	// kind names the keys in logs ("group", "txn").
	kind string
	// name is a key's lease name; every name is name("") + key.
	name     func(key string) string
	newEntry func(key string) E
	// load reads the key's state from the store, at the first acquire
	// and whenever the epoch changed.
	load func(ctx context.Context, e E, now time.Time) error
	// unload forgets a loaded state, telling waiters to look again.
	unload func(e E)
	// save writes changed state before a hand-off (nil: nothing to do).
	save func(ctx context.Context, e E)
	// idle reports whether an entry may be released for lack of use.
	idle func(e E, now time.Time) bool
	// tick is the per-entry work of the background loop (nil: none); it
	// runs only while the lease is trusted and the key placed here.
	tick func(ctx context.Context, e E, now time.Time)
}

// leased owns the entries of one coordinator.
//
// Locking: mu guards the map only; an entry's lease().mu may be taken while
// holding nothing, or before mu, never the reverse. mu and m may be shared
// with the coordinator that embeds them (its lookups read them directly).
type leased[E leasedEntry] struct {
	a     *Agent
	hooks leaseHooks[E]
	ttl   time.Duration
	// timeout bounds the store calls of one operation or tick
	// (storeTimeout; tests shorten it before Start).
	timeout time.Duration

	mu *sync.Mutex
	m  map[string]E
}

func newLeased[E leasedEntry](a *Agent, mu *sync.Mutex, m map[string]E, hooks leaseHooks[E]) *leased[E] {
	return &leased[E]{a: a, hooks: hooks, ttl: a.cfg.AgentTTL, timeout: storeTimeout, mu: mu, m: m}
}

// newEntry makes key's entry, not yet loaded, through the hooks.
func (l *leased[E]) newEntry(key string) E {
	e := l.hooks.newEntry(key)
	e.lease().key = key
	return e
}

// owns reports whether key is placed on this agent: the rendezvous of key
// over this agent's view of the live agents picks it.
func (l *leased[E]) owns(key string) bool { return l.a.coordinatorFor(key).ID == l.a.id }

// lookup returns key's entry if there is one (loaded or not).
func (l *leased[E]) lookup(key string) (E, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[key]
	return e, ok
}

func (l *leased[E]) list() []E {
	l.mu.Lock()
	defer l.mu.Unlock()
	es := make([]E, 0, len(l.m))
	for _, e := range l.m {
		es = append(es, e)
	}
	return es
}

// with runs fn on key's entry, locked, with the lease held and the state
// loaded. ctx is bounded by timeout for the lease and load calls and
// handed to fn so fn's store calls are too. NOT_COORDINATOR when key is
// placed on, or leased by, another agent; COORDINATOR_NOT_AVAILABLE when
// the store fails or is slower than timeout.
func (l *leased[E]) with(ctx context.Context, key string, fn func(ctx context.Context, e E, now time.Time) *kerr.Error) *kerr.Error {
	if !l.owns(key) {
		return kerr.NotCoordinator
	}
	for {
		l.mu.Lock()
		e, ok := l.m[key]
		if !ok {
			e = l.newEntry(key)
			l.m[key] = e
		}
		l.mu.Unlock()

		s := e.lease()
		s.mu.Lock()
		if s.gone {
			s.mu.Unlock()
			continue
		}
		code := l.run1(ctx, e, fn)
		s.mu.Unlock()
		return code
	}
}

func (l *leased[E]) run1(ctx context.Context, e E, fn func(ctx context.Context, e E, now time.Time) *kerr.Error) *kerr.Error {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	if code := l.ensure(ctx, e); code != nil {
		return code
	}
	now := time.Now()
	e.lease().lastUsed = now
	return fn(ctx, e, now)
}

// ensure (entry locked) makes sure the lease is held and the state loaded
// under the current tenure; see the file comment for what happens when it
// is not. On an error the entry has been dropped.
func (l *leased[E]) ensure(ctx context.Context, e E) *kerr.Error {
	s := e.lease()
	key := s.key
	start := time.Now()
	if s.held && start.Before(s.until) {
		return nil
	}
	lease, err := l.a.store.AcquireCoordinatorLease(ctx, l.hooks.name(key), l.a.id, l.ttl)
	switch {
	case errors.Is(err, metadata.ErrLeaseHeld):
		if s.held {
			l.a.log.Warn("coordinator lease lost", l.hooks.kind, key, "holder", lease.Owner)
		}
		l.dropLocked(e)
		return kerr.NotCoordinator
	case err != nil:
		l.a.log.Warn("acquire coordinator lease failed", l.hooks.kind, key, "err", err)
		l.dropLocked(e)
		return kerr.CoordinatorNotAvailable
	}
	if !s.held || lease.Epoch != s.epoch {
		if s.held {
			// Another tenure began since ours: our state is stale.
			l.hooks.unload(e)
			s.held = false
		}
		if err := l.hooks.load(ctx, e, start); err != nil {
			l.a.log.Warn("load coordinator state failed", l.hooks.kind, key, "err", err)
			l.release(ctx, e)
			return kerr.CoordinatorNotAvailable
		}
		s.held, s.epoch = true, lease.Epoch
		l.a.log.Info("coordinating", l.hooks.kind, key, "lease_epoch", lease.Epoch)
	}
	s.until = l.localDeadline(start)
	return nil
}

// invalidate (entry locked) makes the next use read the state again, when
// the store may or may not hold what was written last.
func (l *leased[E]) invalidate(e E) {
	if s := e.lease(); s.held {
		l.hooks.unload(e)
		s.held = false
	}
}

// localDeadline is how long a lease renewed at start is trusted here: a
// margin before its expiry in the store, for clock-rate differences and
// the time the renewal took.
func (l *leased[E]) localDeadline(start time.Time) time.Time {
	return start.Add(l.ttl - l.ttl/5)
}

// dropLocked (entry locked) forgets an entry; its lease, if still held,
// is left to expire (or to the renewal's orphan release).
func (l *leased[E]) dropLocked(e E) {
	s := e.lease()
	if s.held {
		l.hooks.unload(e)
	}
	s.held, s.gone = false, true
	l.mu.Lock()
	if cur, ok := l.m[s.key]; ok && cur.lease() == s {
		delete(l.m, s.key)
	}
	l.mu.Unlock()
}

// release (entry locked) drops an entry and gives its lease up so that
// the key's new owner can take it at once.
// The entry leaves the map only after the store call, so that an entry
// gone from here has a lease the next owner can take.
func (l *leased[E]) release(ctx context.Context, e E) {
	key := e.lease().key
	if err := l.a.store.ReleaseCoordinatorLease(ctx, l.hooks.name(key), l.a.id); err != nil {
		l.a.log.Warn("release coordinator lease failed", l.hooks.kind, key, "err", err)
	}
	l.dropLocked(e)
}

// handOff (entry locked) saves and releases an entry this agent should no
// longer serve. The state is saved only under a trusted lease: an untrusted
// one may have passed to another agent whose state the save would
// overwrite.
func (l *leased[E]) handOff(ctx context.Context, e E) {
	if s := e.lease(); l.hooks.save != nil && s.held && time.Now().Before(s.until) {
		l.hooks.save(ctx, e)
	}
	l.release(ctx, e)
}

// run is a coordinator's background loop, owned by the Agent's WaitGroup:
// every interval it renews the leases (every TTL/3), ticks every entry and
// calls extra.
func (l *leased[E]) run(interval time.Duration, extra func(now time.Time)) {
	defer l.a.wg.Done()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	renewEvery := max(l.ttl/3, 100*time.Millisecond)
	nextRenew := time.Now().Add(renewEvery)
	for {
		select {
		case <-l.a.ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		if !now.Before(nextRenew) {
			nextRenew = now.Add(renewEvery)
			l.renew()
		}
		for _, e := range l.list() {
			l.tickEntry(e)
		}
		if extra != nil {
			extra(now)
		}
	}
}

// tickEntry re-acquires an entry whose trust ended, hands it off when
// placed elsewhere or idle, and runs the coordinator's tick.
func (l *leased[E]) tickEntry(e E) {
	ctx, cancel := context.WithTimeout(l.a.ctx, l.timeout)
	defer cancel()
	s := e.lease()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return
	}
	if l.ensure(ctx, e) != nil {
		return
	}
	now := time.Now()
	if !l.owns(s.key) || l.hooks.idle(e, now) {
		l.handOff(ctx, e)
		return
	}
	if l.hooks.tick != nil {
		l.hooks.tick(ctx, e, now)
	}
}

// renew extends, in one store call, every coordinator lease of this agent,
// and the local trust of the entries still held at their epoch. A lease of
// this owner's kind that no entry holds (left by a drop while the store
// did not answer) is released, so that the bulk renewal does not keep it
// from the key's next owner forever.
func (l *leased[E]) renew() {
	ctx, cancel := context.WithTimeout(l.a.ctx, min(l.ttl/2, l.timeout))
	defer cancel()
	start := time.Now()
	held, err := l.a.store.RenewCoordinatorLeases(ctx, l.a.id, l.ttl)
	if err != nil {
		l.a.log.Warn("renew coordinator leases failed", "err", err)
		return
	}
	prefix := l.hooks.name("")
	for _, lease := range held {
		key, ok := strings.CutPrefix(lease.Name, prefix)
		if !ok {
			continue // the other coordinator's
		}
		e, ok := l.lookup(key)
		if !ok {
			l.releaseOrphan(ctx, key)
			continue
		}
		s := e.lease()
		s.mu.Lock()
		if !s.gone && s.held && s.epoch == lease.Epoch {
			s.until = l.localDeadline(start)
		}
		s.mu.Unlock()
	}
}

// releaseOrphan releases key's lease unless an entry appeared meanwhile; a
// locked placeholder entry keeps a concurrent request from acquiring the
// lease while it is being released.
func (l *leased[E]) releaseOrphan(ctx context.Context, key string) {
	e := l.newEntry(key)
	e.lease().mu.Lock()
	defer e.lease().mu.Unlock()
	l.mu.Lock()
	if _, ok := l.m[key]; ok {
		l.mu.Unlock()
		return
	}
	l.m[key] = e
	l.mu.Unlock()
	l.release(ctx, e)
}

// close hands every entry off (saved, lease released) so that another
// agent takes the keys over without waiting for the leases to expire.
func (l *leased[E]) close(ctx context.Context) {
	for _, e := range l.list() {
		s := e.lease()
		s.mu.Lock()
		if !s.gone {
			l.handOff(ctx, e)
		}
		s.mu.Unlock()
	}
}
