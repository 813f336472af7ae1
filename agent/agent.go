package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"floe/agent/internal/authz"
	"floe/agent/internal/budget"
	"floe/agent/internal/control"
	"floe/agent/internal/peercache"
	"floe/agent/internal/readahead"
	"floe/agent/internal/sasl"
	"floe/agent/internal/tlsfiles"
	"floe/metadata"
	"floe/storage"
	"floe/topicconfig"
)

// Agent is one floe agent process's Kafka server.
//
// Ownership: the listener, HTTP server and background loops are started by
// Start and owned by the Agent's WaitGroup; Close cancels them and waits.
// Shared mutable state is either guarded by the mutex declared right above it
// or owned by the batcher (see batcher.go).
type Agent struct {
	cfg     Config
	log     *slog.Logger
	store   metadata.Store
	bucket  storage.Bucket // instrumented with metrics
	cache   *storage.Cache
	peers   *peercache.Bucket // under cache: the zone's shared read cache
	metrics *metrics
	batcher *batcher
	topics  *topicCache
	// defaults are the topic configs' defaults: the flags and the
	// cluster's dynamic broker configs, read every heartbeat.
	defaults *topicconfig.Live
	commits  *broadcaster // woken after every local commit
	// reqBudget bounds request bytes read and not yet answered
	// (newRequestBudget).
	reqBudget *budget.Budget
	// fetchBudget bounds the record bytes of Fetch answers built and not
	// yet written.
	fetchBudget *budget.Budget
	coord       *coordinator      // consumer groups this agent coordinates
	txn         *txnCoordinator   // transactional ids this agent coordinates
	authz       *authz.Authorizer // ACL checks (agent/internal/authz)

	id string
	// self is the registered identity, NodeID set by the store; the
	// heartbeat re-registers it after an expiry. Guarded by viewMu.
	self  metadata.Agent
	lns   []*listener     // the Kafka listeners, in configured order
	tls   *tlsfiles.Files // the TLS listeners' certificates
	oauth *sasl.Verifier  // checks OAUTHBEARER tokens; nil without a JWKS
	// signer signs and checks the shared read cache's peer requests; its
	// secret is nil on an agent without secured listeners.
	signer *peercache.Signer
	// authFails counts failed SASL authentications by remote address.
	authFails sasl.Failures
	httpLn    net.Listener
	httpSv    *http.Server
	// regLn and regSv are the schema registry's own listener (registry.go).
	regLn net.Listener
	regSv *http.Server

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // background loops
	connWG sync.WaitGroup // connection goroutines
	// ahead reads old data ahead of consumers catching up (readahead.go);
	// nil when off. Its workers run under ctx and wg.
	ahead *readahead.ReadAhead
	// bgReads are object reads a fetch started ahead (prefetch); they end
	// before Close returns.
	bgReads sync.WaitGroup

	viewMu sync.Mutex
	live   []metadata.Agent // last known live agents, sorted by NodeID
	// departed: node ids that left live, and when (departed.go).
	departed map[int32]time.Time

	// draining is set when Close begins (drain.go); deregistered once the
	// agent has left the registry.
	draining     atomic.Bool
	deregistered atomic.Bool
	stopping     chan struct{} // closed when the drain ends: long polls return early

	// tailWaiting counts the fetches waiting for new records now, and
	// tailReadAt is when one last stopped waiting (unix nanos): while
	// consumers read at the head of the log, flushed objects go to the
	// read cache as they are written (batcher.writeThrough).
	tailWaiting atomic.Int32
	tailReadAt  atomic.Int64
	// heads holds the index entries of those objects, for the consumers
	// they wake (see heads).
	heads *heads

	lim limits // limit hits, for limitHit's rate-limited log
	// quotas are the client quotas this agent enforces (quota.go).
	quotas  clientQuotas
	control control.Set // tests' control functions (ControlKey)

	connMu     sync.Mutex
	conns      map[*conn]struct{}
	connsPerIP map[string]int // open connections by remote address
	closing    bool
}

// New builds an agent over a metadata store and a bucket. Nothing listens
// until Start.
func New(cfg Config, store metadata.Store, bucket storage.Bucket, log *slog.Logger) *Agent {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	m := newMetrics(cfg.MemoryBudgets())
	a := &Agent{
		cfg:        cfg,
		log:        log.With("component", "agent"),
		store:      store,
		metrics:    m,
		id:         hex.EncodeToString(idb[:]),
		commits:    newBroadcaster(),
		heads:      newHeads(),
		conns:      make(map[*conn]struct{}),
		connsPerIP: make(map[string]int),
		stopping:   make(chan struct{}),
	}
	a.bucket = storage.NewMetered(bucket, m.observeBucket)
	a.signer = &peercache.Signer{ID: a.id}
	a.peers = peercache.New(peercache.Config{Self: a.id, Zone: cfg.Zone, Enabled: cfg.ReadCachePeers, Live: a.liveAgents,
		Signer: a.signer, Log: a.log, Refused: func(r *http.Request, err error) {
			a.limitHit("peer.authentication", "remote", r.RemoteAddr, "err", err)
		}}, a.bucket, m.reg)
	a.cache = storage.NewCache(a.peers, cfg.CacheBytes)
	m.registerCache(a.cache)
	a.ahead = readahead.New(readahead.Config{Bytes: cfg.ReadAheadBytes, Workers: cfg.ReadAheadConcurrency,
		Entries: cfg.ReadAheadEntries, PartitionBytes: cfg.ReadAheadPartitionBytes, CacheBytes: cfg.CacheBytes},
		store, a.cache, m.reg)
	a.topics = newTopicCache(store, cfg.TopicCacheTTL)
	a.defaults = topicconfig.NewLive(cfg.TopicDefaults)
	a.batcher = newBatcher(a)
	a.coord = newCoordinator(a)
	a.txn = newTxnCoordinator(a)
	a.authz = authz.New(cfg.Authz, store, a.log)
	a.reqBudget = newRequestBudget(cfg.BufferBytes)
	a.fetchBudget = budget.New(cfg.FetchBufferBytes, 0)
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "floe_agent_request_bytes_held",
			Help: "Bytes of request frames read or being read and not yet released (within the request budget)."},
			func() float64 { return float64(a.reqBudget.InUse()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "floe_agent_request_budget_waiters",
			Help: "Connection readers waiting for request budget now."},
			func() float64 { return float64(a.reqBudget.Waiting()) }))
	return a
}

// ID is this agent process's unique id in the agent registry.
func (a *Agent) ID() string { return a.id }

// KafkaAddr is the address the first Kafka listener is bound to (after
// Start).
func (a *Agent) KafkaAddr() string { return a.lns[0].ln.Addr().String() }

// HTTPAddr is the address the HTTP listener is bound to (after Start), or "".
func (a *Agent) HTTPAddr() string {
	if a.httpLn == nil {
		return ""
	}
	return a.httpLn.Addr().String()
}

// NodeID is the Kafka broker id the store gave this agent.
func (a *Agent) NodeID() int32 { return a.selfAgent().NodeID }

// selfAgent is the agent's registered identity.
func (a *Agent) selfAgent() metadata.Agent {
	a.viewMu.Lock()
	defer a.viewMu.Unlock()
	return a.self
}

// Start binds the listeners, registers the agent in the store and launches
// the accept, flush, heartbeat and HTTP loops.
func (a *Agent) Start(ctx context.Context) error {
	if err := a.cfg.checkListeners(); err != nil {
		return err
	}
	var err error
	if a.tls, err = tlsfiles.New(a.cfg.Security.TLSCert, a.cfg.Security.TLSKey, a.cfg.Security.TLSClientCA, a.cfg.Security.ClientAuth, a.log); err != nil {
		return err
	}
	if err := a.loadPeerSecret(ctx); err != nil {
		return err
	}
	if a.cfg.Security.OAuth.JWKS != "" {
		if a.oauth, err = sasl.NewVerifier(ctx, a.cfg.Security.OAuth, a.log); err != nil {
			return err
		}
	}
	if err := a.listen(); err != nil {
		return err
	}
	if a.cfg.HTTPAddr != "" {
		hl, err := net.Listen("tcp", a.cfg.HTTPAddr)
		if err != nil {
			a.closeListeners()
			return fmt.Errorf("listen http %s: %w", a.cfg.HTTPAddr, err)
		}
		a.httpLn = hl
	}
	if a.cfg.SchemaRegistry != nil && a.cfg.SchemaRegistryAddr != "" {
		rl, err := net.Listen("tcp", a.cfg.SchemaRegistryAddr)
		if err != nil {
			a.closeListeners()
			return fmt.Errorf("listen schema registry %s: %w", a.cfg.SchemaRegistryAddr, err)
		}
		a.regLn = rl
	}
	reg := a.registration()
	if reg.HTTPAddr, err = a.advertisedHTTP(reg.Host); err != nil {
		a.closeListeners()
		return err
	}
	self, err := a.store.RegisterAgent(ctx, reg)
	if err != nil {
		a.closeListeners()
		return fmt.Errorf("register agent: %w", err)
	}
	a.viewMu.Lock()
	a.self = self
	a.viewMu.Unlock()
	if err := a.ensureInternalTopics(ctx); err != nil {
		a.closeListeners()
		return err
	}
	if err := a.defaults.Refresh(ctx, a.store); err != nil {
		a.closeListeners()
		return err
	}
	if err := a.refreshLive(ctx); err != nil {
		a.closeListeners()
		return err
	}
	if err := a.authz.Refresh(ctx); err != nil {
		a.closeListeners()
		return fmt.Errorf("load acls: %w", err)
	}

	a.ctx, a.cancel = context.WithCancel(context.Background())
	context.AfterFunc(a.ctx, a.peers.CloseIdle)
	a.batcher.start()
	if a.ahead != nil {
		a.ahead.Start(a.ctx, &a.wg)
	}
	for _, l := range a.lns {
		a.wg.Add(1)
		go a.acceptLoop(l)
	}
	a.wg.Add(1)
	go a.heartbeatLoop()
	if a.oauth != nil {
		a.wg.Add(1)
		go func() { defer a.wg.Done(); a.oauth.RefreshLoop(a.ctx) }()
	}
	a.wg.Add(1)
	go a.coord.run()
	a.wg.Add(1)
	go a.txn.run()
	if a.httpLn != nil {
		a.httpSv = &http.Server{Handler: a.httpHandler(), ReadHeaderTimeout: 10 * time.Second}
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			if err := a.httpSv.Serve(a.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				a.log.Error("http server stopped", "err", err)
			}
		}()
	}
	if a.regLn != nil {
		a.regSv = &http.Server{Handler: a.registryHandler(), ReadHeaderTimeout: 10 * time.Second}
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			if err := a.regSv.Serve(a.regLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				a.log.Error("schema registry server stopped", "err", err)
			}
		}()
		a.log.Info("schema registry listening", "addr", a.regLn.Addr().String())
	}
	for _, l := range a.lns {
		a.log.Info("listening", "listener", l.cfg.Name, "protocol", l.cfg.Protocol, "addr", l.ln.Addr().String(),
			"advertised", self.Listeners[l.cfg.Name])
	}
	a.log.Info("agent started", "agent_id", a.id, "node_id", self.NodeID, "http_addr", a.HTTPAddr())
	return nil
}

func (a *Agent) closeListeners() {
	for _, l := range a.lns {
		l.ln.Close()
	}
	if a.regLn != nil {
		a.regLn.Close()
	}
	if a.httpLn != nil {
		a.httpLn.Close()
	}
}

// Close drains (drain.go: readiness fails, the agent leaves the registry
// and its groups and transactional ids move, it serves on while the other
// agents drop it), then stops accepting, finishes in-flight requests,
// flushes what producers already handed over, releases its coordinator
// leases and waits for every goroutine. ctx bounds the whole of it.
func (a *Agent) Close(ctx context.Context) error {
	if !a.draining.CompareAndSwap(false, true) {
		return nil
	}
	a.drain(ctx)
	a.connMu.Lock()
	a.closing = true
	a.connMu.Unlock()
	close(a.stopping)
	a.reqBudget.Wake()
	a.fetchBudget.Wake()
	for _, l := range a.lns {
		l.ln.Close()
	}
	// Let connections finish the requests they already read, then close them.
	a.connMu.Lock()
	for c := range a.conns {
		c.stopReading()
	}
	a.connMu.Unlock()
	// Flushes everything pending and waits for the commits; past ctx's
	// deadline the flushes still running are abandoned, and their
	// producers get retriable errors (the outcome is unknown, as after a
	// crash: idempotent producers retry without duplicates).
	stopAbort := context.AfterFunc(ctx, a.batcher.abortFlushes)
	a.batcher.close()
	stopAbort()
	a.batcher.abortFlushes()

	// Connections end once their writers have sent every answer. Past
	// ctx's deadline the requests still running are cancelled, their
	// answers (errors, mostly) get cutGrace to go out, and the connections
	// are cut.
	drained := make(chan struct{})
	go func() { a.connWG.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-ctx.Done():
		a.cancel()
		select {
		case <-drained:
		case <-time.After(cutGrace):
		}
		a.connMu.Lock()
		for c := range a.conns {
			c.close()
		}
		a.connMu.Unlock()
		<-drained
	}
	if a.regSv != nil {
		_ = a.regSv.Shutdown(ctx)
	}
	if a.httpSv != nil {
		_ = a.httpSv.Shutdown(ctx)
	}
	a.cancel()
	a.wg.Wait()
	a.bgReads.Wait()
	// Hand groups and transactional ids off before leaving the live set,
	// within what is left of ctx (else their leases expire by themselves).
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	a.coord.close(dctx)
	a.txn.close(dctx)
	if !a.deregistered.Load() {
		if err := a.store.DeregisterAgent(dctx, a.id); err != nil {
			return fmt.Errorf("deregister agent: %w", err)
		}
	}
	a.log.Info("agent stopped", "agent_id", a.id)
	return nil
}

// cutGrace is how long Close lets cancelled requests' answers go out once
// its context has ended, before it cuts the connections.
const cutGrace = 500 * time.Millisecond

// isClosing reports whether Close has begun.
func (a *Agent) isClosing() bool {
	select {
	case <-a.stopping:
		return true
	default:
		return false
	}
}

func (a *Agent) acceptLoop(l *listener) {
	defer a.wg.Done()
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			a.log.Warn("accept failed", "err", err)
			select {
			case <-a.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		ip := remoteIP(nc)
		a.connMu.Lock()
		if a.closing {
			a.connMu.Unlock()
			nc.Close()
			continue
		}
		if limit, over := a.overConnLimitLocked(ip); over != "" {
			a.connMu.Unlock()
			nc.Close()
			a.limitHit(over, "remote", nc.RemoteAddr().String(), "max", limit)
			continue
		}
		c := newConn(a, l, nc)
		a.conns[c] = struct{}{}
		a.connsPerIP[ip]++
		a.connWG.Add(1)
		a.connMu.Unlock()
		go func() {
			defer a.connWG.Done()
			c.serve()
			a.connMu.Lock()
			delete(a.conns, c)
			if a.connsPerIP[ip]--; a.connsPerIP[ip] <= 0 {
				delete(a.connsPerIP, ip)
			}
			a.connMu.Unlock()
		}()
	}
}

// overConnLimitLocked names the connection limit a new connection from ip
// would pass, with its value, or returns "" when it is within both.
func (a *Agent) overConnLimitLocked(ip string) (int, string) {
	if m := a.cfg.MaxConnections; m > 0 && len(a.conns) >= m {
		return m, "max.connections"
	}
	if m := a.cfg.MaxConnectionsPerIP; m > 0 && a.connsPerIP[ip] >= m {
		return m, "max.connections.per.ip"
	}
	return 0, ""
}

// remoteIP is the address a connection comes from, without its port.
func remoteIP(nc net.Conn) string {
	addr := nc.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

func (a *Agent) heartbeatLoop() {
	defer a.wg.Done()
	t := time.NewTicker(a.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(a.ctx, 5*time.Second)
		var err error
		if !a.isDraining() { // a draining agent has left the registry for good
			err = a.store.Heartbeat(ctx, a.id)
		}
		if errors.Is(err, metadata.ErrNotFound) {
			// Expired (e.g. a long pause): register again, keeping our id.
			var self metadata.Agent
			self, err = a.store.RegisterAgent(ctx, a.selfAgent())
			if err == nil {
				a.viewMu.Lock()
				a.self = self
				a.viewMu.Unlock()
			}
		}
		if err != nil {
			a.log.Warn("heartbeat failed", "err", err)
		} else if err := a.refreshLive(ctx); err != nil {
			a.log.Warn("refresh live agents failed", "err", err)
		}
		a.authz.Poll(ctx) // ACL changes of other agents, within one interval
		a.refreshQuotas(ctx)
		if err := a.defaults.Refresh(ctx, a.store); err != nil {
			a.log.Warn("refresh cluster configs failed", "err", err)
		}
		cancel()
	}
}

func (a *Agent) refreshLive(ctx context.Context) error {
	live, err := a.store.LiveAgents(ctx, a.cfg.AgentTTL)
	if err != nil {
		return fmt.Errorf("list live agents: %w", err)
	}
	a.viewMu.Lock()
	a.noteDepartedLocked(a.live, live, time.Now())
	a.live = live
	a.viewMu.Unlock()
	a.metrics.liveAgents.Set(float64(len(live)))
	return nil
}

// liveAgents returns the last known live agents; it always includes this
// one, unless it is draining and others are live.
func (a *Agent) liveAgents() []metadata.Agent {
	a.viewMu.Lock()
	live, self := a.live, a.self
	a.viewMu.Unlock()
	if a.isDraining() {
		if others := withoutAgent(live, a.id); len(others) > 0 {
			return others
		}
	}
	for _, l := range live {
		if l.ID == a.id {
			return live
		}
	}
	out := append([]metadata.Agent{self}, live...)
	return out
}

// broadcaster wakes every waiter at once: waiters take the current channel,
// and each Broadcast closes it and installs a fresh one.
type broadcaster struct {
	mu sync.Mutex
	ch chan struct{}
}

func newBroadcaster() *broadcaster { return &broadcaster{ch: make(chan struct{})} }

func (b *broadcaster) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *broadcaster) broadcast() {
	b.mu.Lock()
	close(b.ch)
	b.ch = make(chan struct{})
	b.mu.Unlock()
}
