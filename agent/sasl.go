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
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/time/rate"

	"floe/metadata"
)

// Mechanism names besides the SCRAM ones (scram.go).
const (
	MechanismPlain       = "PLAIN"
	MechanismOAuthBearer = "OAUTHBEARER"
)

// SupportedMechanisms are the SASL mechanisms floe can serve.
var SupportedMechanisms = []string{ScramSHA256, ScramSHA512, MechanismPlain, MechanismOAuthBearer}

const (
	failedAuthDelay = 100 * time.Millisecond
	authFailBurst   = 10
	authFailRate    = rate.Limit(0.1) // per second: one more try every 10 s
	// saslStepTimeout bounds one exchange step's store calls.
	saslStepTimeout = 5 * time.Second
)

// saslExchange is one run of a mechanism on a connection.
type saslExchange interface {
	// step takes the client's next message and returns the server's
	// answer; done once the exchange succeeded. An error fails it: its
	// message is what the client is told.
	step(ctx context.Context, msg []byte) (answer []byte, done bool, err error)
	// identity is who authenticated, once done.
	identity() *identity
}

// saslConn is a SASL listener connection's authentication state, owned by
// its reader.
type saslConn struct {
	mech   string       // mechanism of the last handshake
	v0     bool         // that handshake was v0: raw tokens follow
	ex     saslExchange // the exchange in progress, nil between exchanges
	authed bool         // authenticated (at least once)
	// expires ends the session (zero: never).
	expires time.Time
}

// authFailed is a failed authentication, in the words the client is
// told (Kafka's, which begin with a capital).
type authFailed string

func (e authFailed) Error() string { return string(e) }

func authFailedf(format string, args ...any) error { return authFailed(fmt.Sprintf(format, args...)) }

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
	ex, err := c.a.newExchange(r.Mechanism)
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
	if !c.a.authFails.allow(ip) {
		c.a.limitHit("sasl.failed.authentications", "remote", c.nc.RemoteAddr().String(), "mechanism", s.mech)
		s.ex = nil
		return []byte("Authentication failed: too many failed authentications from " + ip), false
	}
	ctx, cancel := context.WithTimeout(c.a.ctx, saslStepTimeout)
	defer cancel()
	answer, done, err := s.ex.step(ctx, msg)
	if err != nil {
		s.ex = nil
		c.a.authFails.failed(ip)
		c.a.metrics.authFailures.WithLabelValues(s.mech).Inc()
		c.log.Warn("SASL authentication failed", "mechanism", s.mech, "err", err)
		time.Sleep(failedAuthDelay)
		return []byte(err.Error()), false
	}
	if !done {
		return answer, true
	}
	id := s.ex.identity()
	s.ex = nil
	if s.authed && id.principal != c.principal() {
		c.log.Warn("SASL re-authentication changed the principal", "was", c.principal(), "now", id.principal)
		return []byte("Cannot change principals during re-authentication from " + c.principal() + ": " + id.principal), false
	}
	c.a.authFails.succeeded(ip)
	s.authed = true
	s.expires = time.Time{}
	if lt := c.a.cfg.Security.SessionLifetime; lt > 0 {
		s.expires = time.Now().Add(lt)
	}
	if !id.expires.IsZero() && (s.expires.IsZero() || id.expires.Before(s.expires)) {
		s.expires = id.expires // a token's session ends with the token
	}
	c.id.set(id)
	c.a.metrics.authSuccesses.WithLabelValues(s.mech).Inc()
	c.log.Debug("SASL authenticated", "mechanism", s.mech, "principal", id.principal)
	return answer, true
}

// newExchange starts a run of mechanism.
func (a *Agent) newExchange(mechanism string) (saslExchange, error) {
	switch mechanism {
	case MechanismPlain:
		return &plainExchange{store: a.store}, nil
	case ScramSHA256, ScramSHA512:
		return newScramExchange(a.store, mechanism)
	case MechanismOAuthBearer:
		if a.oauth == nil {
			return nil, errors.New("no OAUTHBEARER token validation configured")
		}
		return &oauthExchange{v: a.oauth}, nil
	}
	return nil, fmt.Errorf("unknown mechanism %q", mechanism)
}

// plainExchange is SASL/PLAIN (RFC 4616) checked against the SCRAM users.
type plainExchange struct {
	store metadata.CredentialStore
	id    *identity
}

func (p *plainExchange) step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	parts := strings.Split(string(msg), "\x00")
	if len(parts) != 3 || parts[1] == "" {
		return nil, false, authFailed("Authentication failed: invalid SASL/PLAIN message")
	}
	authz, user, pass := parts[0], parts[1], parts[2]
	if authz != "" && authz != user {
		return nil, false, authFailed("Authentication failed: Client requested an authorization id that is different from username")
	}
	if err := checkPassword(ctx, p.store, user, pass); err != nil {
		if errors.Is(err, errBadPassword) {
			return nil, false, authFailed("Authentication failed: Invalid username or password")
		}
		return nil, false, authFailedf("Authentication failed: %v", err)
	}
	p.id = &identity{principal: "User:" + user}
	return nil, true, nil
}

func (p *plainExchange) identity() *identity { return p.id }

// scramExchange is the server side of SCRAM-SHA-256/512 (RFC 5802)
// over the stored credentials. It follows Kafka's ScramSaslServer, which
// accepts a client-final nonce that ends with the server's nonce rather
// than equals it: librdkafka sends its own nonce before the server's full
// one, and Kafka's leniency is what keeps it working. (xdg-go/scram's
// server insists on equality, so it cannot serve librdkafka clients.)
type scramExchange struct {
	mech  string
	h     func() hash.Hash
	store metadata.CredentialStore

	cred        metadata.ScramCredential
	gs2Header   string // as the client sent it, for the channel binding check
	clientBare  string // client-first-message-bare
	serverFirst string
	nonce       string // client nonce + server nonce
	first       bool   // the first message was handled
	done        bool
}

func newScramExchange(store metadata.CredentialStore, mechanism string) (*scramExchange, error) {
	h := scramHash(mechanism)
	if h == nil {
		return nil, fmt.Errorf("unknown SCRAM mechanism %q", mechanism)
	}
	return &scramExchange{mech: mechanism, h: h, store: store}, nil
}

func (e *scramExchange) fail(why string) error {
	return authFailedf("Authentication failed during authentication due to invalid credentials with SASL mechanism %s (%s)", e.mech, why)
}

func (e *scramExchange) step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	if !e.first {
		e.first = true
		return e.clientFirst(ctx, string(msg))
	}
	if e.done {
		return nil, false, e.fail("exchange already complete")
	}
	return e.clientFinal(string(msg))
}

// clientFirst handles "gs2-header client-first-message-bare", e.g.
// "n,,n=alice,r=NONCE[,extensions]".
func (e *scramExchange) clientFirst(ctx context.Context, msg string) ([]byte, bool, error) {
	cb, rest, ok := strings.Cut(msg, ",")
	if !ok || (cb != "n" && cb != "y") {
		return nil, false, e.fail("channel binding is not supported")
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok || (authz != "" && !strings.HasPrefix(authz, "a=")) {
		return nil, false, e.fail("malformed client-first-message")
	}
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") || len(attrs[1]) < 3 {
		return nil, false, e.fail("malformed client-first-message")
	}
	user, err := scramName(attrs[0][2:])
	if err != nil {
		return nil, false, e.fail(err.Error())
	}
	if a := strings.TrimPrefix(authz, "a="); a != "" {
		if az, err := scramName(a); err != nil || az != user {
			return nil, false, e.fail("authorization id differs from the user name")
		}
	}
	cred, err := e.store.ScramCredential(ctx, user, e.mech)
	if errors.Is(err, metadata.ErrNotFound) {
		return nil, false, e.fail("unknown user")
	}
	if err != nil {
		return nil, false, authFailedf("Authentication failed: %v", err)
	}
	var sn [24]byte
	_, _ = rand.Read(sn[:])
	e.cred, e.gs2Header, e.clientBare = cred, cb+","+authz+",", bare
	e.nonce = attrs[1][2:] + base64.RawStdEncoding.EncodeToString(sn[:])
	e.serverFirst = "r=" + e.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(int(cred.Iterations))
	return []byte(e.serverFirst), false, nil
}

// clientFinal handles "c=BINDING,r=NONCE[,extensions],p=PROOF".
func (e *scramExchange) clientFinal(msg string) ([]byte, bool, error) {
	e.done = true
	withoutProof, proof64, ok := strings.Cut(msg, ",p=")
	if !ok {
		return nil, false, e.fail("malformed client-final-message")
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, false, e.fail("malformed client-final-message")
	}
	if cb, err := base64.StdEncoding.DecodeString(attrs[0][2:]); err != nil || string(cb) != e.gs2Header {
		return nil, false, e.fail("channel binding does not match")
	}
	if !strings.HasSuffix(attrs[1][2:], e.nonce) {
		return nil, false, e.fail("invalid client nonce in the final client message")
	}
	proof, err := base64.StdEncoding.DecodeString(proof64)
	if err != nil || len(proof) != e.h().Size() {
		return nil, false, e.fail("malformed client proof")
	}
	authMsg := e.clientBare + "," + e.serverFirst + "," + withoutProof
	mac := func(key []byte) []byte {
		m := hmac.New(e.h, key)
		m.Write([]byte(authMsg))
		return m.Sum(nil)
	}
	clientKey := mac(e.cred.StoredKey)
	for i := range clientKey {
		clientKey[i] ^= proof[i]
	}
	stored := e.h()
	stored.Write(clientKey)
	if !hmac.Equal(stored.Sum(nil), e.cred.StoredKey) {
		return nil, false, e.fail("invalid credentials")
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(mac(e.cred.ServerKey))), true, nil
}

func (e *scramExchange) identity() *identity {
	return &identity{principal: "User:" + e.cred.User}
}

// scramName decodes a saslname: "=2C" is ",", "=3D" is "=", and no other
// "=" may appear.
func scramName(s string) (string, error) {
	out := strings.NewReplacer("=2C", ",", "=3D", "=").Replace(s)
	if strings.Count(s, "=") != strings.Count(s, "=2C")+strings.Count(s, "=3D") || s == "" {
		return "", errors.New("malformed user name")
	}
	return out, nil
}

// authFailures counts failed authentications per remote address.
type authFailures struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

// allow reports whether ip may try to authenticate now.
func (f *authFailures) allow(ip string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.m[ip]
	return !ok || l.Tokens() >= 1
}

func (f *authFailures) failed(ip string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]*rate.Limiter{}
	}
	l, ok := f.m[ip]
	if !ok {
		if len(f.m) >= 100_000 { // bound the memory many addresses can take
			clear(f.m)
		}
		l = rate.NewLimiter(authFailRate, authFailBurst)
		f.m[ip] = l
	}
	l.Allow()
}

// succeeded forgets ip's failures once its budget is whole again.
func (f *authFailures) succeeded(ip string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l, ok := f.m[ip]; ok && l.Tokens() >= authFailBurst {
		delete(f.m, ip)
	}
}

// saslFor is the SASL state a new connection of l starts with.
func saslFor(l *listener) *saslConn {
	if !l.cfg.usesSASL() {
		return nil
	}
	return &saslConn{}
}
