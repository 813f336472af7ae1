package agent

// The agent's side of the zone's shared read cache (package
// agent/internal/peercache): the peer secret its requests are signed
// with, which secured agents read from the store, and the HTTP address
// its peers reach it at.

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"floe/agent/internal/peercache"
)

// loadPeerSecret reads (or makes) the cluster's peer secret when this
// agent's listeners are secured; open agents need none.
func (a *Agent) loadPeerSecret(ctx context.Context) error {
	if !a.sharedCacheSecured() {
		return nil
	}
	s, err := a.store.ClusterSecret(ctx, peercache.SecretName)
	if err != nil {
		return fmt.Errorf("shared read cache secret: %w", err)
	}
	a.signer.Secret = s
	return nil
}

// sharedCacheSecured reports whether a Kafka listener of this agent uses
// TLS or SASL: its range endpoint then wants signed requests.
func (a *Agent) sharedCacheSecured() bool {
	for _, l := range a.cfg.listeners() {
		if l.usesTLS() || l.usesSASL() {
			return true
		}
	}
	return false
}

// advertisedHTTP is the HTTP address registered for the other agents:
// AdvertiseHTTPAddr, else the advertised Kafka host with the HTTP
// listener's port; "" without an HTTP listener (no member of the shared
// read cache).
func (a *Agent) advertisedHTTP(kafkaHost string) (string, error) {
	if a.httpLn == nil {
		return "", nil
	}
	if addr := a.cfg.AdvertiseHTTPAddr; addr != "" {
		host, ps, err := net.SplitHostPort(addr)
		if err != nil {
			return "", fmt.Errorf("advertise http address %q: %w", addr, err)
		}
		if port, err := strconv.Atoi(ps); err != nil || port <= 0 || port > 65535 || host == "" {
			return "", fmt.Errorf("advertise http address %q: want host:port", addr)
		}
		return addr, nil
	}
	_, port, err := net.SplitHostPort(a.httpLn.Addr().String())
	if err != nil {
		return "", fmt.Errorf("http listener address: %w", err)
	}
	return net.JoinHostPort(kafkaHost, port), nil
}
