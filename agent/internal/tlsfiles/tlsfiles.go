// Package tlsfiles serves the TLS configuration of the Kafka listeners: the certificate, its key and the client CA
// bundle are files, read again when they change (a renewed certificate,
// cert-manager rotating a Secret) without a restart. Every handshake asks
// for the current configuration; the files are looked at no more than
// once per tlsRecheck, and only read again when their size or time
// changed. A file that fails to load leaves the previous configuration in
// place (and is logged), so a half-written renewal never takes the
// listener down.

package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// recheck bounds how often the files are looked at.
const recheck = time.Second

// Client certificate policies (Kafka's ssl.client.auth).
const (
	ClientAuthNone      = "none"
	ClientAuthRequested = "requested"
	ClientAuthRequired  = "required"
)

// Files serves the TLS configuration of the files it is given.
type Files struct {
	cert, key, clientCA string
	clientAuth          tls.ClientAuthType
	log                 *slog.Logger

	mu        sync.Mutex
	cfg       *tls.Config
	stamp     string // sizes and times of the files cfg was read from
	checkedAt time.Time
	// noCerts is noCertsOf without client certificates (configFor).
	noCerts, noCertsOf *tls.Config
}

// New serves cert, key and clientCA (files; cert "": no TLS listener)
// with clientAuth, one of the policies above ("": required when a client
// CA is set).
func New(cert, key, clientCA, clientAuth string, log *slog.Logger) (*Files, error) {
	t := &Files{cert: cert, key: key, clientCA: clientCA, log: log}
	switch clientAuth {
	case "":
		if clientCA != "" {
			t.clientAuth = tls.RequireAndVerifyClientCert
		}
	case ClientAuthNone:
	case ClientAuthRequested:
		t.clientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthRequired:
		t.clientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("client auth %q: want none, requested or required", clientAuth)
	}
	if t.clientAuth != tls.NoClientCert && clientCA == "" {
		return nil, errors.New("client certificates are asked for but no client CA is set")
	}
	if t.cert == "" {
		return t, nil // no TLS listener (checkListeners)
	}
	if _, err := t.Current(); err != nil {
		return nil, err
	}
	return t, nil
}

// ConfigFor is the tls.Config.GetConfigForClient of a listener. Client
// certificates are asked for when clientCerts (SSL listeners) only: on SASL_SSL the client
// authenticates with SASL, and Kafka's broker-wide ssl.client.auth does
// not apply there either (KIP-684).
func (t *Files) ConfigFor(clientCerts bool) func(*tls.ClientHelloInfo) (*tls.Config, error) {
	return func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cfg, err := t.Current()
		if err != nil || clientCerts {
			return cfg, err
		}
		return t.withoutClientCerts(cfg), nil
	}
}

// withoutClientCerts is cfg asking for no client certificate, made once
// per loaded configuration.
func (t *Files) withoutClientCerts(cfg *tls.Config) *tls.Config {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.noCertsOf != cfg {
		t.noCerts = cfg.Clone()
		t.noCerts.ClientAuth, t.noCerts.ClientCAs = tls.NoClientCert, nil
		t.noCertsOf = cfg
	}
	return t.noCerts
}

// Current returns the configuration of the files as they are now, or the
// last one that loaded.
func (t *Files) Current() (*tls.Config, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if t.cfg != nil && now.Sub(t.checkedAt) < recheck {
		return t.cfg, nil
	}
	t.checkedAt = now
	stamp := t.stampOf()
	if t.cfg != nil && stamp == t.stamp {
		return t.cfg, nil
	}
	cfg, err := t.load()
	if err != nil {
		if t.cfg == nil {
			return nil, err
		}
		t.log.Error("TLS files changed but do not load: keeping the previous ones", "err", err)
		t.stamp = stamp // log once per change
		return t.cfg, nil
	}
	if t.cfg != nil {
		t.log.Info("TLS files reloaded", "cert", t.cert)
	}
	t.cfg, t.stamp = cfg, stamp
	return cfg, nil
}

func (t *Files) stampOf() string {
	s := ""
	for _, f := range []string{t.cert, t.key, t.clientCA} {
		if f == "" {
			continue
		}
		if fi, err := os.Stat(f); err == nil {
			s += fmt.Sprintf("%d/%d;", fi.Size(), fi.ModTime().UnixNano())
		} else {
			s += "missing;"
		}
	}
	return s
}

func (t *Files) load() (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(t.cert, t.key)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12, ClientAuth: t.clientAuth}
	if t.clientCA != "" {
		pem, err := os.ReadFile(t.clientCA)
		if err != nil {
			return nil, fmt.Errorf("TLS client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS client CA %s: no certificate in it", t.clientCA)
		}
		cfg.ClientCAs = pool
	}
	return cfg, nil
}
