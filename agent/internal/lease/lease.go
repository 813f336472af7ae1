// Package lease is the leased owner the agent's group and transaction
// coordinators share: a map of keyed entries, each served only while this
// agent holds the key's coordinator lease in the metadata store, with one
// lifecycle for both — acquire on first use, renew in bulk, trust the lease
// locally until a margin before its expiry, fence by epoch, hand off on a
// placement change or when idle, release on close.
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
//
// The package needs no Agent: three lease calls of the store, the key's
// placement, a clock and a logger (Config). It must never import package
// agent, and it does no I/O other than those store calls and the hooks.
package lease

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"floe/metadata"
)

// Store is the part of metadata.Store that holds coordinator leases.
type Store interface {
	AcquireCoordinatorLease(ctx context.Context, name, owner string, ttl time.Duration) (metadata.CoordinatorLease, error)
	RenewCoordinatorLeases(ctx context.Context, owner string, ttl time.Duration) ([]metadata.CoordinatorLease, error)
	ReleaseCoordinatorLease(ctx context.Context, name, owner string) error
}

var _ Store = metadata.Store(nil)

// Config is what an Owner needs from the agent.
type Config struct {
	Store Store
	// ID is this agent's id, the leases' owner in the store.
	ID string
	// Owns reports whether a key is placed on this agent.
	Owns func(key string) bool
	// Now is the clock (time.Now).
	Now func() time.Time
	Log *slog.Logger
	// TTL is the leases' time to live in the store.
	TTL time.Duration
	// Timeout bounds the store calls of one operation or tick.
	Timeout time.Duration
}

// State is the lease bookkeeping every entry embeds. Its mutex is the
// entry's lock (Lock, Unlock, TryLock): it guards these fields and the
// entry's own state, and is held across the store I/O of one operation, so
// the operations on one key run one at a time, in order. The methods other
// than the lock's are called with the entry locked.
type State struct {
	key      string // set when the entry is made, never changed
	mu       sync.Mutex
	held     bool      // the state was loaded under the lease at epoch
	epoch    int64     // lease epoch the state was loaded under
	until    time.Time // local trust deadline of the lease
	lastUsed time.Time
	gone     bool // removed from the owner's map: callers must look again
}

func (s *State) state() *State { return s }

// Lock locks the entry.
func (s *State) Lock() { s.mu.Lock() }

// Unlock unlocks the entry.
func (s *State) Unlock() { s.mu.Unlock() }

// TryLock locks the entry if nobody holds it.
func (s *State) TryLock() bool { return s.mu.TryLock() }

// Key is the entry's key.
func (s *State) Key() string { return s.key }

// Held reports whether the entry's state is loaded under the lease and the
// entry is still its owner's.
func (s *State) Held() bool { return s.held && !s.gone }

// Epoch is the lease epoch the state was loaded under (the coordinator
// epoch of transaction markers).
func (s *State) Epoch() int64 { return s.epoch }

// LastUsed is when an operation last ran on the entry.
func (s *State) LastUsed() time.Time { return s.lastUsed }

// Trusted reports whether the lease is trusted locally at now.
func (s *State) Trusted(now time.Time) bool { return s.held && now.Before(s.until) }

// EndTrust ends the local trust in the lease now, as a renewal that did not
// return it does: the next use asks the store again.
func (s *State) EndTrust() { s.until = time.Time{} }

// Entry is what an Owner holds: a struct embedding State.
type Entry interface{ state() *State }

// Hooks are what a coordinator adds to the lease lifecycle. Every hook runs
// with the entry locked.
type Hooks[E Entry] struct {
	// Kind names the keys in logs ("group", "txn").
	Kind string
	// Name is a key's lease name; every name is Name("") + key.
	Name     func(key string) string
	NewEntry func(key string) E
	// Load reads the key's state from the store, at the first acquire
	// and whenever the epoch changed.
	Load func(ctx context.Context, e E, now time.Time) error
	// Unload forgets a loaded state, telling waiters to look again.
	Unload func(e E)
	// Save writes changed state before a hand-off (nil: nothing to do).
	Save func(ctx context.Context, e E)
	// Idle reports whether an entry may be released for lack of use.
	Idle func(e E, now time.Time) bool
	// Tick is the per-entry work of the background loop (nil: none); it
	// runs only while the lease is trusted and the key placed here.
	Tick func(ctx context.Context, e E, now time.Time)
}

// Owner owns the entries of one coordinator.
//
// Locking: mu guards the map only; an entry's lock may be taken while
// holding nothing, or before mu, never the reverse. mu and m may be shared
// with the coordinator that made the Owner (its lookups read them
// directly).
type Owner[E Entry] struct {
	cfg   Config
	hooks Hooks[E]
	// Timeout is Config.Timeout; tests shorten it before the agent starts.
	Timeout time.Duration

	mu *sync.Mutex
	m  map[string]E
}

// New returns the Owner of the entries in m, guarded by mu.
func New[E Entry](cfg Config, mu *sync.Mutex, m map[string]E, hooks Hooks[E]) *Owner[E] {
	return &Owner[E]{cfg: cfg, hooks: hooks, Timeout: cfg.Timeout, mu: mu, m: m}
}

// newEntry makes key's entry, not yet loaded, through the hooks.
func (l *Owner[E]) newEntry(key string) E {
	e := l.hooks.NewEntry(key)
	e.state().key = key
	return e
}

// Owns reports whether key is placed on this agent.
func (l *Owner[E]) Owns(key string) bool { return l.cfg.Owns(key) }

// Lookup returns key's entry if there is one (loaded or not).
func (l *Owner[E]) Lookup(key string) (E, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[key]
	return e, ok
}

func (l *Owner[E]) list() []E {
	l.mu.Lock()
	defer l.mu.Unlock()
	es := make([]E, 0, len(l.m))
	for _, e := range l.m {
		es = append(es, e)
	}
	return es
}

// With runs fn on key's entry, locked, with the lease held and the state
// loaded. ctx is bounded by Timeout for the lease and load calls and
// handed to fn so fn's store calls are too. NOT_COORDINATOR when key is
// placed on, or leased by, another agent; COORDINATOR_NOT_AVAILABLE when
// the store fails or is slower than Timeout.
func (l *Owner[E]) With(ctx context.Context, key string, fn func(ctx context.Context, e E, now time.Time) *kerr.Error) *kerr.Error {
	if !l.Owns(key) {
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

		s := e.state()
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

func (l *Owner[E]) run1(ctx context.Context, e E, fn func(ctx context.Context, e E, now time.Time) *kerr.Error) *kerr.Error {
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	if code := l.ensure(ctx, e); code != nil {
		return code
	}
	now := l.cfg.Now()
	e.state().lastUsed = now
	return fn(ctx, e, now)
}

// ensure (entry locked) makes sure the lease is held and the state loaded
// under the current tenure; see the package comment for what happens when
// it is not. On an error the entry has been dropped.
func (l *Owner[E]) ensure(ctx context.Context, e E) *kerr.Error {
	s := e.state()
	key := s.key
	start := l.cfg.Now()
	if s.held && start.Before(s.until) {
		return nil
	}
	lease, err := l.cfg.Store.AcquireCoordinatorLease(ctx, l.hooks.Name(key), l.cfg.ID, l.cfg.TTL)
	switch {
	case errors.Is(err, metadata.ErrLeaseHeld):
		if s.held {
			l.cfg.Log.Warn("coordinator lease lost", l.hooks.Kind, key, "holder", lease.Owner)
		}
		l.dropLocked(e)
		return kerr.NotCoordinator
	case err != nil:
		l.cfg.Log.Warn("acquire coordinator lease failed", l.hooks.Kind, key, "err", err)
		l.dropLocked(e)
		return kerr.CoordinatorNotAvailable
	}
	if !s.held || lease.Epoch != s.epoch {
		if s.held {
			// Another tenure began since ours: our state is stale.
			l.hooks.Unload(e)
			s.held = false
		}
		if err := l.hooks.Load(ctx, e, start); err != nil {
			l.cfg.Log.Warn("load coordinator state failed", l.hooks.Kind, key, "err", err)
			l.release(ctx, e)
			return kerr.CoordinatorNotAvailable
		}
		s.held, s.epoch = true, lease.Epoch
		l.cfg.Log.Info("coordinating", l.hooks.Kind, key, "lease_epoch", lease.Epoch)
	}
	s.until = l.localDeadline(start)
	return nil
}

// Invalidate (entry locked) makes the next use read the state again, when
// the store may or may not hold what was written last.
func (l *Owner[E]) Invalidate(e E) {
	if s := e.state(); s.held {
		l.hooks.Unload(e)
		s.held = false
	}
}

// localDeadline is how long a lease renewed at start is trusted here: a
// margin before its expiry in the store, for clock-rate differences and
// the time the renewal took.
func (l *Owner[E]) localDeadline(start time.Time) time.Time {
	return start.Add(l.cfg.TTL - l.cfg.TTL/5)
}

// dropLocked (entry locked) forgets an entry; its lease, if still held,
// is left to expire (or to the renewal's orphan release).
func (l *Owner[E]) dropLocked(e E) {
	s := e.state()
	if s.held {
		l.hooks.Unload(e)
	}
	s.held, s.gone = false, true
	l.mu.Lock()
	if cur, ok := l.m[s.key]; ok && cur.state() == s {
		delete(l.m, s.key)
	}
	l.mu.Unlock()
}

// release (entry locked) drops an entry and gives its lease up so that
// the key's new owner can take it at once.
// The entry leaves the map only after the store call, so that an entry
// gone from here has a lease the next owner can take.
func (l *Owner[E]) release(ctx context.Context, e E) {
	key := e.state().key
	if err := l.cfg.Store.ReleaseCoordinatorLease(ctx, l.hooks.Name(key), l.cfg.ID); err != nil {
		l.cfg.Log.Warn("release coordinator lease failed", l.hooks.Kind, key, "err", err)
	}
	l.dropLocked(e)
}

// handOff (entry locked) saves and releases an entry this agent should no
// longer serve. The state is saved only under a trusted lease: an untrusted
// one may have passed to another agent whose state the save would
// overwrite.
func (l *Owner[E]) handOff(ctx context.Context, e E) {
	if s := e.state(); l.hooks.Save != nil && s.Trusted(l.cfg.Now()) {
		l.hooks.Save(ctx, e)
	}
	l.release(ctx, e)
}

// Run is a coordinator's background loop, until ctx ends: every interval
// it renews the leases (every TTL/3), ticks every entry and calls extra.
func (l *Owner[E]) Run(ctx context.Context, interval time.Duration, extra func(now time.Time)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	renewEvery := max(l.cfg.TTL/3, 100*time.Millisecond)
	nextRenew := l.cfg.Now().Add(renewEvery)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := l.cfg.Now()
		if !now.Before(nextRenew) {
			nextRenew = now.Add(renewEvery)
			l.renew(ctx)
		}
		l.tick(ctx)
		if extra != nil {
			extra(now)
		}
	}
}

// tick is one round of the loop over every entry.
func (l *Owner[E]) tick(ctx context.Context) {
	for _, e := range l.list() {
		l.tickEntry(ctx, e)
	}
}

// tickEntry re-acquires an entry whose trust ended, hands it off when
// placed elsewhere or idle, and runs the coordinator's tick.
func (l *Owner[E]) tickEntry(ctx context.Context, e E) {
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	s := e.state()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return
	}
	if l.ensure(ctx, e) != nil {
		return
	}
	now := l.cfg.Now()
	if !l.Owns(s.key) || l.hooks.Idle(e, now) {
		l.handOff(ctx, e)
		return
	}
	if l.hooks.Tick != nil {
		l.hooks.Tick(ctx, e, now)
	}
}

// renew extends, in one store call, every coordinator lease of this agent,
// and the local trust of the entries still held at their epoch. A lease of
// this owner's kind that no entry holds (left by a drop while the store
// did not answer) is released, so that the bulk renewal does not keep it
// from the key's next owner forever.
func (l *Owner[E]) renew(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, min(l.cfg.TTL/2, l.Timeout))
	defer cancel()
	start := l.cfg.Now()
	held, err := l.cfg.Store.RenewCoordinatorLeases(ctx, l.cfg.ID, l.cfg.TTL)
	if err != nil {
		l.cfg.Log.Warn("renew coordinator leases failed", "err", err)
		return
	}
	prefix := l.hooks.Name("")
	for _, lease := range held {
		key, ok := strings.CutPrefix(lease.Name, prefix)
		if !ok {
			continue // the other coordinator's
		}
		e, ok := l.Lookup(key)
		if !ok {
			l.releaseOrphan(ctx, key)
			continue
		}
		s := e.state()
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
func (l *Owner[E]) releaseOrphan(ctx context.Context, key string) {
	e := l.newEntry(key)
	e.state().mu.Lock()
	defer e.state().mu.Unlock()
	l.mu.Lock()
	if _, ok := l.m[key]; ok {
		l.mu.Unlock()
		return
	}
	l.m[key] = e
	l.mu.Unlock()
	l.release(ctx, e)
}

// Close hands every entry off (saved, lease released) so that another
// agent takes the keys over without waiting for the leases to expire.
func (l *Owner[E]) Close(ctx context.Context) {
	for _, e := range l.list() {
		s := e.state()
		s.mu.Lock()
		if !s.gone {
			l.handOff(ctx, e)
		}
		s.mu.Unlock()
	}
}
