package agent

// Group configs: Kafka 4's GROUP config resource (KIP-848), set with
// IncrementalAlterConfigs or AlterConfigs and listed by DescribeConfigs.
//
// floe serves the two keys of Kafka's GroupConfig that apply to consumer
// groups: consumer.session.timeout.ms and consumer.heartbeat.interval.ms.
// They are checked as Kafka's controller checks them
// (ControllerConfigurationValidator, GroupConfigManager.validate,
// GroupConfig.validate) on the group's whole set of configs after the
// change, the agent's defaults filling in the keys the group does not
// set: every name must be one of them, every value an INT of at least 1,
// within group.consumer.min/max.session.timeout.ms and
// group.consumer.min/max.heartbeat.interval.ms, and the session timeout
// longer than the heartbeat interval; INVALID_CONFIG in Kafka's words
// otherwise. The share-group keys (KIP-932) are checked in
// share_configs.go; any other name is INVALID_CONFIG "Unknown group
// config name", as Kafka refuses any name it does not define.
//
// A group's configs are stored in the metadata store under its name
// (Store.UpdateGroupConfigs, one transaction, so concurrent changes lose
// nothing); they may be set before the group exists and outlive its
// deletion, as in Kafka. The coordinator of a KIP-848 group applies them
// (coordinator.consumerConfig): the heartbeat interval in every
// ConsumerGroupHeartbeat answer, the session timeout to each member from
// its next heartbeat. A change through the coordinating agent applies at
// once, one through another agent within TopicCacheTTL. Classic groups
// have no group configs in Kafka: their members choose their session
// timeout in JoinGroup.

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/group"
	"floe/topicconfig"
)

// The group configs floe serves (Kafka's GroupConfig names).
const (
	groupSessionTimeoutConfig    = "consumer.session.timeout.ms"
	groupHeartbeatIntervalConfig = "consumer.heartbeat.interval.ms"
)

// consumerLimits are the bounds of a KIP-848 group's session timeout and
// heartbeat interval (Config.ConsumerGroupMin/Max*), widened to take in
// the agent's defaults.
type consumerLimits struct {
	minSession, maxSession, minHeartbeat, maxHeartbeat time.Duration
}

func newConsumerLimits(cfg *Config) consumerLimits {
	return consumerLimits{
		minSession:   min(cfg.ConsumerGroupMinSessionTimeout, cfg.ConsumerGroupSessionTimeout),
		maxSession:   max(cfg.ConsumerGroupMaxSessionTimeout, cfg.ConsumerGroupSessionTimeout),
		minHeartbeat: min(cfg.ConsumerGroupMinHeartbeatInterval, cfg.ConsumerGroupHeartbeatInterval),
		maxHeartbeat: max(cfg.ConsumerGroupMaxHeartbeatInterval, cfg.ConsumerGroupHeartbeatInterval),
	}
}

// groupConfigMillis parses a stored group config value: ok is false for
// one that is no INT of at least 1 (never stored by floe, which checks
// first).
func groupConfigMillis(v string) (time.Duration, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || n < 1 {
		return 0, false
	}
	return time.Duration(n) * time.Millisecond, true
}

// applyGroupConfigs is def with the group's stored configs applied.
func applyGroupConfigs(def group.ConsumerConfig, configs map[string]string) group.ConsumerConfig {
	return withTimeouts(def, configs, groupSessionTimeoutConfig, groupHeartbeatIntervalConfig)
}

// withTimeouts is def with the session timeout and heartbeat interval a
// group's stored configs set as session and heartbeat (the consumer or
// the share keys).
func withTimeouts(def group.ConsumerConfig, configs map[string]string, session, heartbeat string) group.ConsumerConfig {
	if d, ok := groupConfigMillis(configs[session]); ok {
		def.SessionTimeout = d
	}
	if d, ok := groupConfigMillis(configs[heartbeat]); ok {
		def.HeartbeatInterval = d
	}
	return def
}

// checkGroupConfigs validates a group's whole set of configs after a
// change, as Kafka's GroupConfig.validate does: the names, then each
// value's type and range, then the bounds, then the session timeout
// against the heartbeat interval, the agent's defaults standing in for the
// keys the group does not set.
func (c *coordinator) checkGroupConfigs(configs map[string]string) *alterError {
	for _, name := range sortedKeys(configs) {
		if name != groupSessionTimeoutConfig && name != groupHeartbeatIntervalConfig && !isShareConfig(name) {
			return alterErr(kerr.InvalidConfig, "Unknown group config name: %s", name)
		}
	}
	if err := c.checkShareGroupConfigs(configs); err != nil {
		return err
	}
	return c.checkTimeouts(configs, groupSessionTimeoutConfig, groupHeartbeatIntervalConfig, "consumer")
}

// checkTimeouts holds the session timeout and heartbeat interval a
// group's configs set as session and heartbeat (the agent's defaults
// standing in for those unset) to be INTs of at least 1 within the bounds,
// with Kafka's messages, which name the broker settings of the group kind
// ("consumer", "share").
func (c *coordinator) checkTimeouts(configs map[string]string, sessionName, heartbeatName, kind string) *alterError {
	values := [2]time.Duration{c.ccfg.SessionTimeout, c.ccfg.HeartbeatInterval}
	for i, name := range [2]string{sessionName, heartbeatName} {
		v, ok := configs[name]
		if !ok {
			continue
		}
		if why := topicconfig.LongBetween(1, math.MaxInt32)(v); why != "" {
			return alterErr(kerr.InvalidConfig, "Invalid value %s for configuration %s: %s", v, name, why)
		}
		values[i], _ = groupConfigMillis(v)
	}
	session, heartbeat, l := values[0], values[1], c.limits
	switch {
	case heartbeat < l.minHeartbeat:
		return alterErr(kerr.InvalidConfig, "%s must be greater than or equal to group.%s.min.heartbeat.interval.ms", heartbeatName, kind)
	case heartbeat > l.maxHeartbeat:
		return alterErr(kerr.InvalidConfig, "%s must be less than or equal to group.%s.max.heartbeat.interval.ms", heartbeatName, kind)
	case session < l.minSession:
		return alterErr(kerr.InvalidConfig, "%s must be greater than or equal to group.%s.min.session.timeout.ms", sessionName, kind)
	case session > l.maxSession:
		return alterErr(kerr.InvalidConfig, "%s must be less than or equal to group.%s.max.session.timeout.ms", sessionName, kind)
	case session <= heartbeat:
		return alterErr(kerr.InvalidConfig, "%s must be greater than %s", sessionName, heartbeatName)
	}
	return nil
}

// alterGroupConfigs changes a group's configs in one store transaction,
// checking the result first.
func (a *Agent) alterGroupConfigs(ctx context.Context, name string, changes []topicconfig.Change, replace, validateOnly bool) *alterError {
	if name == "" {
		return alterErr(kerr.InvalidRequest, "Default group resources are not allowed.")
	}
	// Group configs are INTs and strings: nothing to APPEND to or SUBTRACT from
	// (Kafka's controller answers so for names it does not know, too).
	for _, c := range changes {
		if c.Op == kmsg.IncrementalAlterConfigOpAppend || c.Op == kmsg.IncrementalAlterConfigOpSubtract {
			return alterErr(kerr.InvalidConfig, "Can't %s to key %s because its type is not LIST.", opName(c.Op), c.Name)
		}
	}
	return a.storedAlter(ctx, "group", name, changes, validateOnly, func(ctx context.Context) (map[string]string, error) {
		return a.store.GroupConfigs(ctx, name)
	}, func(ctx context.Context, update func(map[string]string) (map[string]string, error)) error {
		defer a.coord.groupConfigsChanged(name)
		return a.store.UpdateGroupConfigs(ctx, name, update)
	}, func(cur map[string]string) (map[string]string, error) {
		next, _ := topicconfig.ApplyTopic(cur, changes, replace) // only SET and DELETE reach it
		if err := a.coord.checkGroupConfigs(next); err != nil {
			return nil, err
		}
		return next, nil
	})
}

// groupConfigsChanged makes the coordinator read a group's configs again
// at its next heartbeat, if this agent coordinates the group.
func (c *coordinator) groupConfigsChanged(groupID string) {
	c.shares.configsChanged(groupID)
	c.mu.Lock()
	e := c.groups[groupID]
	c.mu.Unlock()
	if e != nil {
		e.configsStale.Store(true)
	}
}

// consumerConfig (e locked) is the KIP-848 settings of a group: the
// agent's, with the group's configs applied. The configs are read from
// the store when the group is loaded, when changed through this agent,
// and once more than TopicCacheTTL old; should the store fail, the
// previous ones stay in use and the read is tried again next time.
func (c *coordinator) consumerConfig(ctx context.Context, e *groupEntry, now time.Time) group.ConsumerConfig {
	return applyGroupConfigs(c.ccfg, c.liveConfigs(ctx, e, now))
}

// liveConfigs (e locked) is the group's configs, read again as
// consumerConfig says.
func (c *coordinator) liveConfigs(ctx context.Context, e *groupEntry, now time.Time) map[string]string {
	if e.configs == nil || e.configsStale.Load() || now.Sub(e.configsRead) >= c.a.cfg.TopicCacheTTL {
		if err := c.readGroupConfigs(ctx, e, now); err != nil {
			c.a.log.Warn("read group configs failed", "group", e.id, "err", err)
		}
	}
	return e.configs
}

// readGroupConfigs (e locked) reads a group's configs from the store.
func (c *coordinator) readGroupConfigs(ctx context.Context, e *groupEntry, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	stale := e.configsStale.Swap(false)
	cfgs, err := c.a.store.GroupConfigs(ctx, e.id)
	if err != nil {
		if stale {
			e.configsStale.Store(true)
		}
		return fmt.Errorf("group configs of %s: %w", e.id, err)
	}
	e.configs, e.configsRead = cfgs, now
	return nil
}
