package bench

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// progress redraws one status line on cfg.Progress every 250 ms until
// the returned func is called: time, share done, rates so far, and the
// produce p99 so far.
func (r *run) progress(ctx context.Context) func() {
	if r.cfg.Progress == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				r.drawProgress(start)
				return
			case <-t.C:
				r.drawProgress(start)
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (r *run) drawProgress(start time.Time) {
	el := time.Since(start)
	frac := 0.0
	if span := r.cfg.Warmup + r.cfg.Duration; r.cfg.Duration > 0 {
		frac = el.Seconds() / span.Seconds()
	}
	if r.cfg.Records > 0 {
		frac = max(frac, float64(r.acked.Load()+r.consumed.Load())/float64(r.cfg.Records*r.legs()))
	}
	fmt.Fprint(r.cfg.Progress, "\r"+progressLine(min(frac, 1), el, r.acked.Load(), r.ackedBytes.Load(),
		r.consumed.Load(), r.consumedBytes.Load(), r.produceLat.Quantile(0.99)))
}

// legs is how many times each record is counted towards done: produced,
// and consumed too in e2e.
func (r *run) legs() int64 {
	if r.cfg.Mode == ModeE2E {
		return 2
	}
	return 1
}

// progressLine renders the status line; it is a pure function so its
// layout is tested without a terminal.
func progressLine(frac float64, el time.Duration, acked, ackedBytes, consumed, consumedBytes int64, p99 time.Duration) string {
	const width = 24
	n := int(frac * width)
	bar := strings.Repeat("=", n) + strings.Repeat(" ", width-n)
	if n < width {
		bar = bar[:n] + ">" + bar[n+1:]
	}
	s := el.Seconds()
	rate := func(b int64) float64 {
		if s <= 0 {
			return 0
		}
		return float64(b) / s / 1e6
	}
	return fmt.Sprintf("[%s] %3.0f%% %5.1fs  produced %d (%.1f MB/s)  consumed %d (%.1f MB/s)  produce p99 %v   ",
		bar, frac*100, s, acked, rate(ackedBytes), consumed, rate(consumedBytes), p99.Round(10*time.Microsecond))
}
