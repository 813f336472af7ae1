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
//     matched (agent/internal/quota): a user quota is shared by all that user's
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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/internal/quota"
	"floe/metadata"
)

// clientQuotas is an agent's quota state. Its zero value enforces nothing
// until the first refresh. cfg is replaced whole (never modified) by
// refreshQuotas, one at a time under loadMu; the sensors guard themselves.
type clientQuotas struct {
	cfg     atomic.Pointer[quota.Config]
	loadMu  sync.Mutex
	sensors quota.Sensors

	metricsOnce sync.Once
	// throttleSeconds and throttles: the throttle times imposed and the
	// answers (or connections) throttled, by quota type.
	throttleSeconds *prometheus.CounterVec
	throttles       *prometheus.CounterVec
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
	q.sensors.Prune(time.Now())
	agents := len(a.liveAgents())
	cur := q.cfg.Load()
	v, err := a.store.QuotaVersion(ctx)
	if err == nil && cur != nil && cur.Version() == v && cur.Agents() == agents {
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
			q.cfg.Store(quota.NewConfig(-1, agents, nil))
		} else if cur.Agents() != agents {
			q.cfg.Store(cur.WithAgents(agents))
		}
		return
	}
	q.cfg.Store(quota.NewConfig(v, agents, qs))
}

// quotaConfig is the agent's current quotas, loaded on first use.
func (a *Agent) quotaConfig() *quota.Config {
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
	if qc.Empty() {
		return
	}
	user, client := quotaUserName(c.principal()), ""
	if r.hdr.ClientID != nil {
		client = *r.hdr.ClientID
	}
	now := time.Now()
	var worst time.Duration
	kind := quota.Kind(-1)
	var fetched float64 // Fetch answer bytes charged to the fetch quota
	charge := func(k quota.Kind, v float64) {
		bound, key, ok := qc.Resolve(k, user, client)
		if !ok {
			return
		}
		if k == quota.Fetch {
			fetched = v
		}
		if d := a.quotas.sensors.Record(key, bound, v, now); d > worst {
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
		charge(quota.Produce, float64(n))
	case *kmsg.FetchRequest:
		if fr, ok := resp.(*kmsg.FetchResponse); ok {
			n := 0
			for _, t := range fr.Topics {
				for _, p := range t.Partitions {
					n += len(p.RecordBatches)
				}
			}
			charge(quota.Fetch, float64(n))
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
			charge(quota.Fetch, float64(n))
		}
	}
	if !waitsByDesign(r.hdr.APIKey) {
		charge(quota.Request, took.Seconds()*100)
	}
	if worst <= 0 {
		return
	}
	a.quotas.throttleSeconds.WithLabelValues(quota.Types[kind]).Add(worst.Seconds())
	a.quotas.throttles.WithLabelValues(quota.Types[kind]).Inc()
	c.mute(now.Add(worst))
	if fr, ok := resp.(*kmsg.FetchResponse); ok && fetched > 0 {
		// As Kafka does: a throttled fetch is answered empty, and the
		// bytes it would have carried are taken back off the fetch quota
		// (the client fetches them again once its throttle ends).
		if bound, key, ok := qc.Resolve(quota.Fetch, user, client); ok {
			a.quotas.sensors.Record(key, bound, -fetched, now)
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
	bound, key, ok := a.quotaConfig().ResolveIP(c.host())
	if !ok {
		return false
	}
	now := time.Now()
	d := a.quotas.sensors.Record(key, bound, 1, now)
	if d <= 0 {
		return false
	}
	a.quotas.throttleSeconds.WithLabelValues(quota.Types[quota.Connection]).Add(d.Seconds())
	a.quotas.throttles.WithLabelValues(quota.Types[quota.Connection]).Inc()
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
	if qc.Empty() {
		return 0
	}
	client := ""
	if r.hdr.ClientID != nil {
		client = *r.hdr.ClientID
	}
	bound, _, ok := qc.Resolve(quota.Fetch, quotaUserName(c.principal()), client)
	if !ok {
		return 0
	}
	return max(int64(bound*float64(quota.Samples-1)*quota.Window.Seconds()), 1)
}
