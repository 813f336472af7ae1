// Package quota resolves and measures Kafka's client quotas, as Kafka's
// ClientQuotaManager does: which quota of Kafka's precedence applies to a
// (user, client id) or an ip (Config, from the stored quotas), the sampled
// rate each is measured by (Sensors), and how long a client over its bound
// must wait. It is pure: values and a clock come in, durations go out; the
// agent charges requests, answers with throttle_time_ms and mutes
// connections (agent/quota.go).
package quota

import (
	"net"
	"sync"
	"time"

	"floe/metadata"
)

// Kind is one of the quota keys floe enforces.
type Kind int

const (
	Produce Kind = iota
	Fetch
	Request
	Connection
	Kinds
)

// Keys are the Kafka config keys of the kinds, Types their
// names in metrics (Kafka's QuotaType names).
var (
	Keys  = [Kinds]string{"producer_byte_rate", "consumer_byte_rate", "request_percentage", "connection_creation_rate"}
	Types = [Kinds]string{"produce", "fetch", "request", "connection"}
)

// Shared reports whether the kind's quota is the cluster's, each agent
// enforcing its share, rather than each agent's own.
func (k Kind) Shared() bool { return k == Produce || k == Fetch }

// Config is one immutable snapshot of the quotas an agent enforces.
type Config struct {
	version int64 // the store's QuotaVersion it was read at; -1 when unread
	agents  int   // live agents when it was built: the divisor of shared quotas
	limits  [Kinds]map[metadata.QuotaEntity]float64
}

// NewConfig indexes the store's quotas by kind; keys floe does not
// enforce (controller_mutation_rate: floe has no controller) are kept out.
func NewConfig(version int64, agents int, qs []metadata.ClientQuota) *Config {
	qc := &Config{version: version, agents: max(agents, 1)}
	for _, q := range qs {
		if q.Entity.IP.Kind == metadata.QuotaNamed {
			// Connections name their address in Go's canonical form.
			if ip := net.ParseIP(q.Entity.IP.Name); ip != nil {
				q.Entity.IP.Name = ip.String()
			}
		}
		for k, key := range Keys {
			if q.Key == key {
				if qc.limits[k] == nil {
					qc.limits[k] = map[metadata.QuotaEntity]float64{}
				}
				qc.limits[k][q.Entity] = q.Value
			}
		}
	}
	return qc
}

// Empty reports whether no quota is enforced.
func (qc *Config) Empty() bool {
	for _, m := range qc.limits {
		if len(m) > 0 {
			return false
		}
	}
	return true
}

// SensorKey names a sensor: the kind and the tags Kafka gives it, the
// names of the entity parts that matched ("" for a part the quota is not
// per).
type SensorKey struct {
	Kind             Kind
	User, Client, IP string
}

// Resolve finds the quota of kind k (user, client id kinds) for user
// and client, by Kafka's precedence: user and client id, user and default
// client id, user, default user and client id, default user and default
// client id, default user, client id, default client id. ok is false when
// none sets the key. The bound is this agent's: a shared quota's share.
func (qc *Config) Resolve(k Kind, user, client string) (bound float64, key SensorKey, ok bool) {
	m := qc.limits[k]
	if len(m) == 0 {
		return 0, key, false
	}
	u, c, def, none := metadata.Named(user), metadata.Named(client), metadata.DefaultName, metadata.QuotaName{}
	for _, l := range [...]struct {
		user, client     metadata.QuotaName
		byUser, byClient bool
	}{
		{u, c, true, true},
		{u, def, true, true},
		{u, none, true, false},
		{def, c, true, true},
		{def, def, true, true},
		{def, none, true, false},
		{none, c, false, true},
		{none, def, false, true},
	} {
		v, found := m[metadata.QuotaEntity{User: l.user, ClientID: l.client}]
		if !found {
			continue
		}
		key.Kind = k
		if l.byUser {
			key.User = user
		}
		if l.byClient {
			key.Client = client
		}
		return qc.share(k, v), key, true
	}
	return 0, key, false
}

// ResolveIP finds the connection_creation_rate of ip: its own, else
// the default ip quota (which every ip has a sensor of its own for).
func (qc *Config) ResolveIP(ip string) (float64, SensorKey, bool) {
	m := qc.limits[Connection]
	for _, n := range []metadata.QuotaName{metadata.Named(ip), metadata.DefaultName} {
		if v, ok := m[metadata.QuotaEntity{IP: n}]; ok {
			return v, SensorKey{Kind: Connection, IP: ip}, true
		}
	}
	return 0, SensorKey{}, false
}

// share is what this agent enforces of a quota of value v.
func (qc *Config) share(k Kind, v float64) float64 {
	if k.Shared() {
		return v / float64(qc.agents)
	}
	return v
}

// Sensors are the rates quotas are measured by, one per sensor key,
// made on first use. mu guards the map; each sensor guards its own
// samples. The zero value is ready.
type Sensors struct {
	mu sync.Mutex
	m  map[SensorKey]*sensor
}

// Record charges v to the sensor named key and returns how long its
// client must be throttled under bound (zero when within it).
func (q *Sensors) Record(key SensorKey, bound, v float64, now time.Time) time.Duration {
	q.mu.Lock()
	if q.m == nil {
		q.m = map[SensorKey]*sensor{}
	}
	s := q.m[key]
	if s == nil {
		s = &sensor{}
		q.m[key] = s
	}
	q.mu.Unlock()
	rate, window := s.record(v, now)
	d := throttleTime(rate, bound, window)
	if key.Kind == Request {
		d = min(d, Window) // Kafka bounds request-time throttles by one window
	}
	return d
}

// Prune drops the sensors nothing was recorded in for all their windows.
func (q *Sensors) Prune(now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for k, s := range q.m {
		if s.idle(now) {
			delete(q.m, k)
		}
	}
}

// Version is the store's quota version the config was read at (-1 when
// unread).
func (qc *Config) Version() int64 { return qc.version }

// Agents is the number of live agents shared quotas are divided by.
func (qc *Config) Agents() int { return qc.agents }

// WithAgents is the same quotas divided among n live agents.
func (qc *Config) WithAgents(n int) *Config {
	next := *qc
	next.agents = max(n, 1)
	return &next
}
