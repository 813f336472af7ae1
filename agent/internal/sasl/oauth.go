package sasl

// SASL/OAUTHBEARER (RFC 7628, KIP-255): the client sends a bearer token,
// a JWT, which is accepted when signed by a key of the configured JSON Web
// Key Set, issued by the configured issuer for the configured audience,
// and not expired (Kafka's OAuthBearerValidatorCallbackHandler checks the
// same). The principal is "User:" + the token's sub claim (or the claim
// SubClaim names), and the session ends when the token expires, so a
// client re-authenticates with a fresh token (KIP-368) or loses the
// connection. The key set is a file, or a URL fetched at start and every
// JWKSRefresh (and again, at most once a minute, when a token names a key
// it does not hold — a rotated key).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// OAuthConfig is how OAUTHBEARER tokens (JWTs) are checked: signed by a
// key of the JWKS, from Issuer, for Audience, not expired.
type OAuthConfig struct {
	// JWKS is a JSON Web Key Set: a file, or an http(s) URL fetched at
	// start and again every JWKSRefresh.
	JWKS        string
	JWKSRefresh time.Duration
	Issuer      string
	Audience    string
	// SubClaim names the claim whose value is the principal's name
	// (Kafka's sasl.oauthbearer.sub.claim.name, "sub").
	SubClaim string
}

// oauthAlgorithms are the signature algorithms tokens may use (no "none",
// no symmetric keys: the key set is public).
var oauthAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// oauthClockSkew is the leeway on exp, nbf and iat (Kafka's
// sasl.oauthbearer.clock.skew.seconds is 30).
const oauthClockSkew = 30 * time.Second

// Verifier checks bearer tokens against the key set.
type Verifier struct {
	cfg  OAuthConfig
	log  *slog.Logger
	http *http.Client

	mu        sync.Mutex
	keys      jose.JSONWebKeySet
	fetchedAt time.Time
}

// NewVerifier loads cfg's key set.
func NewVerifier(ctx context.Context, cfg OAuthConfig, log *slog.Logger) (*Verifier, error) {
	if cfg.SubClaim == "" {
		cfg.SubClaim = "sub"
	}
	if cfg.JWKSRefresh <= 0 {
		cfg.JWKSRefresh = time.Hour
	}
	v := &Verifier{cfg: cfg, log: log, http: &http.Client{Timeout: 10 * time.Second}}
	if err := v.load(ctx); err != nil {
		return nil, err
	}
	return v, nil
}

func (v *Verifier) isURL() bool {
	return strings.HasPrefix(v.cfg.JWKS, "http://") || strings.HasPrefix(v.cfg.JWKS, "https://")
}

// load reads the key set again.
func (v *Verifier) load(ctx context.Context) error {
	var raw []byte
	var err error
	if v.isURL() {
		raw, err = v.fetch(ctx)
	} else {
		raw, err = os.ReadFile(v.cfg.JWKS)
	}
	if err != nil {
		return fmt.Errorf("OAUTHBEARER key set %s: %w", v.cfg.JWKS, err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil {
		return fmt.Errorf("OAUTHBEARER key set %s: %w", v.cfg.JWKS, err)
	}
	v.mu.Lock()
	v.keys, v.fetchedAt = set, time.Now()
	v.mu.Unlock()
	return nil
}

func (v *Verifier) fetch(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKS, nil)
	if err != nil {
		return nil, err
	}
	resp, err := v.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET: %s", resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}

// RefreshLoop fetches a URL key set every JWKSRefresh until ctx ends.
func (v *Verifier) RefreshLoop(ctx context.Context) {
	if !v.isURL() {
		return
	}
	t := time.NewTicker(v.cfg.JWKSRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := v.load(ctx); err != nil {
			v.log.Warn("refreshing the OAUTHBEARER key set failed; keeping the last one", "err", err)
		}
	}
}

// key returns the keys named kid, fetching the set again (at most once a
// minute) when it holds none.
func (v *Verifier) key(ctx context.Context, kid string) []jose.JSONWebKey {
	v.mu.Lock()
	ks, stale := v.keys.Key(kid), time.Since(v.fetchedAt) > time.Minute
	v.mu.Unlock()
	if len(ks) > 0 || !stale || !v.isURL() {
		return ks
	}
	if err := v.load(ctx); err != nil {
		v.log.Warn("refreshing the OAUTHBEARER key set failed", "err", err)
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.keys.Key(kid)
}

// Verify checks a token and returns who it names and until when.
func (v *Verifier) Verify(ctx context.Context, token string) (*Identity, error) {
	tok, err := jwt.ParseSigned(token, oauthAlgorithms)
	if err != nil {
		return nil, fmt.Errorf("malformed token: %w", err)
	}
	if len(tok.Headers) != 1 {
		return nil, errors.New("token has no single signature")
	}
	var std jwt.Claims
	var all map[string]any
	var verified bool
	for _, k := range v.key(ctx, tok.Headers[0].KeyID) {
		if err := tok.Claims(k.Key, &std, &all); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, errors.New("token not signed by a key of the key set")
	}
	exp := jwt.Expected{Issuer: v.cfg.Issuer, Time: time.Now()}
	if v.cfg.Audience != "" {
		exp.AnyAudience = jwt.Audience{v.cfg.Audience}
	}
	if err := std.ValidateWithLeeway(exp, oauthClockSkew); err != nil {
		return nil, err
	}
	if std.Expiry == nil {
		return nil, errors.New("token has no exp claim")
	}
	sub, _ := all[v.cfg.SubClaim].(string)
	if sub == "" {
		return nil, fmt.Errorf("token has no %s claim", v.cfg.SubClaim)
	}
	return &Identity{Principal: "User:" + sub, Expires: std.Expiry.Time()}, nil
}

// oauthExchange is one OAUTHBEARER run: a single client message.
type oauthExchange struct {
	v  *Verifier
	id *Identity
}

func (e *oauthExchange) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	token, err := bearerToken(msg)
	if err != nil {
		return nil, false, authFailedf("Authentication failed: %v", err)
	}
	id, err := e.v.Verify(ctx, token)
	if err != nil {
		return nil, false, authFailedf("Authentication failed: invalid token: %v", err)
	}
	e.id = id
	return nil, true, nil
}

func (e *oauthExchange) Identity() *Identity { return e.id }

// bearerToken is the token of an OAUTHBEARER client message:
// gs2-header, then \x01-separated key=value pairs (auth=Bearer <token>,
// extensions), ended by \x01\x01.
func bearerToken(msg []byte) (string, error) {
	s := string(msg)
	if !strings.HasPrefix(s, "n,") && !strings.HasPrefix(s, "y,") {
		return "", errors.New("malformed OAUTHBEARER message (gs2 header)")
	}
	_, kvs, ok := strings.Cut(s, "\x01")
	if !ok || !strings.HasSuffix(kvs, "\x01\x01") {
		return "", errors.New("malformed OAUTHBEARER message")
	}
	for _, kv := range strings.Split(strings.TrimSuffix(kvs, "\x01\x01"), "\x01") {
		if v, ok := strings.CutPrefix(kv, "auth="); ok {
			scheme, token, ok := strings.Cut(v, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
				return "", errors.New("malformed OAUTHBEARER auth value")
			}
			return token, nil
		}
	}
	return "", errors.New("OAUTHBEARER message without auth")
}
