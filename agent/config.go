package agent

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"floe/agent/internal/sasl"
	"floe/kafkaproto"
	"floe/topicconfig"
)

// Config is an agent's configuration. The zero value is not usable; start
// from DefaultConfig and override.
type Config struct {
	// KafkaAddr is the Kafka listener address (host:port; port 0 picks one).
	KafkaAddr string
	// HTTPAddr is the HTTP listener for metrics and health; empty disables it.
	HTTPAddr string
	// AdvertiseAddr is the host:port put in Metadata responses; empty means
	// the Kafka listener's own address.
	AdvertiseAddr string
	// AdvertiseHTTPAddr is the host:port the other agents reach the HTTP
	// listener at (the zone's shared read cache, peer_cache.go); empty
	// means the first listener's advertised host with the HTTP listener's
	// port. An agent without an HTTP listener advertises none.
	AdvertiseHTTPAddr string
	// Listeners are the Kafka listeners (listeners.go); empty means one
	// PLAINTEXT listener on KafkaAddr, advertised as AdvertiseAddr.
	Listeners []Listener
	// Security configures TLS and SASL for the listeners that use them.
	Security SecurityConfig
	// Zone is the availability zone this agent runs in; clients that name a
	// zone in their client id (floe_az=ZONE) are pointed at agents in it.
	Zone string

	// FlushInterval bounds how long a produced batch waits in the pending
	// object before it is flushed, and spaces timed flushes: while produce
	// is continuous an object is cut one interval after the last cut, not
	// one interval after its first batch (see flushDelay).
	FlushInterval time.Duration
	// FlushBytes flushes the pending object as soon as it holds this much.
	FlushBytes int64
	// MaxInflightFlushes bounds flushes whose PUT or commit is still running.
	MaxInflightFlushes int
	// BufferBytes bounds produced bytes held in memory (pending plus in
	// flight); producers wait for room (backpressure) beyond it.
	BufferBytes int64

	// MaxRequestSize bounds one Kafka request frame.
	MaxRequestSize int32
	// RequestReadTimeout bounds how long one request frame may take to
	// arrive once its first byte has, time waiting for request budget
	// included: a peer that announces a frame and trickles it is
	// disconnected.
	RequestReadTimeout time.Duration
	// ConnectionsMaxIdle closes connections that sent no request for this
	// long (Kafka's connections.max.idle.ms); 0 never closes them.
	ConnectionsMaxIdle time.Duration
	// MaxConnections bounds open Kafka connections (max.connections) and
	// MaxConnectionsPerIP those from one address (max.connections.per.ip);
	// connections beyond them are closed at accept. 0 means no limit.
	MaxConnections      int
	MaxConnectionsPerIP int
	// QueuedMaxRequests bounds the requests one connection may have in
	// flight; its reader stops reading (TCP backpressure) beyond it.
	QueuedMaxRequests int
	// FetchMaxBytes caps one Fetch answer's record bytes whatever the
	// client asks for (Kafka's fetch.max.bytes); at least one batch is
	// still returned, as KIP-74 requires.
	FetchMaxBytes int32
	// FetchBufferBytes bounds the record bytes of Fetch answers built and
	// not yet written, over all connections.
	FetchBufferBytes int64

	// MaxPartitionsPerTopic bounds a topic's partition count at creation
	// and in CreatePartitions (INVALID_PARTITIONS beyond it), MaxPartitions
	// the cluster's total and MaxTopics its topic count (POLICY_VIOLATION).
	// For these and the next two, 0 means no limit.
	MaxPartitionsPerTopic int32
	MaxPartitions         int64
	MaxTopics             int
	// AutoCreateRate bounds the topics Metadata requests may auto-create
	// per second over the agent (bursts of the same size); topics beyond it
	// are answered UNKNOWN_TOPIC_OR_PARTITION and created on a later try.
	AutoCreateRate float64
	// MaxOffsetCommitPartitions bounds the partitions one OffsetCommit or
	// TxnOffsetCommit may name (the request is refused beyond it).
	MaxOffsetCommitPartitions int

	// AutoCreateTopics creates unknown topics named in Metadata requests.
	AutoCreateTopics bool
	// DefaultPartitions is the partition count of auto-created topics and
	// of CreateTopics requests that ask for the default (-1).
	DefaultPartitions int32

	// GroupMinSessionTimeout and GroupMaxSessionTimeout bound the session
	// timeout a classic (JoinGroup) member may ask for; joins outside are
	// INVALID_SESSION_TIMEOUT (group.min/max.session.timeout.ms).
	GroupMinSessionTimeout time.Duration
	GroupMaxSessionTimeout time.Duration
	// GroupInitialRebalanceDelay holds a new (empty) classic group's first
	// rebalance open this long for more members, bounded by their
	// rebalance timeout (group.initial.rebalance.delay.ms): a group whose
	// members start together gets one generation, not one per joiner.
	GroupInitialRebalanceDelay time.Duration
	// GroupMaxSize bounds a classic group's members; more joiners are
	// GROUP_MAX_SIZE_REACHED (group.max.size). 0 means no limit.
	GroupMaxSize int
	// ConsumerGroupSessionTimeout is how long a KIP-848 member may go
	// without a heartbeat (group.consumer.session.timeout.ms), and
	// ConsumerGroupHeartbeatInterval the interval those members are told
	// to heartbeat at (group.consumer.heartbeat.interval.ms).
	ConsumerGroupSessionTimeout    time.Duration
	ConsumerGroupHeartbeatInterval time.Duration
	// ConsumerGroupMin/MaxSessionTimeout and ConsumerGroupMin/MaxHeartbeatInterval
	// bound what a KIP-848 group's own configs may set
	// (consumer.session.timeout.ms and consumer.heartbeat.interval.ms
	// against group.consumer.min/max.session.timeout.ms and
	// group.consumer.min/max.heartbeat.interval.ms). The bounds always take
	// in the two settings above: Kafka refuses to start with a default
	// outside its bounds, floe widens them (floe dev's 1 s interval is
	// below Kafka's 5 s minimum).
	ConsumerGroupMinSessionTimeout    time.Duration
	ConsumerGroupMaxSessionTimeout    time.Duration
	ConsumerGroupMinHeartbeatInterval time.Duration
	ConsumerGroupMaxHeartbeatInterval time.Duration

	// CacheBytes is the read cache's budget.
	CacheBytes int64
	// Read-ahead for consumers catching up on old data (readahead.go):
	// ReadAheadBytes bounds the bytes of read-ahead GETs planned or
	// running (a memory budget; 0 turns read-ahead off),
	// ReadAheadConcurrency the look-ups and GETs running at once, and
	// ReadAheadEntries and ReadAheadPartitionBytes how far ahead of a
	// consumer one partition is read, in index entries and in bytes.
	ReadAheadBytes          int64
	ReadAheadConcurrency    int
	ReadAheadEntries        int
	ReadAheadPartitionBytes int64
	// ReadCachePeers makes the agents of a zone one read cache: a range
	// another agent of the zone owns (rendezvous hashing) is read through
	// that agent's cache, so the zone GETs it from object storage about
	// once (peer_cache.go). Off, this agent GETs every range it misses
	// itself, but still serves the ranges it owns to its peers.
	ReadCachePeers bool
	// HeartbeatInterval is how often the agent heartbeats in the store and
	// refreshes its view of live agents.
	HeartbeatInterval time.Duration
	// AgentTTL is how long an agent without heartbeat is still listed.
	AgentTTL time.Duration

	// Authz is ACL authorization (authz.go); off in the zero value. ACL
	// changes made through other agents are seen within HeartbeatInterval.
	Authz AuthzConfig
	// LagInterval is how often the agent computes the lag of the consumer
	// groups placed on it (agent/internal/lag); zero turns it off.
	LagInterval time.Duration
	// DrainDelay is how long a closing agent serves on after leaving the
	// registry, so that the other agents (refreshing every
	// HeartbeatInterval) stop naming it first (drain.go). Zero: no wait.
	DrainDelay time.Duration
	// RemotePollInterval bounds how late a long-polling fetch notices
	// records committed by other agents.
	RemotePollInterval time.Duration
	// TopicCacheTTL bounds how stale this agent's view of topics may be,
	// and the group coordinator's of the configs of the groups it
	// coordinates (changes made through this agent apply at once).
	TopicCacheTTL time.Duration
	// ExtraMetrics, when set, is served on /metrics beside the agent's own
	// (floe dev adds its in-process compactor's).
	ExtraMetrics prometheus.Gatherer
	// ProcessMemoryBudgets are the budgets of what else runs in the
	// agent's process (floe dev's compactor and Iceberg converter):
	// MemoryBudgets lists them after the agent's own.
	ProcessMemoryBudgets []MemoryBudget
	// HTTPHandlers are served on the HTTP listener beside the agent's own
	// endpoints, each under its pattern (floe's Iceberg REST catalog at
	// "/iceberg/").
	HTTPHandlers map[string]http.Handler
	// SchemaRegistry, if set, is served under /schema-registry/ on the
	// HTTP listener and on SchemaRegistryAddr, and validates produced
	// records of topics that ask for it (registry.go).
	SchemaRegistry SchemaRegistry
	// SchemaRegistryAddr is the schema registry's own listener ("": none).
	SchemaRegistryAddr string
	// TopicDefaults are the defaults of the topic configs floe enforces
	// (retention, key compaction, max.message.bytes): what DescribeConfigs
	// reports and produce applies, the same the compactors enforce.
	TopicDefaults topicconfig.Defaults
}

// DefaultConfig returns the defaults for an agent in front of S3.
func DefaultConfig() Config {
	return Config{
		TopicDefaults:      topicconfig.KafkaDefaults(),
		KafkaAddr:          "127.0.0.1:9092",
		HTTPAddr:           "127.0.0.1:8080",
		FlushInterval:      250 * time.Millisecond,
		FlushBytes:         8 << 20,
		MaxInflightFlushes: 4,
		BufferBytes:        64 << 20,
		MaxRequestSize:     kafkaproto.DefaultMaxRequestSize,
		RequestReadTimeout: 30 * time.Second,
		ConnectionsMaxIdle: 10 * time.Minute,
		QueuedMaxRequests:  64,
		FetchMaxBytes:      55 << 20,
		FetchBufferBytes:   128 << 20,

		MaxPartitionsPerTopic:     10_000,
		MaxPartitions:             200_000,
		MaxTopics:                 50_000,
		AutoCreateRate:            20,
		MaxOffsetCommitPartitions: 100_000,

		// Kafka's group defaults; floe dev shortens the waits.
		GroupMinSessionTimeout:            6 * time.Second,
		GroupMaxSessionTimeout:            30 * time.Minute,
		GroupInitialRebalanceDelay:        3 * time.Second,
		ConsumerGroupSessionTimeout:       45 * time.Second,
		ConsumerGroupHeartbeatInterval:    5 * time.Second,
		ConsumerGroupMinSessionTimeout:    45 * time.Second,
		ConsumerGroupMaxSessionTimeout:    time.Minute,
		ConsumerGroupMinHeartbeatInterval: 5 * time.Second,
		ConsumerGroupMaxHeartbeatInterval: 15 * time.Second,

		DefaultPartitions:  1,
		CacheBytes:         256 << 20,
		ReadCachePeers:     true,
		HeartbeatInterval:  time.Second,
		AgentTTL:           6 * time.Second,
		DrainDelay:         2 * time.Second,
		LagInterval:        30 * time.Second,
		RemotePollInterval: 100 * time.Millisecond,
		TopicCacheTTL:      time.Second,

		// Sixteen GETs at once, as prefetch runs within one fetch, caught
		// up fastest in docs/scale.md section 4 (4 and 8 were slower); 8
		// MiB ahead is about eleven runs of a 16-partition topic's 250 ms
		// flushes, and 32 MiB holds sixteen such GETs twice over.
		ReadAheadBytes:          32 << 20,
		ReadAheadConcurrency:    16,
		ReadAheadEntries:        16,
		ReadAheadPartitionBytes: 8 << 20,
	}
}

// DevConfig returns the defaults of `floe dev` (and of the agent's own
// tests): DefaultConfig with local latencies. Locally there is no PUT
// latency to amortise, so objects flush almost at once, and topics are
// created on first use. Groups: a new group's first generation after
// 500 ms rather than 3 s, still long enough for the members a test starts
// together to share it (with no delay, each joiner forces a rebalance of
// the ones before it, and tests that expect a settled group race those
// rebalances); KIP-848 members reconciled within a second. Session
// timeouts keep Kafka's bounds, which client test suites assume (kafka-go's
// expects a 3 s session refused).
func DevConfig() Config {
	c := DefaultConfig()
	c.FlushInterval = 5 * time.Millisecond
	c.AutoCreateTopics = true
	c.GroupInitialRebalanceDelay = 500 * time.Millisecond
	c.ConsumerGroupHeartbeatInterval = time.Second
	c.LagInterval = 5 * time.Second
	// A local broker keeps what it is given unless a topic sets
	// retention.ms or retention.bytes itself.
	c.TopicDefaults.Retention = -time.Millisecond
	// Confluent's port, which serializers default to.
	c.SchemaRegistryAddr = "127.0.0.1:8081"
	return c
}

// SecurityConfig is how the TLS and SASL listeners authenticate clients.
type SecurityConfig struct {
	// TLSCert and TLSKey are PEM files of the listeners' certificate
	// (chain) and key, TLSClientCA the CAs client certificates must chain
	// to; all are read again when they change (tls.go).
	TLSCert, TLSKey, TLSClientCA string
	// ClientAuth is Kafka's ssl.client.auth: ClientAuthNone, Requested or
	// Required; empty means required when TLSClientCA is set. A verified
	// client certificate makes the principal of an SSL listener's
	// connection "User:" + its subject's distinguished name.
	ClientAuth string
	// SASLMechanisms are the mechanisms SASL listeners offer (sasl.go).
	SASLMechanisms []string
	// SessionLifetime is Kafka's connections.max.reauth.ms (KIP-368): a
	// SASL session lasts this long, after which the client must
	// re-authenticate on the connection or lose it; zero means forever.
	SessionLifetime time.Duration
	// OAuth validates OAUTHBEARER tokens.
	OAuth OAuthConfig
}

// OAuthConfig is how OAUTHBEARER tokens (JWTs) are checked (package
// agent/internal/sasl).
type OAuthConfig = sasl.OAuthConfig
