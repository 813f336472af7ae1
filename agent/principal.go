package agent

// Who a connection is. Every connection starts as Kafka's anonymous
// principal; authentication (SASL, or a verified client certificate)
// replaces it, and re-authentication (KIP-368) may replace it again while
// requests run, so it is read atomically.

import (
	"sync/atomic"

	"floe/agent/internal/sasl"
)

// anonymous is the principal of an unauthenticated connection, as Kafka
// names it (KafkaPrincipal.ANONYMOUS).
const anonymous = "User:ANONYMOUS"

// identity is what a connection authenticated as.
type identity = sasl.Identity

var anonymousIdentity = &identity{Principal: anonymous}

// connIdentity holds a connection's identity; the zero value is anonymous.
type connIdentity struct{ p atomic.Pointer[identity] }

func (ci *connIdentity) get() *identity {
	if id := ci.p.Load(); id != nil {
		return id
	}
	return anonymousIdentity
}

func (ci *connIdentity) set(id *identity) { ci.p.Store(id) }

// principal is the Kafka principal the connection's requests run as.
func (c *conn) principal() string { return c.id.get().Principal }

// host is the address the connection comes from, without its port: the
// host ACLs match.
func (c *conn) host() string { return c.remoteHost }
