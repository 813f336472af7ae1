package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/time/rate"

	"floe/iceberg"
	"floe/metadata"
	"floe/schemaregistry/validation"
	"floe/topicconfig"
)

// topicCache is this agent's view of topics, at most ttl old. Topics created
// or deleted through this agent are reflected at once; changes made through
// other agents within ttl. A stale view is safe: the commit transaction
// rejects runs of topics that no longer exist.
type topicCache struct {
	store metadata.Store
	ttl   time.Duration

	mu      sync.Mutex
	loaded  time.Time
	byName  map[string]metadata.Topic
	byID    map[metadata.TopicID]metadata.Topic
	loading chan struct{} // non-nil while one goroutine reloads; others wait
	// gen counts invalidations. A reload that an invalidation overtook
	// read the store before the change that caused it, so it loads again
	// rather than keep or return what it read.
	gen uint64

	// autoCreate is the agent-wide token bucket of Metadata
	// auto-creations, built on first use from the agent's AutoCreateRate.
	autoCreateOnce sync.Once
	autoCreate     *rate.Limiter
}

func newTopicCache(store metadata.Store, ttl time.Duration) *topicCache {
	return &topicCache{store: store, ttl: ttl}
}

// snapshot returns the current maps, reloading them if older than ttl.
func (tc *topicCache) snapshot(ctx context.Context) (map[string]metadata.Topic, map[metadata.TopicID]metadata.Topic, error) {
	for {
		tc.mu.Lock()
		if tc.byName != nil && time.Since(tc.loaded) < tc.ttl {
			n, i := tc.byName, tc.byID
			tc.mu.Unlock()
			return n, i, nil
		}
		if tc.loading != nil {
			ch := tc.loading
			tc.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		ch := make(chan struct{})
		tc.loading = ch
		gen := tc.gen
		tc.mu.Unlock()

		topics, err := tc.store.Topics(ctx)
		tc.mu.Lock()
		tc.loading = nil
		close(ch)
		if err != nil {
			tc.mu.Unlock()
			return nil, nil, err
		}
		if tc.gen != gen {
			tc.mu.Unlock()
			continue // invalidated while loading
		}
		byName := make(map[string]metadata.Topic, len(topics))
		byID := make(map[metadata.TopicID]metadata.Topic, len(topics))
		for _, t := range topics {
			byName[t.Name] = t
			byID[t.ID] = t
		}
		tc.byName, tc.byID, tc.loaded = byName, byID, time.Now()
		tc.mu.Unlock()
		return byName, byID, nil
	}
}

// all returns every topic.
func (tc *topicCache) all(ctx context.Context) (map[string]metadata.Topic, error) {
	n, _, err := tc.snapshot(ctx)
	return n, err
}

// get returns a topic, asking the store directly on a miss so a topic just
// created through another agent is found.
func (tc *topicCache) get(ctx context.Context, name string) (metadata.Topic, bool, error) {
	return tc.find(ctx, name, nil)
}

// missLookups is how many topics missing from the cached view one request
// asks the store about (lookups); beyond it, the view, at most the cache's
// TTL old, answers alone. A Metadata request or an OffsetCommit naming
// 10,000 unknown topics would otherwise cost 10,000 queries, and the cost
// of the bound is only that a topic created through another agent in the
// last TTL may be reported unknown once more, which clients retry.
const missLookups = 32

// lookups is a request's allowance of store queries for topics missing
// from the cached view (see missLookups).
type lookups struct{ left int }

func newLookups() *lookups { return &lookups{left: missLookups} }

// take uses one look-up; false when none is left. A nil allowance is
// unbounded.
func (l *lookups) take() bool {
	if l == nil {
		return true
	}
	if l.left == 0 {
		return false
	}
	l.left--
	return true
}

// find is get with the store asked on a miss only while budget allows.
func (tc *topicCache) find(ctx context.Context, name string, budget *lookups) (metadata.Topic, bool, error) {
	n, _, err := tc.snapshot(ctx)
	if err != nil {
		return metadata.Topic{}, false, err
	}
	if t, ok := n[name]; ok {
		return t, true, nil
	}
	if !budget.take() {
		return metadata.Topic{}, false, nil
	}
	t, err := tc.store.Topic(ctx, name)
	if errors.Is(err, metadata.ErrUnknownTopic) {
		return metadata.Topic{}, false, nil
	}
	if err != nil {
		return metadata.Topic{}, false, err
	}
	tc.invalidate()
	return t, true, nil
}

// getID returns a topic by id, asking the store on a miss.
func (tc *topicCache) getID(ctx context.Context, id metadata.TopicID) (metadata.Topic, bool, error) {
	return tc.findID(ctx, id, nil)
}

// findID is getID with the store asked on a miss only while budget allows.
func (tc *topicCache) findID(ctx context.Context, id metadata.TopicID, budget *lookups) (metadata.Topic, bool, error) {
	_, i, err := tc.snapshot(ctx)
	if err != nil {
		return metadata.Topic{}, false, err
	}
	if t, ok := i[id]; ok {
		return t, true, nil
	}
	if !budget.take() {
		return metadata.Topic{}, false, nil
	}
	t, err := tc.store.TopicByID(ctx, id)
	if errors.Is(err, metadata.ErrUnknownTopic) {
		return metadata.Topic{}, false, nil
	}
	if err != nil {
		return metadata.Topic{}, false, err
	}
	tc.invalidate()
	return t, true, nil
}

// invalidate forces the next read to reload, including a read that waits
// for a reload already under way (which may predate the change).
func (tc *topicCache) invalidate() {
	tc.mu.Lock()
	tc.loaded = time.Time{}
	tc.gen++
	tc.mu.Unlock()
}

// allowAutoCreate takes a token from the agent-wide bucket of Metadata
// auto-creations: perSecond a second, bursts of as many (at least one); a
// rate of 0 or less means no limit.
func (tc *topicCache) allowAutoCreate(perSecond float64) bool {
	tc.autoCreateOnce.Do(func() {
		if perSecond <= 0 {
			tc.autoCreate = rate.NewLimiter(rate.Inf, 0)
			return
		}
		tc.autoCreate = rate.NewLimiter(rate.Limit(perSecond), max(1, int(math.Ceil(perSecond))))
	})
	return tc.autoCreate.Allow()
}

// clusterBudget is what one request may still add to the cluster under
// MaxTopics and MaxPartitions: the store's totals, read once per request
// when first needed, plus what the request itself has created (or, when
// it only validates, would have). Concurrent requests each start from the
// store's totals, so together they may overshoot by what they create at
// the same moment: the limits stop a runaway client, they are not quotas.
type clusterBudget struct {
	a          *Agent
	loaded     bool
	topics     int
	partitions int64
}

// check reports whether topics more topics holding partitions more
// partitions fit under the cluster limits: nil, or POLICY_VIOLATION with
// its message, counted as a limit hit (or the error of reading the
// totals).
func (b *clusterBudget) check(ctx context.Context, topics int, partitions int64) (*kerr.Error, string) {
	if code, msg := b.load(ctx); code != nil {
		return code, msg
	}
	limit, msg := b.refusal(topics, partitions)
	if limit == "" {
		return nil, ""
	}
	b.a.limitHit(limit, "topics", b.topics, "partitions", b.partitions, "asked", partitions)
	return kerr.PolicyViolation, msg
}

// load reads the store's totals unless read already: REQUEST_TIMED_OUT
// past the request's deadline, UNKNOWN_SERVER_ERROR on other failures.
func (b *clusterBudget) load(ctx context.Context) (*kerr.Error, string) {
	cfg := &b.a.cfg
	if b.loaded || (cfg.MaxTopics <= 0 && cfg.MaxPartitions <= 0) {
		return nil, ""
	}
	n, p, err := b.a.store.TopicTotals(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return kerr.RequestTimedOut, "the request timed out counting the cluster's topics"
		}
		b.a.log.Warn("count topics failed", "err", err)
		return kerr.UnknownServerError, ""
	}
	b.topics, b.partitions, b.loaded = n, p, true
	return nil, ""
}

// refusal names the limit (and says why) that topics more topics with
// partitions more partitions would break; "" if none. The totals must be
// loaded.
func (b *clusterBudget) refusal(topics int, partitions int64) (limit, msg string) {
	cfg := &b.a.cfg
	if cfg.MaxTopics > 0 && b.topics+topics > cfg.MaxTopics {
		return "max.topics", fmt.Sprintf("the cluster has %d topics, the limit is %d", b.topics, cfg.MaxTopics)
	}
	if cfg.MaxPartitions > 0 && b.partitions+partitions > cfg.MaxPartitions {
		return "max.partitions", fmt.Sprintf("the cluster has %d partitions, %d more would exceed the limit of %d",
			b.partitions, partitions, cfg.MaxPartitions)
	}
	return "", ""
}

// add counts what the request created.
func (b *clusterBudget) add(topics int, partitions int64) {
	b.topics += topics
	b.partitions += partitions
}

// checkPartitionsPerTopic answers INVALID_PARTITIONS, with its message,
// for a topic count above MaxPartitionsPerTopic.
func (a *Agent) checkPartitionsPerTopic(topic string, partitions int32) (*kerr.Error, string) {
	if limit := a.cfg.MaxPartitionsPerTopic; limit > 0 && partitions > limit {
		a.limitHit("max.partitions.per.topic", "topic", topic, "asked", partitions, "max", limit)
		return kerr.InvalidPartitions, fmt.Sprintf("%d partitions exceed the limit of %d per topic", partitions, limit)
	}
	return nil, ""
}

// adminContext bounds an admin request's store calls (CreateTopics,
// CreatePartitions, DeleteTopics, DeleteRecords) by the timeout the
// client gave (TimeoutMillis): past it, what is left is answered
// REQUEST_TIMED_OUT, as Kafka answers, instead of working on for a client
// that gave up. A timeout of 0 or less, which asks Kafka not to wait for
// the change to spread, gets storeTimeout: floe's changes are done when
// the store call returns.
func adminContext(ctx context.Context, timeoutMillis int32) (context.Context, context.CancelFunc) {
	d := storeTimeout
	if timeoutMillis > 0 {
		d = time.Duration(timeoutMillis) * time.Millisecond
	}
	return context.WithTimeout(ctx, d)
}

// topicConfig returns a config's effective value and whether it was set on
// the topic explicitly.
func (a *Agent) topicConfig(t metadata.Topic, name string) (string, bool) {
	if v, ok := t.Configs[name]; ok {
		return v, true
	}
	return a.topicDefault(name), false
}

// topicDefault is what a topic that does not set config name gets: the
// cluster's topicconfig.Defaults for the configs the compactor and the
// produce path enforce, else the table's value.
func (a *Agent) topicDefault(name string) string {
	if v, ok := a.cfg.TopicDefaults.Value(name); ok {
		return v
	}
	return topicConfigDefs[name].def
}

// maxMessageBytes is the topic's max.message.bytes.
func (a *Agent) maxMessageBytes(t metadata.Topic) int64 {
	if n := a.cfg.TopicDefaults.Int(t.Configs, topicconfig.MaxMessageBytes); n > 0 {
		return n
	}
	return a.cfg.TopicDefaults.MaxMessageBytes
}

// configEffect is what floe does with a topic config.
type configEffect uint8

const (
	// enforced configs are applied: by the produce path (max.message.bytes,
	// cleanup.policy's required keys) or by the compactor (retention and
	// key compaction), which reads every topic's configs from the store
	// each round, so a change takes effect at the next round.
	enforced configEffect = iota
	// inert configs tune disks, segments, flushes or replicas, which a
	// diskless broker does not have: any valid value is stored and
	// reported, and changes nothing.
	inert
	// fixed configs would change what clients observe in ways floe does not
	// implement: only the value floe behaves by is accepted, so no topic
	// reports a setting it does not get.
	fixed
)

// topicConfigDef is what floe knows of one Kafka topic config: the ones
// Kafka 4's LogConfig defines. Names outside this table are not Kafka topic
// configs; AlterConfigs refuses them, as Kafka does.
type topicConfigDef struct {
	typ kmsg.ConfigType
	// def is the value floe applies when the topic sets none; empty for
	// the configs whose default is the cluster's (topicconfig.Defaults,
	// Config.TopicDefaults), which topicDefault reads.
	def string
	// broker is the broker config Kafka takes the default from, reported as
	// the default's synonym ("" when Kafka has none).
	broker string
	effect configEffect
	// check returns why a value's type or range is refused, or ""; nil
	// accepts any string.
	check func(string) string
	doc   string
}

// clusterDefault ends the doc of configs whose default is the cluster's
// (topicconfig.Defaults): agents report it and compactors enforce it, from
// the same flag on both.
const clusterDefault = " The default is the cluster's flag %s, which agents and compactors must share (floe dev: one flag for both)."

var topicConfigDefs = map[string]topicConfigDef{
	"cleanup.policy": {typ: kmsg.ConfigTypeList, def: "delete", broker: "log.cleanup.policy", effect: enforced,
		check: listOf("compact", "delete"),
		doc:   "delete: the compactor drops records past retention.ms or retention.bytes. compact: it keeps the newest record of each key, and produce refuses records without a key. Both may be given."},
	topicconfig.RetentionMs: {typ: kmsg.ConfigTypeLong, broker: "log.retention.ms", effect: enforced,
		check: longBetween(-1, math.MaxInt64),
		doc: "With cleanup.policy delete, the compactor advances the log start past index rows whose newest record is older than this; -1 keeps records forever." + fmt.Sprintf(clusterDefault, "--retention") +
			" floe dev keeps records forever unless the topic sets retention.ms."},
	topicconfig.RetentionBytes: {typ: kmsg.ConfigTypeLong, broker: "log.retention.bytes", effect: enforced,
		check: longBetween(math.MinInt64, math.MaxInt64),
		doc:   "With cleanup.policy delete, the compactor drops a partition's oldest index rows while the rest still hold this many bytes; -1 means no limit." + fmt.Sprintf(clusterDefault, "--retention-bytes")},
	topicconfig.DeleteRetentionMs: {typ: kmsg.ConfigTypeLong, broker: "log.cleaner.delete.retention.ms", effect: enforced,
		check: longBetween(0, math.MaxInt64),
		doc:   "How long key compaction keeps a tombstone (a record with a null value) once it is the newest record of its key." + fmt.Sprintf(clusterDefault, "--delete-retention")},
	topicconfig.MinCleanableDirtyRatio: {typ: kmsg.ConfigTypeDouble, broker: "log.cleaner.min.cleanable.ratio", effect: enforced,
		check: doubleBetween(0, 1),
		doc:   "Key compaction rewrites a partition once the bytes written since its last compaction are at least this share of it (or max.compaction.lag.ms has passed)."},
	topicconfig.MaxCompactionLagMs: {typ: kmsg.ConfigTypeLong, broker: "log.cleaner.max.compaction.lag.ms", effect: enforced,
		check: longBetween(1, math.MaxInt64),
		doc:   "Key compaction rewrites a partition whose oldest uncompacted object is this old, whatever min.cleanable.dirty.ratio says." + fmt.Sprintf(clusterDefault, "--max-compaction-lag")},
	topicconfig.MaxMessageBytes: {typ: kmsg.ConfigTypeInt, broker: "message.max.bytes", effect: enforced,
		check: longBetween(0, math.MaxInt32),
		doc:   "The largest record batch produce accepts for this topic (MESSAGE_TOO_LARGE beyond it), as compressed by the producer."},

	"compression.type": {typ: kmsg.ConfigTypeString, def: "producer", broker: "compression.type", effect: fixed,
		check: oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
		doc:   "floe stores batches byte for byte as the producer compressed them: only producer is accepted."},
	"message.timestamp.type": {typ: kmsg.ConfigTypeString, def: "CreateTime", broker: "log.message.timestamp.type", effect: fixed,
		check: oneOf("CreateTime", "LogAppendTime"),
		doc:   "floe keeps the producer's timestamps: only CreateTime is accepted."},
	"message.timestamp.before.max.ms": {typ: kmsg.ConfigTypeLong, def: "9223372036854775807", broker: "log.message.timestamp.before.max.ms", effect: fixed,
		check: longBetween(0, math.MaxInt64),
		doc:   "floe accepts records with any timestamp: only the maximum (no check) is accepted."},
	"message.timestamp.after.max.ms": {typ: kmsg.ConfigTypeLong, def: "9223372036854775807", broker: "log.message.timestamp.after.max.ms", effect: fixed,
		check: longBetween(0, math.MaxInt64),
		doc:   "floe accepts records with any timestamp: only the maximum (no check) is accepted."},
	"message.timestamp.difference.max.ms": {typ: kmsg.ConfigTypeLong, def: "9223372036854775807", broker: "log.message.timestamp.difference.max.ms", effect: fixed,
		check: longBetween(0, math.MaxInt64),
		doc:   "floe accepts records with any timestamp: only the maximum (no check) is accepted."},
	"min.compaction.lag.ms": {typ: kmsg.ConfigTypeLong, def: "0", broker: "log.cleaner.min.compaction.lag.ms", effect: fixed,
		check: longBetween(0, math.MaxInt64),
		doc:   "Key compaction may compact records of any age: only 0 is accepted."},
	"remote.storage.enable": {typ: kmsg.ConfigTypeBoolean, def: "false", effect: fixed, check: boolean,
		doc: "Kafka's tiered storage: floe keeps every record in object storage already, without a remote log manager, so only false is accepted."},

	"segment.bytes": {typ: kmsg.ConfigTypeInt, def: "1073741824", broker: "log.segment.bytes", effect: inert,
		check: longBetween(14, math.MaxInt32), doc: "No effect: floe has no log segments; agents cut one object per flush and the compactor merges them."},
	"segment.ms": {typ: kmsg.ConfigTypeLong, def: "604800000", broker: "log.roll.ms", effect: inert,
		check: longBetween(1, math.MaxInt64), doc: "No effect: floe has no log segments to roll."},
	"segment.jitter.ms": {typ: kmsg.ConfigTypeLong, def: "0", broker: "log.roll.jitter.ms", effect: inert,
		check: longBetween(0, math.MaxInt64), doc: "No effect: floe has no log segments to roll."},
	"segment.index.bytes": {typ: kmsg.ConfigTypeInt, def: "10485760", broker: "log.index.size.max.bytes", effect: inert,
		check: longBetween(4, math.MaxInt32), doc: "No effect: the object index lives in the metadata store."},
	"index.interval.bytes": {typ: kmsg.ConfigTypeInt, def: "4096", broker: "log.index.interval.bytes", effect: inert,
		check: longBetween(0, math.MaxInt32), doc: "No effect: the object index has one row per partition run of an object."},
	"flush.messages": {typ: kmsg.ConfigTypeLong, def: "9223372036854775807", broker: "log.flush.interval.messages", effect: inert,
		check: longBetween(1, math.MaxInt64), doc: "No effect: records are acknowledged once their object is in object storage and committed."},
	"flush.ms": {typ: kmsg.ConfigTypeLong, def: "9223372036854775807", broker: "log.flush.interval.ms", effect: inert,
		check: longBetween(0, math.MaxInt64), doc: "No effect: records are acknowledged once their object is in object storage and committed."},
	"file.delete.delay.ms": {typ: kmsg.ConfigTypeLong, def: "60000", broker: "log.segment.delete.delay.ms", effect: inert,
		check: longBetween(0, math.MaxInt64), doc: "No effect: the compactor deletes unreferenced objects after its own grace period."},
	"preallocate": {typ: kmsg.ConfigTypeBoolean, def: "false", broker: "log.preallocate", effect: inert,
		check: boolean, doc: "No effect: floe has no segment files."},
	"min.insync.replicas": {typ: kmsg.ConfigTypeInt, def: "1", broker: "min.insync.replicas", effect: inert,
		check: longBetween(1, math.MaxInt32), doc: "No effect: object storage replicates; every acknowledged record is in it."},
	"unclean.leader.election.enable": {typ: kmsg.ConfigTypeBoolean, def: "false", broker: "unclean.leader.election.enable", effect: inert,
		check: boolean, doc: "No effect: any agent serves any partition from object storage, so no replica can be behind."},
	"leader.replication.throttled.replicas": {typ: kmsg.ConfigTypeList, def: "", effect: inert,
		check: throttledReplicas, doc: "No effect: floe does not replicate between brokers."},
	"follower.replication.throttled.replicas": {typ: kmsg.ConfigTypeList, def: "", effect: inert,
		check: throttledReplicas, doc: "No effect: floe does not replicate between brokers."},
	"local.retention.ms": {typ: kmsg.ConfigTypeLong, def: "-2", broker: "log.local.retention.ms", effect: inert,
		check: longBetween(-2, math.MaxInt64), doc: "No effect: floe keeps no local log; retention.ms applies."},
	"local.retention.bytes": {typ: kmsg.ConfigTypeLong, def: "-2", broker: "log.local.retention.bytes", effect: inert,
		check: longBetween(-2, math.MaxInt64), doc: "No effect: floe keeps no local log; retention.bytes applies."},
	"remote.log.copy.disable": {typ: kmsg.ConfigTypeBoolean, def: "false", effect: inert,
		check: boolean, doc: "No effect: floe has no tiered storage."},
	"remote.log.delete.on.disable": {typ: kmsg.ConfigTypeBoolean, def: "false", effect: inert,
		check: boolean, doc: "No effect: floe has no tiered storage."},
	"compression.gzip.level": {typ: kmsg.ConfigTypeInt, def: "-1", broker: "compression.gzip.level", effect: inert,
		check: gzipLevel, doc: "No effect: floe never recompresses (compression.type is producer)."},
	"compression.lz4.level": {typ: kmsg.ConfigTypeInt, def: "9", broker: "compression.lz4.level", effect: inert,
		check: longBetween(1, 17), doc: "No effect: floe never recompresses (compression.type is producer)."},
	"compression.zstd.level": {typ: kmsg.ConfigTypeInt, def: "3", broker: "compression.zstd.level", effect: inert,
		check: longBetween(-131072, 22), doc: "No effect: floe never recompresses (compression.type is producer)."},

	// floe's own: schema validation of produced records (package
	// schemaregistry/validation); the Confluent Server and Redpanda names
	// are aliases (init below).
	validation.ConfigValue: {typ: kmsg.ConfigTypeString, def: "false", effect: enforced, check: validation.CheckMode,
		doc: "false: values are not checked. true: each value must be framed with a schema id (Confluent's wire format) registered under the value's subject. full: and the payload must decode with that schema (Avro, JSON Schema or Protobuf). A record that fails is refused with INVALID_RECORD."},
	validation.ConfigKey: {typ: kmsg.ConfigTypeString, def: "false", effect: enforced, check: validation.CheckMode,
		doc: "As floe.value.schema.validation, for keys (subject <topic>-key under TopicNameStrategy)."},
	validation.ConfigValueStrategy: {typ: kmsg.ConfigTypeString, def: "TopicNameStrategy", effect: enforced, check: validation.CheckStrategy,
		doc: "The subject a value's schema must be registered under: TopicNameStrategy (<topic>-value), RecordNameStrategy (the record's full name) or TopicRecordNameStrategy (<topic>-<record name>)."},
	validation.ConfigKeyStrategy: {typ: kmsg.ConfigTypeString, def: "TopicNameStrategy", effect: enforced, check: validation.CheckStrategy,
		doc: "As floe.value.subject.name.strategy, for keys."},

	// floe's own: the topic as an Iceberg table (package iceberg).
	iceberg.ConfigEnabled: {typ: kmsg.ConfigTypeBoolean, def: "false", effect: enforced,
		check: icebergCheck(iceberg.ConfigEnabled),
		doc:   "true: the compactor's converter keeps the topic's committed records in the Iceberg table of the same name (dots become underscores), backfilled from the log start, and retention keeps records until they are in it. Unset follows the converter's --iceberg-default, reported here as false."},
	iceberg.ConfigPartitionSpec: {typ: kmsg.ConfigTypeString, def: iceberg.DefaultPartitionSpec, effect: enforced,
		check: icebergCheck(iceberg.ConfigPartitionSpec),
		doc:   "The Iceberg table's partition spec when the converter creates it: TRANSFORM(COLUMN), comma-separated, with Iceberg's transforms identity, year, month, day, hour, bucket[N], truncate[W], void over partition, offset, timestamp, timestamp_type, key, value. Changing it later does not change an existing table."},
	iceberg.ConfigValueMode: {typ: kmsg.ConfigTypeString, def: iceberg.ModeBinary, effect: enforced,
		check: icebergCheck(iceberg.ConfigValueMode),
		doc:   "How the Iceberg table holds record values: binary (one value column, the default), schema_id_prefix (values framed with a schema registry id, decoded into typed columns; records that cannot be go to the table's __dlq table), schema_latest (unframed values decoded with the latest schema of floe.iceberg.value.subject) or json (columns inferred from JSON values). Modes a floe version does not convert leave the topic unconverted."},
	iceberg.ConfigKeyMode: {typ: kmsg.ConfigTypeString, def: iceberg.ModeBinary, effect: enforced,
		check: icebergCheck(iceberg.ConfigKeyMode),
		doc:   "As floe.iceberg.value.mode, for keys."},
	iceberg.ConfigValueSubject: {typ: kmsg.ConfigTypeString, effect: enforced,
		check: icebergCheck(iceberg.ConfigValueSubject),
		doc:   "The subject whose latest schema decodes values in schema_latest mode; unset: <topic>-value."},
	iceberg.ConfigKeySubject: {typ: kmsg.ConfigTypeString, effect: enforced,
		check: icebergCheck(iceberg.ConfigKeySubject),
		doc:   "The subject whose latest schema decodes keys in schema_latest mode; unset: <topic>-key."},
	iceberg.ConfigValueProtobufMessage: {typ: kmsg.ConfigTypeString, effect: enforced,
		check: icebergCheck(iceberg.ConfigValueProtobufMessage),
		doc:   "In schema_latest mode with a Protobuf schema, the fully qualified message values are; unset: the schema's first message."},
}

func init() {
	// Confluent Server's and Redpanda's names for schema validation: the
	// same settings under another name (floe's wins when both are set).
	for alias, name := range validation.Aliases {
		d := topicConfigDefs[name]
		d.doc = "Alias of " + name + ". " + d.doc
		topicConfigDefs[alias] = d
	}
}

// icebergCheck validates one of package iceberg's topic configs.
func icebergCheck(name string) func(string) string {
	return func(v string) string {
		if err := iceberg.CheckTopicConfig(name, v); err != nil {
			return err.Error()
		}
		return ""
	}
}

// checkTopicConfig validates a value for a topic config as Kafka's config
// definitions would, plus floe's own rules. It returns why the value is
// refused, in Kafka's words ("Invalid value … for configuration …: …"), or
// "": a name that is no Kafka topic config, a value of the wrong type or
// range, and a fixed config's other values are refused.
func checkTopicConfig(name, value string) string {
	d, ok := topicConfigDefs[name]
	if !ok {
		return "Unknown topic config name: " + name
	}
	if d.check != nil {
		if why := d.check(value); why != "" {
			return fmt.Sprintf("Invalid value %s for configuration %s: %s", value, name, why)
		}
	}
	if d.effect == fixed && normalizeConfig(d.typ, value) != d.def {
		return fmt.Sprintf("Invalid value %s for configuration %s: %s", value, name, d.doc)
	}
	return ""
}

// normalizeConfig is value as the config's type parses it (Kafka trims
// numbers and booleans, and booleans are case-insensitive).
func normalizeConfig(typ kmsg.ConfigType, value string) string {
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

// longBetween checks an integer config within [lo, hi] (hi also bounds
// INT configs to 32 bits).
func longBetween(lo, hi int64) func(string) string {
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

func doubleBetween(lo, hi float64) func(string) string {
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

func boolean(v string) string {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "false":
		return ""
	}
	return "Expected value to be either true or false"
}

func oneOf(values ...string) func(string) string {
	return func(v string) string {
		if slices.Contains(values, strings.TrimSpace(v)) {
			return ""
		}
		return "String must be one of: " + strings.Join(values, ", ")
	}
}

// listOf checks a comma-separated list whose every element is one of values.
func listOf(values ...string) func(string) string {
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

// gzipLevel is Kafka's gzip level range: 1 to 9, or -1 for the default.
func gzipLevel(v string) string {
	if why := longBetween(-1, 9)(v); why != "" {
		return why
	}
	if strings.TrimSpace(v) == "0" {
		return "Value must be between 1 and 9, or -1"
	}
	return ""
}

// isListConfig reports whether APPEND and SUBTRACT apply to a config.
func isListConfig(name string) bool {
	return topicConfigDefs[name].typ == kmsg.ConfigTypeList
}

// topicConfigType is a config's type for DescribeConfigs; names outside
// the table (stored by CreateTopics before it checked names) are strings.
func topicConfigType(name string) kmsg.ConfigType {
	if d, ok := topicConfigDefs[name]; ok {
		return d.typ
	}
	return kmsg.ConfigTypeString
}
