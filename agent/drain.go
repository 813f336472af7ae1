package agent

// Leaving the fleet. Close begins with a drain, so that a stopping agent
// (SIGTERM: a rolling restart, a scale-in, a node drain) hands its clients
// to the other agents with at most retriable errors:
//
//  1. /readyz answers 503 at once (load balancers and Kubernetes stop
//     sending new connections);
//  2. the agent leaves the registry and its own view: its Metadata answers
//     name only the other agents, and every group and transactional id it
//     coordinates is placed elsewhere, so the coordinators' next tick
//     saves and releases them (agent/internal/lease: hand-off on a
//     placement change) and requests for them here answer NOT_COORDINATOR;
//  3. it goes on serving for DrainDelay, so that every other agent has
//     refreshed its view (each does every HeartbeatInterval) and no longer
//     names it either before clients are pushed to look again;
//  4. then Close proper: stop reading, flush what producers handed over,
//     answer in-flight requests, close the connections, release what is
//     left of the coordinator leases.
//
// A lone agent has nobody to hand anything to: it keeps itself in its view
// and skips the wait.

import (
	"context"
	"slices"
	"time"

	"floe/metadata"
)

// drain runs steps 1–3 above within ctx; the wait takes at most half of
// what is left of ctx, so that the flush and the hand-offs keep the rest.
func (a *Agent) drain(ctx context.Context) {
	a.draining.Store(true)
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := a.store.DeregisterAgent(dctx, a.id)
	cancel()
	if err != nil {
		a.log.Warn("leaving the registry failed; the agent expires from it after its TTL", "err", err)
	} else {
		a.deregistered.Store(true)
	}
	// liveAgents leaves this agent out from now on, while others are live.
	if view := a.liveAgents(); (len(view) == 1 && view[0].ID == a.id) || a.cfg.DrainDelay <= 0 {
		return
	}
	wait := a.cfg.DrainDelay
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)/2)
	}
	a.log.Info("draining: serving while the other agents drop this one from their views", "for", wait)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// isDraining reports whether Close has begun (the drain comes first).
func (a *Agent) isDraining() bool { return a.draining.Load() }

// withoutAgent is live without the agent id (a copy when it was there).
func withoutAgent(live []metadata.Agent, id string) []metadata.Agent {
	i := slices.IndexFunc(live, func(l metadata.Agent) bool { return l.ID == id })
	if i < 0 {
		return live
	}
	return slices.Delete(slices.Clone(live), i, i+1)
}
