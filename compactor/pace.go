package compactor

import (
	"context"
	"time"
)

// pacer lets the compactor yield to foreground work in the same process
// (floe dev runs it beside the agent, on the same cores and the same
// SQLite writer). While Config.Busy reports foreground work, each step of
// a job is followed by a pause of PaceRatio times the step's duration, so
// the compactor takes at most 1/(1+PaceRatio) of a core and produce
// requests find the CPU and the metadata writer free most of the time.
// When the foreground is idle the compactor runs flat out and catches up.
//
// A pacer belongs to one job run (one goroutine).
type pacer struct {
	c    *Compactor
	mark time.Time // start of the current step
	// left is the pause this job may still take: a merge must finish well
	// within half the grace period or it is abandoned.
	left time.Duration
}

// maxPause bounds one pause, so a long step cannot stall a job for long
// (a merge must finish well within the grace period).
const maxPause = time.Second

func (c *Compactor) newPacer() *pacer {
	return &pacer{c: c, mark: time.Now(), left: c.cfg.Grace / 8}
}

// step ends a step: it pauses if the foreground is busy, then starts the
// next step. It returns ctx's error if ctx ends while pausing.
func (p *pacer) step(ctx context.Context) error {
	cfg := p.c.cfg
	if cfg.Busy == nil || cfg.PaceRatio <= 0 || !cfg.Busy() {
		p.mark = time.Now()
		return nil
	}
	pause := min(time.Duration(float64(time.Since(p.mark))*cfg.PaceRatio), maxPause, p.left)
	p.left -= pause
	p.c.metrics.pacedSeconds.Add(pause.Seconds())
	t := time.NewTimer(pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	p.mark = time.Now()
	return nil
}
