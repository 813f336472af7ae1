package agent

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"floe/agent/internal/peercache"
)

// httpHandler serves /metrics, /healthz (the process is up) and /readyz
// (the agent can serve produce and fetch now: it can reach its metadata
// store and is not draining), open, and the mounted handlers behind the
// listeners' authentication (httpauth.go).
func (a *Agent) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.Metrics())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if a.isDraining() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		if _, err := a.store.LiveAgents(ctx, a.cfg.AgentTTL); err != nil {
			http.Error(w, "metadata store unreachable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.HandleFunc("GET "+peercache.Path, a.peers.ServeRange(a.cache)) // agent/internal/peercache
	if a.cfg.SchemaRegistry != nil {
		mux.Handle("/schema-registry/", http.StripPrefix("/schema-registry", a.registryHandler()))
	}
	for pattern, h := range a.cfg.HTTPHandlers {
		mux.Handle(pattern, a.requireAuth(h))
	}
	return mux
}

// Metrics exposes the agent's registry, for tests and `floe bench`.
func (a *Agent) Metrics() http.Handler {
	var g prometheus.Gatherer = a.metrics.reg
	if a.cfg.ExtraMetrics != nil {
		g = prometheus.Gatherers{a.metrics.reg, a.cfg.ExtraMetrics}
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
}
