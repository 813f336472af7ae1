package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"floe/kafkaproto"
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
	// RequestBufferBytes bounds the bytes of request frames still
	// referenced plus flushed objects not yet committed, over all
	// connections; readers wait beyond it. 0 means BufferBytes, so that
	// one budget bounds the memory the produce path holds.
	RequestBufferBytes int64
	// AutoCreateTopics creates unknown topics named in Metadata requests.
	AutoCreateTopics bool
	// DefaultPartitions is the partition count of auto-created topics and
	// of CreateTopics requests that ask for the default (-1).
	DefaultPartitions int32

	// CacheBytes is the read cache's budget.
	CacheBytes int64
	// HeartbeatInterval is how often the agent heartbeats in the store and
	// refreshes its view of live agents.
	HeartbeatInterval time.Duration
	// AgentTTL is how long an agent without heartbeat is still listed.
	AgentTTL time.Duration
	// RemotePollInterval bounds how late a long-polling fetch notices
	// records committed by other agents.
	RemotePollInterval time.Duration
	// TopicCacheTTL bounds how stale this agent's view of topics may be.
	TopicCacheTTL time.Duration
	// ExtraMetrics, when set, is served on /metrics beside the agent's own
	// (floe dev adds its in-process compactor's).
	ExtraMetrics prometheus.Gatherer
}

// DefaultConfig returns the defaults for an agent in front of S3.
func DefaultConfig() Config {
	return Config{
		KafkaAddr:          "127.0.0.1:9092",
		HTTPAddr:           "127.0.0.1:8080",
		FlushInterval:      250 * time.Millisecond,
		FlushBytes:         8 << 20,
		MaxInflightFlushes: 4,
		BufferBytes:        64 << 20,
		MaxRequestSize:     kafkaproto.DefaultMaxRequestSize,
		DefaultPartitions:  1,
		CacheBytes:         256 << 20,
		HeartbeatInterval:  time.Second,
		AgentTTL:           6 * time.Second,
		RemotePollInterval: 100 * time.Millisecond,
		TopicCacheTTL:      time.Second,
	}
}
