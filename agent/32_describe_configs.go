package agent

// DescribeConfigs (key 32), versions 0–4.
//
// Topics report every Kafka topic config (topicconfig.Defs) plus any other
// name CreateTopics stored: the topic's own value with source
// DYNAMIC_TOPIC_CONFIG, else the value floe applies with source
// DEFAULT_CONFIG, or DYNAMIC_DEFAULT_BROKER_CONFIG when the cluster set
// its default dynamically. With IncludeSynonyms (v1+) each config lists
// the topic's own value first, then the broker defaults it falls back to,
// named as Kafka names them (retention.ms → log.retention.ms): the
// dynamic ones set, then the static one. With
// IncludeDocumentation (v3+) each config says what floe does with it:
// enforced, accepted with no effect (disk and replica settings), or fixed
// to the one value floe behaves by.
//
// Brokers (this agent's node id) report the settings floe actually runs
// with: the agent's flags, the constants of the group and transaction
// coordinators, and the compactor's defaults (agents and compactors
// share those flags), read-only but for the topic defaults the cluster
// may set dynamically (topicconfig.Broker), which report a value set with
// source DYNAMIC_DEFAULT_BROKER_CONFIG (the static default its synonym).
// Broker configs floe has no concept of (log.dirs, segment sizes, replica
// fetchers) are left out. The cluster default resource (name "") lists
// the dynamic cluster-wide configs set, as Kafka does. Both re-read them
// from the store first; topics name them among their synonyms. Groups
// report the KIP-848 session timeout and heartbeat interval in effect for
// the group (group_configs.go): its own with source GROUP_CONFIG, else
// the agent's with DEFAULT_CONFIG; whether the group exists does not
// matter, as in Kafka. Broker loggers and client metrics subscriptions
// exist in floe in name only and list nothing.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
	"floe/topicconfig"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DescribeConfigs), AdvertisedMin: 0, HandledMin: 0, Max: 4})
}

// describedConfig is one config as DescribeConfigs reports it.
type describedConfig struct {
	name, value string
	source      kmsg.ConfigSource
	typ         kmsg.ConfigType
	readOnly    bool
	doc         string
	// synonyms, in Kafka's order of precedence; the config itself is
	// reported as its only synonym when nil.
	synonyms []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
}

func (a *Agent) handleDescribeConfigs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var configs []describedConfig
		code := a.configAuthz(r, opDescribeConfigs, rr.ResourceType, rr.ResourceName)
		msg := ""
		if code != nil {
			msg = code.Message
		} else {
			configs, code, msg = a.describeResource(ctx, rr)
		}
		if code != nil {
			sr.ErrorCode = code.Code
			sr.ErrorMessage = &msg
		}
		for _, dc := range configs {
			if len(rr.ConfigNames) > 0 && !slices.Contains(rr.ConfigNames, dc.name) {
				continue
			}
			sr.Configs = append(sr.Configs, dc.response(req))
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// describeResource lists one resource's configs, or the error it is
// answered with.
func (a *Agent) describeResource(ctx context.Context, rr kmsg.DescribeConfigsRequestResource) ([]describedConfig, *kerr.Error, string) {
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		if err := validTopicName(rr.ResourceName); err != nil {
			return nil, kerr.InvalidTopicException, err.Error()
		}
		t, ok, err := a.topics.get(ctx, rr.ResourceName)
		if err != nil {
			a.log.Warn("describe configs: look up topic failed", "topic", rr.ResourceName, "err", err)
			return nil, kerr.UnknownServerError, ""
		}
		if !ok {
			return nil, kerr.UnknownTopicOrPartition, kerr.UnknownTopicOrPartition.Message
		}
		return a.topicConfigs(t), nil, ""
	case kmsg.ConfigResourceTypeBroker:
		if rr.ResourceName != "" {
			if code, msg := a.checkBrokerName(rr.ResourceName); code != nil {
				return nil, code, msg
			}
		}
		if err := a.defaults.Refresh(ctx, a.store); err != nil {
			a.log.Warn("describe configs: read cluster configs failed", "err", err)
		}
		cs := a.brokerConfigs()
		if rr.ResourceName == "" { // the dynamic cluster-wide configs set
			cs = slices.DeleteFunc(cs, func(c describedConfig) bool { return c.source != kmsg.ConfigSourceDynamicDefaultBrokerConfig })
		}
		return cs, nil, ""
	case kmsg.ConfigResourceTypeBrokerLogger:
		if rr.ResourceName == "" {
			return nil, kerr.InvalidRequest, "Broker id must not be empty"
		}
		if code, msg := a.checkBrokerName(rr.ResourceName); code != nil {
			return nil, code, msg
		}
		return nil, nil, "" // floe has no named loggers
	case kmsg.ConfigResourceTypeClientMetrics:
		if rr.ResourceName == "" {
			return nil, kerr.InvalidRequest, "Client metrics subscription name must not be empty"
		}
		return nil, nil, "" // floe has no client metrics subscriptions
	case kmsg.ConfigResourceTypeGroupConfig:
		if rr.ResourceName == "" {
			return nil, kerr.InvalidRequest, "Group name must not be empty"
		}
		ctx, cancel := context.WithTimeout(ctx, storeTimeout)
		defer cancel()
		stored, err := a.store.GroupConfigs(ctx, rr.ResourceName)
		if err != nil {
			a.log.Warn("describe configs: read group configs failed", "group", rr.ResourceName, "err", err)
			return nil, kerr.UnknownServerError, ""
		}
		return a.groupConfigs(stored), nil, ""
	}
	return nil, kerr.InvalidRequest, fmt.Sprintf("Unsupported resource type: %d", rr.ResourceType)
}

// checkBrokerName accepts this agent's node id, as Kafka accepts only its
// own broker id (requests for a broker's configs are sent to that broker).
func (a *Agent) checkBrokerName(name string) (*kerr.Error, string) {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return kerr.InvalidRequest, "Node id must be an integer, but it is: " + name
	}
	if int32(id) != a.NodeID() {
		return kerr.InvalidRequest, fmt.Sprintf("Unexpected broker id, expected %d, but received %s", a.NodeID(), name)
	}
	return nil, ""
}

// response renders c for req's version and flags.
func (c describedConfig) response(req *kmsg.DescribeConfigsRequest) kmsg.DescribeConfigsResponseResourceConfig {
	rc := kmsg.NewDescribeConfigsResponseResourceConfig()
	rc.Name, rc.ReadOnly, rc.Source, rc.ConfigType = c.name, c.readOnly, c.source, c.typ
	v := c.value
	rc.Value = &v
	rc.IsDefault = c.source == kmsg.ConfigSourceDefaultConfig
	if req.IncludeSynonyms {
		rc.ConfigSynonyms = c.synonyms
		if rc.ConfigSynonyms == nil {
			rc.ConfigSynonyms = append(rc.ConfigSynonyms, c.synonym())
		}
	}
	if req.IncludeDocumentation && c.doc != "" {
		doc := c.doc
		rc.Documentation = &doc
	}
	return rc
}

// synonym is c as its own synonym.
func (c describedConfig) synonym() kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	v := c.value
	s.Name, s.Value, s.Source = c.name, &v, c.source
	return s
}

// topicConfigs lists a topic's configs: every Kafka topic config and every
// other name the topic sets.
func (a *Agent) topicConfigs(t metadata.Topic) []describedConfig {
	defaults := a.defaults.Get()
	names := sortedConfigNames(t)
	out := make([]describedConfig, 0, len(names))
	for _, name := range names {
		d, known := topicconfig.Defs[name]
		dc := describedConfig{name: name, typ: topicconfig.Type(name), doc: d.Doc,
			synonyms: []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}}
		if !known {
			dc.doc = "Not a Kafka topic config: stored at creation by a floe that did not check names yet, with no effect."
		}
		add := func(name, value string, src kmsg.ConfigSource) {
			s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			s.Name, s.Value, s.Source = name, &value, src
			dc.synonyms = append(dc.synonyms, s)
		}
		v, explicit := a.topicConfig(t, name)
		dc.value, dc.source = v, kmsg.ConfigSourceDefaultConfig
		if explicit {
			dc.source = kmsg.ConfigSourceDynamicTopicConfig
			add(name, v, dc.source)
		}
		for i, syn := range defaults.Synonyms(name) {
			src := kmsg.ConfigSourceDefaultConfig
			if syn.Dynamic {
				src = kmsg.ConfigSourceDynamicDefaultBrokerConfig
			}
			add(syn.Name, syn.Value, src)
			if i == 0 && !explicit {
				dc.source = src
			}
		}
		out = append(out, dc)
	}
	return out
}

// sortedConfigNames lists the Kafka topic configs and the topic's other
// explicit configs, sorted.
func sortedConfigNames(t metadata.Topic) []string {
	names := make([]string, 0, len(topicconfig.Defs)+len(t.Configs))
	for n := range topicconfig.Defs {
		names = append(names, n)
	}
	for n := range t.Configs {
		if _, ok := topicconfig.Defs[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// millis renders a duration as Kafka's *.ms configs do.
func millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// orMaxInt renders a limit where floe's 0 means none as Kafka's
// Integer.MAX_VALUE.
func orMaxInt(n int) string {
	if n <= 0 {
		return strconv.Itoa(1<<31 - 1)
	}
	return strconv.Itoa(n)
}

// brokerConfigs lists the broker configs floe has, with the values it runs
// with, sorted by name. Every one is read-only: floe reads its settings at
// startup and changes none at runtime.
func (a *Agent) brokerConfigs() []describedConfig {
	static, def := kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigSourceDefaultConfig
	long, integer, str, boolean := kmsg.ConfigTypeLong, kmsg.ConfigTypeInt, kmsg.ConfigTypeString, kmsg.ConfigTypeBoolean
	cfg := &a.cfg
	cs := []describedConfig{
		{name: "auto.create.topics.enable", value: strconv.FormatBool(cfg.AutoCreateTopics), source: static, typ: boolean,
			doc: "Metadata requests create the unknown topics they name (the agent's --auto-create-topics)."},
		{name: "broker.id", value: strconv.Itoa(int(a.NodeID())), source: static, typ: integer,
			doc: "This agent's node id, assigned by the metadata store when it registered."},
		{name: "node.id", value: strconv.Itoa(int(a.NodeID())), source: static, typ: integer,
			doc: "This agent's node id, assigned by the metadata store when it registered."},
		{name: "broker.rack", value: cfg.Zone, source: static, typ: str,
			doc: "This agent's zone (--zone); clients naming a zone in their client id are pointed at agents in it."},
		{name: "default.replication.factor", value: "1", source: def, typ: integer,
			doc: "Partitions are reported with one replica: object storage replicates."},
		{name: "min.insync.replicas", value: "1", source: def, typ: integer,
			doc: "Every topic has one replica in sync, its leader: object storage replicates, and every acknowledged record is in it."},
		{name: "num.partitions", value: strconv.Itoa(int(cfg.DefaultPartitions)), source: static, typ: integer,
			doc: "Partitions of auto-created topics and of CreateTopics asking for the default."},
		{name: "socket.request.max.bytes", value: strconv.Itoa(int(cfg.MaxRequestSize)), source: static, typ: integer,
			doc: "The largest request frame; a larger one closes the connection."},
		{name: "connections.max.idle.ms", value: millis(cfg.ConnectionsMaxIdle), source: static, typ: long,
			doc: "Connections that send no request for this long are closed (0: never)."},
		{name: "max.connections", value: orMaxInt(cfg.MaxConnections), source: static, typ: integer,
			doc: "Open Kafka connections this agent accepts."},
		{name: "max.connections.per.ip", value: orMaxInt(cfg.MaxConnectionsPerIP), source: static, typ: integer,
			doc: "Open Kafka connections this agent accepts from one address."},
		{name: "queued.max.requests", value: strconv.Itoa(cfg.QueuedMaxRequests), source: static, typ: integer,
			doc: "Requests one connection may have in flight; its reader waits beyond (per connection in floe, not per broker)."},
		{name: "fetch.max.bytes", value: strconv.Itoa(int(cfg.FetchMaxBytes)), source: static, typ: integer,
			doc: "The most record bytes one Fetch answer holds, whatever the client asks (at least one batch is returned)."},
		{name: "offsets.retention.minutes", value: strconv.FormatInt(int64(a.coord.retention/time.Minute), 10), source: def, typ: integer,
			doc: "Offsets of a group that stays empty this long are removed."},
		{name: "group.min.session.timeout.ms", value: millis(a.coord.gcfg.MinSessionTimeout), source: static, typ: integer,
			doc: "The shortest session timeout a classic group member may ask for (INVALID_SESSION_TIMEOUT below it)."},
		{name: "group.max.session.timeout.ms", value: millis(a.coord.gcfg.MaxSessionTimeout), source: static, typ: integer,
			doc: "The longest session timeout a classic group member may ask for (INVALID_SESSION_TIMEOUT above it)."},
		{name: "group.initial.rebalance.delay.ms", value: millis(a.coord.gcfg.InitialRebalanceDelay), source: static, typ: integer,
			doc: "A new classic group waits this long for more members before its first generation."},
		{name: "group.consumer.session.timeout.ms", value: millis(a.coord.ccfg.SessionTimeout), source: def, typ: integer,
			doc: "KIP-848 consumer group members that send no heartbeat for this long are removed."},
		{name: "group.consumer.heartbeat.interval.ms", value: millis(a.coord.ccfg.HeartbeatInterval), source: def, typ: integer,
			doc: "The heartbeat interval KIP-848 consumer group members are told to keep."},
		{name: "group.consumer.min.session.timeout.ms", value: millis(a.coord.limits.minSession), source: def, typ: integer,
			doc: "The shortest consumer.session.timeout.ms a KIP-848 group may set (never above group.consumer.session.timeout.ms)."},
		{name: "group.consumer.max.session.timeout.ms", value: millis(a.coord.limits.maxSession), source: def, typ: integer,
			doc: "The longest consumer.session.timeout.ms a KIP-848 group may set (never below group.consumer.session.timeout.ms)."},
		{name: "group.consumer.min.heartbeat.interval.ms", value: millis(a.coord.limits.minHeartbeat), source: def, typ: integer,
			doc: "The shortest consumer.heartbeat.interval.ms a KIP-848 group may set (never above group.consumer.heartbeat.interval.ms)."},
		{name: "group.consumer.max.heartbeat.interval.ms", value: millis(a.coord.limits.maxHeartbeat), source: def, typ: integer,
			doc: "The longest consumer.heartbeat.interval.ms a KIP-848 group may set (never below group.consumer.heartbeat.interval.ms)."},
		{name: "transaction.max.timeout.ms", value: millis(txnMaxTimeout), source: def, typ: integer,
			doc: "The longest transaction timeout a producer may ask for (INVALID_TRANSACTION_TIMEOUT above it)."},
		{name: "log.cleaner.enable", value: "true", source: def, typ: boolean,
			doc: "The compactor key-compacts topics whose cleanup.policy includes compact (when a compactor runs: floe dev runs one, floe agent does not)."},
	}
	// The defaults of the topic configs floe enforces or fixes, which the
	// cluster may set dynamically (the disk and replica settings floe has
	// no concept of are left out), log.retention.minutes and .hours once
	// set, and log.cleaner.backoff.ms.
	defaults := a.defaults.Get()
	dynamic := defaults.DynamicBroker()
	for _, name := range topicconfig.BrokerNames() {
		b, _ := topicconfig.Broker(name)
		v, set := dynamic[name]
		dc := describedConfig{name: name, value: defaults.Static(b.Topic), source: def, typ: topicconfig.Defs[b.Topic].Type,
			doc: "The default of the topic config " + b.Topic + ". " + topicconfig.Defs[b.Topic].Doc}
		if b.Topic == "" {
			dc.value, dc.typ, dc.doc = "10000", long, "The compactor's pause between rounds of jobs (merges, retention, key compaction, garbage collection)."+
				" The default is the compactor's own --interval (floe dev: --compactor-interval), which agents are not told: this agent reports the production default."+
				" Set dynamically, every compactor pauses so from its next round."
		}
		if b.Unit != 0 {
			if !set {
				continue
			}
			dc.typ, dc.doc = integer, "The retention time in "+map[time.Duration]string{time.Minute: "minutes", time.Hour: "hours"}[b.Unit]+", applied unless log.retention.ms (or minutes, before hours) is set."
		}
		if set {
			static := dc
			dc.value, dc.source = v, kmsg.ConfigSourceDynamicDefaultBrokerConfig
			dc.synonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{dc.synonym(), static.synonym()}
			if b.Unit != 0 {
				dc.synonyms = dc.synonyms[:1]
			}
		}
		cs = append(cs, dc)
	}
	for i := range cs {
		_, dynamic := topicconfig.Broker(cs[i].name)
		cs[i].readOnly = !dynamic
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	return cs
}

// groupDescribedConfig is one config of a GROUP resource as described:
// the group's own value (GROUP_CONFIG, its own synonym first), else def,
// the agent's default under the broker setting's name (DEFAULT_CONFIG),
// which is the last synonym either way.
func groupDescribedConfig(stored map[string]string, name, broker, def string, typ kmsg.ConfigType, doc string) describedConfig {
	dc := describedConfig{name: name, value: def, source: kmsg.ConfigSourceDefaultConfig, typ: typ, doc: doc}
	add := func(name, value string, src kmsg.ConfigSource) {
		s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		s.Name, s.Value, s.Source = name, &value, src
		dc.synonyms = append(dc.synonyms, s)
	}
	if v, ok := stored[name]; ok {
		dc.value, dc.source = v, kmsg.ConfigSourceGroupConfig
		add(name, v, dc.source)
	}
	add(broker, def, kmsg.ConfigSourceDefaultConfig)
	return dc
}

// groupConfigs lists the KIP-848 group configs Kafka lets each group set
// (group_configs.go), with the values the group's coordinator applies:
// the group's own (source GROUP_CONFIG, its own synonym first), else the
// agent's default (DEFAULT_CONFIG), which is the last synonym either way.
func (a *Agent) groupConfigs(stored map[string]string) []describedConfig {
	cfg := func(name, broker string, d time.Duration, what string) describedConfig {
		return groupDescribedConfig(stored, name, broker, millis(d), kmsg.ConfigTypeInt,
			what+" Set per group with IncrementalAlterConfigs; "+broker+" is the default.")
	}
	return append([]describedConfig{
		cfg(groupHeartbeatIntervalConfig, "group.consumer.heartbeat.interval.ms", a.coord.ccfg.HeartbeatInterval,
			"The heartbeat interval the group's members are told to keep."),
		cfg(groupSessionTimeoutConfig, "group.consumer.session.timeout.ms", a.coord.ccfg.SessionTimeout,
			"Members that send no heartbeat for this long are removed from the group (from their next heartbeat after a change)."),
	}, a.shareDescribedConfigs(stored)...)
}
