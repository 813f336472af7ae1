// Package control lets a test take over one Kafka API of a running agent,
// the shape of franz-go kfake's Cluster.ControlKey: a function run on each
// request of a key before its handler may answer it, fail it (the agent
// closes the connection, as on any handler error), delay it (sleep, then
// leave it to the handler) or only watch it. A regression test of a
// client's retry is then a few lines: answer NOT_COORDINATOR once, and see
// the client find its coordinator again.
//
// The agent asks its Set before every request; a Set with no function
// costs one atomic load. Unlike kfake's cluster, an agent serves a
// connection's requests concurrently, so functions run concurrently too
// (see Key).
package control

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Func is a control function. handled true: resp is the answer, or, when
// err is not nil, the connection is closed. handled false: the request
// goes on to the next function and then to its handler.
type Func func(req kmsg.Request) (resp kmsg.Response, err error, handled bool)

// AnyKey, as Key's key, runs a function on requests of every key, after
// the functions of the request's own key.
const AnyKey int16 = -1

// Set is an agent's control functions by API key. The zero Set has none
// and is ready to use; mu guards fns, n counts them for Try's fast path.
type Set struct {
	n   atomic.Int32
	mu  sync.Mutex
	fns map[int16][]*entry
}

type entry struct {
	fn   Func
	keep bool
	// busy: a function that may be dropped is running for a request;
	// gone: it handled one and was dropped. Guarded by Set.mu.
	busy, gone bool
}

// Key adds fn for the requests of API key key (a kmsg.Key, or AnyKey),
// after the functions already added for it. A function that handles a
// request is dropped unless keep. A function that may be dropped runs for
// one request at a time (another request of the key meanwhile passes it
// by), so it handles exactly one; one kept may run for several requests
// at once.
func (s *Set) Key(key int16, keep bool, fn Func) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fns == nil {
		s.fns = make(map[int16][]*entry)
	}
	s.fns[key] = append(s.fns[key], &entry{fn: fn, keep: keep})
	s.n.Add(1)
}

// Try runs the functions for req's key, then those for AnyKey, in the
// order they were added, until one handles req; handled false when none
// did (or there are none).
func (s *Set) Try(req kmsg.Request) (resp kmsg.Response, err error, handled bool) {
	if s.n.Load() == 0 {
		return nil, nil, false
	}
	return s.try(req)
}

func (s *Set) try(req kmsg.Request) (kmsg.Response, error, bool) {
	for _, key := range []int16{req.Key(), AnyKey} {
		s.mu.Lock()
		fns := slices.Clone(s.fns[key])
		s.mu.Unlock()
		for _, e := range fns {
			if !s.claim(e) {
				continue // running for another request, or dropped
			}
			resp, err, handled := e.fn(req)
			s.release(key, e, handled)
			if handled {
				return resp, err, true
			}
		}
	}
	return nil, nil, false
}

// claim reports whether e may run now, marking a function that may be
// dropped busy.
func (s *Set) claim(e *entry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.keep {
		return true
	}
	if e.busy || e.gone {
		return false
	}
	e.busy = true
	return true
}

// release ends e's run: a function that may be dropped and handled its
// request is dropped.
func (s *Set) release(key int16, e *entry, handled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.busy = false
	if e.keep || !handled {
		return
	}
	e.gone = true
	s.fns[key] = slices.DeleteFunc(s.fns[key], func(x *entry) bool { return x == e })
	s.n.Add(-1)
}
