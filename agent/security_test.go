package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	floesasl "floe/agent/internal/sasl"
	"floe/internal/testpki"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate (CN=alice,O=floe), as PEM files.
type testPKI struct {
	*testpki.CA
	certFile, keyFile string
	clientPair        tls.Certificate
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{CA: testpki.NewCA(t, t.TempDir(), "floe test CA")}
	p.certFile, p.keyFile = p.Issue(t, "server", 2, pkix.Name{CommonName: "127.0.0.1"}, x509.ExtKeyUsageServerAuth)
	_, _, p.clientPair = p.IssuePair(t, "client", pkix.Name{CommonName: "alice", Organization: []string{"floe"}}, x509.ExtKeyUsageClientAuth)
	return p
}

func (p *testPKI) clientTLS(withCert bool) *tls.Config {
	if withCert {
		return p.ClientConfig(&p.clientPair)
	}
	return p.ClientConfig(nil)
}

func newTestIssuer(t *testing.T) *testpki.Issuer { return testpki.NewIssuer(t, t.TempDir()) }

// secureAgent has one listener of each protocol, SCRAM users alice and bob
// and OAUTHBEARER tokens from issuer.
type secureAgent struct {
	*testAgent
	pki    *testPKI
	issuer *testpki.Issuer
}

func newSecureAgent(t *testing.T, opts ...func(*Config)) *secureAgent {
	t.Helper()
	pki, issuer := newTestPKI(t), newTestIssuer(t)
	ta := newTestAgent(t, nil, append([]func(*Config){func(c *Config) {
		c.Listeners = []Listener{
			{Name: "PLAINTEXT", Protocol: ProtocolPlaintext, Addr: "127.0.0.1:0"},
			{Name: "SASL_PLAINTEXT", Protocol: ProtocolSASLPlaintext, Addr: "127.0.0.1:0"},
			{Name: "SSL", Protocol: ProtocolSSL, Addr: "127.0.0.1:0"},
			{Name: "SASL_SSL", Protocol: ProtocolSASLSSL, Addr: "127.0.0.1:0"},
		}
		c.Security = SecurityConfig{TLSCert: pki.certFile, TLSKey: pki.keyFile, TLSClientCA: pki.File,
			ClientAuth:     ClientAuthRequested,
			SASLMechanisms: []string{ScramSHA256, ScramSHA512, MechanismPlain, MechanismOAuthBearer},
			OAuth:          OAuthConfig{JWKS: issuer.JWKS, Issuer: "https://issuer.test", Audience: "floe"}}
	}}, opts...)...)
	ctx := context.Background()
	for _, u := range []string{"alice", "bob"} {
		for _, m := range []string{ScramSHA256, ScramSHA512} {
			c, err := NewScramCredential(u, m, u+"-secret", 4096)
			if err != nil {
				t.Fatal(err)
			}
			if err := ta.store.UpsertScramCredential(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	return &secureAgent{testAgent: ta, pki: pki, issuer: issuer}
}

func (sa *secureAgent) addr(t *testing.T, listener string) string {
	t.Helper()
	addr, err := sa.listenerAddr(listener)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// principals are the principals of the agent's open connections.
func (sa *secureAgent) principals() map[string]bool {
	out := map[string]bool{}
	sa.connMu.Lock()
	defer sa.connMu.Unlock()
	for c := range sa.conns {
		out[c.principal()] = true
	}
	return out
}

func roundTrip(t *testing.T, ctx context.Context, opts ...kgo.Opt) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.RequestRetries(0),
		kgo.RecordRetries(1), kgo.RetryTimeout(time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// A bare request fails at once when the authentication does (a
	// produce would wait for metadata refreshes first).
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		return err
	}
	return cl.ProduceSync(ctx, &kgo.Record{Topic: "sec", Value: []byte("v")}).FirstErr()
}

// TestSASLMechanisms: every mechanism authenticates the right credentials
// and refuses wrong ones with SASL_AUTHENTICATION_FAILED, on the SASL
// listeners in plaintext and over TLS.
func TestSASLMechanisms(t *testing.T) {
	t.Parallel()
	sa := newSecureAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	good := map[string]sasl.Mechanism{
		"SCRAM-SHA-256": scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(),
		"SCRAM-SHA-512": scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(),
		"PLAIN":         plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		"OAUTHBEARER":   oauth.Auth{Token: sa.issuer.Token(t, "alice", "https://issuer.test", "floe", time.Hour)}.AsMechanism(),
	}
	bad := map[string]sasl.Mechanism{
		"SCRAM-SHA-256 wrong password": scram.Auth{User: "alice", Pass: "bob-secret"}.AsSha256Mechanism(),
		"SCRAM-SHA-512 unknown user":   scram.Auth{User: "carol", Pass: "x"}.AsSha512Mechanism(),
		"PLAIN wrong password":         plain.Auth{User: "bob", Pass: "alice-secret"}.AsMechanism(),
		"OAUTHBEARER wrong audience":   oauth.Auth{Token: sa.issuer.Token(t, "alice", "https://issuer.test", "other", time.Hour)}.AsMechanism(),
		"OAUTHBEARER wrong issuer":     oauth.Auth{Token: sa.issuer.Token(t, "alice", "https://evil.test", "floe", time.Hour)}.AsMechanism(),
		"OAUTHBEARER expired":          oauth.Auth{Token: sa.issuer.Token(t, "alice", "https://issuer.test", "floe", -time.Hour)}.AsMechanism(),
		"OAUTHBEARER forged":           oauth.Auth{Token: newTestIssuer(t).Token(t, "alice", "https://issuer.test", "floe", time.Hour)}.AsMechanism(),
	}
	src := 1
	for _, l := range []struct {
		name string
		tls  *tls.Config
	}{{"SASL_PLAINTEXT", nil}, {"SASL_SSL", sa.pki.clientTLS(false)}} {
		opts := []kgo.Opt{kgo.SeedBrokers(sa.addr(t, l.name))}
		dial := fromLoopback(0, l.tls)
		for name, m := range good {
			if err := roundTrip(t, ctx, append(opts, kgo.SASL(m), dial)...); err != nil {
				t.Errorf("%s on %s: %v", name, l.name, err)
			}
		}
		for name, m := range bad {
			// Each from an address of its own, so that the failures do
			// not add up to the per-address limit.
			src++
			err := roundTrip(t, ctx, append(opts, kgo.SASL(m), fromLoopback(src, l.tls))...)
			if !errorsIsCode(err, kerr.SaslAuthenticationFailed) {
				t.Errorf("%s on %s: %v, want SASL_AUTHENTICATION_FAILED", name, l.name, err)
			}
		}
		if err := roundTrip(t, ctx, append(opts, dial)...); err == nil {
			t.Errorf("no authentication on %s: produce succeeded", l.name)
		}
	}
	if n := counterValue(t, sa.metrics.authFailures.WithLabelValues(ScramSHA256)); n < 2 {
		t.Errorf("SCRAM-SHA-256 failures counted: %v", n)
	}
}

func errorsIsCode(err error, code *kerr.Error) bool {
	return err != nil && (strings.Contains(err.Error(), code.Message) || strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED"))
}

// TestSASLListenerRefusesRequestsBeforeAuthentication: before the SASL
// exchange only ApiVersions is answered; any other request closes the
// connection unanswered.
func TestSASLListenerRefusesRequestsBeforeAuthentication(t *testing.T) {
	t.Parallel()
	sa := newSecureAgent(t)
	rc := dialRawAddr(t, sa.addr(t, "SASL_PLAINTEXT"))
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raw", "1"
	rc.roundTrip(av)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	if _, err := rc.try(md); err == nil {
		t.Fatal("Metadata before authentication was answered; want the connection closed")
	}
}

// TestListenersAdvertiseThemselves: Metadata names the brokers at the
// address of the listener the client came in on.
func TestListenersAdvertiseThemselves(t *testing.T) {
	t.Parallel()
	sa := newSecureAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, l := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"PLAINTEXT", nil},
		{"SASL_PLAINTEXT", []kgo.Opt{kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism())}},
		{"SSL", []kgo.Opt{kgo.DialTLSConfig(sa.pki.clientTLS(true))}},
	} {
		cl, err := kgo.NewClient(append(l.opts, kgo.SeedBrokers(sa.addr(t, l.name)))...)
		if err != nil {
			t.Fatal(err)
		}
		md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
		cl.Close()
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		if len(md.Brokers) != 1 || net.JoinHostPort(md.Brokers[0].Host, itoa(md.Brokers[0].Port)) != sa.addr(t, l.name) {
			t.Fatalf("%s: brokers %+v, want %s", l.name, md.Brokers, sa.addr(t, l.name))
		}
	}
}

// TestMutualTLS: on the SSL listener a verified client certificate makes
// the principal its subject; a certificate from another CA is refused.
func TestMutualTLS(t *testing.T) {
	t.Parallel()
	sa := newSecureAgent(t, func(c *Config) { c.Security.ClientAuth = ClientAuthRequired })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(sa.addr(t, "SSL")), kgo.DialTLSConfig(sa.pki.clientTLS(true)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if p := sa.principals(); !p["User:CN=alice,O=floe"] {
		t.Fatalf("principals %v, want User:CN=alice,O=floe", p)
	}
	if err := roundTrip(t, ctx, kgo.SeedBrokers(sa.addr(t, "SSL")), kgo.DialTLSConfig(sa.pki.clientTLS(false))); err == nil {
		t.Fatal("a client without a certificate got in with ssl.client.auth=required")
	}
	// SASL_SSL asks for no certificate: the client authenticates with SASL.
	if err := roundTrip(t, ctx, kgo.SeedBrokers(sa.addr(t, "SASL_SSL")), kgo.DialTLSConfig(sa.pki.clientTLS(false)),
		kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism())); err != nil {
		t.Fatalf("SASL_SSL without a client certificate under ssl.client.auth=required: %v", err)
	}
	other := newTestPKI(t)
	cfg := sa.pki.clientTLS(false)
	cfg.Certificates = []tls.Certificate{other.clientPair}
	if err := roundTrip(t, ctx, kgo.SeedBrokers(sa.addr(t, "SSL")), kgo.DialTLSConfig(cfg)); err == nil {
		t.Fatal("a client certificate of another CA was accepted")
	}
}

// TestTLSCertificateReload: a renewed certificate is served to new
// connections without a restart.
func TestTLSCertificateReload(t *testing.T) {
	t.Parallel()
	sa := newSecureAgent(t)
	serial := func() int64 {
		t.Helper()
		c, err := tls.Dial("tcp", sa.addr(t, "SSL"), sa.pki.clientTLS(true))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	if s := serial(); s != 2 {
		t.Fatalf("serial %d, want 2", s)
	}
	// Renew in place (same file names), as cert-manager does.
	sa.pki.Issue(t, "server", 42, pkix.Name{CommonName: "127.0.0.1"}, x509.ExtKeyUsageServerAuth)
	deadline := time.Now().Add(10 * time.Second)
	for serial() != 42 {
		if time.Now().After(deadline) {
			t.Fatal("the renewed certificate was not served within 10s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReauthentication: with a session lifetime, franz-go re-authenticates
// on its connections and keeps working; a connection that does not is
// closed at its first request after the session ended.
func TestReauthentication(t *testing.T) {
	t.Parallel()
	sa := newSecureAgent(t, func(c *Config) { c.Security.SessionLifetime = time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(sa.addr(t, "SASL_PLAINTEXT")), kgo.AllowAutoTopicCreation(),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 12 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "reauth", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("produce %d across re-authentications: %v", i, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if n := counterValue(t, sa.metrics.authSuccesses.WithLabelValues(ScramSHA256)); n < 3 {
		t.Fatalf("%v authentications in 3 s with a 1 s session; want re-authentications", n)
	}

	// A client that never renews: authenticate by hand, wait, ask.
	rc := dialRawAddr(t, sa.addr(t, "SASL_PLAINTEXT"))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, MechanismPlain
	rc.roundTrip(hs)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 1, []byte("\x00bob\x00bob-secret")
	resp := rc.roundTrip(auth).(*kmsg.SASLAuthenticateResponse)
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis <= 0 || resp.SessionLifetimeMillis > 1000 {
		t.Fatalf("SaslAuthenticate = %+v, want success with a session of at most 1 s", resp)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	rc.roundTrip(md) // within the session
	time.Sleep(1200 * time.Millisecond)
	if _, err := rc.try(md); err == nil {
		t.Fatal("a request after the session ended was answered")
	}
}

// TestSASLHandshakeV0RawTokens: after a v0 handshake the SASL tokens come
// bare, without Kafka headers, as old clients send them.
func TestSASLHandshakeV0RawTokens(t *testing.T) {
	t.Parallel()
	sa := newSecureAgent(t)
	rc := dialRawAddr(t, sa.addr(t, "SASL_PLAINTEXT"))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 0, MechanismPlain
	if r := rc.roundTrip(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("handshake: %+v", r)
	}
	if answer := rc.rawToken([]byte("\x00alice\x00alice-secret")); len(answer) != 0 {
		t.Fatalf("PLAIN v0 answer %q, want empty", answer)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	if r := rc.roundTrip(md).(*kmsg.MetadataResponse); len(r.Brokers) != 1 {
		t.Fatalf("Metadata after v0 authentication: %+v", r)
	}
	if p := sa.principals(); !p["User:alice"] {
		t.Fatalf("principals %v, want User:alice", p)
	}
}

// TestFailedAuthenticationsRateLimited: past the burst of failures from
// one address, even the right password is refused for a while.
func TestFailedAuthenticationsRateLimited(t *testing.T) {
	t.Parallel()
	sa := newSecureAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for range floesasl.FailBurst {
		roundTrip(t, ctx, kgo.SeedBrokers(sa.addr(t, "SASL_PLAINTEXT")), kgo.SASL(plain.Auth{User: "alice", Pass: "guess"}.AsMechanism()))
	}
	err := roundTrip(t, ctx, kgo.SeedBrokers(sa.addr(t, "SASL_PLAINTEXT")), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err == nil || !strings.Contains(err.Error(), "too many failed authentications") {
		t.Fatalf("right password right after %d failures: %v, want refused", floesasl.FailBurst, err)
	}
	if n := counterValue(t, sa.metrics.limitHits.WithLabelValues("sasl.failed.authentications")); n < 1 {
		t.Fatalf("limit hits %v", n)
	}
}

// TestUserScramCredentialsAPIs: AlterUserScramCredentials creates a user
// who can then authenticate, DescribeUserScramCredentials lists it, and
// both refuse what Kafka refuses.
func TestUserScramCredentialsAPIs(t *testing.T) {
	t.Parallel()
	sa := newSecureAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(sa.addr(t, "PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "carol-secret"},
	})
	if err != nil || res["carol"].Err != nil {
		t.Fatalf("alter results %+v %v", res, err)
	}
	// What kadm would refuse to send: too few iterations, an unknown
	// mechanism, a user altered twice.
	raw := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, u := range []struct {
		name  string
		mech  int8
		iters int32
	}{{"dave", 1, 100}, {"erin", 9, 8192}, {"frank", 1, 8192}, {"frank", 2, 8192}} {
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = u.name, u.mech, u.iters, []byte("salt"), []byte("salted")
		raw.Upsertions = append(raw.Upsertions, up)
	}
	rr, err := raw.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int16{"dave": kerr.UnacceptableCredential.Code, "erin": kerr.UnsupportedSaslMechanism.Code, "frank": kerr.DuplicateResource.Code}
	if len(rr.Results) != len(want) {
		t.Fatalf("alter results %+v, want one per user", rr.Results)
	}
	for _, r := range rr.Results {
		if r.ErrorCode != want[r.User] {
			t.Errorf("alter %s: error %d, want %d", r.User, r.ErrorCode, want[r.User])
		}
	}
	if err := roundTrip(t, ctx, kgo.SeedBrokers(sa.addr(t, "SASL_PLAINTEXT")),
		kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism())); err != nil {
		t.Fatalf("the new user cannot authenticate: %v", err)
	}
	desc, err := adm.DescribeUserSCRAMs(ctx, "carol", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if c := desc["carol"]; c.Err != nil || len(c.CredInfos) != 1 || c.CredInfos[0].Mechanism != kadm.ScramSha512 || c.CredInfos[0].Iterations != 8192 {
		t.Fatalf("describe carol: %+v", c)
	}
	if !strings.Contains(errString(desc["nobody"].Err), "RESOURCE_NOT_FOUND") {
		t.Fatalf("describe nobody: %+v", desc["nobody"])
	}
	all, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil || len(all) != 3 {
		t.Fatalf("describe all: %v %v, want alice, bob and carol", all, err)
	}
	del, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha512}, {User: "erin", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || del["carol"].Err != nil || !strings.Contains(errString(del["erin"].Err), "RESOURCE_NOT_FOUND") {
		t.Fatalf("delete results %+v %v", del, err)
	}
	if err := roundTrip(t, ctx, kgo.SeedBrokers(sa.addr(t, "SASL_PLAINTEXT")),
		kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism())); err == nil {
		t.Fatal("a deleted user still authenticates")
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// fromLoopback makes a client dial from 127.0.0.n (every 127/8 address
// is the loopback interface), to look like another host.
func fromLoopback(n int, tlsCfg *tls.Config) kgo.Opt {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, byte(n/250), byte(2+n%250))}, Timeout: 5 * time.Second}
	if tlsCfg == nil {
		return kgo.Dialer(d.DialContext)
	}
	td := &tls.Dialer{NetDialer: d, Config: tlsCfg}
	return kgo.Dialer(td.DialContext)
}

// TestHTTPEndpointsTakeKafkaCredentials: with SASL on, the mounted HTTP
// handlers take a SCRAM user's password (Basic) or an OAUTHBEARER token
// (Bearer) and refuse the rest with 401; the probes and /metrics stay open.
func TestHTTPEndpointsTakeKafkaCredentials(t *testing.T) {
	t.Parallel()
	var seen []string
	sa := newSecureAgent(t, func(c *Config) {
		c.HTTPHandlers = map[string]http.Handler{"/iceberg/": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen = append(seen, HTTPPrincipal(r.Context()))
			w.Write([]byte("catalog\n"))
		})}
	})
	get := func(path string, auth func(*http.Request)) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+sa.HTTPAddr()+path, nil)
		if auth != nil {
			auth(req)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	basic := func(u, p string) func(*http.Request) { return func(r *http.Request) { r.SetBasicAuth(u, p) } }
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	for _, tc := range []struct {
		what string
		path string
		auth func(*http.Request)
		want int
	}{
		{"metrics open", "/metrics", nil, 200},
		{"healthz open", "/healthz", nil, 200},
		{"catalog without credentials", "/iceberg/v1/config", nil, 401},
		{"catalog with a wrong password", "/iceberg/v1/config", basic("alice", "bob-secret"), 401},
		{"catalog with a forged token", "/iceberg/v1/config", bearer(newTestIssuer(t).Token(t, "alice", "https://issuer.test", "floe", time.Hour)), 401},
		{"catalog with a password", "/iceberg/v1/config", basic("alice", "alice-secret"), 200},
		{"catalog with a token", "/iceberg/v1/config", bearer(sa.issuer.Token(t, "bob", "https://issuer.test", "floe", time.Hour)), 200},
	} {
		if got := get(tc.path, tc.auth); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.what, got, tc.want)
		}
	}
	if strings.Join(seen, ",") != "User:alice,User:bob" {
		t.Fatalf("the catalog saw principals %v, want User:alice then User:bob", seen)
	}
}

// listenerAddr is the bound address of the named listener (after Start).
func (a *Agent) listenerAddr(name string) (string, error) {
	for _, l := range a.lns {
		if l.cfg.Name == name {
			return l.ln.Addr().String(), nil
		}
	}
	return "", fmt.Errorf("no listener named %s", name)
}
