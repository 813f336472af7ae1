package agent

// TLS on the Kafka listeners: the files are served by
// agent/internal/tlsfiles (reloaded when they change); here, the handshake
// of each connection and the principal of a client certificate.

import (
	"context"
	"crypto/tls"

	"floe/agent/internal/tlsfiles"
)

// Client certificate policies (Kafka's ssl.client.auth).
const (
	ClientAuthNone      = tlsfiles.ClientAuthNone
	ClientAuthRequested = tlsfiles.ClientAuthRequested
	ClientAuthRequired  = tlsfiles.ClientAuthRequired
)

// tlsHandshake completes a TLS connection's handshake (within
// RequestReadTimeout) before anything is read, so that a verified client
// certificate names the principal of an SSL listener's connection
// ("User:" + the subject's distinguished name, as Kafka's default
// principal builder does) before its first request. It reports whether
// the connection may go on; plaintext connections always may.
func (c *conn) tlsHandshake() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(c.a.ctx, c.a.cfg.RequestReadTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.a.metrics.authFailures.WithLabelValues("TLS").Inc()
		c.log.Warn("TLS handshake failed", "err", err)
		return false
	}
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 && !c.ln.cfg.usesSASL() {
		c.id.set(&identity{Principal: "User:" + certs[0].Subject.String()})
	}
	return true
}
