package agent

import (
	"sync"
	"time"
)

// limitLogEvery spaces the log lines of one limit: a client hammering a
// limit is counted every time but logged once per interval.
const limitLogEvery = 10 * time.Second

// limits counts and logs the times a configured limit was hit: connection
// caps, frame deadlines, partition counts, fetch clamps. Each hit adds to
// floe_agent_limit_hits_total{limit=NAME}; the first hit of a limit in
// each limitLogEvery is logged at warn with the given attributes.
//
// State: lastLog under mu.
type limits struct {
	mu      sync.Mutex
	lastLog map[string]time.Time
}

// limitHit records one hit of the named limit; args are slog attributes
// describing it (the remote address, the value asked for, the limit).
func (a *Agent) limitHit(limit string, args ...any) {
	a.metrics.limitHits.WithLabelValues(limit).Inc()
	now := time.Now()
	a.lim.mu.Lock()
	last, seen := a.lim.lastLog[limit]
	log := !seen || now.Sub(last) >= limitLogEvery
	if log {
		if a.lim.lastLog == nil {
			a.lim.lastLog = make(map[string]time.Time)
		}
		a.lim.lastLog[limit] = now
	}
	a.lim.mu.Unlock()
	if log {
		a.log.Warn("limit hit", append([]any{"limit", limit}, args...)...)
	}
}
