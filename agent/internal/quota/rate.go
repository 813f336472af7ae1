package quota

// The rate a client quota is measured by, as Kafka measures it (its
// metrics library's Rate over a SampledStat): the values recorded in the
// last Samples windows of Window each, divided by the time they
// span, but never by less than Samples-1 whole windows, so that a
// client's first burst is spread over ten seconds rather than judged
// against the few milliseconds it took.

import (
	"math"
	"sync"
	"time"
)

// Samples and Window are Kafka's quota.window.num and
// quota.window.size.seconds defaults.
const (
	Samples = 11
	Window  = time.Second
)

// rateSample is the total recorded in one window, which began at start.
type rateSample struct {
	start time.Time
	value float64
}

// sensor is one quota sensor: the sampled rate of one quota type for
// one user and client id (or one ip). Its mutex guards the samples.
type sensor struct {
	mu      sync.Mutex
	samples []rateSample // at most Samples; current is the one written
	current int
	last    time.Time // when a value was last recorded
}

// record adds v at now and returns the rate after it, and the window that
// rate was measured over.
func (r *sensor) record(v float64, now time.Time) (float64, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = now
	if len(r.samples) == 0 {
		r.samples = append(r.samples, rateSample{start: now})
	}
	if now.Sub(r.samples[r.current].start) >= Window {
		// The current window is complete: the next one begins now,
		// replacing the oldest once there are Samples.
		r.current = (r.current + 1) % Samples
		if r.current == len(r.samples) {
			r.samples = append(r.samples, rateSample{})
		}
		r.samples[r.current] = rateSample{start: now}
	}
	r.samples[r.current].value += v
	return r.measureLocked(now)
}

// measureLocked is the rate at now and the window it spans.
func (r *sensor) measureLocked(now time.Time) (float64, time.Duration) {
	// Samples older than every window are reset, as if nothing had
	// been recorded in them.
	oldest := now
	total := 0.0
	for i := range r.samples {
		s := &r.samples[i]
		if now.Sub(s.start) >= Samples*Window {
			*s = rateSample{start: now}
		}
		total += s.value
		if s.start.Before(oldest) {
			oldest = s.start
		}
	}
	elapsed := now.Sub(oldest)
	if full := int64(elapsed / Window); full < Samples-1 {
		elapsed += time.Duration(Samples-1-full) * Window
	}
	elapsed = max(elapsed, time.Millisecond)
	return total / elapsed.Seconds(), elapsed
}

// idle reports whether nothing was recorded for every window: the sensor
// is then the same as a new one and can be dropped.
func (r *sensor) idle(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return now.Sub(r.last) >= Samples*Window
}

// throttleTime is how long a client whose measured rate over window is
// above bound must send nothing for the rate to come back to bound (Kafka's
// QuotaUtils.throttleTime): a rate O over W falls to T when W grows by
// (O-T)/T·W. Zero when the rate is within bound.
func throttleTime(rate, bound float64, window time.Duration) time.Duration {
	if rate <= bound || bound <= 0 {
		return 0
	}
	ms := math.Round((rate - bound) / bound * float64(window.Milliseconds()))
	return time.Duration(min(ms, math.MaxInt32)) * time.Millisecond
}
