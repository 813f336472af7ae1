package integration

// TLS, mutual TLS and SASL against real clients: one `floe dev` with a
// listener of each security protocol, users made with the real `floe user
// add`, certificates and a JWKS made here; then franz-go, sarama, kcat
// (librdkafka) and kafkajs each authenticate with every mechanism they
// have, produce and read back, and are refused with their own
// authentication error when a credential is wrong.
//
// floe refuses an address's logins for a while after 10 failures from it
// (agent/sasl.go), so each refused attempt comes from a loopback address
// of its own (127.0.0.N, all of 127/8 is on lo), except kcat's: librdkafka
// cannot choose its source address, and its few refusals stay under 10.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xdgscram "github.com/xdg-go/scram"

	"floe/internal/testpki"
)

const (
	secUser, secPass   = "alice", "alice-secret"
	secUser2, secPass2 = "bob", "bob-secret" // added while floe runs
	secIssuer          = "https://issuer.floe.test"
	secAudience        = "floe"
	secRecords         = 3
)

// secPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate as PEM files, and a client certificate of another CA.
type secPKI struct {
	*testpki.CA
	cert, key               string // server side
	clientCert, clientKey   string
	clientPair, foreignPair tls.Certificate
}

func newSecPKI(t *testing.T) *secPKI {
	t.Helper()
	p := &secPKI{CA: testpki.NewCA(t, t.TempDir(), "floe test CA")}
	p.cert, p.key = p.Issue(t, "server", 0, pkix.Name{CommonName: "127.0.0.1"}, x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey, p.clientPair = p.IssuePair(t, "client", pkix.Name{CommonName: "alice", Organization: []string{"floe"}}, x509.ExtKeyUsageClientAuth)
	other := testpki.NewCA(t, p.Dir, "someone else's CA")
	_, _, p.foreignPair = other.IssuePair(t, "foreign", pkix.Name{CommonName: "mallory"}, x509.ExtKeyUsageClientAuth)
	return p
}

// tlsConfig trusts the test CA and presents cert, if any.
func (p *secPKI) tlsConfig(cert *tls.Certificate) *tls.Config { return p.ClientConfig(cert) }

// secIssuerKeys signs tokens from secIssuer.
type secIssuerKeys struct{ *testpki.Issuer }

func newSecIssuer(t *testing.T, dir string) *secIssuerKeys {
	return &secIssuerKeys{testpki.NewIssuer(t, dir)}
}

func (is *secIssuerKeys) token(t testing.TB, sub, aud string, ttl time.Duration) string {
	return is.Token(t, sub, secIssuer, aud, ttl)
}

// secDev is the floe dev process with its four listeners.
type secDev struct {
	p                                  *proc
	plaintext, saslPlain, ssl, saslSSL string
	pki                                *secPKI
	issuer                             *secIssuerKeys
	admin                              *kgo.Client
	src                                atomic.Int32
}

// floeUserAdd runs the real `floe user add NAME --password-stdin`.
func floeUserAdd(t *testing.T, metaURL, user, password string) {
	t.Helper()
	cmd := exec.Command(floeBin, "user", "add", user, "--metadata", metaURL, "--password-stdin")
	cmd.Stdin = strings.NewReader(password + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "user "+user+": SCRAM-SHA-256, SCRAM-SHA-512") {
		t.Fatalf("floe user add %s: %v\n%s", user, err, out)
	}
}

func startSecDev(t *testing.T) *secDev {
	t.Helper()
	d := &secDev{pki: newSecPKI(t)}
	d.issuer = newSecIssuer(t, d.pki.Dir)
	data := t.TempDir()
	metaURL := "sqlite://" + filepath.Join(data, "meta.db")
	floeUserAdd(t, metaURL, secUser, secPass) // before the first start: no agent needed
	port := func() string { return fmt.Sprintf("127.0.0.1:%d", freePort(t)) }
	d.plaintext, d.saslPlain, d.ssl, d.saslSSL = port(), port(), port(), port()
	d.p = startFloe(t, "dev", "--data-dir", data,
		"--listeners", fmt.Sprintf("PLAINTEXT://%s,SASL_PLAINTEXT://%s,SSL://%s,SASL_SSL://%s", d.plaintext, d.saslPlain, d.ssl, d.saslSSL),
		"--tls-cert", d.pki.cert, "--tls-key", d.pki.key, "--tls-client-ca", d.pki.File, "--tls-client-auth", "required",
		"--sasl-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN,OAUTHBEARER",
		"--oauth-jwks", d.issuer.JWKS, "--oauth-issuer", secIssuer, "--oauth-audience", secAudience,
		"--log-level", "debug") // for the principals of "SASL authenticated"
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("floe log:\n%s", d.p.Log())
		}
	})
	floeUserAdd(t, metaURL, secUser2, secPass2) // and one while it runs
	d.admin = newKgo(t, kgo.SeedBrokers(d.plaintext))
	return d
}

// source is a loopback address no earlier refusal came from.
func (d *secDev) source() string {
	return fmt.Sprintf("127.0.0.%d", 10+d.src.Add(1))
}

// topic creates a topic of one partition through the PLAINTEXT listener.
func (d *secDev) topic(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	createTopic(t, ctx, d.admin, name, 1, nil)
	return name
}

// secWant is what every client must read back of the records tag wrote.
func secWant(tag string) []string {
	var out []string
	for i := range secRecords {
		out = append(out, fmt.Sprintf("%d %s-k%d=%s-v%d h=%s-h%d", i, tag, i, tag, i, tag, i))
	}
	return out
}

func secCheck(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s read:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSecurity: every client × mechanism × listener cell, each refusal.
func TestSecurity(t *testing.T) {
	d := startSecDev(t)
	t.Run("franz-go", func(t *testing.T) { secFranz(t, d) })
	t.Run("sarama", func(t *testing.T) { secSarama(t, d) })
	t.Run("kcat", func(t *testing.T) { secKcat(t, d) })
	t.Run("kafkajs", func(t *testing.T) { secKafkajs(t, d) })
	t.Run("principals", func(t *testing.T) {
		// A SCRAM or PLAIN session is its user's, an OAUTHBEARER one its
		// token's sub.
		sessions := map[string]bool{}
		for l := range strings.Lines(d.p.Log()) {
			if _, rest, ok := strings.Cut(l, `msg="SASL authenticated"`); ok {
				_, session, _ := strings.Cut(rest, "mechanism=")
				sessions["mechanism="+strings.TrimSpace(session)] = true
			}
		}
		for _, want := range []string{
			"mechanism=SCRAM-SHA-256 principal=User:" + secUser, "mechanism=SCRAM-SHA-512 principal=User:" + secUser2,
			"mechanism=PLAIN principal=User:" + secUser2, "mechanism=OAUTHBEARER principal=User:franz",
			"mechanism=OAUTHBEARER principal=User:sarama", "mechanism=OAUTHBEARER principal=User:kafkajs",
		} {
			if !sessions[want] {
				t.Errorf("floe logged no SASL session with %s; it logged %v", want, sessions)
			}
		}
	})
}

// --- franz-go ---

// kgoDialer dials from src (any loopback address when empty), with TLS
// when cfg is set.
func kgoDialer(src string, cfg *tls.Config) kgo.Opt {
	nd := &net.Dialer{Timeout: 5 * time.Second}
	if src != "" {
		nd.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	if cfg == nil {
		return kgo.Dialer(nd.DialContext)
	}
	td := &tls.Dialer{NetDialer: nd, Config: cfg}
	return kgo.Dialer(td.DialContext)
}

// franzRoundTrip produces the records of tag and reads them back with a
// second client of the same options.
func franzRoundTrip(t *testing.T, ctx context.Context, d *secDev, tag string, opts ...kgo.Opt) {
	t.Helper()
	topic := d.topic(t, ctx, "sec-franz-"+tag)
	pr := newKgo(t, append(opts, kgo.DefaultProduceTopic(topic))...)
	for i := range secRecords {
		r := &kgo.Record{Key: fmt.Appendf(nil, "%s-k%d", tag, i), Value: fmt.Appendf(nil, "%s-v%d", tag, i),
			Headers: []kgo.RecordHeader{{Key: "h", Value: fmt.Appendf(nil, "%s-h%d", tag, i)}}}
		if err := pr.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	co := newKgo(t, append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))...)
	var got []string
	for len(got) < secRecords && ctx.Err() == nil {
		fs := co.PollFetches(ctx)
		if err := fs.Err0(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("fetch: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			h := ""
			for _, x := range r.Headers {
				h += x.Key + "=" + string(x.Value)
			}
			got = append(got, fmt.Sprintf("%d %s=%s %s", r.Offset, r.Key, r.Value, h))
		})
	}
	secCheck(t, "franz-go consumer of "+topic, got, secWant(tag))
}

// franzRefused asks for Metadata with opts and returns how long the
// answer took and the error.
func franzRefused(t *testing.T, ctx context.Context, opts ...kgo.Opt) (time.Duration, error) {
	t.Helper()
	cl := newKgo(t, append(opts, kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))...)
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	start := time.Now()
	_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	return time.Since(start), err
}

func secFranz(t *testing.T, d *secDev) {
	ctx := testContext(t, time.Minute)
	type cell struct {
		name string
		m    sasl.Mechanism
	}
	good := []cell{
		{"SCRAM-SHA-256", scram.Auth{User: secUser, Pass: secPass}.AsSha256Mechanism()},
		{"SCRAM-SHA-512", scram.Auth{User: secUser2, Pass: secPass2}.AsSha512Mechanism()},
		{"PLAIN", plain.Auth{User: secUser, Pass: secPass}.AsMechanism()},
		{"OAUTHBEARER", oauth.Auth{Token: d.issuer.token(t, "franz", secAudience, time.Hour)}.AsMechanism()},
	}
	bad := []cell{
		{"SCRAM-SHA-256 wrong password", scram.Auth{User: secUser, Pass: secPass2}.AsSha256Mechanism()},
		{"SCRAM-SHA-512 unknown user", scram.Auth{User: "carol", Pass: secPass}.AsSha512Mechanism()},
		{"PLAIN wrong password", plain.Auth{User: secUser2, Pass: secPass}.AsMechanism()},
		{"OAUTHBEARER wrong audience", oauth.Auth{Token: d.issuer.token(t, "franz", "other", time.Hour)}.AsMechanism()},
		{"OAUTHBEARER expired", oauth.Auth{Token: d.issuer.token(t, "franz", secAudience, -time.Minute)}.AsMechanism()},
	}
	// --tls-client-auth applies to the SASL_SSL listener too, so its
	// clients present a certificate as well.
	for _, l := range []struct {
		name, addr string
		tls        *tls.Config
	}{{"SASL_PLAINTEXT", d.saslPlain, nil}, {"SASL_SSL", d.saslSSL, d.pki.tlsConfig(&d.pki.clientPair)}} {
		for _, g := range good {
			t.Run(l.name+"/"+g.name, func(t *testing.T) {
				tag := strings.ToLower(strings.ReplaceAll(l.name+"-"+g.name, "_", "-"))
				franzRoundTrip(t, ctx, d, tag, kgo.SeedBrokers(l.addr), kgo.SASL(g.m), kgoDialer("", l.tls))
			})
		}
		for _, b := range bad {
			t.Run(l.name+"/refused/"+b.name, func(t *testing.T) {
				took, err := franzRefused(t, ctx, kgo.SeedBrokers(l.addr), kgo.SASL(b.m), kgoDialer(d.source(), l.tls))
				if !errors.Is(err, kerr.SaslAuthenticationFailed) || took > 5*time.Second {
					t.Fatalf("got %v after %s, want SASL_AUTHENTICATION_FAILED at once", err, took)
				}
			})
		}
		t.Run(l.name+"/refused/no SASL", func(t *testing.T) {
			// ApiVersions is answered, Metadata closes the connection.
			if _, err := franzRefused(t, ctx, kgo.SeedBrokers(l.addr), kgoDialer("", l.tls)); err == nil {
				t.Fatal("Metadata without authentication was answered")
			}
		})
	}
	t.Run("SSL/mTLS", func(t *testing.T) {
		franzRoundTrip(t, ctx, d, "ssl-mtls", kgo.SeedBrokers(d.ssl), kgoDialer("", d.pki.tlsConfig(&d.pki.clientPair)))
	})
	t.Run("SSL/refused/no client certificate", func(t *testing.T) {
		_, err := franzRefused(t, ctx, kgo.SeedBrokers(d.ssl), kgoDialer("", d.pki.tlsConfig(nil)))
		if err == nil || !strings.Contains(err.Error(), "certificate required") {
			t.Fatalf("got %v, want the TLS alert certificate required", err)
		}
	})
	t.Run("SSL/refused/certificate of another CA", func(t *testing.T) {
		// crypto/tls would not send a certificate that chains to none of
		// the CAs floe names in its request: force it.
		cfg := d.pki.tlsConfig(nil)
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &d.pki.foreignPair, nil }
		_, err := franzRefused(t, ctx, kgo.SeedBrokers(d.ssl), kgoDialer("", cfg))
		if err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
			t.Fatalf("got %v, want the TLS alert unknown certificate authority", err)
		}
	})
	t.Run("SSL/refused/untrusted server", func(t *testing.T) {
		cfg := d.pki.tlsConfig(&d.pki.clientPair)
		cfg.RootCAs = nil
		_, err := franzRefused(t, ctx, kgo.SeedBrokers(d.ssl), kgoDialer("", cfg))
		var uerr x509.UnknownAuthorityError
		if !errors.As(err, &uerr) {
			t.Fatalf("got %v, want the client to refuse floe's certificate", err)
		}
	})
}

// --- sarama ---

// saramaSCRAM is sarama's SCRAMClient on xdg-go/scram.
type saramaSCRAM struct {
	hash xdgscram.HashGeneratorFcn
	conv *xdgscram.ClientConversation
}

func (s *saramaSCRAM) Begin(user, password, authzID string) error {
	c, err := s.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	s.conv = c.NewConversation()
	return nil
}

func (s *saramaSCRAM) Step(challenge string) (string, error) { return s.conv.Step(challenge) }
func (s *saramaSCRAM) Done() bool                            { return s.conv.Done() }

// saramaToken is a fixed OAUTHBEARER token.
type saramaToken string

func (s saramaToken) Token() (*sarama.AccessToken, error) {
	return &sarama.AccessToken{Token: string(s)}, nil
}

// saramaSASL is the SASL part of a sarama configuration: mech is sarama's
// mechanism name, secret the password or the token.
func saramaSASL(cfg *sarama.Config, mech sarama.SASLMechanism, version int16, user, secret string) {
	s := &cfg.Net.SASL
	s.Enable, s.Handshake, s.Mechanism, s.Version = true, true, mech, version
	// sarama sends no ApiVersions before a v0 handshake, as the clients
	// of Kafka 0.10.0 did (the raw tokens come right after it).
	cfg.ApiVersionsRequest = version != sarama.SASLHandshakeV0
	switch mech {
	case sarama.SASLTypeOAuth:
		s.TokenProvider = saramaToken(secret)
	case sarama.SASLTypeSCRAMSHA256:
		s.User, s.Password = user, secret
		s.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: xdgscram.SHA256} }
	case sarama.SASLTypeSCRAMSHA512:
		s.User, s.Password = user, secret
		s.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: xdgscram.SHA512} }
	default:
		s.User, s.Password = user, secret
	}
}

func saramaSecConfig(tlsCfg *tls.Config) *sarama.Config {
	cfg := saramaConfig(sarama.V2_8_0_0)
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Metadata.Retry.Max = 0
	if tlsCfg != nil {
		cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, tlsCfg
	}
	return cfg
}

func saramaRoundTrip(t *testing.T, ctx context.Context, d *secDev, tag, addr string, cfg *sarama.Config) {
	t.Helper()
	topic := d.topic(t, ctx, "sec-sarama-"+tag)
	cl, err := sarama.NewClient([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pr, err := sarama.NewSyncProducerFromClient(cl)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	for i := range secRecords {
		_, _, err := pr.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0,
			Key: sarama.StringEncoder(fmt.Sprintf("%s-k%d", tag, i)), Value: sarama.StringEncoder(fmt.Sprintf("%s-v%d", tag, i)),
			Headers: []sarama.RecordHeader{{Key: []byte("h"), Value: fmt.Appendf(nil, "%s-h%d", tag, i)}}})
		if err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	co, err := sarama.NewConsumerFromClient(cl)
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	pc, err := co.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var got []string
	for len(got) < secRecords {
		select {
		case m := <-pc.Messages():
			h := ""
			for _, x := range m.Headers {
				h += string(x.Key) + "=" + string(x.Value)
			}
			got = append(got, fmt.Sprintf("%d %s=%s %s", m.Offset, m.Key, m.Value, h))
		case err := <-pc.Errors():
			t.Fatalf("consume: %v", err)
		case <-ctx.Done():
			t.Fatalf("read %d of %d records: %v", len(got), secRecords, ctx.Err())
		}
	}
	secCheck(t, "sarama consumer of "+topic, got, secWant(tag))
}

func secSarama(t *testing.T, d *secDev) {
	ctx := testContext(t, time.Minute)
	type cell struct {
		name    string
		mech    sarama.SASLMechanism
		version int16
		user    string
		secret  string
	}
	token := d.issuer.token(t, "sarama", secAudience, time.Hour)
	good := []cell{
		{"SCRAM-SHA-256", sarama.SASLTypeSCRAMSHA256, sarama.SASLHandshakeV1, secUser, secPass},
		{"SCRAM-SHA-512", sarama.SASLTypeSCRAMSHA512, sarama.SASLHandshakeV1, secUser2, secPass2},
		{"SCRAM-SHA-512 handshake v0", sarama.SASLTypeSCRAMSHA512, sarama.SASLHandshakeV0, secUser, secPass},
		{"PLAIN", sarama.SASLTypePlaintext, sarama.SASLHandshakeV1, secUser, secPass},
		{"PLAIN handshake v0", sarama.SASLTypePlaintext, sarama.SASLHandshakeV0, secUser2, secPass2},
		{"OAUTHBEARER", sarama.SASLTypeOAuth, sarama.SASLHandshakeV1, "", token},
	}
	bad := []cell{
		{"SCRAM-SHA-256 wrong password", sarama.SASLTypeSCRAMSHA256, sarama.SASLHandshakeV1, secUser, "nope"},
		{"SCRAM-SHA-512 handshake v0 wrong password", sarama.SASLTypeSCRAMSHA512, sarama.SASLHandshakeV0, secUser, "nope"},
		{"PLAIN wrong password", sarama.SASLTypePlaintext, sarama.SASLHandshakeV1, secUser, "nope"},
		{"OAUTHBEARER forged", sarama.SASLTypeOAuth, sarama.SASLHandshakeV1, "", newSecIssuer(t, t.TempDir()).token(t, "sarama", secAudience, time.Hour)},
	}
	for _, l := range []struct {
		name, addr string
		tls        *tls.Config
	}{{"SASL_PLAINTEXT", d.saslPlain, nil}, {"SASL_SSL", d.saslSSL, d.pki.tlsConfig(&d.pki.clientPair)}} {
		for _, c := range good {
			t.Run(l.name+"/"+c.name, func(t *testing.T) {
				cfg := saramaSecConfig(l.tls)
				saramaSASL(cfg, c.mech, c.version, c.user, c.secret)
				tag := strings.ToLower(strings.NewReplacer("_", "-", " ", "-").Replace(l.name + "-" + c.name))
				saramaRoundTrip(t, ctx, d, tag, l.addr, cfg)
			})
		}
		for _, c := range bad {
			t.Run(l.name+"/refused/"+c.name, func(t *testing.T) {
				cfg := saramaSecConfig(l.tls)
				saramaSASL(cfg, c.mech, c.version, c.user, c.secret)
				cfg.Net.LocalAddr = &net.TCPAddr{IP: net.ParseIP(d.source())}
				start := time.Now()
				cl, err := sarama.NewClient([]string{l.addr}, cfg)
				if err == nil {
					cl.Close()
					t.Fatal("sarama connected")
				}
				// A v0 exchange has no error code: floe closes the
				// connection and sarama sees it closed.
				var cfgErr sarama.ConfigurationError
				want := errors.Is(err, sarama.ErrSASLAuthenticationFailed)
				if c.version == sarama.SASLHandshakeV0 {
					want = !errors.As(err, &cfgErr)
				}
				if !want || time.Since(start) > 5*time.Second {
					t.Fatalf("got %v after %s, want SASL_AUTHENTICATION_FAILED at once", err, time.Since(start))
				}
				t.Logf("sarama: %v", err)
			})
		}
	}
	t.Run("SASL_PLAINTEXT/refused/no SASL", func(t *testing.T) {
		cl, err := sarama.NewClient([]string{d.saslPlain}, saramaSecConfig(nil))
		if err == nil {
			cl.Close()
			t.Fatal("sarama got metadata without authenticating")
		}
	})
	t.Run("SSL/mTLS", func(t *testing.T) {
		saramaRoundTrip(t, ctx, d, "ssl-mtls", d.ssl, saramaSecConfig(d.pki.tlsConfig(&d.pki.clientPair)))
	})
	t.Run("SSL/refused/no client certificate", func(t *testing.T) {
		cl, err := sarama.NewClient([]string{d.ssl}, saramaSecConfig(d.pki.tlsConfig(nil)))
		if err == nil {
			cl.Close()
			t.Fatal("sarama connected without a client certificate")
		}
		if !strings.Contains(err.Error(), "certificate required") {
			t.Fatalf("got %v, want the TLS alert certificate required", err)
		}
	})
}

// --- kcat ---

// kcatRoundTrip produces the records of tag with kcat and reads them back.
func kcatRoundTrip(t *testing.T, ctx context.Context, d *secDev, tag, addr string, sec ...string) {
	t.Helper()
	topic := d.topic(t, ctx, "sec-kcat-"+tag)
	var in strings.Builder
	for i := range secRecords {
		fmt.Fprintf(&in, "%s-k%d:%s-v%d\n", tag, i, tag, i)
	}
	// kcat -H puts the same header on every record.
	args := append([]string{"-b", addr, "-t", topic, "-p", "0"}, sec...)
	if out, stderr, ok := kcatRun(t, ctx, in.String(), append(append([]string{"-P", "-K:"}, args...), "-H", "h="+tag)...); !ok {
		t.Fatalf("kcat -P: %s%s", out, stderr)
	}
	out, stderr, ok := kcatRun(t, ctx, "", append(append([]string{"-C", "-o", "beginning", "-e", "-q"}, args...), "-f", "%o %k=%s %h\n")...)
	if !ok {
		t.Fatalf("kcat -C: %s%s", out, stderr)
	}
	var want []string
	for i := range secRecords {
		want = append(want, fmt.Sprintf("%d %s-k%d=%s-v%d h=%s", i, tag, i, tag, i, tag))
	}
	secCheck(t, "kcat -C of "+topic, strings.Split(strings.TrimSuffix(out, "\n"), "\n"), want)
}

// kcatRefused runs kcat -L and checks that it fails with wantErr on
// stderr. librdkafka reconnects after a failed login; the back-off keeps
// it to one attempt in the metadata timeout.
func kcatRefused(t *testing.T, ctx context.Context, wantErr, addr string, sec ...string) {
	t.Helper()
	args := append([]string{"-L", "-b", addr, "-m", "2", "-X", "reconnect.backoff.ms=5000", "-X", "reconnect.backoff.max.ms=5000"}, sec...)
	out, stderr, ok := kcatRun(t, ctx, "", args...)
	if ok || strings.Contains(out, "topic ") {
		t.Fatalf("kcat -L succeeded:\n%s", out)
	}
	if !strings.Contains(stderr, wantErr) {
		t.Fatalf("kcat -L failed without %q:\n%s", wantErr, stderr)
	}
}

// kcatHasOIDC reports whether kcat's librdkafka lists oidc in its
// builtin.features.
func kcatHasOIDC(t *testing.T) bool {
	out, err := exec.Command("kcat", "-X", "dump").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -X dump: %v\n%s", err, out)
	}
	for l := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(l, "builtin.features = "); ok {
			return slices.Contains(strings.Split(strings.TrimSpace(v), ","), "oidc")
		}
	}
	t.Fatalf("kcat -X dump has no builtin.features:\n%s", out)
	return false
}

// tokenEndpoint is an OAuth token endpoint for the client credentials
// grant (RFC 6749 4.4), as librdkafka's sasl.oauthbearer.method=oidc asks
// it: a POST with the client's id and secret in Basic authentication. It
// issues a token for aud.
func tokenEndpoint(t *testing.T, d *secDev, clientID, secret, aud string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, sec, ok := r.BasicAuth()
		if r.Method != http.MethodPost || r.ParseForm() != nil || r.PostForm.Get("grant_type") != "client_credentials" ||
			!ok || id != clientID || sec != secret {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": d.issuer.token(t, clientID, aud, time.Hour),
			"token_type": "bearer", "expires_in": 3600})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func secKcat(t *testing.T, d *secDev) {
	if _, err := exec.LookPath("kcat"); err != nil {
		missingTool(t, "kcat", "not installed", "kcat")
	}
	ctx := testContext(t, time.Minute)
	saslArgs := func(proto, mech, user, pass string) []string {
		return []string{"-X", "security.protocol=" + proto, "-X", "sasl.mechanisms=" + mech,
			"-X", "sasl.username=" + user, "-X", "sasl.password=" + pass}
	}
	tlsArgs := func(cert, key string) []string {
		a := []string{"-X", "ssl.ca.location=" + d.pki.File}
		if cert != "" {
			a = append(a, "-X", "ssl.certificate.location="+cert, "-X", "ssl.key.location="+key)
		}
		return a
	}
	oidcArgs := func(proto, endpoint string) []string {
		return []string{"-X", "security.protocol=" + proto, "-X", "sasl.mechanisms=OAUTHBEARER",
			"-X", "sasl.oauthbearer.method=oidc", "-X", "sasl.oauthbearer.client.id=kcat",
			"-X", "sasl.oauthbearer.client.secret=kcat-secret", "-X", "sasl.oauthbearer.token.endpoint.url=" + endpoint}
	}
	for _, c := range []struct {
		name, addr string
		args       []string
	}{
		{"SASL_PLAINTEXT/SCRAM-SHA-256", d.saslPlain, saslArgs("SASL_PLAINTEXT", "SCRAM-SHA-256", secUser, secPass)},
		{"SASL_PLAINTEXT/SCRAM-SHA-512", d.saslPlain, saslArgs("SASL_PLAINTEXT", "SCRAM-SHA-512", secUser2, secPass2)},
		{"SASL_PLAINTEXT/PLAIN", d.saslPlain, saslArgs("SASL_PLAINTEXT", "PLAIN", secUser, secPass)},
		{"SASL_SSL/SCRAM-SHA-512", d.saslSSL, append(saslArgs("SASL_SSL", "SCRAM-SHA-512", secUser, secPass), tlsArgs(d.pki.clientCert, d.pki.clientKey)...)},
		{"SASL_SSL/PLAIN", d.saslSSL, append(saslArgs("SASL_SSL", "PLAIN", secUser2, secPass2), tlsArgs(d.pki.clientCert, d.pki.clientKey)...)},
		{"SSL/mTLS", d.ssl, append([]string{"-X", "security.protocol=SSL"}, tlsArgs(d.pki.clientCert, d.pki.clientKey)...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			tag := strings.ToLower(strings.NewReplacer("_", "-", " ", "-", "/", "-").Replace(c.name))
			kcatRoundTrip(t, ctx, d, tag, c.addr, c.args...)
		})
	}
	const authErr = "SASL authentication error: Authentication failed"
	// OAUTHBEARER with a signed token needs sasl.oauthbearer.method=oidc
	// (kcat cannot hand librdkafka a token of its own), which needs a
	// librdkafka built with libcurl.
	t.Run("OAUTHBEARER oidc", func(t *testing.T) {
		if !kcatHasOIDC(t) {
			t.Skip("this librdkafka has no oidc in builtin.features (built without libcurl, as Debian's 2.0.2 is): " +
				"kcat cannot send a signed OAUTHBEARER token")
		}
		good := tokenEndpoint(t, d, "kcat", "kcat-secret", secAudience)
		wrongAud := tokenEndpoint(t, d, "kcat", "kcat-secret", "other")
		t.Run("SASL_PLAINTEXT", func(t *testing.T) {
			kcatRoundTrip(t, ctx, d, "kcat-oidc-plaintext", d.saslPlain, oidcArgs("SASL_PLAINTEXT", good.URL+"/token")...)
		})
		t.Run("SASL_SSL", func(t *testing.T) {
			kcatRoundTrip(t, ctx, d, "kcat-oidc-ssl", d.saslSSL, append(oidcArgs("SASL_SSL", good.URL+"/token"), tlsArgs(d.pki.clientCert, d.pki.clientKey)...)...)
		})
		t.Run("refused/wrong audience", func(t *testing.T) {
			kcatRefused(t, ctx, authErr, d.saslPlain, oidcArgs("SASL_PLAINTEXT", wrongAud.URL+"/token")...)
		})
	})
	for _, c := range []struct {
		name, addr, want string
		args             []string
	}{
		{"SASL_PLAINTEXT/refused/SCRAM-SHA-256 wrong password", d.saslPlain, authErr, saslArgs("SASL_PLAINTEXT", "SCRAM-SHA-256", secUser, "nope")},
		{"SASL_PLAINTEXT/refused/SCRAM-SHA-512 wrong password", d.saslPlain, authErr, saslArgs("SASL_PLAINTEXT", "SCRAM-SHA-512", secUser, "nope")},
		{"SASL_PLAINTEXT/refused/PLAIN wrong password", d.saslPlain, authErr, saslArgs("SASL_PLAINTEXT", "PLAIN", secUser, "nope")},
		// librdkafka's built-in OAUTHBEARER token: an unsecured JWT
		// (alg none), which floe must not take.
		{"SASL_PLAINTEXT/refused/OAUTHBEARER unsecured JWT", d.saslPlain, authErr, []string{"-X", "security.protocol=SASL_PLAINTEXT",
			"-X", "sasl.mechanisms=OAUTHBEARER", "-X", "enable.sasl.oauthbearer.unsecure.jwt=true", "-X", "sasl.oauthbearer.config=principal=" + secUser}},
		{"SASL_PLAINTEXT/refused/no SASL", d.saslPlain, "broker might require SASL authentication", nil},
		{"SSL/refused/no client certificate", d.ssl, "alert certificate required", append([]string{"-X", "security.protocol=SSL"}, tlsArgs("", "")...)},
	} {
		t.Run(c.name, func(t *testing.T) { kcatRefused(t, ctx, c.want, c.addr, c.args...) })
	}
}

// --- kafkajs ---

// jsCase is security.js's argument.
type jsCase struct {
	Brokers      []string          `json:"brokers"`
	SASL         map[string]string `json:"sasl,omitempty"`
	SSL          map[string]string `json:"ssl,omitempty"`
	LocalAddress string            `json:"localAddress,omitempty"`
	Topic        string            `json:"topic"`
	Tag          string            `json:"tag"`
	N            int               `json:"n"`
	EveryMs      int               `json:"everyMs,omitempty"`
}

func runSecurityJS(t *testing.T, ctx context.Context, node, dir string, c jsCase) []string {
	t.Helper()
	arg, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return runNode(t, ctx, node, dir, "security.js", string(arg))
}

func secKafkajs(t *testing.T, d *secDev) {
	node, dir, _ := cliKafkajsSetup(t)
	ctx := testContext(t, 90*time.Second)
	tlsWith := map[string]string{"ca": d.pki.File, "cert": d.pki.clientCert, "key": d.pki.clientKey}
	scramOf := func(mech, user, pass string) map[string]string {
		return map[string]string{"mechanism": mech, "username": user, "password": pass}
	}
	oauthOf := func(token string) map[string]string {
		return map[string]string{"mechanism": "oauthbearer", "token": token}
	}
	for _, c := range []struct {
		name string
		addr string
		sasl map[string]string
		ssl  map[string]string
	}{
		{"SASL_PLAINTEXT/SCRAM-SHA-256", d.saslPlain, scramOf("scram-sha-256", secUser, secPass), nil},
		{"SASL_PLAINTEXT/SCRAM-SHA-512", d.saslPlain, scramOf("scram-sha-512", secUser2, secPass2), nil},
		{"SASL_PLAINTEXT/PLAIN", d.saslPlain, scramOf("plain", secUser, secPass), nil},
		{"SASL_PLAINTEXT/OAUTHBEARER", d.saslPlain, oauthOf(d.issuer.token(t, "kafkajs", secAudience, time.Hour)), nil},
		{"SASL_SSL/SCRAM-SHA-256", d.saslSSL, scramOf("scram-sha-256", secUser2, secPass2), tlsWith},
		{"SASL_SSL/SCRAM-SHA-512", d.saslSSL, scramOf("scram-sha-512", secUser, secPass), tlsWith},
		{"SASL_SSL/PLAIN", d.saslSSL, scramOf("plain", secUser2, secPass2), tlsWith},
		{"SASL_SSL/OAUTHBEARER", d.saslSSL, oauthOf(d.issuer.token(t, "kafkajs", secAudience, time.Hour)), tlsWith},
		{"SSL/mTLS", d.ssl, nil, tlsWith},
	} {
		t.Run(c.name, func(t *testing.T) {
			tag := "js-" + strings.ToLower(strings.NewReplacer("_", "-", "/", "-").Replace(c.name))
			topic := d.topic(t, ctx, "sec-"+tag)
			out := runSecurityJS(t, ctx, node, dir, jsCase{Brokers: []string{c.addr}, SASL: c.sasl, SSL: c.ssl, Topic: topic, Tag: tag, N: secRecords})
			want := []string{fmt.Sprintf("produced %d", secRecords)}
			for _, w := range secWant(tag) {
				want = append(want, "consumed "+w)
			}
			secCheck(t, "security.js", out, want)
		})
	}
	const authErr = "refused KafkaJSSASLAuthenticationError: "
	for _, c := range []struct {
		name, addr, want string
		sasl, ssl        map[string]string
	}{
		{"SASL_PLAINTEXT/refused/SCRAM-SHA-256 wrong password", d.saslPlain, authErr, scramOf("scram-sha-256", secUser, "nope"), nil},
		{"SASL_PLAINTEXT/refused/SCRAM-SHA-512 unknown user", d.saslPlain, authErr, scramOf("scram-sha-512", "carol", secPass), nil},
		{"SASL_PLAINTEXT/refused/PLAIN wrong password", d.saslPlain, authErr, scramOf("plain", secUser, "nope"), nil},
		{"SASL_PLAINTEXT/refused/OAUTHBEARER expired", d.saslPlain, authErr, oauthOf(d.issuer.token(t, "kafkajs", secAudience, -time.Minute)), nil},
		{"SASL_SSL/refused/SCRAM-SHA-512 wrong password", d.saslSSL, authErr, scramOf("scram-sha-512", secUser, "nope"), tlsWith},
		{"SASL_PLAINTEXT/refused/no SASL", d.saslPlain, "refused KafkaJSNumberOfRetriesExceeded: Closed connection", nil, nil},
		{"SSL/refused/no client certificate", d.ssl, "refused KafkaJSNumberOfRetriesExceeded: Connection error: ", nil, map[string]string{"ca": d.pki.File}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			out := runSecurityJS(t, ctx, node, dir, jsCase{Brokers: []string{c.addr}, SASL: c.sasl, SSL: c.ssl,
				LocalAddress: d.source(), Topic: "sec-js-refused", Tag: "refused", N: 1})
			if len(out) == 2 && out[1] == "" { // OpenSSL's message ends in a newline
				out = out[:1]
			}
			if len(out) != 1 || !strings.HasPrefix(out[0], c.want) {
				t.Fatalf("security.js printed:\n%s\nwant one line %q…", strings.Join(out, "\n"), c.want)
			}
			t.Logf("kafkajs (%s): %s", time.Since(start).Round(time.Millisecond), out[0])
		})
	}
}
