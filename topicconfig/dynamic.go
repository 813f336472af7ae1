package topicconfig

// Dynamic broker configs: the cluster-wide defaults of topic configs that
// IncrementalAlterConfigs and AlterConfigs set on the BROKER resource ""
// (Kafka's DynamicLogConfig.ReconfigurableConfigs, source
// DYNAMIC_DEFAULT_BROKER_CONFIG). A topic that sets a config gets its own
// value; one that does not gets the dynamic default, else the static one
// (the flags: Defaults, or the table's Default).

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Kafka's three synonyms of the retention time, in its order of precedence.
const (
	LogRetentionMs      = "log.retention.ms"
	LogRetentionMinutes = "log.retention.minutes"
	LogRetentionHours   = "log.retention.hours"
)

// CleanerBackoff is Kafka's log.cleaner.backoff.ms, dynamic in floe as in
// Kafka: the compactor's pause between rounds (its --interval when unset),
// the one dynamic broker config that is no topic config's default.
const CleanerBackoff = "log.cleaner.backoff.ms"

// BrokerDef is a broker config floe lets clients change at the cluster
// default: the topic config whose default it is ("" for CleanerBackoff).
type BrokerDef struct {
	Topic string
	// Unit is what one of the value counts for the retention synonyms in
	// minutes and hours; 0 when the value is the topic config's own.
	Unit time.Duration
}

// Broker returns the dynamic broker config name: the broker names (Def.Broker)
// of the topic configs floe enforces or fixes (not the Inert ones: a
// diskless broker has no segments or flushes to default),
// log.retention.minutes and .hours for retention.ms, and CleanerBackoff.
// false for every other name.
func Broker(name string) (BrokerDef, bool) {
	switch name {
	case CleanerBackoff:
		return BrokerDef{}, true
	case LogRetentionMinutes:
		return BrokerDef{Topic: RetentionMs, Unit: time.Minute}, true
	case LogRetentionHours:
		return BrokerDef{Topic: RetentionMs, Unit: time.Hour}, true
	}
	if name == "" {
		return BrokerDef{}, false
	}
	for topic, d := range Defs {
		if d.Broker == name && d.Effect != Inert {
			return BrokerDef{Topic: topic}, true
		}
	}
	return BrokerDef{}, false
}

// BrokerNames lists the dynamic broker configs, sorted.
func BrokerNames() []string {
	names := []string{LogRetentionMinutes, LogRetentionHours, CleanerBackoff}
	for _, d := range Defs {
		if d.Broker != "" && d.Effect != Inert {
			names = append(names, d.Broker)
		}
	}
	sort.Strings(names)
	return names
}

// CheckBroker validates a value for a dynamic broker config as Kafka's
// config definitions would (floe checks it as the topic config it
// defaults, so a default can only be what a topic could set), naming the
// broker config: why it is refused, or "". Names that are no dynamic
// broker config are refused too.
func CheckBroker(name, value string) string {
	b, ok := Broker(name)
	switch {
	case !ok:
		return "Cannot update these configs dynamically: " + ScalaSet([]string{name})
	case b.Topic == "": // log.cleaner.backoff.ms, a LONG at least 0
		if why := LongBetween(0, math.MaxInt64)(value); why != "" {
			return fmt.Sprintf("Invalid value %s for configuration %s: %s", value, name, why)
		}
		return ""
	case b.Unit != 0:
		if why := LongBetween(math.MinInt32, math.MaxInt32)(value); why != "" {
			return fmt.Sprintf("Invalid value %s for configuration %s: %s", value, name, why)
		}
		return ""
	}
	why := Check(b.Topic, value)
	return strings.Replace(why, "for configuration "+b.Topic+":", "for configuration "+name+":", 1)
}

// ScalaSet writes names as Kafka's messages print a Scala Set of them:
// "Set(a, b)".
func ScalaSet(names []string) string {
	return "Set(" + strings.Join(names, ", ") + ")"
}

// WithDynamic returns d with the cluster's dynamic broker configs stored
// (by broker name, as set) applied: Value, Int, Float, Default and
// Policies then answer them for topics that set nothing. Names that are
// not dynamic broker configs and values that no longer pass CheckBroker
// are ignored. The retention time is log.retention.ms, else
// log.retention.minutes, else log.retention.hours, as Kafka resolves it;
// a negative one keeps records forever.
func (d Defaults) WithDynamic(stored map[string]string) Defaults {
	d.dynamic, d.broker = map[string]string{}, map[string]string{}
	var retention []string
	for name, v := range stored {
		b, ok := Broker(name)
		if !ok || CheckBroker(name, v) != "" {
			continue
		}
		d.broker[name] = v
		if b.Topic == "" {
			continue
		}
		if b.Topic == RetentionMs {
			retention = append(retention, name)
			continue
		}
		d.dynamic[b.Topic] = Normalize(Defs[b.Topic].Type, v)
	}
	for _, name := range []string{LogRetentionMs, LogRetentionMinutes, LogRetentionHours} {
		if !slices.Contains(retention, name) {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(d.broker[name]), 10, 64)
		if b, _ := Broker(name); b.Unit != 0 {
			n *= b.Unit.Milliseconds()
		}
		d.dynamic[RetentionMs] = strconv.FormatInt(max(n, -1), 10)
		break
	}
	return d
}

// CleanerBackoff returns the dynamic log.cleaner.backoff.ms, if set.
func (d Defaults) CleanerBackoff() (time.Duration, bool) {
	v, ok := d.broker[CleanerBackoff]
	if !ok {
		return 0, false
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return time.Duration(min(n, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond, true
}

// DynamicBroker returns the dynamic broker configs d applies, by broker
// name (a copy).
func (d Defaults) DynamicBroker() map[string]string { return maps.Clone(d.broker) }

// Default is what a topic that does not set config name gets: the dynamic
// default, else the cluster's static default (Defaults' fields, from the
// flags), else the table's.
func (d Defaults) Default(name string) string {
	if v, ok := d.Value(name); ok {
		return v
	}
	return Defs[name].Default
}

// Static is Default without the dynamic defaults: the value of the broker
// config's DEFAULT_CONFIG synonym.
func (d Defaults) Static(name string) string {
	d.dynamic = nil
	return d.Default(name)
}

// Synonym is one broker-level synonym of a topic config, in Kafka's order
// of precedence.
type Synonym struct {
	Name, Value string
	// Dynamic is a value set at the cluster default; else the static
	// default.
	Dynamic bool
}

// Synonyms lists the broker configs topic config name falls back to, as
// DescribeConfigs' synonyms list them: the dynamic defaults set (for
// retention.ms: log.retention.ms, .minutes, .hours in that order), then
// the static default under Def.Broker. None for configs without a broker
// config.
func (d Defaults) Synonyms(name string) []Synonym {
	def, ok := Defs[name]
	if !ok || def.Broker == "" {
		return nil
	}
	var out []Synonym
	brokers := []string{def.Broker}
	if name == RetentionMs {
		brokers = []string{LogRetentionMs, LogRetentionMinutes, LogRetentionHours}
	}
	for _, b := range brokers {
		if v, ok := d.broker[b]; ok {
			out = append(out, Synonym{Name: b, Value: v, Dynamic: true})
		}
	}
	return append(out, Synonym{Name: def.Broker, Value: d.Static(name)})
}

// Policies returns whether a topic's cleanup.policy includes delete and
// compact: its own, else the dynamic default, else delete.
func (d Defaults) Policies(configs map[string]string) (del, compact bool) {
	if _, ok := configs[CleanupPolicy]; ok {
		return Policies(configs)
	}
	if v, ok := d.dynamic[CleanupPolicy]; ok {
		return Policies(map[string]string{CleanupPolicy: v})
	}
	return true, false
}

// ClusterConfigReader reads the cluster's dynamic broker configs
// (metadata.ClusterConfigStore).
type ClusterConfigReader interface {
	ClusterConfigs(ctx context.Context) (map[string]string, error)
}

// Live holds the defaults a process applies: the static Defaults with the
// dynamic ones last read by Refresh (every agent heartbeat, every
// compactor round). Safe for concurrent use: Get and Refresh swap one
// pointer.
type Live struct {
	static Defaults
	cur    atomic.Pointer[Defaults]
}

// NewLive starts from the static defaults alone.
func NewLive(static Defaults) *Live {
	l := &Live{static: static}
	l.cur.Store(&static)
	return l
}

// Get returns the defaults in effect.
func (l *Live) Get() Defaults { return *l.cur.Load() }

// Refresh reads the dynamic configs; on an error the previous ones stay.
func (l *Live) Refresh(ctx context.Context, r ClusterConfigReader) error {
	stored, err := r.ClusterConfigs(ctx)
	if err != nil {
		return fmt.Errorf("read cluster configs: %w", err)
	}
	d := l.static.WithDynamic(stored)
	l.cur.Store(&d)
	return nil
}
