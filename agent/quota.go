package agent

// Client quotas, enforced as Kafka's ClientQuotaManager enforces them
// (KIP-13 byte rates, KIP-55 user and client-id entities, KIP-124 request
// percentage, KIP-219 throttling after the answer, KIP-546 the quota APIs,
// KIP-612 connection creation rate per ip):
//
//   - producer_byte_rate is charged the record bytes of each Produce
//     request, consumer_byte_rate the record bytes of each Fetch answer,
//     request_percentage the handler time of each request (as a percentage
//     of one second per second, Kafka's unit) except those whose handlers
//     wait by design (Produce, Fetch, JoinGroup, SyncGroup: their time is
//     mostly waiting for a flush, for records or for other members, not
//     work), connection_creation_rate each new connection of an ip.
//   - A (user, client id) pair gets, per quota key, the first quota of
//     Kafka's precedence that sets that key (resolveQuota). Values are
//     measured by a sampled rate per quota key and per the entity that
//     matched (quota_rate.go): a user quota is shared by all that user's
//     client ids, a default client-id quota is per client id.
//   - When a request takes the rate above the bound, its answer carries
//     throttle_time_ms, the time without traffic that brings the rate back
//     to the bound, and the connection serves no further request for that
//     long (conn.mute; clients since Kafka 2.0 also wait by themselves).
//     Clients too old for KIP-219 get their answer that much later
//     instead, as Kafka does for them.
//
// Across agents: the store holds the cluster's quotas; each agent enforces
// producer_byte_rate and consumer_byte_rate divided by the number of live
// agents, which it reloads with the quotas in its heartbeat loop
// (refreshQuotas); request_percentage and connection_creation_rate bound
// what one agent spends or accepts, as they do per broker in Kafka, and
// are not divided. docs/architecture.md says why and what this costs.

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
)

// quotaKind is one of the quota keys floe enforces.
type quotaKind int

const (
	quotaProduce quotaKind = iota
	quotaFetch
	quotaRequest
	quotaConnection
	quotaKinds
)

// quotaKeys are the Kafka config keys of the kinds, quotaTypes their
// names in metrics (Kafka's QuotaType names).
var (
	quotaKeys  = [quotaKinds]string{"producer_byte_rate", "consumer_byte_rate", "request_percentage", "connection_creation_rate"}
	quotaTypes = [quotaKinds]string{"produce", "fetch", "request", "connection"}
)

// shared reports whether the kind's quota is the cluster's, each agent
// enforcing its share, rather than each agent's own.
func (k quotaKind) shared() bool { return k == quotaProduce || k == quotaFetch }

// quotaConfig is one immutable snapshot of the quotas an agent enforces.
type quotaConfig struct {
	version int64 // the store's QuotaVersion it was read at; -1 when unread
	agents  int   // live agents when it was built: the divisor of shared quotas
	limits  [quotaKinds]map[metadata.QuotaEntity]float64
}

// newQuotaConfig indexes the store's quotas by kind; keys floe does not
// enforce (controller_mutation_rate: floe has no controller) are kept out.
func newQuotaConfig(version int64, agents int, qs []metadata.ClientQuota) *quotaConfig {
	qc := &quotaConfig{version: version, agents: max(agents, 1)}
	for _, q := range qs {
		if q.Entity.IP.Kind == metadata.QuotaNamed {
			// Connections name their address in Go's canonical form.
			if ip := net.ParseIP(q.Entity.IP.Name); ip != nil {
				q.Entity.IP.Name = ip.String()
			}
		}
		for k, key := range quotaKeys {
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

// empty reports whether no quota is enforced.
func (qc *quotaConfig) empty() bool {
	for _, m := range qc.limits {
		if len(m) > 0 {
			return false
		}
	}
	return true
}

// quotaSensorKey names a sensor: the kind and the tags Kafka gives it, the
// names of the entity parts that matched ("" for a part the quota is not
// per).
type quotaSensorKey struct {
	kind             quotaKind
	user, client, ip string
}

// resolveQuota finds the quota of kind k (user, client id kinds) for user
// and client, by Kafka's precedence: user and client id, user and default
// client id, user, default user and client id, default user and default
// client id, default user, client id, default client id. ok is false when
// none sets the key. The bound is this agent's: a shared quota's share.
func (qc *quotaConfig) resolveQuota(k quotaKind, user, client string) (bound float64, key quotaSensorKey, ok bool) {
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
		key.kind = k
		if l.byUser {
			key.user = user
		}
		if l.byClient {
			key.client = client
		}
		return qc.share(k, v), key, true
	}
	return 0, key, false
}

// resolveIPQuota finds the connection_creation_rate of ip: its own, else
// the default ip quota (which every ip has a sensor of its own for).
func (qc *quotaConfig) resolveIPQuota(ip string) (float64, quotaSensorKey, bool) {
	m := qc.limits[quotaConnection]
	for _, n := range []metadata.QuotaName{metadata.Named(ip), metadata.DefaultName} {
		if v, ok := m[metadata.QuotaEntity{IP: n}]; ok {
			return v, quotaSensorKey{kind: quotaConnection, ip: ip}, true
		}
	}
	return 0, quotaSensorKey{}, false
}

// share is what this agent enforces of a quota of value v.
func (qc *quotaConfig) share(k quotaKind, v float64) float64 {
	if k.shared() {
		return v / float64(qc.agents)
	}
	return v
}

// clientQuotas is an agent's quota state. Its zero value enforces nothing
// until the first refresh. cfg is replaced whole (never modified) by
// refreshQuotas, one at a time under loadMu; mu guards sensors; each
// sensor guards its own samples.
type clientQuotas struct {
	cfg    atomic.Pointer[quotaConfig]
	loadMu sync.Mutex

	mu      sync.Mutex
	sensors map[quotaSensorKey]*quotaRate

	metricsOnce sync.Once
	// throttleSeconds and throttles: the throttle times imposed and the
	// answers (or connections) throttled, by quota type.
	throttleSeconds *prometheus.CounterVec
	throttles       *prometheus.CounterVec
}

// record charges v to the sensor named key and returns how long its
// client must be throttled under bound (zero when within it).
func (q *clientQuotas) record(key quotaSensorKey, bound, v float64, now time.Time) time.Duration {
	q.mu.Lock()
	if q.sensors == nil {
		q.sensors = map[quotaSensorKey]*quotaRate{}
	}
	s := q.sensors[key]
	if s == nil {
		s = &quotaRate{}
		q.sensors[key] = s
	}
	q.mu.Unlock()
	rate, window := s.record(v, now)
	d := throttleTime(rate, bound, window)
	if key.kind == quotaRequest {
		d = min(d, quotaWindow) // Kafka bounds request-time throttles by one window
	}
	return d
}

// prune drops the sensors nothing was recorded in for all their windows.
func (q *clientQuotas) prune(now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for k, s := range q.sensors {
		if s.idle(now) {
			delete(q.sensors, k)
		}
	}
}

// quotaMetrics registers the quota metrics once, on the agent's registry.
func (a *Agent) quotaMetrics() *clientQuotas {
	q := &a.quotas
	q.metricsOnce.Do(func() {
		q.throttleSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_agent_quota_throttle_seconds_total",
			Help: "Throttle time imposed on clients over a quota, by quota type (produce, fetch, request, connection)."}, []string{"quota"})
		q.throttles = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_agent_quota_throttles_total",
			Help: "Answers (and, for connection, connections) throttled by a quota, by quota type."}, []string{"quota"})
		a.metrics.reg.MustRegister(q.throttleSeconds, q.throttles)
	})
	return q
}

// refreshQuotas reloads the quotas when the store's quota version or the
// number of live agents has changed since the last load, and drops idle
// sensors. The heartbeat loop calls it each tick; AlterClientQuotas calls
// it after a change, so the agent that made it enforces it at once.
func (a *Agent) refreshQuotas(ctx context.Context) {
	q := a.quotaMetrics()
	q.loadMu.Lock()
	defer q.loadMu.Unlock()
	q.prune(time.Now())
	agents := len(a.liveAgents())
	cur := q.cfg.Load()
	v, err := a.store.QuotaVersion(ctx)
	if err == nil && cur != nil && cur.version == v && cur.agents == agents {
		return
	}
	var qs []metadata.ClientQuota
	if err == nil {
		qs, err = a.store.ClientQuotas(ctx)
	}
	if err != nil {
		a.log.Warn("refresh client quotas failed", "err", err)
		if cur == nil {
			// Enforce none rather than ask the store on every request;
			// the next tick tries again.
			q.cfg.Store(newQuotaConfig(-1, agents, nil))
		} else if cur.agents != agents {
			next := *cur
			next.agents = agents
			q.cfg.Store(&next)
		}
		return
	}
	q.cfg.Store(newQuotaConfig(v, agents, qs))
}

// quotaConfig is the agent's current quotas, loaded on first use.
func (a *Agent) quotaConfig() *quotaConfig {
	if qc := a.quotas.cfg.Load(); qc != nil {
		return qc
	}
	parent := a.ctx
	if parent == nil { // not started (tests)
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeout(parent, 5*time.Second)
	defer cancel()
	a.refreshQuotas(ctx)
	return a.quotas.cfg.Load()
}

// quotaUserName is the user name quotas know a principal by: its name
// without the "User:" type, as Kafka's quota entities name users.
func quotaUserName(principal string) string {
	if _, name, ok := strings.Cut(principal, ":"); ok {
		return name
	}
	return principal
}

// waitsByDesign reports whether a request's handler time is mostly
// waiting, which request_percentage must not charge.
func waitsByDesign(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.Produce, kmsg.Fetch, kmsg.ShareFetch, kmsg.JoinGroup, kmsg.SyncGroup:
		return true
	}
	return false
}

// throttleAnswer is conn.run's hook after a handler that answered: it
// charges the request to the client's quotas and, when one is passed,
// throttles the client for the longest of the throttle times (KIP-219):
// the answer carries it as throttle_time_ms and the connection is muted
// for it; a throttled Fetch is answered without records. A Produce with acks=0 has no answer; its connection is muted
// all the same.
func (c *conn) throttleAnswer(r *request, resp kmsg.Response, took time.Duration) {
	a := c.a
	qc := a.quotaConfig()
	if qc.empty() {
		return
	}
	user, client := quotaUserName(c.principal()), ""
	if r.hdr.ClientID != nil {
		client = *r.hdr.ClientID
	}
	now := time.Now()
	var worst time.Duration
	kind := quotaKind(-1)
	var fetched float64 // Fetch answer bytes charged to the fetch quota
	charge := func(k quotaKind, v float64) {
		bound, key, ok := qc.resolveQuota(k, user, client)
		if !ok {
			return
		}
		if k == quotaFetch {
			fetched = v
		}
		if d := a.quotas.record(key, bound, v, now); d > worst {
			worst, kind = d, k
		}
	}
	switch req := r.req.(type) {
	case *kmsg.ProduceRequest:
		n := 0
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				n += len(p.Records)
			}
		}
		charge(quotaProduce, float64(n))
	case *kmsg.FetchRequest:
		if fr, ok := resp.(*kmsg.FetchResponse); ok {
			n := 0
			for _, t := range fr.Topics {
				for _, p := range t.Partitions {
					n += len(p.RecordBatches)
				}
			}
			charge(quotaFetch, float64(n))
		}
	case *kmsg.ShareFetchRequest:
		// Charged as a Fetch; the records it acquired are the member's,
		// so a throttled answer still carries them.
		if sr, ok := resp.(*kmsg.ShareFetchResponse); ok {
			n := 0
			for _, t := range sr.Topics {
				for _, p := range t.Partitions {
					n += len(p.Records)
				}
			}
			charge(quotaFetch, float64(n))
		}
	}
	if !waitsByDesign(r.hdr.APIKey) {
		charge(quotaRequest, took.Seconds()*100)
	}
	if worst <= 0 {
		return
	}
	a.quotas.throttleSeconds.WithLabelValues(quotaTypes[kind]).Add(worst.Seconds())
	a.quotas.throttles.WithLabelValues(quotaTypes[kind]).Inc()
	c.mute(now.Add(worst))
	if fr, ok := resp.(*kmsg.FetchResponse); ok && fetched > 0 {
		// As Kafka does: a throttled fetch is answered empty, and the
		// bytes it would have carried are taken back off the fetch quota
		// (the client fetches them again once its throttle ends).
		if bound, key, ok := qc.resolveQuota(quotaFetch, user, client); ok {
			a.quotas.record(key, bound, -fetched, now)
		}
		a.releaseFetchBuffers(fr)
		fr.Topics = nil
	}
	t, ok := resp.(interface {
		Throttle() (int32, bool)
		SetThrottle(int32)
	})
	if !ok {
		return
	}
	cur, afterAnswer := t.Throttle()
	t.SetThrottle(max(cur, int32(worst/time.Millisecond)))
	if !afterAnswer {
		// A client from before KIP-219 does not wait by itself: Kafka
		// holds its answer back for the throttle time.
		c.sleepUntil(now.Add(worst))
	}
}

// mute stops the reader from serving requests until until (at least).
func (c *conn) mute(until time.Time) {
	u := until.UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= u || c.mutedUntil.CompareAndSwap(cur, u) {
			return
		}
	}
}

// waitMuted is the reader's, once the next frame has begun to arrive: it
// reads no more of it until the mute ends (or the agent stops), so a
// muted client holds none of the request budget. A frame the reader was
// already reading when the mute began is served (Kafka, which reads one
// request of a connection at a time, has no such frame); its bytes are
// charged, and the next throttle is the longer for them.
func (c *conn) waitMuted() {
	if u := c.mutedUntil.Load(); u != 0 {
		c.sleepUntil(time.Unix(0, u))
	}
}

// sleepUntil waits until t, or until the agent stops.
func (c *conn) sleepUntil(t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-c.a.stopping:
	}
}

// connectionThrottled is the reader's first step: it charges the new
// connection to its ip's connection_creation_rate and reports whether it
// is over; such a connection is closed after its throttle time, as Kafka
// closes them (KIP-612), so that the client backs off before it retries.
func (c *conn) connectionThrottled() bool {
	a := c.a
	bound, key, ok := a.quotaConfig().resolveIPQuota(c.host())
	if !ok {
		return false
	}
	now := time.Now()
	d := a.quotas.record(key, bound, 1, now)
	if d <= 0 {
		return false
	}
	a.quotas.throttleSeconds.WithLabelValues(quotaTypes[quotaConnection]).Add(d.Seconds())
	a.quotas.throttles.WithLabelValues(quotaTypes[quotaConnection]).Inc()
	a.limitHit("connection_creation_rate", "remote", c.nc.RemoteAddr().String(), "throttle", d)
	c.sleepUntil(now.Add(d))
	return true
}

// fetchQuotaCap bounds the bytes of one Fetch answer of r's client by what
// its consumer_byte_rate lets through in the quota's windows (Kafka's
// getMaxValueInQuotaWindow), so that an answer over its quota is never so
// large that it would be throttled, and answered empty, every time; 0
// when the client has no fetch quota.
func (c *conn) fetchQuotaCap(r *request) int64 {
	qc := c.a.quotaConfig()
	if qc.empty() {
		return 0
	}
	client := ""
	if r.hdr.ClientID != nil {
		client = *r.hdr.ClientID
	}
	bound, _, ok := qc.resolveQuota(quotaFetch, quotaUserName(c.principal()), client)
	if !ok {
		return 0
	}
	return max(int64(bound*float64(quotaSamples-1)*quotaWindow.Seconds()), 1)
}
