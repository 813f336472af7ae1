package history

import (
	"sync"
	"time"
)

// Recorder collects the ops of a run from many goroutines. Its clock is
// monotonic (time.Since of its start) so that invocation and completion
// times of all processes compare. A mutex guards ops; nothing else is
// mutable.
type Recorder struct {
	start time.Time

	mu  sync.Mutex
	ops History
}

// NewRecorder starts a recorder; its clock reads 0 now.
func NewRecorder() *Recorder {
	return &Recorder{start: time.Now()}
}

// Now is the recorder's clock in nanoseconds. Take it just before a client
// call (the invocation) and just after (the completion).
func (r *Recorder) Now() int64 {
	return int64(time.Since(r.start))
}

// Add appends a completed op, giving it the next index, and returns that
// index. Ops are thus in completion order, as in a Jepsen history.
func (r *Recorder) Add(o Op) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	o.Index = len(r.ops)
	r.ops = append(r.ops, o)
	return o.Index
}

// History returns a copy of the ops recorded so far.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(History(nil), r.ops...)
}
