package agent

// Kafka listeners, as Kafka's listener map has them: each listener has a
// name, a security protocol and its own address and advertised address.
// A client is told, in Metadata, FindCoordinator and DescribeCluster, the
// addresses of the listener it came in on (an internal plaintext listener
// for probes and sidecars, a TLS one for everyone else, say).

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"floe/metadata"
)

// Security protocols (Kafka's security.protocol values).
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// Listener is one Kafka listener.
type Listener struct {
	// Name is the listener's name ("PLAINTEXT", "EXTERNAL" …), unique
	// among the agent's listeners.
	Name string
	// Protocol is one of the Protocol constants.
	Protocol string
	// Addr is the address to bind (host:port; port 0 picks one).
	Addr string
	// Advertise is the host:port clients of this listener are given;
	// empty means the bound address (loopback for a wildcard bind).
	Advertise string
}

// usesTLS and usesSASL say what the listener's protocol asks for.
func (l Listener) usesTLS() bool {
	return l.Protocol == ProtocolSSL || l.Protocol == ProtocolSASLSSL
}

func (l Listener) usesSASL() bool {
	return l.Protocol == ProtocolSASLPlaintext || l.Protocol == ProtocolSASLSSL
}

// listeners is the configured listeners, or the one PLAINTEXT listener of
// KafkaAddr and AdvertiseAddr when none are.
func (c Config) listeners() []Listener {
	if len(c.Listeners) > 0 {
		return c.Listeners
	}
	return []Listener{{Name: ProtocolPlaintext, Protocol: ProtocolPlaintext, Addr: c.KafkaAddr, Advertise: c.AdvertiseAddr}}
}

// checkListeners refuses listener sets Kafka would refuse to start with.
func (c Config) checkListeners() error {
	seen := map[string]bool{}
	for _, l := range c.listeners() {
		switch l.Protocol {
		case ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL:
		default:
			return fmt.Errorf("listener %s: unknown security protocol %q", l.Name, l.Protocol)
		}
		if l.Name == "" || seen[l.Name] {
			return fmt.Errorf("listener names must be unique and not empty (%q)", l.Name)
		}
		seen[l.Name] = true
		if l.usesTLS() && (c.Security.TLSCert == "" || c.Security.TLSKey == "") {
			return fmt.Errorf("listener %s is %s: a TLS certificate and key are needed", l.Name, l.Protocol)
		}
		if l.usesSASL() && len(c.Security.SASLMechanisms) == 0 {
			return fmt.Errorf("listener %s is %s: no SASL mechanism is enabled", l.Name, l.Protocol)
		}
	}
	for _, m := range c.Security.SASLMechanisms {
		if !slices.Contains(SupportedMechanisms, m) {
			return fmt.Errorf("SASL mechanism %q: floe serves %s", m, strings.Join(SupportedMechanisms, ", "))
		}
		if m == MechanismOAuthBearer && c.Security.OAuth.JWKS == "" {
			return errors.New("OAUTHBEARER needs a JSON Web Key Set to check tokens with")
		}
	}
	return nil
}

// ParseListeners reads Kafka's listener settings: listeners
// ("NAME://host:port,…"), advertised ("NAME://host:port,…", may name a
// subset) and the protocol map ("NAME:PROTOCOL,…"; a listener named after
// a protocol needs no entry).
func ParseListeners(listeners, advertised, protocolMap string) ([]Listener, error) {
	protocols := map[string]string{}
	for _, kv := range splitList(protocolMap) {
		name, proto, ok := strings.Cut(kv, ":")
		if !ok {
			return nil, fmt.Errorf("listener protocol map entry %q: want NAME:PROTOCOL", kv)
		}
		protocols[strings.ToUpper(name)] = strings.ToUpper(proto)
	}
	parse := func(what, s string) (string, string, error) {
		name, addr, ok := strings.Cut(s, "://")
		if !ok {
			return "", "", fmt.Errorf("%s %q: want NAME://host:port", what, s)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return "", "", fmt.Errorf("%s %q: %w", what, s, err)
		}
		return strings.ToUpper(name), addr, nil
	}
	var out []Listener
	for _, s := range splitList(listeners) {
		name, addr, err := parse("listener", s)
		if err != nil {
			return nil, err
		}
		proto, ok := protocols[name]
		if !ok {
			proto = name
		}
		out = append(out, Listener{Name: name, Protocol: proto, Addr: addr})
	}
	for _, s := range splitList(advertised) {
		name, addr, err := parse("advertised listener", s)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(out, func(l Listener) bool { return l.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("advertised listener %s is not a listener", name)
		}
		out[i].Advertise = addr
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// listener is a bound Kafka listener.
type listener struct {
	cfg Listener
	ln  net.Listener
	// host and port are what clients of this listener are told.
	host string
	port int32
}

// listen binds every configured listener, TLS ones behind tlsConfig.
func (a *Agent) listen() error {
	for _, lc := range a.cfg.listeners() {
		ln, err := net.Listen("tcp", lc.Addr)
		if err != nil {
			a.closeListeners()
			return fmt.Errorf("listen kafka %s %s: %w", lc.Name, lc.Addr, err)
		}
		l := &listener{cfg: lc, ln: ln}
		a.lns = append(a.lns, l)
		if l.host, l.port, err = advertisedAddr(lc.Advertise, ln.Addr().String()); err != nil {
			a.closeListeners()
			return fmt.Errorf("listener %s: %w", lc.Name, err)
		}
		if lc.usesTLS() {
			l.ln = tls.NewListener(ln, &tls.Config{GetConfigForClient: a.tls.ConfigFor(lc.Protocol == ProtocolSSL)})
		}
	}
	return nil
}

// advertisedAddr is the host and port clients are given: advertise, or the
// bound address (loopback for a wildcard bind, which clients cannot dial).
func advertisedAddr(advertise, bound string) (string, int32, error) {
	addr := advertise
	if addr == "" {
		addr = bound
	}
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("advertise address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("advertise address %q: bad port", addr)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return host, int32(port), nil
}

// registration is the agent's registry entry: the first listener's address
// as Host and Port, every listener's by name.
func (a *Agent) registration() metadata.Agent {
	self := metadata.Agent{ID: a.id, Host: a.lns[0].host, Port: a.lns[0].port, Zone: a.cfg.Zone,
		Listeners: make(map[string]string, len(a.lns))}
	for _, l := range a.lns {
		self.Listeners[l.cfg.Name] = net.JoinHostPort(l.host, strconv.Itoa(int(l.port)))
	}
	return self
}

// brokerAddr is where a client of listener reaches agent b: b's address on
// that listener, or its first listener's when b has none of that name (an
// agent of an older version).
func brokerAddr(b metadata.Agent, listener string) (string, int32) {
	if addr, ok := b.Listeners[listener]; ok {
		if host, ps, err := net.SplitHostPort(addr); err == nil {
			if port, err := strconv.Atoi(ps); err == nil {
				return host, int32(port)
			}
		}
	}
	return b.Host, b.Port
}

// listenerName is the name of the listener c came in on ("" for a
// connection made without one, in tests).
func (c *conn) listenerName() string {
	if c.ln == nil {
		return ""
	}
	return c.ln.cfg.Name
}
