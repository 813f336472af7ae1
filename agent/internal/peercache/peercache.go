// Package peercache is the zone's shared read cache. The agents of one zone that have an HTTP
// listener form a ring over object byte ranges (rendezvous hashing of the
// range over their node ids): a range this agent's read cache misses is
// read through the agent that owns it, over internal HTTP, and that agent
// serves it from its own read cache, where concurrent peers share one
// flight and the range stays cached. So each range is read from object
// storage about once per zone, however many agents of the zone fetch it.
//
// The ring is this agent's view of the live agents (Config.Live), so it
// follows agents joining and leaving at each heartbeat; views may disagree
// for a moment, which costs at most an extra GET: a range asked for by a
// peer is never forwarded again. Reading through a peer is an optimisation
// only: any failure (unreachable, timeout, an answer other than 200, a
// short body) is counted and the range is read from object storage
// directly, so a dead owner costs a GET, never a failed fetch.
//
// The endpoint serves only floe's own objects (storage.IsObjectKey),
// read-only. On an agent with a TLS or SASL listener it serves only
// requests signed with the cluster's peer secret (Signer), so that
// nobody reads records through it around the listeners' authentication;
// such an agent signs its own requests, and an open agent's unsigned ones
// are refused there (it reads those ranges directly).
package peercache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"floe/agent/internal/ring"
	"floe/metadata"
	"floe/storage"
)

const (
	// Path is the internal endpoint an owner serves ranges on.
	Path = "/internal/v1/range"
	// MaxRange bounds the ranges read through peers, and what the
	// endpoint serves: the largest objects the compactor writes by
	// default. Larger ranges are read directly.
	MaxRange = 256 << 20
	// timeout bounds one read through a peer, the owner's own GET
	// included when it misses; past it the range is read directly.
	timeout = 5 * time.Second
	// dialTimeout bounds connecting to a peer: an owner that went
	// away without leaving the registry (killed, partitioned) costs this
	// much, not timeout, when nothing answers at its address.
	dialTimeout = time.Second
	// errorLogEvery spaces the warnings of failed peer reads.
	errorLogEvery = 10 * time.Second
)

// servingPeerKey marks the context of a read made to serve a peer: its
// misses are read from object storage, never forwarded to a third agent,
// so agents whose views of the ring disagree cannot bounce a range around.
type servingPeerKey struct{}

// Bucket is the bucket under the agent's read cache:
// GetRange reads a range the ring gives to another agent through that
// agent, everything else goes to the bucket it wraps. It holds no state
// but its HTTP client's connection pool and its counters.
type Bucket struct {
	bkt        storage.Bucket // the metered bucket: direct GETs, and every other operation
	cfg        Config
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

// Config is what the shared read cache needs of its agent.
type Config struct {
	// Self is this agent's id, Zone its zone.
	Self, Zone string
	// Enabled reads ranges through their owners (--read-cache-peers);
	// off, every range is read directly.
	Enabled bool
	// Live is this agent's view of the live agents.
	Live func() []metadata.Agent
	// Signer signs this agent's requests and checks its peers'.
	Signer *Signer
	Log    *slog.Logger
	// Refused is told of a peer request the Signer refused.
	Refused func(r *http.Request, err error)
}

// New wraps b, the bucket beneath (metered: direct GETs and every other
// operation); its metrics join reg.
func New(cfg Config, b storage.Bucket, reg prometheus.Registerer) *Bucket {
	tr := &http.Transport{
		Proxy:               nil, // agent to agent: never through an environment proxy
		DialContext:         (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64, // concurrent fills of one fetch, prefetch included
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // record batches are compressed already, or not worth it
	}
	pb := &Bucket{bkt: b, cfg: cfg, client: &http.Client{Transport: tr}}
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
	reg.MustRegister(pb.m.reads, pb.m.readBytes, pb.m.errors, pb.m.served, pb.m.saved)
	return pb
}

// CloseIdle closes the pooled connections to peers, once the agent stops.
func (b *Bucket) CloseIdle() { b.client.CloseIdleConnections() }

// ringKey is what the ring hashes for a range.
func ringKey(key string, offset, length int64) string {
	return key + "@" + strconv.FormatInt(offset, 10) + "+" + strconv.FormatInt(length, 10)
}

// Owner returns the agent of this agent's zone that owns the range, from
// this agent's view of the live agents with an HTTP address; ok is false
// when the ring is empty (no HTTP listener anywhere in the zone).
func (b *Bucket) Owner(key string, offset, length int64) (owner metadata.Agent, ok bool) {
	var zone []metadata.Agent
	for _, l := range b.cfg.Live() {
		if l.Zone == b.cfg.Zone && l.HTTPAddr != "" {
			zone = append(zone, l)
		}
	}
	if len(zone) == 0 {
		return metadata.Agent{}, false
	}
	return ring.Rendezvous(ringKey(key, offset, length), zone), true
}

// GetRange reads the range through its owner when that is another agent,
// else (or when that fails) from object storage.
func (b *Bucket) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if !b.cfg.Enabled || length <= 0 || length > MaxRange || !storage.IsObjectKey(key) ||
		ctx.Value(servingPeerKey{}) != nil {
		return b.bkt.GetRange(ctx, key, offset, length)
	}
	owner, ok := b.Owner(key, offset, length)
	if !ok || owner.ID == b.cfg.Self {
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
	if now := time.Now().UnixNano(); now-b.lastErrLog.Load() > int64(errorLogEvery) {
		b.lastErrLog.Store(now)
		b.cfg.Log.Warn("read through peer failed, reading from object storage", "peer", owner.HTTPAddr,
			"peer_node_id", owner.NodeID, "key", key, "err", err)
	}
	return b.bkt.GetRange(ctx, key, offset, length)
}

// ReadRange reads a range into buf as GetRange does: through its owner
// when that is another agent, else from object storage (the bucket's own
// ReadRange).
func (b *Bucket) ReadRange(ctx context.Context, key string, offset int64, buf []byte) error {
	if !b.cfg.Enabled || !storage.IsObjectKey(key) {
		return storage.ReadRange(ctx, b.bkt, key, offset, buf)
	}
	data, err := b.GetRange(ctx, key, offset, int64(len(buf)))
	if err != nil {
		return err
	}
	return storage.FillRange(buf, data, key, offset)
}

// The rest goes to the bucket beneath, every capability kept.

func (b *Bucket) Put(ctx context.Context, key string, parts ...[]byte) error {
	return b.bkt.Put(ctx, key, parts...)
}

func (b *Bucket) PutChecksummed(ctx context.Context, key string, crc32c uint32, parts ...[]byte) error {
	return storage.PutSummed(ctx, b.bkt, key, storage.Checksum{CRC32C: crc32c, Known: true}, parts...)
}

func (b *Bucket) PutStream(ctx context.Context, key string, size int64, body io.Reader) error {
	return storage.PutStream(ctx, b.bkt, key, size, body)
}

func (b *Bucket) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return b.bkt.PutIfAbsent(ctx, key, data)
}

func (b *Bucket) Size(ctx context.Context, key string) (int64, error) {
	return b.bkt.Size(ctx, key)
}

func (b *Bucket) Delete(ctx context.Context, key string) error { return b.bkt.Delete(ctx, key) }

func (b *Bucket) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	return b.bkt.List(ctx, prefix, fn)
}

// readPeer asks the agent at addr for the range.
func (b *Bucket) readPeer(ctx context.Context, addr, key string, offset, length int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	q := url.Values{}
	q.Set("key", key)
	q.Set("offset", strconv.FormatInt(offset, 10))
	q.Set("length", strconv.FormatInt(length, 10))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+Path+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	b.cfg.Signer.Sign(req, key, offset, length)
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

// Reader reads a range through the agent's read cache (storage.Cache),
// reporting whether it started no GET of its own.
type Reader interface {
	Read(ctx context.Context, key string, offset, length int64) ([]byte, bool, error)
}

// ServeRange serves GET /internal/v1/range?key=K&offset=O&length=N: N bytes
// of object K from O, from this agent's read cache, so that the peers reading
// the ranges this agent owns share its flights and its cache. Bad or
// missing parameters, a key that names no floe object or a range over
// MaxRange are 400; an unknown object 404.
func (b *Bucket) ServeRange(cache Reader) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
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
		case lerr != nil || length <= 0 || length > MaxRange:
			http.Error(w, fmt.Sprintf("length: want an integer in [1, %d]", MaxRange), http.StatusBadRequest)
			return
		}
		if err := b.cfg.Signer.Check(r, key, offset, length); err != nil {
			if b.cfg.Refused != nil {
				b.cfg.Refused(r, err)
			}
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		ctx := context.WithValue(r.Context(), servingPeerKey{}, true)
		data, hit, err := cache.Read(ctx, key, offset, length)
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
		b.m.served.Inc()
		if hit {
			b.m.saved.Inc()
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		_, _ = w.Write(data)
	}
}

// Counts are the shared read cache's counters: ranges read through peers
// and failed there, served to peers and, of those, served without a GET.
func (b *Bucket) Counts() (reads, errors, served, saved float64) {
	return value(b.m.reads), value(b.m.errors), value(b.m.served), value(b.m.saved)
}

func value(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
