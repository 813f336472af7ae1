// Package testpki makes the certificates and tokens the security tests
// need: certificate authorities with server and client certificates as
// PEM files, and a token issuer whose RS256 JWTs verify against a JSON Web
// Key Set file. For tests only.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// CA is a certificate authority whose files are in Dir.
type CA struct {
	Dir    string
	File   string // the CA certificate, PEM
	Cert   *x509.Certificate
	Pool   *x509.CertPool // holding Cert
	key    *ecdsa.PrivateKey
	serial int64
}

// NewCA makes a CA named name, with its certificate in dir.
func NewCA(t testing.TB, dir, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{Dir: dir, Cert: cert, Pool: x509.NewCertPool(), key: key, serial: 1}
	ca.Pool.AddCert(cert)
	ca.File = writePEM(t, dir, name+".pem", "CERTIFICATE", der)
	return ca
}

// Issue signs a certificate for 127.0.0.1 with subj and usage, written as
// NAME.pem and NAME-key.pem in the CA's directory. The files are written
// under temporary names and renamed, as a certificate manager does, so a
// reader never sees half of a renewal. Serial is the certificate's serial
// number (0: the CA's next).
func (ca *CA) Issue(t testing.TB, name string, serial int64, subj pkix.Name, usage x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	if serial == 0 {
		ca.serial++
		serial = ca.serial
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: subj,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(ca.Dir, name+".pem"), filepath.Join(ca.Dir, name+"-key.pem")
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{{certFile, "CERTIFICATE", der}, {keyFile, "EC PRIVATE KEY", kder}} {
		tmp := writePEM(t, ca.Dir, filepath.Base(f.path)+".tmp", f.typ, f.der)
		if err := os.Rename(tmp, f.path); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// IssuePair is Issue, loaded as a tls.Certificate too.
func (ca *CA) IssuePair(t testing.TB, name string, subj pkix.Name, usage x509.ExtKeyUsage) (certFile, keyFile string, pair tls.Certificate) {
	t.Helper()
	certFile, keyFile = ca.Issue(t, name, 0, subj, usage)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, pair
}

// ClientConfig trusts the CA for 127.0.0.1 and presents cert, if any.
func (ca *CA) ClientConfig(cert *tls.Certificate) *tls.Config {
	c := &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1"}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	f := filepath.Join(dir, name)
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// Issuer signs RS256 JWTs with a key published, under key id "k1", in the
// JSON Web Key Set file JWKS.
type Issuer struct {
	JWKS string
	key  *rsa.PrivateKey
}

// NewIssuer makes a key and writes its key set to dir/jwks.json.
func NewIssuer(t testing.TB, dir string) *Issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(f, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return &Issuer{JWKS: f, key: key}
}

// Token is a JWT for sub from iss to aud, valid for ttl from now (expired
// already for a negative ttl).
func (is *Issuer) Token(t testing.TB, sub, iss, aud string, ttl time.Duration) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: is.key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := jwt.Signed(sig).Claims(jwt.Claims{Subject: sub, Issuer: iss, Audience: jwt.Audience{aud},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(ttl))}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
