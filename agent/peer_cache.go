package agent

// The zone's shared read cache. The agents of one zone that have an HTTP
// listener form a ring over object byte ranges (rendezvous hashing of the
// range over their node ids): a range this agent's read cache misses is
// read through the agent that owns it, over internal HTTP, and that agent
// serves it from its own read cache, where concurrent peers share one
// flight and the range stays cached. So each range is read from object
// storage about once per zone, however many agents of the zone fetch it.
//
// The ring is this agent's view of the live agents (liveAgents), so it
// follows agents joining and leaving at each heartbeat; views may disagree
// for a moment, which costs at most an extra GET: a range asked for by a
// peer is never forwarded again. Reading through a peer is an optimisation
// only: any failure (unreachable, timeout, an answer other than 200, a
// short body) is counted and the range is read from object storage
// directly, so a dead owner costs a GET, never a failed fetch.
//
// The endpoint serves only floe's own objects (storage.IsObjectKey),
// read-only. On an agent with a TLS or SASL listener it serves only
// requests signed with the cluster's peer secret (peer_auth.go), so that
// nobody reads records through it around the listeners' authentication;
// such an agent signs its own requests, and an open agent's unsigned ones
// are refused there (it reads those ranges directly).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"floe/metadata"
	"floe/storage"
)

const (
	// peerRangePath is the internal endpoint an owner serves ranges on.
	peerRangePath = "/internal/v1/range"
	// maxPeerRange bounds the ranges read through peers, and what the
	// endpoint serves: the largest objects the compactor writes by
	// default. Larger ranges are read directly.
	maxPeerRange = 256 << 20
	// peerTimeout bounds one read through a peer, the owner's own GET
	// included when it misses; past it the range is read directly.
	peerTimeout = 5 * time.Second
	// peerDialTimeout bounds connecting to a peer: an owner that went
	// away without leaving the registry (killed, partitioned) costs this
	// much, not peerTimeout, when nothing answers at its address.
	peerDialTimeout = time.Second
	// peerErrorLogEvery spaces the warnings of failed peer reads.
	peerErrorLogEvery = 10 * time.Second
)

// servingPeerKey marks the context of a read made to serve a peer: its
// misses are read from object storage, never forwarded to a third agent,
// so agents whose views of the ring disagree cannot bounce a range around.
type servingPeerKey struct{}

// peerBucket is the bucket under the agent's read cache (Agent.cache):
// GetRange reads a range the ring gives to another agent through that
// agent, everything else goes to the bucket it wraps. It holds no state
// but its HTTP client's connection pool and its counters.
type peerBucket struct {
	bkt        storage.Bucket // the metered bucket: direct GETs, and every other operation
	a          *Agent
	client     *http.Client
	m          peerMetrics
	lastErrLog atomic.Int64 // unix nanos of the last peer error warning
}

// peerMetrics count the shared read cache's work, from both sides.
type peerMetrics struct {
	reads     prometheus.Counter // ranges read through a peer
	readBytes prometheus.Counter
	errors    prometheus.Counter // peer reads that failed, then read directly
	served    prometheus.Counter // ranges served to peers
	saved     prometheus.Counter // of those, served without a GET of this agent's own
}

func newPeerBucket(a *Agent, b storage.Bucket) *peerBucket {
	tr := &http.Transport{
		Proxy:               nil, // agent to agent: never through an environment proxy
		DialContext:         (&net.Dialer{Timeout: peerDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64, // concurrent fills of one fetch, prefetch included
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // record batches are compressed already, or not worth it
	}
	pb := &peerBucket{bkt: b, a: a, client: &http.Client{Transport: tr}}
	pb.m = peerMetrics{
		reads: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_agent_read_cache_peer_reads_total",
			Help: "Ranges the read cache missed and read through the agent of the zone that owns them."}),
		readBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_agent_read_cache_peer_read_bytes_total",
			Help: "Bytes of the ranges read through peers."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_agent_read_cache_peer_errors_total",
			Help: "Reads through a peer that failed (unreachable, timeout, error answer, short body) and were read from object storage instead."}),
		served: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_agent_read_cache_peer_served_total",
			Help: "Ranges served to other agents of the zone from this agent's read cache."}),
		saved: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_agent_read_cache_gets_saved_total",
			Help: "Ranges served to other agents that cost this agent no object-store GET: cached, or joined a GET in flight."}),
	}
	a.metrics.reg.MustRegister(pb.m.reads, pb.m.readBytes, pb.m.errors, pb.m.served, pb.m.saved)
	return pb
}

// closeIdle closes the pooled connections to peers, once the agent stops.
func (b *peerBucket) closeIdle() { b.client.CloseIdleConnections() }

// ringKey is what the ring hashes for a range.
func ringKey(key string, offset, length int64) string {
	return key + "@" + strconv.FormatInt(offset, 10) + "+" + strconv.FormatInt(length, 10)
}

// ownerOf returns the agent of this agent's zone that owns the range, from
// this agent's view of the live agents with an HTTP address; ok is false
// when the ring is empty (no HTTP listener anywhere in the zone).
func (b *peerBucket) ownerOf(key string, offset, length int64) (owner metadata.Agent, ok bool) {
	var ring []metadata.Agent
	for _, l := range b.a.liveAgents() {
		if l.Zone == b.a.cfg.Zone && l.HTTPAddr != "" {
			ring = append(ring, l)
		}
	}
	if len(ring) == 0 {
		return metadata.Agent{}, false
	}
	return rendezvous(ringKey(key, offset, length), ring), true
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

// GetRange reads the range through its owner when that is another agent,
// else (or when that fails) from object storage.
func (b *peerBucket) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if !b.a.cfg.ReadCachePeers || length <= 0 || length > maxPeerRange || !storage.IsObjectKey(key) ||
		ctx.Value(servingPeerKey{}) != nil {
		return b.bkt.GetRange(ctx, key, offset, length)
	}
	owner, ok := b.ownerOf(key, offset, length)
	if !ok || owner.ID == b.a.id {
		return b.bkt.GetRange(ctx, key, offset, length)
	}
	data, err := b.readPeer(ctx, owner.HTTPAddr, key, offset, length)
	if err == nil {
		b.m.reads.Inc()
		b.m.readBytes.Add(float64(len(data)))
		return data, nil
	}
	if ctx.Err() != nil {
		// Nobody waits for the range any more: no peer's fault.
		return nil, ctx.Err()
	}
	b.m.errors.Inc()
	if now := time.Now().UnixNano(); now-b.lastErrLog.Load() > int64(peerErrorLogEvery) {
		b.lastErrLog.Store(now)
		b.a.log.Warn("read through peer failed, reading from object storage", "peer", owner.HTTPAddr,
			"peer_node_id", owner.NodeID, "key", key, "err", err)
	}
	return b.bkt.GetRange(ctx, key, offset, length)
}

// ReadRange reads a range into buf as GetRange does: through its owner
// when that is another agent, else from object storage (the bucket's own
// ReadRange).
func (b *peerBucket) ReadRange(ctx context.Context, key string, offset int64, buf []byte) error {
	if !b.a.cfg.ReadCachePeers || !storage.IsObjectKey(key) {
		return storage.ReadRange(ctx, b.bkt, key, offset, buf)
	}
	data, err := b.GetRange(ctx, key, offset, int64(len(buf)))
	if err != nil {
		return err
	}
	return storage.FillRange(buf, data, key, offset)
}

// The rest goes to the bucket beneath, every capability kept.

func (b *peerBucket) Put(ctx context.Context, key string, parts ...[]byte) error {
	return b.bkt.Put(ctx, key, parts...)
}

func (b *peerBucket) PutChecksummed(ctx context.Context, key string, crc32c uint32, parts ...[]byte) error {
	return storage.PutSummed(ctx, b.bkt, key, storage.Checksum{CRC32C: crc32c, Known: true}, parts...)
}

func (b *peerBucket) PutStream(ctx context.Context, key string, size int64, body io.Reader) error {
	return storage.PutStream(ctx, b.bkt, key, size, body)
}

func (b *peerBucket) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return b.bkt.PutIfAbsent(ctx, key, data)
}

func (b *peerBucket) Size(ctx context.Context, key string) (int64, error) {
	return b.bkt.Size(ctx, key)
}

func (b *peerBucket) Delete(ctx context.Context, key string) error { return b.bkt.Delete(ctx, key) }

func (b *peerBucket) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	return b.bkt.List(ctx, prefix, fn)
}

// readPeer asks the agent at addr for the range.
func (b *peerBucket) readPeer(ctx context.Context, addr, key string, offset, length int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	q := url.Values{}
	q.Set("key", key)
	q.Set("offset", strconv.FormatInt(offset, 10))
	q.Set("length", strconv.FormatInt(length, 10))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+peerRangePath+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	b.a.signPeer(req, key, offset, length)
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("peer %s: %s: %q", addr, resp.Status, msg)
	}
	// The owner sends Content-Length; fewer bytes than asked for are a
	// range that runs past the end of the object, as Bucket.GetRange
	// returns it, while a body shorter than announced is a cut transfer.
	n := resp.ContentLength
	if n < 0 || n > length {
		return nil, fmt.Errorf("peer %s: content length %d for a range of %d", addr, n, length)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(resp.Body, data); err != nil {
		return nil, fmt.Errorf("peer %s: body: %w", addr, err)
	}
	return data, nil
}

// serveRange is GET /internal/v1/range?key=K&offset=O&length=N: N bytes of
// object K from O, from this agent's read cache, so that the peers reading
// the ranges this agent owns share its flights and its cache. Bad or
// missing parameters, a key that names no floe object or a range over
// maxPeerRange are 400; an unknown object 404.
func (a *Agent) serveRange(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key := q.Get("key")
	offset, oerr := strconv.ParseInt(q.Get("offset"), 10, 64)
	length, lerr := strconv.ParseInt(q.Get("length"), 10, 64)
	switch {
	case !storage.IsObjectKey(key):
		http.Error(w, "key: not a floe object key", http.StatusBadRequest)
		return
	case oerr != nil || offset < 0:
		http.Error(w, "offset: want an integer >= 0", http.StatusBadRequest)
		return
	case lerr != nil || length <= 0 || length > maxPeerRange:
		http.Error(w, fmt.Sprintf("length: want an integer in [1, %d]", maxPeerRange), http.StatusBadRequest)
		return
	}
	if err := a.checkPeer(r, key, offset, length); err != nil {
		a.limitHit("peer.authentication", "remote", r.RemoteAddr, "err", err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	ctx := context.WithValue(r.Context(), servingPeerKey{}, true)
	data, hit, err := a.cache.Read(ctx, key, offset, length)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		http.Error(w, "object not found", http.StatusNotFound)
		return
	case err != nil:
		if r.Context().Err() == nil {
			http.Error(w, "read: "+err.Error(), http.StatusBadGateway)
		}
		return
	}
	a.peers.m.served.Inc()
	if hit {
		a.peers.m.saved.Inc()
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
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
