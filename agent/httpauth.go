package agent

// Authentication of the HTTP endpoints. When any Kafka listener asks for
// SASL, the endpoints mounted beside /metrics and the probes (the Iceberg
// REST catalog, Config.HTTPHandlers) take the same credentials as the
// Kafka listeners: HTTP Basic with a SCRAM user's name and password
// (checked as SASL/PLAIN checks them), or a Bearer token that the
// OAUTHBEARER configuration accepts. /metrics, /healthz and /readyz stay
// open, as Kafka leaves its metrics reporters to the network. Failures are
// 401 with a WWW-Authenticate challenge, counted and limited per address
// like SASL failures.

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"floe/agent/internal/sasl"
)

// httpAuthRequired reports whether the HTTP endpoints need credentials:
// whenever a Kafka listener does.
func (a *Agent) httpAuthRequired() bool {
	for _, l := range a.cfg.listeners() {
		if l.usesSASL() {
			return true
		}
	}
	return false
}

type principalKey struct{}

// HTTPPrincipal is the principal an authenticated HTTP request runs as
// ("" when the endpoint needs no credentials).
func HTTPPrincipal(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// requireAuth wraps h so that it only runs for authenticated requests,
// when the agent's listeners ask for authentication.
func (a *Agent) requireAuth(h http.Handler) http.Handler {
	if !a.httpAuthRequired() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip := r.RemoteAddr
		if host, _, err := net.SplitHostPort(ip); err == nil {
			ip = host
		}
		if !a.authFails.Allow(ip) {
			a.limitHit("sasl.failed.authentications", "remote", r.RemoteAddr, "http", r.URL.Path)
			unauthorized(w, "too many failed authentications from "+ip)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), saslStepTimeout)
		defer cancel()
		id, mech, err := a.httpIdentity(ctx, r)
		if err != nil {
			a.authFails.Failed(ip)
			a.metrics.authFailures.WithLabelValues("HTTP " + mech).Inc()
			a.log.Warn("HTTP authentication failed", "remote", r.RemoteAddr, "path", r.URL.Path, "mechanism", mech, "err", err)
			time.Sleep(failedAuthDelay)
			unauthorized(w, err.Error())
			return
		}
		a.authFails.Succeeded(ip)
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, id.Principal)))
	})
}

// httpIdentity checks a request's Authorization header.
func (a *Agent) httpIdentity(ctx context.Context, r *http.Request) (*identity, string, error) {
	scheme, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	switch {
	case strings.EqualFold(scheme, "Basic"):
		user, pass, ok := r.BasicAuth()
		if !ok || user == "" {
			return nil, "Basic", errors.New("malformed Basic credentials")
		}
		if err := sasl.CheckPassword(ctx, a.store, user, pass); err != nil {
			return nil, "Basic", errors.New("invalid username or password")
		}
		return &identity{Principal: "User:" + user}, "Basic", nil
	case strings.EqualFold(scheme, "Bearer"):
		if a.oauth == nil {
			return nil, "Bearer", errors.New("bearer tokens are not accepted: no OAUTHBEARER key set is configured")
		}
		id, err := a.oauth.Verify(ctx, strings.TrimSpace(cred))
		if err != nil {
			return nil, "Bearer", errors.New("invalid token: " + err.Error())
		}
		return id, "Bearer", nil
	}
	return nil, "none", errors.New("authentication required")
}

// unauthorized answers 401 with a challenge for both schemes and the
// error in the shape the Iceberg REST specification gives errors (which
// other JSON clients read as well).
func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Basic realm="floe", Bearer realm="floe"`)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": "NotAuthorizedException", "code": http.StatusUnauthorized}})
}
