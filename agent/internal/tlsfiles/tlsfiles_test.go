package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"os"
	"testing"
	"time"

	"floe/internal/testpki"
)

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "test CA")
	cert, key := ca.Issue(t, "server", 1, pkix.Name{CommonName: "127.0.0.1"}, x509.ExtKeyUsageServerAuth)
	log := slog.New(slog.DiscardHandler)

	if _, err := New(cert, key, "", "sometimes", log); err == nil {
		t.Fatal("an unknown client auth policy was taken")
	}
	if _, err := New(cert, key, "", ClientAuthRequired, log); err == nil {
		t.Fatal("client certificates required without a client CA")
	}
	f, err := New(cert, key, ca.File, "", log)
	if err != nil {
		t.Fatal(err)
	}
	ssl, err := f.ConfigFor(true)(nil)
	if err != nil || ssl.ClientAuth != tls.RequireAndVerifyClientCert || ssl.ClientCAs == nil {
		t.Fatalf("SSL listener: %v, client auth %v", err, ssl.ClientAuth)
	}
	saslSSL, _ := f.ConfigFor(false)(nil)
	if saslSSL.ClientAuth != tls.NoClientCert || saslSSL.ClientCAs != nil {
		t.Fatalf("SASL_SSL listener asks for client certificates: %v", saslSSL.ClientAuth)
	}
	first := ssl.Certificates[0].Certificate[0]

	// A renewed certificate is served after the recheck interval.
	cert2, key2 := ca.Issue(t, "renewed", 2, pkix.Name{CommonName: "127.0.0.1"}, x509.ExtKeyUsageServerAuth)
	for _, p := range [][2]string{{cert2, cert}, {key2, key}} {
		b, err := os.ReadFile(p[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(recheck + 100*time.Millisecond)
	cfg, err := f.Current()
	if err != nil || string(cfg.Certificates[0].Certificate[0]) == string(first) {
		t.Fatalf("renewed certificate not served: %v", err)
	}
	// A half-written file keeps the last configuration that loaded.
	if err := os.WriteFile(cert, []byte("-----BEGIN CERT"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(recheck + 100*time.Millisecond)
	if again, err := f.Current(); err != nil || again != cfg {
		t.Fatalf("a broken file replaced the configuration: %v", err)
	}
}
