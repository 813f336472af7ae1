package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// adminClientFlags are how the admin subcommands (`floe group`, `floe
// acl`) reach a broker, as Kafka's tools take --bootstrap-server and a
// --command-config: through the Kafka protocol, with the same listeners,
// TLS and SASL any client uses.
type adminClientFlags struct {
	bootstrap         string
	mechanism         string
	username          string
	password          string
	token             string
	tls               bool
	caFile            string
	certFile, keyFile string
}

func (f *adminClientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.bootstrap, "bootstrap", "127.0.0.1:9092", "broker `host:port` list to start from")
	fs.StringVar(&f.mechanism, "sasl-mechanism", "", "SASL `mechanism`: SCRAM-SHA-256, SCRAM-SHA-512, PLAIN or OAUTHBEARER (none: no SASL)")
	fs.StringVar(&f.username, "sasl-username", "", "SASL user name")
	fs.StringVar(&f.password, "sasl-password", "", "SASL password (better given as FLOE_SASL_PASSWORD)")
	fs.StringVar(&f.token, "sasl-token", "", "OAUTHBEARER token (or FLOE_SASL_TOKEN)")
	fs.BoolVar(&f.tls, "tls", false, "connect with TLS")
	fs.StringVar(&f.caFile, "tls-ca", "", "PEM `file` of the CAs to trust (implies --tls; default: the system's)")
	fs.StringVar(&f.certFile, "tls-cert", "", "PEM `file` of a client certificate, for mutual TLS")
	fs.StringVar(&f.keyFile, "tls-key", "", "PEM `file` of the client certificate's key")
}

// client opens an admin client with the flags.
func (f *adminClientFlags) client() (*kadm.Client, func(), error) {
	cl, err := f.kgoClient()
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

// kgoClient opens a client with the flags.
func (f *adminClientFlags) kgoClient() (*kgo.Client, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(splitComma(f.bootstrap)...)}
	if f.mechanism != "" && f.mechanism != "OAUTHBEARER" && f.username == "" {
		return nil, errors.New("--sasl-mechanism needs --sasl-username")
	}
	switch strings.ToUpper(f.mechanism) {
	case "":
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: f.username, Pass: f.password}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: f.username, Pass: f.password}.AsSha512Mechanism()))
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: f.username, Pass: f.password}.AsMechanism()))
	case "OAUTHBEARER":
		if f.token == "" {
			return nil, errors.New("--sasl-mechanism OAUTHBEARER needs --sasl-token")
		}
		opts = append(opts, kgo.SASL(oauth.Auth{Token: f.token}.AsMechanism()))
	default:
		return nil, fmt.Errorf("--sasl-mechanism %q: want SCRAM-SHA-256, SCRAM-SHA-512, PLAIN or OAUTHBEARER", f.mechanism)
	}
	if f.tls || f.caFile != "" || f.certFile != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if f.caFile != "" {
			pem, err := os.ReadFile(f.caFile)
			if err != nil {
				return nil, err
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--tls-ca %s: no certificate in it", f.caFile)
			}
		}
		if f.certFile != "" {
			pair, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
			if err != nil {
				return nil, err
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	return kgo.NewClient(opts...)
}
