package topicconfig

// The table of topic configs: their types, defaults, checks and what floe
// does with each, as the agent validates (CreateTopics, AlterConfigs,
// IncrementalAlterConfigs) and reports (DescribeConfigs) them.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Effect is what floe does with a topic config.
type Effect uint8

const (
	// Enforced configs are applied: by the produce path (max.message.bytes,
	// cleanup.policy's required keys) or by the compactor (retention, key
	// compaction, and the codec its merges write: compression.*), which
	// reads every topic's configs from the store each round, so a change
	// takes effect at the next round.
	Enforced Effect = iota
	// Inert configs tune disks, segments, flushes or replicas, which a
	// diskless broker does not have: any valid value is stored and
	// reported, and changes nothing.
	Inert
	// Fixed configs would change what clients observe in ways floe does not
	// implement: only the value floe behaves by is accepted, so no topic
	// reports a setting it does not get.
	Fixed
)

// Def is what floe knows of one topic config: the ones Kafka 4's LogConfig
// defines, and floe's own (Register). Names outside Defs are not topic
// configs; AlterConfigs refuses them, as Kafka does.
type Def struct {
	Type kmsg.ConfigType
	// Default is the value floe applies when the topic sets none; empty for
	// the configs whose default is the cluster's (Defaults), which the agent
	// reads from its flags.
	Default string
	// Broker is the broker config Kafka takes the default from, reported as
	// the default's synonym ("" when Kafka has none).
	Broker string
	Effect Effect
	// Check returns why a value's type or range is refused, or ""; nil
	// accepts any string.
	Check func(string) string
	Doc   string
}

// ClusterDefault ends the doc of configs whose default is the cluster's
// (Defaults): agents report it and compactors enforce it, from the same
// flag on both.
const ClusterDefault = " The default is the cluster's flag %s, which agents and compactors must share (floe dev: one flag for both)."

// Defs are the topic configs floe knows, by name: Kafka's here, floe's own
// added by the packages that own them (Register).
var Defs = map[string]Def{
	CleanupPolicy: {Type: kmsg.ConfigTypeList, Default: "delete", Broker: "log.cleanup.policy", Effect: Enforced,
		Check: ListOf("compact", "delete"),
		Doc:   "delete: the compactor drops records past retention.ms or retention.bytes. compact: it keeps the newest record of each key, and produce refuses records without a key. Both may be given."},
	RetentionMs: {Type: kmsg.ConfigTypeLong, Broker: "log.retention.ms", Effect: Enforced,
		Check: LongBetween(-1, math.MaxInt64),
		Doc: "With cleanup.policy delete, the compactor advances the log start past index rows whose newest record is older than this; -1 keeps records forever." + fmt.Sprintf(ClusterDefault, "--retention") +
			" floe dev keeps records forever unless the topic sets retention.ms."},
	RetentionBytes: {Type: kmsg.ConfigTypeLong, Broker: "log.retention.bytes", Effect: Enforced,
		Check: LongBetween(math.MinInt64, math.MaxInt64),
		Doc:   "With cleanup.policy delete, the compactor drops a partition's oldest index rows while the rest still hold this many bytes; -1 means no limit." + fmt.Sprintf(ClusterDefault, "--retention-bytes")},
	DeleteRetentionMs: {Type: kmsg.ConfigTypeLong, Broker: "log.cleaner.delete.retention.ms", Effect: Enforced,
		Check: LongBetween(0, math.MaxInt64),
		Doc:   "How long key compaction keeps a tombstone (a record with a null value) once it is the newest record of its key." + fmt.Sprintf(ClusterDefault, "--delete-retention")},
	MinCleanableDirtyRatio: {Type: kmsg.ConfigTypeDouble, Broker: "log.cleaner.min.cleanable.ratio", Effect: Enforced,
		Check: DoubleBetween(0, 1),
		Doc:   "Key compaction rewrites a partition once the bytes written since its last compaction are at least this share of it (or max.compaction.lag.ms has passed)."},
	MaxCompactionLagMs: {Type: kmsg.ConfigTypeLong, Broker: "log.cleaner.max.compaction.lag.ms", Effect: Enforced,
		Check: LongBetween(1, math.MaxInt64),
		Doc:   "Key compaction rewrites a partition whose oldest uncompacted object is this old, whatever min.cleanable.dirty.ratio says." + fmt.Sprintf(ClusterDefault, "--max-compaction-lag")},
	MaxMessageBytes: {Type: kmsg.ConfigTypeInt, Broker: "message.max.bytes", Effect: Enforced,
		Check: LongBetween(0, math.MaxInt32),
		Doc:   "The largest record batch produce accepts for this topic (MESSAGE_TOO_LARGE beyond it), as compressed by the producer."},

	CompressionType: {Type: kmsg.ConfigTypeString, Default: "producer", Broker: "compression.type", Effect: Enforced,
		Check: OneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
		Doc: "producer: batches are stored as the producer compressed them. Any other codec: produce still stores batches as sent, and the compactor's merges (and key compaction) rewrite each batch into this codec, " +
			"so objects merged after the change hold it (control batches stay uncompressed, as Kafka writes them). Batches already merged before the change keep theirs."},
	"message.timestamp.type": {Type: kmsg.ConfigTypeString, Default: "CreateTime", Broker: "log.message.timestamp.type", Effect: Fixed,
		Check: OneOf("CreateTime", "LogAppendTime"),
		Doc:   "floe keeps the producer's timestamps: only CreateTime is accepted."},
	"message.timestamp.before.max.ms": {Type: kmsg.ConfigTypeLong, Default: "9223372036854775807", Broker: "log.message.timestamp.before.max.ms", Effect: Fixed,
		Check: LongBetween(0, math.MaxInt64),
		Doc:   "floe accepts records with any timestamp: only the maximum (no check) is accepted."},
	"message.timestamp.after.max.ms": {Type: kmsg.ConfigTypeLong, Default: "9223372036854775807", Broker: "log.message.timestamp.after.max.ms", Effect: Fixed,
		Check: LongBetween(0, math.MaxInt64),
		Doc:   "floe accepts records with any timestamp: only the maximum (no check) is accepted."},
	"message.timestamp.difference.max.ms": {Type: kmsg.ConfigTypeLong, Default: "9223372036854775807", Broker: "log.message.timestamp.difference.max.ms", Effect: Fixed,
		Check: LongBetween(0, math.MaxInt64),
		Doc:   "floe accepts records with any timestamp: only the maximum (no check) is accepted."},
	"min.compaction.lag.ms": {Type: kmsg.ConfigTypeLong, Default: "0", Broker: "log.cleaner.min.compaction.lag.ms", Effect: Fixed,
		Check: LongBetween(0, math.MaxInt64),
		Doc:   "Key compaction may compact records of any age: only 0 is accepted."},
	"remote.storage.enable": {Type: kmsg.ConfigTypeBoolean, Default: "false", Effect: Fixed, Check: Boolean,
		Doc: "Kafka's tiered storage: floe keeps every record in object storage already, without a remote log manager, so only false is accepted."},

	"segment.bytes": {Type: kmsg.ConfigTypeInt, Default: "1073741824", Broker: "log.segment.bytes", Effect: Inert,
		Check: LongBetween(14, math.MaxInt32), Doc: "No effect: floe has no log segments; agents cut one object per flush and the compactor merges them."},
	"segment.ms": {Type: kmsg.ConfigTypeLong, Default: "604800000", Broker: "log.roll.ms", Effect: Inert,
		Check: LongBetween(1, math.MaxInt64), Doc: "No effect: floe has no log segments to roll."},
	"segment.jitter.ms": {Type: kmsg.ConfigTypeLong, Default: "0", Broker: "log.roll.jitter.ms", Effect: Inert,
		Check: LongBetween(0, math.MaxInt64), Doc: "No effect: floe has no log segments to roll."},
	"segment.index.bytes": {Type: kmsg.ConfigTypeInt, Default: "10485760", Broker: "log.index.size.max.bytes", Effect: Inert,
		Check: LongBetween(4, math.MaxInt32), Doc: "No effect: the object index lives in the metadata store."},
	"index.interval.bytes": {Type: kmsg.ConfigTypeInt, Default: "4096", Broker: "log.index.interval.bytes", Effect: Inert,
		Check: LongBetween(0, math.MaxInt32), Doc: "No effect: the object index has one row per partition run of an object."},
	"flush.messages": {Type: kmsg.ConfigTypeLong, Default: "9223372036854775807", Broker: "log.flush.interval.messages", Effect: Inert,
		Check: LongBetween(1, math.MaxInt64), Doc: "No effect: records are acknowledged once their object is in object storage and committed."},
	"flush.ms": {Type: kmsg.ConfigTypeLong, Default: "9223372036854775807", Broker: "log.flush.interval.ms", Effect: Inert,
		Check: LongBetween(0, math.MaxInt64), Doc: "No effect: records are acknowledged once their object is in object storage and committed."},
	"file.delete.delay.ms": {Type: kmsg.ConfigTypeLong, Default: "60000", Broker: "log.segment.delete.delay.ms", Effect: Inert,
		Check: LongBetween(0, math.MaxInt64), Doc: "No effect: the compactor deletes unreferenced objects after its own grace period."},
	"preallocate": {Type: kmsg.ConfigTypeBoolean, Default: "false", Broker: "log.preallocate", Effect: Inert,
		Check: Boolean, Doc: "No effect: floe has no segment files."},
	"min.insync.replicas": {Type: kmsg.ConfigTypeInt, Default: "1", Broker: "min.insync.replicas", Effect: Inert,
		Check: LongBetween(1, math.MaxInt32), Doc: "No effect: object storage replicates; every acknowledged record is in it."},
	"unclean.leader.election.enable": {Type: kmsg.ConfigTypeBoolean, Default: "false", Broker: "unclean.leader.election.enable", Effect: Inert,
		Check: Boolean, Doc: "No effect: any agent serves any partition from object storage, so no replica can be behind."},
	"leader.replication.throttled.replicas": {Type: kmsg.ConfigTypeList, Default: "", Effect: Inert,
		Check: throttledReplicas, Doc: "No effect: floe does not replicate between brokers."},
	"follower.replication.throttled.replicas": {Type: kmsg.ConfigTypeList, Default: "", Effect: Inert,
		Check: throttledReplicas, Doc: "No effect: floe does not replicate between brokers."},
	"local.retention.ms": {Type: kmsg.ConfigTypeLong, Default: "-2", Broker: "log.local.retention.ms", Effect: Inert,
		Check: LongBetween(-2, math.MaxInt64), Doc: "No effect: floe keeps no local log; retention.ms applies."},
	"local.retention.bytes": {Type: kmsg.ConfigTypeLong, Default: "-2", Broker: "log.local.retention.bytes", Effect: Inert,
		Check: LongBetween(-2, math.MaxInt64), Doc: "No effect: floe keeps no local log; retention.bytes applies."},
	"remote.log.copy.disable": {Type: kmsg.ConfigTypeBoolean, Default: "false", Effect: Inert,
		Check: Boolean, Doc: "No effect: floe has no tiered storage."},
	"remote.log.delete.on.disable": {Type: kmsg.ConfigTypeBoolean, Default: "false", Effect: Inert,
		Check: Boolean, Doc: "No effect: floe has no tiered storage."},
	CompressionGzipLevel: {Type: kmsg.ConfigTypeInt, Default: "-1", Broker: "compression.gzip.level", Effect: Enforced,
		Check: gzipLevel, Doc: "The gzip level the compactor recompresses with when compression.type is gzip; -1 is gzip's default (6)."},
	CompressionLz4Level: {Type: kmsg.ConfigTypeInt, Default: "9", Broker: "compression.lz4.level", Effect: Enforced,
		Check: IntBetween(1, 17), Doc: "The lz4 level the compactor recompresses with when compression.type is lz4: up to 9 (the default) lz4's fast mode, 10 to 17 its high-compression levels 1 to 8 (8 to 30 times slower in Go for batches 5 to 8% smaller)."},
	CompressionZstdLevel: {Type: kmsg.ConfigTypeInt, Default: "3", Broker: "compression.zstd.level", Effect: Enforced,
		Check: IntBetween(-131072, 22), Doc: "The zstd level the compactor recompresses with when compression.type is zstd, mapped onto the Go encoder's four speeds: below 3 fastest, 3 to 5 default, 6 to 9 better, 10 and above best."},
}

// Register adds floe's own config name to Defs: the packages that own a
// config (iceberg, schemaregistry/validation) register it in their init,
// so the agent checks and reports it without importing them. A name
// registered twice is a bug.
func Register(name string, d Def) {
	if _, ok := Defs[name]; ok {
		panic("topicconfig: " + name + " registered twice")
	}
	Defs[name] = d
}

// Check validates a value for a topic config as Kafka's config
// definitions would, plus floe's own rules. It returns why the value is
// refused, in Kafka's words ("Invalid value … for configuration …: …"), or
// "": a name that is no Kafka topic config, a value of the wrong type or
// range, and a fixed config's other values are refused.
func Check(name, value string) string {
	d, ok := Defs[name]
	if !ok {
		return "Unknown topic config name: " + name
	}
	if d.Check != nil {
		if why := d.Check(value); why != "" {
			return fmt.Sprintf("Invalid value %s for configuration %s: %s", value, name, why)
		}
	}
	if d.Effect == Fixed && Normalize(d.Type, value) != d.Default {
		return fmt.Sprintf("Invalid value %s for configuration %s: %s", value, name, d.Doc)
	}
	return ""
}

// Normalize is value as the config's type parses it (Kafka trims
// numbers and booleans, and booleans are case-insensitive).
func Normalize(typ kmsg.ConfigType, value string) string {
	switch typ {
	case kmsg.ConfigTypeBoolean:
		return strings.ToLower(strings.TrimSpace(value))
	case kmsg.ConfigTypeInt, kmsg.ConfigTypeLong, kmsg.ConfigTypeShort:
		if n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
	}
	return strings.TrimSpace(value)
}

// The value checks return why a value is refused, in the words of Kafka's
// ConfigDef validators, or "".

// LongBetween checks an integer config within [lo, hi] (hi also bounds
// INT configs to 32 bits).
func LongBetween(lo, hi int64) func(string) string {
	return func(v string) string {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch {
		case err != nil && hi == math.MaxInt32:
			return "Not a number of type INT"
		case err != nil:
			return "Not a number of type LONG"
		case n < lo:
			return fmt.Sprintf("Value must be at least %d", lo)
		case n > hi:
			return fmt.Sprintf("Value must be no more than %d", hi)
		}
		return ""
	}
}

// IntBetween checks an INT config within [lo, hi], as Kafka's Range on an
// INT: a value that is no 32-bit integer is not a number of type INT.
func IntBetween(lo, hi int32) func(string) string {
	return func(v string) string {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		switch {
		case err != nil:
			return "Not a number of type INT"
		case n < int64(lo):
			return fmt.Sprintf("Value must be at least %d", lo)
		case n > int64(hi):
			return fmt.Sprintf("Value must be no more than %d", hi)
		}
		return ""
	}
}

// DoubleBetween checks a fractional config within [lo, hi].
func DoubleBetween(lo, hi float64) func(string) string {
	return func(v string) string {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) {
			return "Not a number of type DOUBLE"
		}
		if f < lo || f > hi {
			return fmt.Sprintf("Value must be between %g and %g", lo, hi)
		}
		return ""
	}
}

// Boolean checks a boolean config.
func Boolean(v string) string {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "false":
		return ""
	}
	return "Expected value to be either true or false"
}

// OneOf checks a config that takes one of values.
func OneOf(values ...string) func(string) string {
	return func(v string) string {
		if slices.Contains(values, strings.TrimSpace(v)) {
			return ""
		}
		return "String must be one of: " + strings.Join(values, ", ")
	}
}

// ListOf checks a comma-separated list whose every element is one of values.
func ListOf(values ...string) func(string) string {
	return func(v string) string {
		for _, e := range strings.Split(v, ",") {
			if !slices.Contains(values, strings.TrimSpace(e)) {
				return "String must be one of: " + strings.Join(values, ", ")
			}
		}
		return ""
	}
}

// throttledReplicas checks Kafka's throttled replica lists: empty, "*", or
// partition:broker pairs.
func throttledReplicas(v string) string {
	v = strings.TrimSpace(v)
	if v == "" || v == "*" {
		return ""
	}
	for _, e := range strings.Split(v, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(e), ":")
		_, perr := strconv.ParseUint(p, 10, 31)
		_, berr := strconv.ParseUint(b, 10, 31)
		if !ok || perr != nil || berr != nil {
			return "must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
		}
	}
	return ""
}

// gzipLevel is Kafka's gzip level check (CompressionType.GZIP's
// levelValidator): 1 to 9, or -1 for the default.
func gzipLevel(v string) string {
	if why := IntBetween(math.MinInt32, math.MaxInt32)(v); why != "" {
		return why
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(v)); n != -1 && (n < 1 || n > 9) {
		return "Value must be between 1 and 9 or equal to -1"
	}
	return ""
}

// IsList reports whether APPEND and SUBTRACT apply to a config.
func IsList(name string) bool {
	return Defs[name].Type == kmsg.ConfigTypeList
}

// Type is a config's type for DescribeConfigs; names outside
// the table (stored by CreateTopics before it checked names) are strings.
func Type(name string) kmsg.ConfigType {
	if d, ok := Defs[name]; ok {
		return d.Type
	}
	return kmsg.ConfigTypeString
}
