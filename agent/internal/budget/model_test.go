package budget

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// The model: readers read frames from peers the way the agent's connection
// readers do (a small frame charged whole before it is read; a large one
// charged start bytes first, then grown fourfold as its buffer fills),
// complete frames wait for a handler to answer them, and a random schedule
// interleaves what peers send, peers closing, readers retrying, handlers
// answering and deadlines passing. Budget is the real one, driven through
// tryGrow and abandon, the two steps Grow is made of. After every step the
// model checks the budget's books and its bounds; whenever nothing could
// happen without time passing, it checks that this is because every reader
// waits on its peer, never on the budget alone; at the end, with every
// peer done and every answer given, all budget is back.

type peerKind int

const (
	peerWhole   peerKind = iota // sends the whole frame
	peerCloses                  // sends part of it, then closes
	peerSilent                  // sends part of it, then nothing (its deadline ends it)
	peerTrickle                 // sends a byte at a time, as slowly as the schedule likes
)

type modelFrame struct {
	size   int64
	kind   peerKind
	cutAt  int64 // peerCloses and peerSilent stop sending here
	claim  *Claim
	charge int64 // what the reader's buffer holds room for (== claim held)
	sent   int64 // bytes the peer has sent
	read   int64 // bytes the reader has taken in
	wait   int64 // >0: the reader waits for this many more bytes of budget
	age    int   // the model clock when its first byte came
	closed bool
}

type modelReader struct {
	frames []*modelFrame // what its peer will send, in order
	cur    int
	dead   bool // connection closed (peer gone, timeout)
}

type model struct {
	t        testing.TB
	rng      *rand.Rand
	b        *Budget
	start    int64 // first charge of a large frame; the small size
	maxFrame int64
	deadline int // clock ticks a frame may take from its first byte
	clock    int
	readers  []*modelReader
	answers  []*modelFrame // complete frames waiting for their handler
	log      []string
	// counts, for the test's report
	completed, timedOut, peerGone int
}

func (m *model) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf(format, args...))
	if len(m.log) > 60 {
		m.log = m.log[1:]
	}
}

func (m *model) fail(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("%s\nlast steps:\n  %s", fmt.Sprintf(format, args...), strings.Join(m.log, "\n  "))
}

func newModel(t testing.TB, rng *rand.Rand) *model {
	start := int64(1 + rng.IntN(8))
	limit := start * int64(1+rng.IntN(16))
	reserve := start * int64(rng.IntN(4)) // 0: no reserve
	m := &model{t: t, rng: rng, b: New(limit, reserve), start: start, deadline: 5 + rng.IntN(40)}
	n := 1 + rng.IntN(8)
	for range n {
		r := &modelReader{}
		for range 1 + rng.IntN(4) {
			f := &modelFrame{kind: peerKind(rng.IntN(4))}
			if rng.IntN(3) == 0 {
				f.size = 1 + rng.Int64N(start) // small
			} else {
				f.size = 1 + rng.Int64N(4*limit+start)
			}
			f.cutAt = 1 + rng.Int64N(f.size) // a peer that sends nothing holds nothing
			m.maxFrame = max(m.maxFrame, f.size)
			r.frames = append(r.frames, f)
		}
		m.readers = append(m.readers, r)
	}
	return m
}

func (r *modelReader) frame() *modelFrame {
	if r.dead || r.cur >= len(r.frames) {
		return nil
	}
	return r.frames[r.cur]
}

func (f *modelFrame) small(start int64) bool { return f.size <= start }

// canSend: what the peer may still send (a socket buffers up to the
// reader's charge plus a little; the model lets the peer run ahead by start).
func (m *model) canSend(f *modelFrame) int64 {
	if f.closed {
		return 0
	}
	limit := f.size
	if f.kind == peerCloses || f.kind == peerSilent {
		limit = f.cutAt
	}
	return min(limit, f.read+max(f.charge-f.read, 0)+m.start) - f.sent
}

// progress lists every step that can happen now without the clock moving.
func (m *model) steps() []func() {
	var out []func()
	for i, r := range m.readers {
		f := r.frame()
		if f == nil {
			continue
		}
		if n := m.canSend(f); n > 0 {
			out = append(out, func() { m.send(i, f, n) })
		}
		if f.kind == peerCloses && !f.closed && f.sent >= f.cutAt {
			out = append(out, func() { m.logf("peer %d closes at %d of %d", i, f.sent, f.size); f.closed = true })
		}
		if f.wait > 0 {
			// A waiter is woken on every change; a wake that finds no
			// room changes nothing, so only one that does is a step.
			m.b.mu.Lock()
			ok, _ := m.b.admits(f.claim, f.wait)
			m.b.mu.Unlock()
			if ok {
				out = append(out, func() { m.retry(i, f) })
			}
			if f.closed && f.sent < f.size {
				// The reader notices its peer is gone while it waits.
				out = append(out, func() { m.drop(i, r, f, "peer gone while waiting"); m.peerGone++ })
			}
		} else if f.claim != nil && f.read < f.sent && f.read < f.charge {
			out = append(out, func() { m.readIn(i, f) })
		} else if f.claim != nil && f.read == f.charge && f.read < f.size && f.read < f.sent {
			out = append(out, func() { m.grow(i, f) })
		} else if f.claim == nil && f.sent > 0 {
			out = append(out, func() { m.begin(i, f) })
		}
		if f.closed && f.wait == 0 && f.read == f.sent && f.read < f.size {
			out = append(out, func() { m.drop(i, r, f, "read EOF"); m.peerGone++ })
		}
	}
	if len(m.answers) > 0 {
		out = append(out, func() {
			j := m.rng.IntN(len(m.answers))
			f := m.answers[j]
			m.answers = append(m.answers[:j], m.answers[j+1:]...)
			m.logf("answer a %d-byte frame", f.size)
			f.claim.Release()
			f.charge = 0
		})
	}
	return out
}

func (m *model) send(i int, f *modelFrame, n int64) {
	if f.kind == peerTrickle || m.rng.IntN(2) == 0 {
		n = 1 + m.rng.Int64N(n)
		if f.kind == peerTrickle {
			n = 1
		}
	}
	if f.sent == 0 {
		f.age = m.clock
	}
	f.sent += n
	m.logf("peer %d sends %d (%d of %d)", i, n, f.sent, f.size)
}

// begin: the frame's first bytes arrived; the reader charges its first part.
func (m *model) begin(i int, f *modelFrame) {
	f.claim = m.b.Claim(f.small(m.start))
	first := f.size
	if !f.small(m.start) {
		first = min(f.size, max(m.start, f.sent))
	}
	m.logf("reader %d begins a %d-byte frame, charging %d", i, f.size, first)
	m.charge(i, f, first)
}

func (m *model) charge(i int, f *modelFrame, n int64) {
	if m.b.tryGrow(f.claim, n) {
		f.charge += n
		f.wait = 0
		return
	}
	if f.small(m.start) {
		// Only small frames in the reserve can hold a small one back.
		m.b.mu.Lock()
		small, reserve := m.b.small, m.b.reserve
		m.b.mu.Unlock()
		if reserve > 0 && (small == 0 || small+n <= reserve) {
			m.fail("reader %d: a %d-byte small frame waits with the reserve at %d of %d", i, n, small, reserve)
		}
	}
	f.wait = n
	m.logf("reader %d waits for %d", i, n)
}

func (m *model) retry(i int, f *modelFrame) { m.charge(i, f, f.wait) }

func (m *model) readIn(i int, f *modelFrame) {
	n := min(f.sent, f.charge) - f.read
	f.read += n
	if f.read == f.size {
		m.logf("reader %d has a whole %d-byte frame", i, f.size)
		m.answers = append(m.answers, f)
		m.readers[i].cur++
		m.completed++
	}
}

func (m *model) grow(i int, f *modelFrame) {
	m.charge(i, f, min(4*f.charge, f.size)-f.charge)
}

// drop ends the reader's connection: its frame is released, its other
// frames are never sent.
func (m *model) drop(i int, r *modelReader, f *modelFrame, why string) {
	m.logf("reader %d drops its frame: %s", i, why)
	if f.claim != nil {
		if f.wait > 0 {
			m.b.abandon(f.claim)
			f.wait = 0
		}
		f.claim.Release()
		f.charge = 0
	}
	r.dead = true
}

// tick moves the clock: frames older than the deadline end.
func (m *model) tick() {
	m.clock++
	for i, r := range m.readers {
		if f := r.frame(); f != nil && f.sent > 0 && m.clock-f.age > m.deadline {
			m.drop(i, r, f, "deadline")
			m.timedOut++
		}
	}
}

// check verifies the books: the budget holds what the frames hold, large
// bytes overshoot the limit by at most one frame, and small ones stay in
// their room.
func (m *model) check() {
	var held int64
	for _, r := range m.readers {
		for _, f := range r.frames {
			if f.claim != nil {
				if f.claim.Held() != f.charge {
					m.fail("frame holds %d by the budget's books, %d by the reader's", f.claim.Held(), f.charge)
				}
				held += f.claim.Held()
			}
		}
	}
	b := m.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.large+b.small != held {
		m.fail("budget in use %d, frames hold %d", b.large+b.small, held)
	}
	if b.large > b.limit+m.maxFrame {
		m.fail("large room holds %d, limit %d, largest frame %d", b.large, b.limit, m.maxFrame)
	}
	if b.small > max(b.reserve, m.start) {
		m.fail("reserve holds %d, reserve %d, small frames up to %d", b.small, b.reserve, m.start)
	}
}

// checkNotStuckOnBudget runs when nothing can happen without time passing.
// That is fine while a reader waits for its peer (the deadline ends it),
// never when every reader left waits for the budget alone.
func (m *model) checkNotStuckOnBudget() {
	waiting := -1
	for i, r := range m.readers {
		f := r.frame()
		if f == nil {
			continue
		}
		if f.wait == 0 {
			return // waits for its peer
		}
		waiting = i
	}
	if waiting >= 0 {
		m.fail("stuck: every reader left waits for budget (reader %d for %d bytes) and nothing can happen but time",
			waiting, m.readers[waiting].frame().wait)
	}
}

func runModel(t testing.TB, seed uint64) *model {
	m := newModel(t, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	for step := 0; step < 20000; step++ {
		steps := m.steps()
		if len(steps) == 0 {
			m.checkNotStuckOnBudget()
			if m.done() {
				break
			}
			m.tick()
		} else if m.rng.IntN(20) == 0 {
			m.tick()
		} else {
			steps[m.rng.IntN(len(steps))]()
		}
		m.check()
	}
	if !m.done() {
		m.fail("seed %d: not done after 20,000 steps", seed)
	}
	if n := m.b.InUse(); n != 0 {
		m.fail("seed %d: %d bytes still held when every reader is done", seed, n)
	}
	if n := m.b.Waiting(); n != 0 {
		m.fail("seed %d: %d claims still wait when every reader is done", seed, n)
	}
	return m
}

func (m *model) done() bool {
	if len(m.answers) > 0 {
		return false
	}
	for _, r := range m.readers {
		if r.frame() != nil {
			return false
		}
	}
	return true
}

// TestModel runs the model over fixed seeds: every schedule ends with all
// budget back, no reader ever stuck on the budget, and whole frames read.
// make fuzz runs FuzzModel over many more.
func TestModel(t *testing.T) {
	var completed, timedOut, gone int
	for seed := range uint64(3000) {
		m := runModel(t, seed)
		completed += m.completed
		timedOut += m.timedOut
		gone += m.peerGone
	}
	// The schedules must exercise every ending, or the model proves little.
	if completed == 0 || timedOut == 0 || gone == 0 {
		t.Fatalf("schedules completed %d frames, timed out %d, lost %d peers: each must happen", completed, timedOut, gone)
	}
	t.Logf("3000 schedules: %d frames completed, %d timed out, %d peers gone", completed, timedOut, gone)
}

func FuzzModel(f *testing.F) {
	for seed := range uint64(8) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) { runModel(t, seed) })
}
