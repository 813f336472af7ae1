package agent

// SASL on the SASL_PLAINTEXT and SASL_SSL listeners, as Kafka's
// SaslServerAuthenticator runs it. Until a connection has authenticated,
// its reader answers ApiVersions, SaslHandshake and SaslAuthenticate and
// closes the connection on anything else. The SASL requests are handled
// by the reader itself, in order, so that the next request is read only
// once the previous step is settled. SaslHandshake v0 is followed by raw
// SASL tokens (size-prefixed, no Kafka header, as Kafka 0.10 clients send
// them); v1 by SaslAuthenticate requests.
//
// A failed authentication is answered SASL_AUTHENTICATION_FAILED after
// failedAuthDelay (Kafka's connection.failed.authentication.delay.ms), is
// logged, and closes the connection. Failures are also counted per remote
// address: past authFailBurst in a row, an address's attempts are refused
// without checking the credentials until its budget refills
// (authFailRate), which bounds the passwords a client can try.
//
// Re-authentication (KIP-368): with a session lifetime, SaslAuthenticate
// tells the client how long its session lasts; the client runs the
// exchange again on the open connection before then (requests go on
// meanwhile, as the old identity), and a request arriving after the end
// of a session that was not renewed closes the connection. A renewal may
// not change the principal.

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/internal/sasl"
	"floe/metadata"
)

// Mechanism names (package agent/internal/sasl).
const (
	ScramSHA256          = sasl.ScramSHA256
	ScramSHA512          = sasl.ScramSHA512
	MechanismPlain       = sasl.MechanismPlain
	MechanismOAuthBearer = sasl.MechanismOAuthBearer
)

// SupportedMechanisms are the SASL mechanisms floe can serve.
var SupportedMechanisms = sasl.SupportedMechanisms

// NewScramCredential derives user's credential for mechanism from a
// password, with a fresh random salt (`floe user add`).
func NewScramCredential(user, mechanism, password string, iterations int32) (metadata.ScramCredential, error) {
	return sasl.NewScramCredential(user, mechanism, password, iterations)
}

const (
	failedAuthDelay = 100 * time.Millisecond
	// saslStepTimeout bounds one exchange step's store calls.
	saslStepTimeout = 5 * time.Second
)

// saslConn is a SASL listener connection's authentication state, owned by
// its reader.
type saslConn struct {
	mech   string        // mechanism of the last handshake
	v0     bool          // that handshake was v0: raw tokens follow
	ex     sasl.Exchange // the exchange in progress, nil between exchanges
	authed bool          // authenticated (at least once)
	// expires ends the session (zero: never).
	expires time.Time
}

// errSASLClose: the connection must close (refused request, failed
// authentication already answered, expired session).
var errSASLClose = errors.New("sasl: closing connection")

// saslGate runs in the reader for every request of a SASL listener's
// connection: it answers the SASL requests itself (handled) and refuses
// the rest before authentication or after the session ended (an error:
// close the connection). Requests it neither handles nor refuses go on.
func (c *conn) saslGate(f *inflight, req kmsg.Request) (handled bool, err error) {
	s := c.sasl
	switch r := req.(type) {
	case *kmsg.SASLHandshakeRequest:
		f.resp = c.saslHandshake(r)
		return true, nil
	case *kmsg.SASLAuthenticateRequest:
		resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		if s.ex == nil || s.v0 {
			resp.ErrorCode = kerr.IllegalSaslState.Code
			msg := "SaslAuthenticate without a SaslHandshake v1 before it"
			resp.ErrorMessage = &msg
			f.resp = resp
			return true, errSASLClose
		}
		answer, ok := c.saslStep(r.SASLAuthBytes)
		resp.SASLAuthBytes = answer
		if !ok {
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			msg := string(answer)
			resp.ErrorMessage, resp.SASLAuthBytes = &msg, nil
			f.resp = resp
			return true, errSASLClose
		}
		if s.ex == nil && !s.expires.IsZero() { // done: tell the session's lifetime (v1+)
			resp.SessionLifetimeMillis = max(time.Until(s.expires).Milliseconds(), 1)
		}
		f.resp = resp
		return true, nil
	case *kmsg.ApiVersionsRequest:
		return false, nil
	}
	if !s.authed {
		c.log.Warn("closing connection: request before SASL authentication", "api", kmsg.NameForKey(req.Key()))
		return true, errSASLClose
	}
	if !s.expires.IsZero() && time.Now().After(s.expires) {
		c.log.Info("closing connection: SASL session expired without re-authentication", "principal", c.principal())
		return true, errSASLClose
	}
	return false, nil
}

// saslHandshake starts an exchange of the mechanism asked for.
func (c *conn) saslHandshake(r *kmsg.SASLHandshakeRequest) kmsg.Response {
	s := c.sasl
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = c.a.cfg.Security.SASLMechanisms
	if s.authed && r.Version == 0 {
		// KIP-368 re-authentication is v1 only.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp
	}
	if !slices.Contains(c.a.cfg.Security.SASLMechanisms, r.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp
	}
	ex, err := sasl.NewExchange(r.Mechanism, c.a.store, c.a.oauth)
	if err != nil {
		c.log.Error("SASL mechanism unavailable", "mechanism", r.Mechanism, "err", err)
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp
	}
	s.mech, s.v0, s.ex = r.Mechanism, r.Version == 0, ex
	return resp
}

// saslStep feeds msg to the running exchange; ok false means the
// authentication failed and answer is the message for the client.
func (c *conn) saslStep(msg []byte) (answer []byte, ok bool) {
	s := c.sasl
	ip := c.host()
	if !c.a.authFails.Allow(ip) {
		c.a.limitHit("sasl.failed.authentications", "remote", c.nc.RemoteAddr().String(), "mechanism", s.mech)
		s.ex = nil
		return []byte("Authentication failed: too many failed authentications from " + ip), false
	}
	ctx, cancel := context.WithTimeout(c.a.ctx, saslStepTimeout)
	defer cancel()
	answer, done, err := s.ex.Step(ctx, msg)
	if err != nil {
		s.ex = nil
		c.a.authFails.Failed(ip)
		c.a.metrics.authFailures.WithLabelValues(s.mech).Inc()
		c.log.Warn("SASL authentication failed", "mechanism", s.mech, "err", err)
		time.Sleep(failedAuthDelay)
		return []byte(err.Error()), false
	}
	if !done {
		return answer, true
	}
	id := s.ex.Identity()
	s.ex = nil
	if s.authed && id.Principal != c.principal() {
		c.log.Warn("SASL re-authentication changed the principal", "was", c.principal(), "now", id.Principal)
		return []byte("Cannot change principals during re-authentication from " + c.principal() + ": " + id.Principal), false
	}
	c.a.authFails.Succeeded(ip)
	s.authed = true
	s.expires = time.Time{}
	if lt := c.a.cfg.Security.SessionLifetime; lt > 0 {
		s.expires = time.Now().Add(lt)
	}
	if !id.Expires.IsZero() && (s.expires.IsZero() || id.Expires.Before(s.expires)) {
		s.expires = id.Expires // a token's session ends with the token
	}
	c.id.set(id)
	c.a.metrics.authSuccesses.WithLabelValues(s.mech).Inc()
	c.log.Debug("SASL authenticated", "mechanism", s.mech, "principal", id.Principal)
	return answer, true
}

// saslFor is the SASL state a new connection of l starts with.
func saslFor(l *listener) *saslConn {
	if !l.cfg.usesSASL() {
		return nil
	}
	return &saslConn{}
}
