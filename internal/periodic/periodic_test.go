package periodic

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoop(t *testing.T) {
	var calls, errs atomic.Int32
	l := Start(context.Background(), time.Millisecond, func(ctx context.Context) error {
		if calls.Add(1)%2 == 0 {
			return errors.New("even")
		}
		return nil
	}, func(error) { errs.Add(1) })
	for calls.Load() < 6 {
		time.Sleep(time.Millisecond)
	}
	l.Close()
	n := calls.Load()
	time.Sleep(5 * time.Millisecond)
	if calls.Load() != n {
		t.Fatalf("called after Close: %d then %d", n, calls.Load())
	}
	if e := errs.Load(); e < 2 || e > n/2 {
		t.Fatalf("%d errors reported for %d calls", e, n)
	}
	var never *Loop
	never.Close()
}

// TestStartFunc: the interval is asked after each call, so a change takes
// effect from the next pause.
func TestStartFunc(t *testing.T) {
	var calls atomic.Int32
	var interval atomic.Int64
	interval.Store(int64(time.Hour))
	l := StartFunc(context.Background(), func() time.Duration { return time.Duration(interval.Load()) }, func(context.Context) error {
		if calls.Add(1) == 1 {
			interval.Store(int64(time.Millisecond))
		}
		return nil
	}, func(error) {})
	defer l.Close()
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls: the shorter interval was not applied", calls.Load())
		}
		time.Sleep(time.Millisecond)
	}
}
