package agent

import (
	"context"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
	"floe/topicconfig"
)

func describeConfigs(t *testing.T, cl *kgo.Client, version int16, synonyms, docs bool, typ kmsg.ConfigResourceType, name string, names ...string) kmsg.DescribeConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = version
	req.IncludeSynonyms, req.IncludeDocumentation = synonyms, docs
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = typ, name, names
	req.Resources = append(req.Resources, rr)
	resp, err := cl.SeedBrokers()[0].Request(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.DescribeConfigsResponse).Resources[0]
}

func configsByName(r kmsg.DescribeConfigsResponseResource) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	m := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range r.Configs {
		m[c.Name] = c
	}
	return m
}

type synonym struct {
	name, value string
	source      kmsg.ConfigSource
}

func synonymsOf(c kmsg.DescribeConfigsResponseResourceConfig) []synonym {
	var out []synonym
	for _, s := range c.ConfigSynonyms {
		out = append(out, synonym{s.Name, deref(s.Value), s.Source})
	}
	return out
}

func sameSynonyms(t *testing.T, what string, got, want []synonym) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: synonyms %+v, want %+v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: synonyms %+v, want %+v", what, got, want)
		}
	}
}

// TestDescribeConfigsTopicSynonymsAndDocs: the topic's own value, then the
// broker default with its Kafka name; documentation only when asked for.
func TestDescribeConfigsTopicSynonymsAndDocs(t *testing.T) {
	ta := newTestAgent(t, nil)
	cl := ta.client(t)
	ta.createTopic(t, cl, "d", 1)
	incrementalAlter(t, cl, false, incAlter{typ: kmsg.ConfigResourceTypeTopic, name: "d",
		configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("retention.ms", "1000")}})

	r := describeConfigs(t, cl, 4, true, true, kmsg.ConfigResourceTypeTopic, "d")
	wantCode(t, "describe", r.ErrorCode, nil)
	cs := configsByName(r)
	if len(cs) != len(topicconfig.Defs) {
		t.Fatalf("%d configs, want every Kafka topic config (%d)", len(cs), len(topicconfig.Defs))
	}
	ret := cs["retention.ms"]
	if deref(ret.Value) != "1000" || ret.Source != kmsg.ConfigSourceDynamicTopicConfig || ret.ReadOnly || ret.IsDefault ||
		ret.ConfigType != kmsg.ConfigTypeLong || ret.Documentation == nil || *ret.Documentation != topicconfig.Defs["retention.ms"].Doc {
		t.Fatalf("retention.ms: %+v", ret)
	}
	sameSynonyms(t, "retention.ms", synonymsOf(ret), []synonym{
		{"retention.ms", "1000", kmsg.ConfigSourceDynamicTopicConfig},
		// The test agents run floe dev's defaults: records kept forever,
		// as floe dev's compactor keeps them (one topicconfig.Defaults).
		{"log.retention.ms", "-1", kmsg.ConfigSourceDefaultConfig},
	})
	mmb := cs["max.message.bytes"]
	if deref(mmb.Value) != "1048588" || mmb.Source != kmsg.ConfigSourceDefaultConfig || mmb.ConfigType != kmsg.ConfigTypeInt {
		t.Fatalf("max.message.bytes: %+v", mmb)
	}
	sameSynonyms(t, "max.message.bytes", synonymsOf(mmb), []synonym{{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig}})
	if th := cs["leader.replication.throttled.replicas"]; len(th.ConfigSynonyms) != 0 || th.ConfigType != kmsg.ConfigTypeList {
		t.Fatalf("a config without a broker default has synonyms: %+v", th)
	}
	for name, c := range cs {
		if c.Documentation == nil || *c.Documentation == "" {
			t.Errorf("%s has no documentation", name)
		}
	}

	// Without the flags: no synonyms, no documentation; names filter.
	r = describeConfigs(t, cl, 4, false, false, kmsg.ConfigResourceTypeTopic, "d", "retention.ms", "cleanup.policy")
	if len(r.Configs) != 2 {
		t.Fatalf("filtered: %+v", r.Configs)
	}
	for _, c := range r.Configs {
		if c.Documentation != nil || len(c.ConfigSynonyms) != 0 {
			t.Fatalf("%s: documentation or synonyms not asked for: %+v", c.Name, c)
		}
	}
	// v0 answers carry IsDefault instead of a source.
	v0 := kmsg.NewPtrDescribeConfigsRequest()
	tp, _, _ := ta.topics.get(context.Background(), "d")
	for _, dc := range ta.topicConfigs(tp) {
		if c := dc.response(v0); c.IsDefault != (c.Name != "retention.ms") {
			t.Fatalf("%s: IsDefault %v", c.Name, c.IsDefault)
		}
	}
	r = describeConfigs(t, cl, 4, false, false, kmsg.ConfigResourceTypeTopic, "nope")
	wantCode(t, "unknown topic", r.ErrorCode, kerr.UnknownTopicOrPartition)
	r = describeConfigs(t, cl, 4, false, false, kmsg.ConfigResourceTypeTopic, "")
	wantCode(t, "empty topic name", r.ErrorCode, kerr.InvalidTopicException)
}

// TestDescribeConfigsBroker: the settings this agent runs with, read-only
// but for the topic defaults the cluster may set dynamically; the cluster
// default resource lists no dynamic config while none is set, as on Kafka.
func TestDescribeConfigsBroker(t *testing.T) {
	ta := newTestAgent(t, nil, func(c *Config) { c.DefaultPartitions = 3 })
	cl := ta.client(t)
	self := strconv.Itoa(int(ta.self.NodeID))
	r := describeConfigs(t, cl, 4, true, true, kmsg.ConfigResourceTypeBroker, self)
	wantCode(t, "describe broker", r.ErrorCode, nil)
	cs := configsByName(r)
	for name, want := range map[string]string{
		"message.max.bytes":                 "1048588",
		"log.retention.ms":                  "-1",
		"log.cleanup.policy":                "delete",
		"log.cleaner.enable":                "true",
		"log.cleaner.min.cleanable.ratio":   "0.5",
		"log.cleaner.min.compaction.lag.ms": "0",
		"compression.type":                  "producer",
		"num.partitions":                    "3",
		"auto.create.topics.enable":         "true",
		"broker.id":                         self,
		"socket.request.max.bytes":          strconv.Itoa(int(ta.cfg.MaxRequestSize)),
		"group.consumer.session.timeout.ms": millis(ta.coord.ccfg.SessionTimeout),
		"transaction.max.timeout.ms":        "900000",
		"max.connections":                   "2147483647",
	} {
		c, ok := cs[name]
		_, dynamic := topicconfig.Broker(name)
		if !ok || deref(c.Value) != want || c.ReadOnly == dynamic || c.Documentation == nil {
			t.Errorf("%s: %+v (present %v), want value %s, read-only %v, documented", name, c, ok, want, !dynamic)
		}
		if len(c.ConfigSynonyms) != 1 || c.ConfigSynonyms[0].Name != name || deref(c.ConfigSynonyms[0].Value) != want {
			t.Errorf("%s: synonyms %+v", name, c.ConfigSynonyms)
		}
	}
	for _, absent := range []string{"log.dirs", "log.segment.bytes", "num.replica.fetchers", "log.flush.interval.ms", "log.retention.hours"} {
		if _, ok := cs[absent]; ok {
			t.Errorf("%s is listed: floe has no such setting", absent)
		}
	}
	r = describeConfigs(t, cl, 4, false, false, kmsg.ConfigResourceTypeBroker, "")
	if r.ErrorCode != 0 || len(r.Configs) != 0 {
		t.Fatalf("cluster defaults: %+v", r)
	}
	r = describeConfigs(t, cl, 4, false, false, kmsg.ConfigResourceTypeBroker, "12345")
	wantCode(t, "other broker", r.ErrorCode, kerr.InvalidRequest)

	r = describeConfigs(t, cl, 4, true, false, kmsg.ConfigResourceTypeGroupConfig, "g")
	gs := configsByName(r)
	if len(gs) != 8 || deref(gs["consumer.session.timeout.ms"].Value) != millis(ta.coord.ccfg.SessionTimeout) ||
		gs["consumer.heartbeat.interval.ms"].ReadOnly {
		t.Fatalf("group configs: %+v", r.Configs)
	}
	sameSynonyms(t, "group session timeout", synonymsOf(gs["consumer.session.timeout.ms"]),
		[]synonym{{"group.consumer.session.timeout.ms", millis(ta.coord.ccfg.SessionTimeout), kmsg.ConfigSourceDefaultConfig}})
	r = describeConfigs(t, cl, 4, false, false, kmsg.ConfigResourceTypeBrokerLogger, self)
	if r.ErrorCode != 0 || len(r.Configs) != 0 {
		t.Fatalf("loggers: %+v", r)
	}
	r = describeConfigs(t, cl, 4, false, false, 99, "x")
	wantCode(t, "unknown type", r.ErrorCode, kerr.InvalidRequest)
}

// TestDynamicClusterConfigs: configs set at the cluster default are
// stored, described on the cluster and broker resources with source
// DYNAMIC_DEFAULT_BROKER_CONFIG, become the default of every topic that
// sets none (its synonyms show the chain), are applied by produce, and
// removing them restores the static defaults.
func TestDynamicClusterConfigs(t *testing.T) {
	ta := newTestAgent(t, nil)
	cl := ta.client(t)
	ta.createTopic(t, cl, "dyn", 1)
	self := strconv.Itoa(int(ta.self.NodeID))
	set := func(kv ...string) {
		t.Helper()
		var cs []kmsg.IncrementalAlterConfigsRequestResourceConfig
		for i := 0; i < len(kv); i += 2 {
			cs = append(cs, setOp(kv[i], kv[i+1]))
		}
		res := incrementalAlter(t, cl, false, incAlter{kmsg.ConfigResourceTypeBroker, "", cs})
		wantCode(t, "cluster set", res[0].ErrorCode, nil)
	}
	set("log.retention.hours", "2", "message.max.bytes", "2048", "log.cleanup.policy", "compact", "log.cleaner.backoff.ms", "500")

	r := describeConfigs(t, cl, 4, true, false, kmsg.ConfigResourceTypeBroker, "")
	cluster := configsByName(r)
	if len(cluster) != 4 {
		t.Fatalf("cluster resource lists %d configs, want the 4 set: %+v", len(cluster), r.Configs)
	}
	for name, want := range map[string]string{"log.retention.hours": "2", "message.max.bytes": "2048", "log.cleanup.policy": "compact", "log.cleaner.backoff.ms": "500"} {
		c := cluster[name]
		if deref(c.Value) != want || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || c.ReadOnly {
			t.Errorf("cluster %s: %+v", name, c)
		}
	}
	b := configsByName(describeConfigs(t, cl, 4, true, false, kmsg.ConfigResourceTypeBroker, self))
	sameSynonyms(t, "broker message.max.bytes", synonymsOf(b["message.max.bytes"]), []synonym{
		{"message.max.bytes", "2048", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig}})
	sameSynonyms(t, "broker log.cleaner.backoff.ms", synonymsOf(b["log.cleaner.backoff.ms"]), []synonym{
		{"log.cleaner.backoff.ms", "500", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		{"log.cleaner.backoff.ms", "10000", kmsg.ConfigSourceDefaultConfig}})

	tc := configsByName(describeConfigs(t, cl, 4, true, false, kmsg.ConfigResourceTypeTopic, "dyn"))
	ret := tc["retention.ms"]
	if deref(ret.Value) != "7200000" || ret.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("topic retention.ms %s from %v, want 7200000 from the dynamic default", deref(ret.Value), ret.Source)
	}
	sameSynonyms(t, "topic retention.ms", synonymsOf(ret), []synonym{
		{"log.retention.hours", "2", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		{"log.retention.ms", "-1", kmsg.ConfigSourceDefaultConfig}})

	// The topic's own value comes first; produce applies the dynamic
	// max.message.bytes and cleanup.policy to topics without their own.
	tp, ok, err := ta.topics.get(context.Background(), "dyn")
	if err != nil || !ok || ta.maxMessageBytes(tp) != 2048 || !ta.recordRules(tp).KeyRequired {
		t.Fatalf("produce rules of dyn: %d, key required %v (%v %v)", ta.maxMessageBytes(tp), ta.recordRules(tp).KeyRequired, ok, err)
	}
	tp.Configs = map[string]string{"cleanup.policy": "delete", "max.message.bytes": "100"}
	if ta.maxMessageBytes(tp) != 100 || ta.recordRules(tp).KeyRequired {
		t.Fatal("a topic's own values lost to the dynamic defaults")
	}

	// ValidateOnly stores nothing; DELETE restores the static defaults.
	res := incrementalAlter(t, cl, true, incAlter{kmsg.ConfigResourceTypeBroker, "", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("log.retention.bytes", "1")}})
	wantCode(t, "validate only", res[0].ErrorCode, nil)
	del := func(n string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return opOf(kmsg.IncrementalAlterConfigOpDelete, n, nil)
	}
	res = incrementalAlter(t, cl, false, incAlter{kmsg.ConfigResourceTypeBroker, "", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		del("log.retention.hours"), del("message.max.bytes"), del("log.cleanup.policy"), del("log.cleaner.backoff.ms")}})
	wantCode(t, "cluster delete", res[0].ErrorCode, nil)
	if got, err := ta.store.ClusterConfigs(context.Background()); err != nil || len(got) != 0 {
		t.Fatalf("cluster configs after delete: %v %v", got, err)
	}
	if ta.maxMessageBytes(metadata.Topic{}) != 1048588 {
		t.Fatalf("max.message.bytes %d after delete", ta.maxMessageBytes(metadata.Topic{}))
	}
	tc = configsByName(describeConfigs(t, cl, 4, true, false, kmsg.ConfigResourceTypeTopic, "dyn"))
	if ret := tc["retention.ms"]; deref(ret.Value) != "-1" || ret.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("topic retention.ms after delete %s from %v", deref(ret.Value), ret.Source)
	}
}
