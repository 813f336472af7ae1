package agent

// Share-group configs (KIP-932): the GROUP config keys of Kafka's
// GroupConfig that apply to share groups, set with IncrementalAlterConfigs
// or AlterConfigs like the KIP-848 keys (group_configs.go), with Kafka's
// defaults:
//
//   - share.session.timeout.ms, share.heartbeat.interval.ms: as the
//     consumer keys, the agent's KIP-848 defaults and bounds
//     (Config.ConsumerGroup*; Kafka's group.share.* defaults are the same).
//   - share.record.lock.duration.ms: 30 s; floe takes 1 s to 1 h (Kafka's
//     group.share.min/max.record.lock.duration.ms are 15 s and 1 min, which
//     leaves no room for a test of lock expiry).
//   - share.auto.offset.reset: latest, earliest or by_duration:<ISO-8601
//     duration> (PnDTnHnMnS), where a share-partition starts.
//   - share.isolation.level: read_uncommitted or read_committed.
//   - group.share.delivery.count.limit: 5, from 2 to 10 (Kafka's broker
//     bounds): a record delivered that often is archived when released.

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/group"
	"floe/metadata"
	"floe/topicconfig"
)

const (
	shareSessionTimeoutConfig    = "share.session.timeout.ms"
	shareHeartbeatIntervalConfig = "share.heartbeat.interval.ms"
	shareLockDurationConfig      = "share.record.lock.duration.ms"
	shareAutoOffsetResetConfig   = "share.auto.offset.reset"
	shareIsolationLevelConfig    = "share.isolation.level"
	shareDeliveryLimitConfig     = "group.share.delivery.count.limit"

	defaultShareLockDuration = 30 * time.Second
	minShareLockDuration     = time.Second
	maxShareLockDuration     = time.Hour
	defaultShareDeliveries   = 5
	minShareDeliveries       = 2
	maxShareDeliveries       = 10
	// shareMaxInFlight is Kafka's group.share.partition.max.record.locks:
	// the most offsets one share-partition's in-flight window spans.
	shareMaxInFlight = 2000
)

// isShareConfig reports whether name is one of the share-group keys.
func isShareConfig(name string) bool {
	switch name {
	case shareSessionTimeoutConfig, shareHeartbeatIntervalConfig, shareLockDurationConfig,
		shareAutoOffsetResetConfig, shareIsolationLevelConfig, shareDeliveryLimitConfig:
		return true
	}
	return false
}

// byDuration is share.auto.offset.reset's by_duration:<ISO-8601> form.
var byDuration = regexp.MustCompile(`^by_duration:P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// parseByDuration returns the duration of a by_duration: reset, ok false
// for any other value.
func parseByDuration(v string) (time.Duration, bool) {
	m := byDuration.FindStringSubmatch(v)
	if m == nil || v == "by_duration:P" || strings.HasSuffix(v, "T") {
		return 0, false
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute} {
		if m[i+1] != "" {
			n, err := strconv.ParseInt(m[i+1], 10, 32)
			if err != nil {
				return 0, false
			}
			d += time.Duration(n) * unit
		}
	}
	if m[4] != "" {
		f, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return 0, false
		}
		d += time.Duration(f * float64(time.Second))
	}
	return d, true
}

// checkShareConfig validates one share-group key's value; "" when valid.
func checkShareConfig(name, v string) string {
	switch name {
	case shareAutoOffsetResetConfig:
		if v == "latest" || v == "earliest" {
			return ""
		}
		if _, ok := parseByDuration(v); ok {
			return ""
		}
		return "must be latest, earliest or by_duration:<ISO-8601 duration>"
	case shareIsolationLevelConfig:
		return topicconfig.OneOf("read_uncommitted", "read_committed")(v)
	case shareLockDurationConfig:
		return topicconfig.LongBetween(int64(minShareLockDuration/time.Millisecond), int64(maxShareLockDuration/time.Millisecond))(v)
	case shareDeliveryLimitConfig:
		return topicconfig.LongBetween(minShareDeliveries, maxShareDeliveries)(v)
	}
	return ""
}

// shareConfig (the group's configs) is a share group's session timeout
// and heartbeat interval.
func (c *coordinator) shareConfig(configs map[string]string) group.ConsumerConfig {
	return withTimeouts(c.ccfg, configs, shareSessionTimeoutConfig, shareHeartbeatIntervalConfig)
}

// shareSettings are what ShareFetch and ShareAcknowledge apply of a
// group's configs.
type shareSettings struct {
	limits        metadata.ShareLimits
	reset         string        // latest, earliest, by_duration
	resetAgo      time.Duration // by_duration's
	readCommitted bool
	// otherType: the id is a classic or consumer group's.
	otherType bool
}

func newShareSettings(configs map[string]string) shareSettings {
	s := shareSettings{
		limits: metadata.ShareLimits{LockDuration: defaultShareLockDuration, MaxDeliveries: defaultShareDeliveries,
			MaxInFlight: shareMaxInFlight},
		reset: "latest",
	}
	if d, ok := groupConfigMillis(configs[shareLockDurationConfig]); ok {
		s.limits.LockDuration = d
	}
	if n, err := strconv.Atoi(configs[shareDeliveryLimitConfig]); err == nil && n > 0 {
		s.limits.MaxDeliveries = int16(n)
	}
	switch v := configs[shareAutoOffsetResetConfig]; {
	case v == "earliest":
		s.reset = v
	case strings.HasPrefix(v, "by_duration:"):
		if d, ok := parseByDuration(v); ok {
			s.reset, s.resetAgo = "by_duration", d
		}
	}
	s.readCommitted = configs[shareIsolationLevelConfig] == "read_committed"
	return s
}

// shareDescribedConfigs lists the share-group keys for DescribeConfigs on
// a GROUP resource: the group's own value (GROUP_CONFIG), else the default.
func (a *Agent) shareDescribedConfigs(stored map[string]string) []describedConfig {
	cfg := func(name, broker, def string, typ kmsg.ConfigType, what string) describedConfig {
		return groupDescribedConfig(stored, name, broker, def, typ,
			what+" Set per share group with IncrementalAlterConfigs; "+broker+" is the default.")
	}
	return []describedConfig{
		cfg(shareAutoOffsetResetConfig, "share.auto.offset.reset", "latest", kmsg.ConfigTypeString,
			"Where a share-partition without state starts: latest, earliest or by_duration:<ISO-8601 duration>."),
		cfg(shareDeliveryLimitConfig, "group.share.delivery.count.limit", strconv.Itoa(defaultShareDeliveries), kmsg.ConfigTypeInt,
			"A record released this many times is archived instead of delivered again."),
		cfg(shareHeartbeatIntervalConfig, "group.share.heartbeat.interval.ms", millis(a.coord.ccfg.HeartbeatInterval), kmsg.ConfigTypeInt,
			"The heartbeat interval the share group's members are told to keep."),
		cfg(shareIsolationLevelConfig, "share.isolation.level", "read_uncommitted", kmsg.ConfigTypeString,
			"read_committed: records of aborted transactions are never delivered, and none past the last stable offset."),
		cfg(shareLockDurationConfig, "group.share.record.lock.duration.ms", millis(defaultShareLockDuration), kmsg.ConfigTypeInt,
			"How long a consumer holds records it acquired before they are delivered to another."),
		cfg(shareSessionTimeoutConfig, "group.share.session.timeout.ms", millis(a.coord.ccfg.SessionTimeout), kmsg.ConfigTypeInt,
			"Share group members that send no heartbeat for this long are removed from the group."),
	}
}

// checkShareGroupConfigs validates the share keys of a group's configs
// after a change, the agent's defaults standing in for the keys unset.
func (c *coordinator) checkShareGroupConfigs(configs map[string]string) *alterError {
	for _, name := range sortedKeys(configs) {
		if !isShareConfig(name) {
			continue
		}
		if why := checkShareConfig(name, configs[name]); why != "" {
			return alterErr(kerr.InvalidConfig, "Invalid value %s for configuration %s: %s", configs[name], name, why)
		}
	}
	return c.checkTimeouts(configs, shareSessionTimeoutConfig, shareHeartbeatIntervalConfig, "share")
}
