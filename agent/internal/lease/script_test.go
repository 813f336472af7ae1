package lease

// The interpreter of the lease scripts in testdata (see
// docs/architecture.md, Tests).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"floe/internal/scripttest"
	"floe/metadata"
)

// TestScripts runs the scripts in testdata: each drives one Owner, with
// no agent, over fakeStore and a scripted clock. Commands:
//
//	with key=K [invalidate]    an operation on K (invalidate: the operation's
//	                           save failed, as a transaction's may)
//	advance D                  moves the clock by the duration D
//	renew, tick, close         the bulk renewal, one round of the loop, Close
//	steal key=K by=O           O takes K's lease in the store (as after a
//	                           partition long enough for it to lapse)
//	lapse key=K                K's lease expires in the store, nobody takes it
//	placement key=K owner=O    K is placed on O (me: this agent)
//	fail op=OP [err=E]         the store call (acquire, renew, release) or the
//	hang op=OP                 load hook OP fails with E, or hangs past the
//	heal                       timeout; heal ends every failure
//	state                      the entries and the leases in the store
//
// Each command prints what it made happen, grouped by key in key order
// (in order within a key): store calls, hooks (load, unload, save, tick, fn:
// the operation ran), logged lines; with ends with its answer.
func TestScripts(t *testing.T) {
	scripttest.Walk(t, "testdata", func(*testing.T) func(*testing.T, *datadriven.TestData) string {
		return newHarness().run
	})
}

const (
	me      = "me"
	testTTL = 10 * time.Second
	// testTimeout is real time: a hung store call ends when it does.
	testTimeout = 50 * time.Millisecond
	idleAfter   = 12 * time.Second
)

var epoch0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// clock is the scripted clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// events is what a command made happen, each line under its key.
type events struct {
	mu    sync.Mutex
	lines []event
}

type event struct{ key, line string }

func (ev *events) add(key, format string, args ...any) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.lines = append(ev.lines, event{key, fmt.Sprintf(format, args...)})
}

// take returns the lines since the last take, stably sorted by key.
func (ev *events) take() []string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	slices.SortStableFunc(ev.lines, func(a, b event) int { return strings.Compare(a.key, b.key) })
	out := make([]string, len(ev.lines))
	for i, e := range ev.lines {
		out[i] = e.line
	}
	ev.lines = nil
	return out
}

// fakeStore holds leases as metadata's SQL stores do (sqlstore/groups.go),
// by the scripted clock: a lease is taken over only by its owner or once
// expired, its epoch grows with each new tenure (a new owner, or the same
// one after a lapse), a release expires it and keeps the row.
type fakeStore struct {
	clock *clock
	ev    *events

	mu     sync.Mutex
	leases map[string]*metadata.CoordinatorLease
	fail   map[string]error // op -> its error
	hang   map[string]bool  // op -> held until its context ends
}

var _ Store = (*fakeStore)(nil)

// inject is op's scripted failure, if any.
func (s *fakeStore) inject(ctx context.Context, op string) error {
	s.mu.Lock()
	err, hang := s.fail[op], s.hang[op]
	s.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

func keyOf(name string) string { return strings.TrimPrefix(name, "group/") }

func (s *fakeStore) AcquireCoordinatorLease(ctx context.Context, name, owner string, ttl time.Duration) (metadata.CoordinatorLease, error) {
	if err := s.inject(ctx, "acquire"); err != nil {
		s.ev.add(keyOf(name), "store: acquire %s -> %v", name, err)
		return metadata.CoordinatorLease{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	l, ok := s.leases[name]
	if ok && l.Owner != owner && now.Before(l.Expires) {
		s.ev.add(keyOf(name), "store: acquire %s -> held by %s at epoch %d", name, l.Owner, l.Epoch)
		return *l, fmt.Errorf("acquire lease %s: %w", name, metadata.ErrLeaseHeld)
	}
	switch {
	case !ok:
		l = &metadata.CoordinatorLease{Name: name, Epoch: 1}
		s.leases[name] = l
	case l.Owner != owner || !now.Before(l.Expires):
		l.Epoch++
	}
	l.Owner, l.Expires = owner, now.Add(ttl)
	s.ev.add(keyOf(name), "store: acquire %s -> epoch %d", name, l.Epoch)
	return *l, nil
}

func (s *fakeStore) RenewCoordinatorLeases(ctx context.Context, owner string, ttl time.Duration) ([]metadata.CoordinatorLease, error) {
	if err := s.inject(ctx, "renew"); err != nil {
		s.ev.add("", "store: renew -> %v", err)
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	var out []metadata.CoordinatorLease
	var names []string
	for _, l := range s.leases {
		if l.Owner == owner && now.Before(l.Expires) {
			l.Expires = now.Add(ttl)
			out = append(out, *l)
		}
	}
	slices.SortFunc(out, func(a, b metadata.CoordinatorLease) int { return strings.Compare(a.Name, b.Name) })
	for _, l := range out {
		names = append(names, fmt.Sprintf("%s@%d", l.Name, l.Epoch))
	}
	s.ev.add("", "store: renew -> [%s]", strings.Join(names, " "))
	return out, nil
}

func (s *fakeStore) ReleaseCoordinatorLease(ctx context.Context, name, owner string) error {
	if err := s.inject(ctx, "release"); err != nil {
		s.ev.add(keyOf(name), "store: release %s -> %v", name, err)
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.leases[name]; ok && l.Owner == owner {
		l.Expires = s.clock.Now()
	}
	s.ev.add(keyOf(name), "store: release %s", name)
	return nil
}

// entry is a coordinator's entry: load is the number of the load that
// made its state (0: none), so a kept state and a reloaded one differ.
type entry struct {
	State
	load int
}

// logHandler adds each logged line to the events, under the key it names.
type logHandler struct{ ev *events }

func (logHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h logHandler) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h logHandler) WithGroup(string) slog.Handler          { return h }

func (h logHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "log: %s %s", r.Level, r.Message)
	key := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "group" {
			key = a.Value.String()
		}
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.ev.add(key, "%s", b.String())
	return nil
}

type harness struct {
	clock     clock
	ev        events
	store     *fakeStore
	placement map[string]string // key -> agent, me when absent
	loads     int
	owner     *Owner[*entry]
	mu        sync.Mutex
	m         map[string]*entry
}

func newHarness() *harness {
	h := &harness{clock: clock{now: epoch0}, placement: map[string]string{}, m: map[string]*entry{}}
	h.store = &fakeStore{clock: &h.clock, ev: &h.ev, leases: map[string]*metadata.CoordinatorLease{},
		fail: map[string]error{}, hang: map[string]bool{}}
	h.owner = New(Config{
		Store:   h.store,
		ID:      me,
		Owns:    func(key string) bool { return h.placement[key] == "" || h.placement[key] == me },
		Now:     h.clock.Now,
		Log:     slog.New(logHandler{&h.ev}),
		TTL:     testTTL,
		Timeout: testTimeout,
	}, &h.mu, h.m, Hooks[*entry]{
		Kind:     "group",
		Name:     metadata.GroupLeaseName,
		NewEntry: func(string) *entry { return &entry{} },
		Load: func(ctx context.Context, e *entry, _ time.Time) error {
			if err := h.store.inject(ctx, "load"); err != nil {
				h.ev.add(e.key, "load %s -> %v", e.key, err)
				return err
			}
			h.loads++
			e.load = h.loads
			h.ev.add(e.key, "load %s -> state #%d", e.key, e.load)
			return nil
		},
		Unload: func(e *entry) {
			h.ev.add(e.key, "unload %s (state #%d)", e.key, e.load)
			e.load = 0
		},
		Save: func(_ context.Context, e *entry) { h.ev.add(e.key, "save %s (state #%d)", e.key, e.load) },
		Idle: func(e *entry, now time.Time) bool { return now.Sub(e.lastUsed) > idleAfter },
		Tick: func(_ context.Context, e *entry, _ time.Time) { h.ev.add(e.key, "tick %s", e.key) },
	})
	return h
}

// arg is the required argument key.
func arg(t *testing.T, d *datadriven.TestData, key string) string {
	t.Helper()
	var v string
	d.ScanArgs(t, key, &v)
	return v
}

// known is the arguments each command takes (advance: its duration).
var known = map[string][]string{
	"with": {"key", "invalidate"}, "steal": {"key", "by"}, "lapse": {"key"},
	"placement": {"key", "owner"}, "fail": {"op", "err"}, "hang": {"op"},
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	ctx := context.Background()
	if d.Cmd != "advance" {
		scripttest.Known(t, d, known[d.Cmd]...)
	}
	var tail []string
	switch d.Cmd {
	case "with":
		key := arg(t, d, "key")
		code := h.owner.With(ctx, key, func(_ context.Context, e *entry, _ time.Time) *kerr.Error {
			h.ev.add(key, "fn %s (state #%d, epoch %d)", key, e.load, e.epoch)
			if d.HasArg("invalidate") {
				h.owner.Invalidate(e)
			}
			return nil
		})
		answer := "ok"
		if code != nil {
			answer = code.Message
		}
		tail = append(tail, "=> "+answer)
	case "advance":
		if len(d.CmdArgs) != 1 {
			d.Fatalf(t, "advance takes one duration")
		}
		dur, err := time.ParseDuration(scripttest.Arg(d))
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		h.clock.advance(dur)
	case "renew":
		h.owner.renew(ctx)
	case "tick":
		h.owner.tick(ctx)
	case "close":
		h.owner.Close(ctx)
	case "steal":
		name := metadata.GroupLeaseName(arg(t, d, "key"))
		h.store.mu.Lock()
		l, ok := h.store.leases[name]
		if !ok {
			l = &metadata.CoordinatorLease{Name: name}
			h.store.leases[name] = l
		}
		l.Owner, l.Epoch, l.Expires = arg(t, d, "by"), l.Epoch+1, h.clock.Now().Add(testTTL)
		h.store.mu.Unlock()
	case "lapse":
		h.store.mu.Lock()
		if l, ok := h.store.leases[metadata.GroupLeaseName(arg(t, d, "key"))]; ok {
			l.Expires = h.clock.Now()
		}
		h.store.mu.Unlock()
	case "placement":
		h.placement[arg(t, d, "key")] = arg(t, d, "owner")
	case "fail", "hang":
		op := arg(t, d, "op")
		h.store.mu.Lock()
		if d.Cmd == "hang" {
			h.store.hang[op] = true
		} else {
			h.store.fail[op] = errors.New(scripttest.Str(t, d, "err", "boom"))
		}
		h.store.mu.Unlock()
	case "heal":
		h.store.mu.Lock()
		clear(h.store.fail)
		clear(h.store.hang)
		h.store.mu.Unlock()
	case "state":
		tail = h.state()
	default:
		d.Fatalf(t, "unknown command %s", d.Cmd)
	}
	out := append(h.ev.take(), tail...)
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}

// state is every entry (none: "no entries") and every lease in the
// store, times relative to the clock.
func (h *harness) state() []string {
	now := h.clock.Now()
	var out []string
	h.mu.Lock()
	keys := slices.Sorted(maps.Keys(h.m))
	es := make([]*entry, len(keys))
	for i, k := range keys {
		es[i] = h.m[k]
	}
	h.mu.Unlock()
	for _, e := range es {
		e.Lock()
		line := fmt.Sprintf("entry %s: not loaded", e.key)
		if e.held {
			trust := "trust ended"
			if e.Trusted(now) {
				trust = "trusted for " + e.until.Sub(now).String()
			}
			line = fmt.Sprintf("entry %s: state #%d, epoch %d, %s, used %s ago", e.key, e.load, e.epoch, trust, now.Sub(e.lastUsed))
		}
		e.Unlock()
		out = append(out, line)
	}
	if len(es) == 0 {
		out = append(out, "no entries")
	}
	h.store.mu.Lock()
	defer h.store.mu.Unlock()
	for _, n := range slices.Sorted(maps.Keys(h.store.leases)) {
		l := h.store.leases[n]
		exp := "expired"
		if now.Before(l.Expires) {
			exp = "expires in " + l.Expires.Sub(now).String()
		}
		out = append(out, fmt.Sprintf("lease %s: %s, epoch %d, %s", n, l.Owner, l.Epoch, exp))
	}
	return out
}
