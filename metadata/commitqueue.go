package metadata

import "context"

// commitQueuedKey is the context key of WithCommitQueued's callback.
type commitQueuedKey struct{}

// WithCommitQueued returns a context under which a CommitObject call runs
// queued once the call's place in the store's commit order is fixed: every
// CommitObject call made after queued ran gets its offsets after this
// one's (or fails). A caller that commits in sequence (an agent's flushes,
// each partition's batches in the order they were produced) can then start
// its next commit without waiting for this one to finish, and a store that
// commits overlapping calls together (group commit) gets to combine them.
//
// Stores that fix no order before they commit never run queued; the
// caller then waits for the call to return, which fixes its order too.
// queued may run more than once and from any goroutine, as in
// net/http/httptrace.
func WithCommitQueued(ctx context.Context, queued func()) context.Context {
	return context.WithValue(ctx, commitQueuedKey{}, queued)
}

// CommitQueued runs the callback ctx carries from WithCommitQueued, if
// any. A store calls it once a CommitObject call holds its place in the
// order calls are committed in.
func CommitQueued(ctx context.Context) {
	if f, ok := ctx.Value(commitQueuedKey{}).(func()); ok {
		f()
	}
}
