// Package groupcommit combines the CommitObject calls one store handle gets
// at the same time into one transaction: a group commit. An agent with
// several flushes in flight (--flush-concurrency) then pays one round trip,
// one round of partition row locks and one WAL flush for all the flushes
// that are ready together, instead of one each, one after the other.
//
// It is the store-independent half: the queue, who commits, and handing
// each caller its own results. The store supplies the other half, a
// function committing several objects in one transaction, each object's
// runs placed after those of the objects before it. Nothing waits for a
// group to fill: a caller finding no commit running commits at once,
// alone; the calls that arrive while a commit runs form the next group.
//
// The package never talks to a database itself.
package groupcommit

import (
	"context"
	"fmt"
	"sync"

	"floe/metadata"
)

// CommitFunc commits objs (validated, at least one) in one transaction and
// returns the results of each, in order, or an error if nothing was
// committed. An object's runs get their offsets after those of the objects
// before it in objs.
type CommitFunc func(ctx context.Context, objs []metadata.ObjectCommit) ([][]metadata.RunResult, error)

// Committer groups the commits of one store handle. Its state is guarded
// by mu. At most one group is committing at a time, led by one of its
// callers; busy is set while one is, and the queue is empty whenever busy
// is not (a leader finishing hands the lead to the head of the queue).
type Committer struct {
	commit   CommitFunc
	maxGroup int // most objects in one group
	maxRuns  int // most runs in one group (one object may exceed it alone)

	mu    sync.Mutex
	queue []*call // waiting, in arrival order
	busy  bool    // a group is committing
}

// call is one CommitObject call. Its result fields are written before
// done is closed, by whoever committed its group.
type call struct {
	ctx  context.Context
	obj  metadata.ObjectCommit
	lead chan struct{} // closed when the call is to commit the next group itself
	done chan struct{} // closed when res and err are set
	res  []metadata.RunResult
	err  error
}

// The limits both stores give New: the most objects, and runs, one group
// holds. A group is what one agent's flushes in flight add up to
// (--flush-concurrency, 4 by default), so the object limit is rarely
// reached; the run limit keeps a transaction's locks and arrays to what
// one large flush has.
const (
	MaxObjects = 64
	MaxRuns    = 4096
)

// New returns a Committer over commit. A group holds at most maxGroup
// objects and maxRuns runs; values below 1 mean 1 object and no run limit.
func New(commit CommitFunc, maxGroup, maxRuns int) *Committer {
	return &Committer{commit: commit, maxGroup: max(1, maxGroup), maxRuns: maxRuns}
}

// CommitObject is Store.CommitObject over c: obj is validated, then
// committed by Commit.
func (c *Committer) CommitObject(ctx context.Context, obj metadata.ObjectCommit) ([]metadata.RunResult, error) {
	if err := obj.Validate(); err != nil {
		return nil, err
	}
	res, err := c.Commit(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("commit object %s: %w", obj.Key, err)
	}
	return res, nil
}

// Commit commits obj, alone or in one transaction with the calls
// overlapping it, and returns its own results, as Store.CommitObject
// does. Calls are committed in the order they arrived: a call made after
// another returned its offsets after the other's, whether in the same
// group or a later one. When a group's transaction fails, each of its
// objects is committed again alone, so that one object's failure (a
// duplicate key) is its own; an error returned means this object was not
// committed. ctx bounds the wait in the queue and this object's own
// commit; a group is given up only when every caller in it has given up.
// Once the call is queued it runs metadata.CommitQueued(ctx): a later
// call is committed after it.
func (c *Committer) Commit(ctx context.Context, obj metadata.ObjectCommit) ([]metadata.RunResult, error) {
	cl := &call{ctx: ctx, obj: obj, lead: make(chan struct{}), done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, cl)
	if !c.busy {
		c.busy = true
		c.mu.Unlock()
		metadata.CommitQueued(ctx)
		c.lead()
		return cl.res, cl.err
	}
	c.mu.Unlock()
	metadata.CommitQueued(ctx)
	select {
	case <-cl.done:
		return cl.res, cl.err
	case <-cl.lead:
		c.lead()
		return cl.res, cl.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	select {
	case <-cl.lead:
		// Made the leader (under mu) before it could leave: it commits
		// the group, its own object with the others', under a context
		// that lasts while any of theirs does.
		c.mu.Unlock()
		c.lead()
		return cl.res, cl.err
	default:
	}
	for i, q := range c.queue {
		if q == cl {
			// Still queued: nothing of it was sent, so it can go.
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			c.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	c.mu.Unlock()
	// Taken into a group already: its outcome is the group's, which it
	// must wait for to report truthfully.
	<-cl.done
	return cl.res, cl.err
}

// lead commits the group at the head of the queue (which holds the
// caller's own call), then hands the lead to the first call of the next
// group, or clears busy if none is waiting.
func (c *Committer) lead() {
	c.mu.Lock()
	n, runs := 0, 0
	for n < len(c.queue) && n < c.maxGroup {
		runs += len(c.queue[n].obj.Runs)
		if n > 0 && c.maxRuns > 0 && runs > c.maxRuns {
			break
		}
		n++
	}
	group := make([]*call, n)
	copy(group, c.queue)
	c.queue = append(c.queue[:0], c.queue[n:]...)
	c.mu.Unlock()

	c.run(group)

	// The lead is handed over under mu, so that a caller giving up sees
	// whether it was made the leader before it leaves the queue.
	c.mu.Lock()
	if len(c.queue) == 0 {
		c.busy = false
	} else {
		close(c.queue[0].lead)
	}
	c.mu.Unlock()
	for _, cl := range group {
		close(cl.done)
	}
}

// run commits group and sets each call's results.
func (c *Committer) run(group []*call) {
	if len(group) == 1 {
		cl := group[0]
		res, err := c.commit(cl.ctx, []metadata.ObjectCommit{cl.obj})
		cl.res, cl.err = first(res, err)
		return
	}
	ctx, cancel := groupContext(group)
	defer cancel()
	objs := make([]metadata.ObjectCommit, len(group))
	for i, cl := range group {
		objs[i] = cl.obj
	}
	res, err := c.commit(ctx, objs)
	if err == nil {
		for i, cl := range group {
			cl.res = res[i]
		}
		return
	}
	// Nothing of the group was committed: each object alone, in order,
	// so that the one that failed it fails by itself.
	for _, cl := range group {
		res, err := c.commit(cl.ctx, []metadata.ObjectCommit{cl.obj})
		cl.res, cl.err = first(res, err)
	}
}

// first is the one object's results of a one-object commit.
func first(res [][]metadata.RunResult, err error) ([]metadata.RunResult, error) {
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// groupContext is a context for a group's commit that is cancelled once
// every caller's context is done (a caller still waiting keeps the group
// going), carrying the values of the first caller's.
func groupContext(group []*call) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(group[0].ctx))
	var mu sync.Mutex
	left := len(group)
	stops := make([]func() bool, len(group))
	for i, cl := range group {
		stops[i] = context.AfterFunc(cl.ctx, func() {
			mu.Lock()
			defer mu.Unlock()
			if left--; left == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}
