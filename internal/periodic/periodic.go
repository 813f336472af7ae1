// Package periodic runs a function every interval until stopped: the loop
// of floe's background jobs (compactor rounds, Iceberg conversion cycles).
package periodic

import (
	"context"
	"sync"
	"time"
)

// Loop is a running periodic function.
type Loop struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start calls fn at once and then every interval after the start of the
// previous call (a call longer than interval is followed by the next at
// once), until ctx ends or Close. An error fn returns while ctx is live is
// handed to onErr; the loop goes on.
func Start(ctx context.Context, interval time.Duration, fn func(context.Context) error, onErr func(error)) *Loop {
	return StartFunc(ctx, func() time.Duration { return interval }, fn, onErr)
}

// StartFunc is Start with an interval that may change: interval is asked
// after each call (and never concurrently with one).
func StartFunc(ctx context.Context, interval func() time.Duration, fn func(context.Context) error, onErr func(error)) *Loop {
	l := &Loop{}
	ctx, l.cancel = context.WithCancel(ctx)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		t := time.NewTimer(0)
		defer t.Stop()
		<-t.C
		for {
			start := time.Now()
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				onErr(err)
			}
			t.Reset(max(time.Until(start.Add(interval())), 0))
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return l
}

// Close stops the loop and waits for a running call to return. It may be
// called on a nil Loop (one never started).
func (l *Loop) Close() {
	if l == nil {
		return
	}
	l.cancel()
	l.wg.Wait()
}
