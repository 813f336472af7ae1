package agent

import (
	"context"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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

// TestDescribeConfigsBroker: the settings this agent runs with, read-only;
// the cluster default resource lists no dynamic config, as on Kafka.
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
		if !ok || deref(c.Value) != want || !c.ReadOnly || c.Documentation == nil {
			t.Errorf("%s: %+v (present %v), want value %s, read-only, documented", name, c, ok, want)
		}
		if len(c.ConfigSynonyms) != 1 || c.ConfigSynonyms[0].Name != name || deref(c.ConfigSynonyms[0].Value) != want {
			t.Errorf("%s: synonyms %+v", name, c.ConfigSynonyms)
		}
	}
	for _, absent := range []string{"log.dirs", "log.segment.bytes", "num.replica.fetchers", "log.flush.interval.ms"} {
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
