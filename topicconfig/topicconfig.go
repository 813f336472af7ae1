// Package topicconfig holds the one source of the topic configs: the table
// of every config floe knows (Defs: type, default, check, what floe does
// with it; defs.go), which the agent validates and reports (CreateTopics,
// AlterConfigs, DescribeConfigs) and other packages add their own to
// (Register), and the defaults of the configs floe enforces: what a topic
// that sets none of them gets. The produce path and the compactor apply
// them through Defaults, so what a client is told is what is enforced. A cluster's agents and compactors must run with the
// same defaults, as a Kafka cluster's brokers must share log.retention.*;
// floe dev runs both in one process from one set of flags.
package topicconfig

import (
	"strconv"
	"strings"
	"time"

	"floe/kafkaproto"
)

// Names of the topic configs floe enforces.
const (
	CleanupPolicy          = "cleanup.policy"
	RetentionMs            = "retention.ms"
	RetentionBytes         = "retention.bytes"
	DeleteRetentionMs      = "delete.retention.ms"
	MinCleanableDirtyRatio = "min.cleanable.dirty.ratio"
	MaxCompactionLagMs     = "max.compaction.lag.ms"
	MaxMessageBytes        = "max.message.bytes"
	CompressionType        = "compression.type"
	CompressionGzipLevel   = "compression.gzip.level"
	CompressionLz4Level    = "compression.lz4.level"
	CompressionZstdLevel   = "compression.zstd.level"
)

// Defaults are the broker defaults of the enforced topic configs (Kafka's
// log.retention.ms, log.retention.bytes, log.cleaner.delete.retention.ms,
// log.cleaner.min.cleanable.ratio, log.cleaner.max.compaction.lag.ms,
// message.max.bytes).
type Defaults struct {
	// Retention is retention.ms's default; negative keeps records forever.
	Retention time.Duration
	// RetentionBytes is retention.bytes's default; negative is no limit.
	RetentionBytes int64
	// DeleteRetention is how long key compaction keeps tombstones.
	DeleteRetention time.Duration
	// MinCleanableDirtyRatio is the share of dirty bytes that triggers key
	// compaction of a partition.
	MinCleanableDirtyRatio float64
	// MaxCompactionLag is how old uncompacted data may get before key
	// compaction runs whatever the dirty ratio.
	MaxCompactionLag time.Duration
	// MaxMessageBytes is the largest batch produce accepts.
	MaxMessageBytes int64

	// dynamic holds the cluster's dynamic defaults by topic config name,
	// broker the same by the broker names they were set by (WithDynamic).
	dynamic, broker map[string]string
}

// KafkaDefaults returns Kafka 4's broker defaults, except
// max.compaction.lag.ms: Kafka never forces compaction by age, floe does
// after 10 minutes (as its merges do).
func KafkaDefaults() Defaults {
	return Defaults{
		Retention:              7 * 24 * time.Hour,
		RetentionBytes:         -1,
		DeleteRetention:        24 * time.Hour,
		MinCleanableDirtyRatio: 0.5,
		MaxCompactionLag:       10 * time.Minute,
		MaxMessageBytes:        1048588,
	}
}

// Value returns the default of config name as Kafka writes it: the
// dynamic default (WithDynamic), else the static field; false for configs
// Defaults does not hold (whose default is the table's: see Default).
func (d Defaults) Value(name string) (string, bool) {
	if v, ok := d.dynamic[name]; ok {
		return v, true
	}
	switch name {
	case RetentionMs:
		return millis(d.Retention), true
	case RetentionBytes:
		return strconv.FormatInt(d.RetentionBytes, 10), true
	case DeleteRetentionMs:
		return millis(d.DeleteRetention), true
	case MinCleanableDirtyRatio:
		return strconv.FormatFloat(d.MinCleanableDirtyRatio, 'g', -1, 64), true
	case MaxCompactionLagMs:
		return millis(d.MaxCompactionLag), true
	case MaxMessageBytes:
		return strconv.FormatInt(d.MaxMessageBytes, 10), true
	}
	return "", false
}

// millis writes a duration as Kafka's milliseconds; any negative one is -1.
func millis(d time.Duration) string {
	if d < 0 {
		return "-1"
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// Int returns a topic's integer config: its own value when set and valid,
// else the default.
func (d Defaults) Int(configs map[string]string, name string) int64 {
	if v, ok := configs[name]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			return n
		}
	}
	v, _ := d.Value(name)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// Float is Int for fractional configs.
func (d Defaults) Float(configs map[string]string, name string) float64 {
	if v, ok := configs[name]; ok {
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			return f
		}
	}
	v, _ := d.Value(name)
	f, _ := strconv.ParseFloat(v, 64)
	return f
}

// Policies returns whether a topic's cleanup.policy includes delete and
// compact ("delete" when unset; Defaults.Policies applies a dynamic
// default).
func Policies(configs map[string]string) (del, compact bool) {
	v, ok := configs[CleanupPolicy]
	if !ok {
		return true, false
	}
	return kafkaproto.CleanupPolicy(v)
}

// Compression returns the codec and level a topic's compression.type and
// compression.<codec>.level ask batches to be stored in, and false for
// producer (the default): batches keep the producer's codec. Produce
// stores batches as sent either way; the compactor's merges recompress
// them (kafkaproto.Recompress). A value that is not one of Kafka's
// (stored before it was checked) counts as producer. A topic that sets
// none of them gets the cluster's dynamic defaults (WithDynamic).
func (d Defaults) Compression(configs map[string]string) (kafkaproto.Compression, bool) {
	codec, levelName := kafkaproto.CodecNone, ""
	switch strings.TrimSpace(d.own(configs, CompressionType)) {
	case "uncompressed":
	case "gzip":
		codec, levelName = kafkaproto.CodecGzip, CompressionGzipLevel
	case "snappy":
		codec = kafkaproto.CodecSnappy
	case "lz4":
		codec, levelName = kafkaproto.CodecLZ4, CompressionLz4Level
	case "zstd":
		codec, levelName = kafkaproto.CodecZstd, CompressionZstdLevel
	default:
		return kafkaproto.Compression{}, false
	}
	c := kafkaproto.Compression{Codec: codec}
	if levelName != "" {
		v := d.own(configs, levelName)
		if Check(levelName, v) != "" {
			v = Defs[levelName].Default
		}
		c.Level, _ = strconv.Atoi(strings.TrimSpace(v))
	}
	return c, true
}

// ZstdTopic reports whether a topic's compression.type is zstd: Kafka then
// answers Fetch below v10 (clients from before zstd) with
// UNSUPPORTED_COMPRESSION_TYPE for its partitions, whatever codec their
// batches hold, since they will hold zstd. The cluster's dynamic
// compression.type counts for topics without their own.
func (d Defaults) ZstdTopic(configs map[string]string) bool {
	return strings.TrimSpace(d.own(configs, CompressionType)) == "zstd"
}

// own is a topic's own value of config name, else the cluster's dynamic
// default, else "".
func (d Defaults) own(configs map[string]string, name string) string {
	if v, ok := configs[name]; ok {
		return v
	}
	return d.dynamic[name]
}
