// Package sasl is the server side of floe's SASL mechanisms, as Kafka's
// SaslServerAuthenticator runs them: SCRAM-SHA-256/512 (RFC 5802) and
// PLAIN (RFC 4616) over the stored SCRAM credentials, OAUTHBEARER (RFC
// 7628) over a JSON Web Key Set; the credentials themselves (scram.go);
// and the per-address budget of failed attempts. An Exchange is one run of
// a mechanism, message by message; the agent's connection reader drives
// it and owns everything about the connection (handshakes, sessions,
// re-authentication). Nothing here sees a connection or an agent.
package sasl

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
	"time"

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

// FailBurst failures in a row, then one more try every 10 s (FailRate).
const (
	FailBurst = 10
	FailRate  = rate.Limit(0.1)
)

// Credentials are the stored SCRAM credentials SCRAM and PLAIN check
// (metadata.CredentialStore).
type Credentials interface {
	ScramCredential(ctx context.Context, user, mechanism string) (metadata.ScramCredential, error)
}

// Identity is who a connection authenticated as.
type Identity struct {
	// Principal in Kafka's "Type:name" form, e.g. "User:alice".
	Principal string
	// Expires is when the credential that proved it ends (an OAUTHBEARER
	// token's expiry), zero when it does not.
	Expires time.Time
}

// Exchange is one run of a mechanism on a connection.
type Exchange interface {
	// Step takes the client's next message and returns the server's
	// answer; done once the exchange succeeded. An error fails it: its
	// message is what the client is told (an AuthFailed, in Kafka's
	// words).
	Step(ctx context.Context, msg []byte) (answer []byte, done bool, err error)
	// Identity is who authenticated, once done.
	Identity() *Identity
}

// AuthFailed is a failed authentication, in the words the client is
// told (Kafka's, which begin with a capital).
type AuthFailed string

func (e AuthFailed) Error() string { return string(e) }

func authFailedf(format string, args ...any) error { return AuthFailed(fmt.Sprintf(format, args...)) }

// NewExchange starts a run of mechanism: SCRAM and PLAIN check store's
// credentials, OAUTHBEARER tokens v (nil: OAUTHBEARER is not configured).
func NewExchange(mechanism string, store Credentials, v *Verifier) (Exchange, error) {
	switch mechanism {
	case MechanismPlain:
		return &plainExchange{store: store}, nil
	case ScramSHA256, ScramSHA512:
		return newScramExchange(store, mechanism)
	case MechanismOAuthBearer:
		if v == nil {
			return nil, errors.New("no OAUTHBEARER token validation configured")
		}
		return &oauthExchange{v: v}, nil
	}
	return nil, fmt.Errorf("unknown mechanism %q", mechanism)
}

// plainExchange is SASL/PLAIN (RFC 4616) checked against the SCRAM users.
type plainExchange struct {
	store Credentials
	id    *Identity
}

func (p *plainExchange) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	parts := strings.Split(string(msg), "\x00")
	if len(parts) != 3 || parts[1] == "" {
		return nil, false, AuthFailed("Authentication failed: invalid SASL/PLAIN message")
	}
	authz, user, pass := parts[0], parts[1], parts[2]
	if authz != "" && authz != user {
		return nil, false, AuthFailed("Authentication failed: Client requested an authorization id that is different from username")
	}
	if err := CheckPassword(ctx, p.store, user, pass); err != nil {
		if errors.Is(err, ErrBadPassword) {
			return nil, false, AuthFailed("Authentication failed: Invalid username or password")
		}
		return nil, false, authFailedf("Authentication failed: %v", err)
	}
	p.id = &Identity{Principal: "User:" + user}
	return nil, true, nil
}

func (p *plainExchange) Identity() *Identity { return p.id }

// scramExchange is the server side of SCRAM-SHA-256/512 (RFC 5802)
// over the stored credentials. It follows Kafka's ScramSaslServer, which
// accepts a client-final nonce that ends with the server's nonce rather
// than equals it: librdkafka sends its own nonce before the server's full
// one, and Kafka's leniency is what keeps it working. (xdg-go/scram's
// server insists on equality, so it cannot serve librdkafka clients.)
type scramExchange struct {
	mech  string
	h     func() hash.Hash
	store Credentials

	cred        metadata.ScramCredential
	gs2Header   string // as the client sent it, for the channel binding check
	clientBare  string // client-first-message-bare
	serverFirst string
	nonce       string // client nonce + server nonce
	first       bool   // the first message was handled
	done        bool
}

func newScramExchange(store Credentials, mechanism string) (*scramExchange, error) {
	h := scramHash(mechanism)
	if h == nil {
		return nil, fmt.Errorf("unknown SCRAM mechanism %q", mechanism)
	}
	return &scramExchange{mech: mechanism, h: h, store: store}, nil
}

func (e *scramExchange) fail(why string) error {
	return authFailedf("Authentication failed during authentication due to invalid credentials with SASL mechanism %s (%s)", e.mech, why)
}

func (e *scramExchange) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
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

func (e *scramExchange) Identity() *Identity {
	return &Identity{Principal: "User:" + e.cred.User}
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

// Failures counts failed authentications per remote address: past
// FailBurst in a row, an address may not try again until its budget
// refills (FailRate). The zero value is ready.
type Failures struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

// Allow reports whether ip may try to authenticate now.
func (f *Failures) Allow(ip string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.m[ip]
	return !ok || l.Tokens() >= 1
}

// Failed counts a failure of ip.
func (f *Failures) Failed(ip string) {
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
		l = rate.NewLimiter(FailRate, FailBurst)
		f.m[ip] = l
	}
	l.Allow()
}

// Succeeded forgets ip's failures once its budget is whole again.
func (f *Failures) Succeeded(ip string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l, ok := f.m[ip]; ok && l.Tokens() >= FailBurst {
		delete(f.m, ip)
	}
}
