package agent

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/topicconfig"
)

// incAlter is one IncrementalAlterConfigs resource for tests.
type incAlter struct {
	typ     kmsg.ConfigResourceType
	name    string
	configs []kmsg.IncrementalAlterConfigsRequestResourceConfig
}

func setOp(name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	return opOf(kmsg.IncrementalAlterConfigOpSet, name, &value)
}

func opOf(op kmsg.IncrementalAlterConfigOp, name string, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, op, value
	return c
}

func incrementalAlter(t *testing.T, cl *kgo.Client, validateOnly bool, rs ...incAlter) []kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	for _, r := range rs {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.Configs = r.typ, r.name, r.configs
		req.Resources = append(req.Resources, rr)
	}
	// Straight to the agent: the client would route broker resources to
	// the broker they name.
	kresp, err := cl.SeedBrokers()[0].Request(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.IncrementalAlterConfigsResponse)
	if len(resp.Resources) != len(rs) {
		t.Fatalf("%d resources answered, want %d", len(resp.Resources), len(rs))
	}
	return resp.Resources
}

func storedConfigs(t *testing.T, ta *testAgent, topic string) map[string]string {
	t.Helper()
	tp, err := ta.store.Topic(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return tp.Configs
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	wantCode := int16(0)
	if want != nil {
		wantCode = want.Code
	}
	if got != wantCode {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// TestIncrementalAlterConfigsTopic: SET, DELETE, APPEND and SUBTRACT land
// in the store exactly; validate-only stores nothing; each refusal has
// Kafka's code and stores nothing.
func TestIncrementalAlterConfigsTopic(t *testing.T) {
	ta := newTestAgent(t, nil)
	cl := ta.client(t)
	ta.createTopic(t, cl, "cfg", 2)
	topic := func(cs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) incAlter {
		return incAlter{typ: kmsg.ConfigResourceTypeTopic, name: "cfg", configs: cs}
	}

	// Validate-only: checked, not stored.
	res := incrementalAlter(t, cl, true, topic(setOp("retention.ms", "1000")))
	wantCode(t, "validate-only SET", res[0].ErrorCode, nil)
	if got := storedConfigs(t, ta, "cfg"); len(got) != 0 {
		t.Fatalf("validate-only stored %v", got)
	}

	res = incrementalAlter(t, cl, false, topic(setOp("retention.ms", "1000"), setOp("max.message.bytes", "2048"),
		opOf(kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", kmsg.StringPtr("compact"))))
	wantCode(t, "SET and APPEND", res[0].ErrorCode, nil)
	want := map[string]string{"retention.ms": "1000", "max.message.bytes": "2048", "cleanup.policy": "delete,compact"}
	if got := storedConfigs(t, ta, "cfg"); !maps.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	// What is stored is what produce enforces, at once on this agent.
	tp, ok, err := ta.topics.get(context.Background(), "cfg")
	if err != nil || !ok || ta.maxMessageBytes(tp) != 2048 || !ta.recordRules(tp).KeyRequired {
		t.Fatalf("topic as the produce path sees it: %+v %v %v", tp, ok, err)
	}

	res = incrementalAlter(t, cl, false, topic(opOf(kmsg.IncrementalAlterConfigOpSubtract, "cleanup.policy", kmsg.StringPtr("delete")),
		opOf(kmsg.IncrementalAlterConfigOpDelete, "retention.ms", nil),
		opOf(kmsg.IncrementalAlterConfigOpDelete, "segment.ms", nil)))
	wantCode(t, "SUBTRACT and DELETE", res[0].ErrorCode, nil)
	want = map[string]string{"max.message.bytes": "2048", "cleanup.policy": "compact"}
	if got := storedConfigs(t, ta, "cfg"); !maps.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}

	for _, tc := range []struct {
		what string
		r    incAlter
		code *kerr.Error
		msg  string
	}{
		{"unknown name", topic(setOp("retention.mss", "1")), kerr.InvalidConfig, "Unknown topic config name: retention.mss"},
		{"not a number", topic(setOp("retention.ms", "soon")), kerr.InvalidConfig, "Invalid value soon for configuration retention.ms: Not a number of type LONG"},
		{"below range", topic(setOp("retention.ms", "-2")), kerr.InvalidConfig, "Invalid value -2 for configuration retention.ms: Value must be at least -1"},
		{"INT overflow", topic(setOp("max.message.bytes", "4294967296")), kerr.InvalidConfig, "Value must be no more than 2147483647"},
		{"ratio", topic(setOp("min.cleanable.dirty.ratio", "1.5")), kerr.InvalidConfig, "Value must be between 0 and 1"},
		{"boolean", topic(setOp("preallocate", "yes")), kerr.InvalidConfig, "Expected value to be either true or false"},
		{"bad policy", topic(setOp("cleanup.policy", "delete,forever")), kerr.InvalidConfig, "String must be one of: compact, delete"},
		{"bad compression", topic(setOp("compression.type", "brotli")), kerr.InvalidConfig,
			"Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{"fixed timestamp type", topic(setOp("message.timestamp.type", "LogAppendTime")), kerr.InvalidConfig, "only CreateTime"},
		{"fixed min lag", topic(setOp("min.compaction.lag.ms", "1000")), kerr.InvalidConfig, "only 0 is accepted"},
		{"APPEND to a non-list", topic(opOf(kmsg.IncrementalAlterConfigOpAppend, "retention.ms", kmsg.StringPtr("1"))), kerr.InvalidConfig,
			"Can't APPEND to key retention.ms because its type is not LIST."},
		{"APPEND a bad element", topic(opOf(kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", kmsg.StringPtr("forever"))), kerr.InvalidConfig,
			"String must be one of"},
		{"SUBTRACT to empty", topic(opOf(kmsg.IncrementalAlterConfigOpSubtract, "cleanup.policy", kmsg.StringPtr("compact"))), kerr.InvalidConfig,
			"Invalid value  for configuration cleanup.policy"},
		{"null SET", topic(opOf(kmsg.IncrementalAlterConfigOpSet, "retention.ms", nil)), kerr.InvalidRequest, "Null value not supported for : retention.ms"},
		{"name twice", topic(setOp("retention.ms", "1"), setOp("retention.ms", "2")), kerr.InvalidRequest, "Error due to duplicate config keys"},
		{"unknown op", topic(opOf(7, "retention.ms", kmsg.StringPtr("1"))), kerr.InvalidRequest, "Unknown operations type 7"},
		{"unknown topic", incAlter{typ: kmsg.ConfigResourceTypeTopic, name: "nope", configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("retention.ms", "1")}},
			kerr.UnknownTopicOrPartition, "Unable to find a topic named nope."},
		{"default topic", incAlter{typ: kmsg.ConfigResourceTypeTopic, configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("retention.ms", "1")}},
			kerr.InvalidRequest, "Default topic resources are not allowed."},
		{"illegal name", incAlter{typ: kmsg.ConfigResourceTypeTopic, name: "a/b"}, kerr.InvalidTopicException, "contains characters"},
	} {
		for _, validateOnly := range []bool{false, true} {
			res := incrementalAlter(t, cl, validateOnly, tc.r)
			wantCode(t, tc.what, res[0].ErrorCode, tc.code)
			if res[0].ErrorMessage == nil || !strings.Contains(*res[0].ErrorMessage, tc.msg) {
				t.Fatalf("%s: message %q, want it to contain %q", tc.what, deref(res[0].ErrorMessage), tc.msg)
			}
			if res[0].ResourceName != tc.r.name || res[0].ResourceType != tc.r.typ {
				t.Fatalf("%s: answered for %v %q", tc.what, res[0].ResourceType, res[0].ResourceName)
			}
			if got := storedConfigs(t, ta, "cfg"); !maps.Equal(got, want) {
				t.Fatalf("%s: stored %v after a refusal, want %v", tc.what, got, want)
			}
		}
	}

	// A resource named twice is refused both times; another in the same
	// request is applied.
	res = incrementalAlter(t, cl, false, topic(setOp("retention.ms", "1")), topic(setOp("retention.ms", "2")),
		incAlter{typ: kmsg.ConfigResourceTypeBroker, name: strconv.Itoa(int(ta.self.NodeID))})
	wantCode(t, "first of a pair", res[0].ErrorCode, kerr.InvalidRequest)
	wantCode(t, "second of a pair", res[1].ErrorCode, kerr.InvalidRequest)
	wantCode(t, "the other resource", res[2].ErrorCode, nil)
	if *res[0].ErrorMessage != "Each resource must appear at most once." {
		t.Fatalf("message %q", *res[0].ErrorMessage)
	}
}

// TestIncrementalAlterConfigsBrokerAndGroup: floe changes no broker config
// at runtime, so nothing is stored and the answer says so; group configs
// are stored (TestGroupConfigsAlter has their refusals).
func TestIncrementalAlterConfigsBrokerAndGroup(t *testing.T) {
	ta := newTestAgent(t, nil)
	cl := ta.client(t)
	self := strconv.Itoa(int(ta.self.NodeID))
	del := opOf(kmsg.IncrementalAlterConfigOpDelete, "log.retention.ms", nil)
	for _, tc := range []struct {
		what string
		r    incAlter
		code *kerr.Error
		msg  string
	}{
		{"broker SET", incAlter{kmsg.ConfigResourceTypeBroker, self, []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("log.retention.ms", "1")}},
			kerr.InvalidRequest, "Cannot update these configs for one broker, floe sets them at the default cluster level only (an empty broker id): Set(log.retention.ms)"},
		{"cluster default SET of a static config", incAlter{kmsg.ConfigResourceTypeBroker, "", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			setOp("message.max.bytes", "1"), setOp("log.cleaner.threads", "2"), setOp("auto.create.topics.enable", "false")}},
			kerr.InvalidRequest, "Cannot update these configs dynamically: Set(auto.create.topics.enable, log.cleaner.threads)"},
		{"cluster default bad value", incAlter{kmsg.ConfigResourceTypeBroker, "", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("log.retention.bytes", "x")}},
			kerr.InvalidRequest, "Invalid value x for configuration log.retention.bytes: Not a number of type LONG"},
		{"cluster default APPEND to a non-list", incAlter{kmsg.ConfigResourceTypeBroker, "", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			opOf(kmsg.IncrementalAlterConfigOpAppend, "log.retention.ms", kmsg.StringPtr("1"))}},
			kerr.InvalidConfig, "Config value append is not allowed for config key: log.retention.ms"},
		{"broker DELETE", incAlter{kmsg.ConfigResourceTypeBroker, self, []kmsg.IncrementalAlterConfigsRequestResourceConfig{del}}, nil, ""},
		{"other broker", incAlter{kmsg.ConfigResourceTypeBroker, "77", []kmsg.IncrementalAlterConfigsRequestResourceConfig{del}},
			kerr.InvalidRequest, "Unexpected broker id, expected " + self + ", but received 77"},
		{"broker name", incAlter{kmsg.ConfigResourceTypeBroker, "x", nil}, kerr.InvalidRequest, "Node id must be an integer, but it is: x"},
		{"group SET", incAlter{kmsg.ConfigResourceTypeGroupConfig, "g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("consumer.session.timeout.ms", "50000")}},
			nil, ""},
		{"group DELETE", incAlter{kmsg.ConfigResourceTypeGroupConfig, "g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			opOf(kmsg.IncrementalAlterConfigOpDelete, "consumer.session.timeout.ms", nil)}}, nil, ""},
		{"empty group", incAlter{kmsg.ConfigResourceTypeGroupConfig, "", nil}, kerr.InvalidRequest, "Default group resources are not allowed."},
		{"logger", incAlter{kmsg.ConfigResourceTypeBrokerLogger, self, []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("kafka.server", "DEBUG")}},
			kerr.InvalidConfig, "floe has no named loggers"},
		{"client metrics", incAlter{kmsg.ConfigResourceTypeClientMetrics, "m", nil}, kerr.InvalidRequest, "KIP-714"},
		{"unknown type", incAlter{99, "x", nil}, kerr.InvalidRequest, "Unknown resource type 99"},
	} {
		res := incrementalAlter(t, cl, false, tc.r)
		wantCode(t, tc.what, res[0].ErrorCode, tc.code)
		if tc.code != nil && (res[0].ErrorMessage == nil || !strings.Contains(*res[0].ErrorMessage, tc.msg)) {
			t.Fatalf("%s: message %q, want it to contain %q", tc.what, deref(res[0].ErrorMessage), tc.msg)
		}
	}
}

// TestAlterConfigsReplaces: the legacy AlterConfigs makes the given
// configs the topic's whole set.
func TestAlterConfigsReplaces(t *testing.T) {
	ta := newTestAgent(t, nil)
	cl := ta.client(t)
	ta.createTopic(t, cl, "legacy", 1)
	alter := func(validateOnly bool, typ kmsg.ConfigResourceType, name string, kv ...string) kmsg.AlterConfigsResponseResource {
		t.Helper()
		req := kmsg.NewPtrAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		for i := 0; i < len(kv); i += 2 {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0]
	}
	topic := kmsg.ConfigResourceTypeTopic
	wantCode(t, "first set", alter(false, topic, "legacy", "retention.ms", "5000", "segment.bytes", "1048576").ErrorCode, nil)
	wantCode(t, "replacing set", alter(false, topic, "legacy", "retention.bytes", "100").ErrorCode, nil)
	if got, want := storedConfigs(t, ta, "legacy"), map[string]string{"retention.bytes": "100"}; !maps.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	wantCode(t, "validate-only", alter(true, topic, "legacy", "retention.ms", "1").ErrorCode, nil)
	r := alter(false, topic, "legacy", "retention.ms", "x")
	wantCode(t, "bad value", r.ErrorCode, kerr.InvalidConfig)
	if got, want := storedConfigs(t, ta, "legacy"), map[string]string{"retention.bytes": "100"}; !maps.Equal(got, want) {
		t.Fatalf("stored %v after validate-only and a refusal, want %v", got, want)
	}
	broker := kmsg.ConfigResourceTypeBroker
	wantCode(t, "static broker config", alter(false, broker, "", "log.cleaner.threads", "1").ErrorCode, kerr.InvalidRequest)
	wantCode(t, "cluster set", alter(false, broker, "", "log.retention.ms", "1", "log.retention.bytes", "5").ErrorCode, nil)
	wantCode(t, "cluster replacing set", alter(false, broker, "", "log.retention.bytes", "7").ErrorCode, nil)
	if got, err := ta.store.ClusterConfigs(context.Background()); err != nil || !maps.Equal(got, map[string]string{"log.retention.bytes": "7"}) {
		t.Fatalf("cluster configs %v, %v; want only log.retention.bytes=7", got, err)
	}
	wantCode(t, "broker without configs", alter(false, broker, "").ErrorCode, nil)
	if got, _ := ta.store.ClusterConfigs(context.Background()); len(got) != 0 {
		t.Fatalf("cluster configs %v after clearing", got)
	}
	wantCode(t, "logger", alter(false, kmsg.ConfigResourceTypeBrokerLogger, "1").ErrorCode, kerr.InvalidRequest)
	wantCode(t, "clear", alter(false, topic, "legacy").ErrorCode, nil)
	if got := storedConfigs(t, ta, "legacy"); len(got) != 0 {
		t.Fatalf("stored %v after clearing", got)
	}
}

// TestCheckTopicConfig covers every kind of topic config: enforced,
// inert, fixed, and names that are no Kafka topic config.
func TestCheckTopicConfig(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		ok          bool
	}{
		{"retention.ms", "-1", true}, {"retention.ms", " 86400000 ", true}, {"retention.bytes", "-5", true},
		{"delete.retention.ms", "-1", false}, {"max.compaction.lag.ms", "0", false}, {"max.message.bytes", "0", true},
		{"min.cleanable.dirty.ratio", "0", true}, {"min.cleanable.dirty.ratio", "NaN", false},
		{"cleanup.policy", "compact, delete", true}, {"cleanup.policy", "", false},
		{"compression.type", "producer", true}, {"compression.type", "gzip", true}, {"compression.type", "brotli", false},
		{"message.timestamp.type", "CreateTime", true}, {"remote.storage.enable", "FALSE", true}, {"remote.storage.enable", "true", false},
		{"min.compaction.lag.ms", "0", true}, {"message.timestamp.after.max.ms", "9223372036854775807", true},
		{"message.timestamp.after.max.ms", "3600000", false},
		{"segment.bytes", "13", false}, {"segment.bytes", "52428800", true}, {"min.insync.replicas", "2", true}, {"min.insync.replicas", "0", false},
		{"unclean.leader.election.enable", "True", true}, {"leader.replication.throttled.replicas", "0:1,1:2", true},
		{"leader.replication.throttled.replicas", "*", true}, {"leader.replication.throttled.replicas", "0-1", false},
		{"compression.gzip.level", "0", false}, {"compression.gzip.level", "-1", true}, {"compression.zstd.level", "23", false},
		{"retention.hours", "1", false}, {"", "", false},
	} {
		why := topicconfig.Check(tc.name, tc.value)
		if (why == "") != tc.ok {
			t.Errorf("topicconfig.Check(%q, %q) = %q, want ok=%v", tc.name, tc.value, why, tc.ok)
		}
	}
	// Every default passes its own check: what floe reports it accepts.
	a := &Agent{cfg: DefaultConfig()}
	for name := range topicconfig.Defs {
		if why := topicconfig.Check(name, a.cfg.TopicDefaults.Default(name)); why != "" {
			t.Errorf("default of %s refused: %s", name, why)
		}
	}
}

// TestAlterConfigsStoreFailure: a store that fails under an alter is
// UNKNOWN_SERVER_ERROR with a null message in both APIs, as Kafka answers
// any unexpected error (ApiError.fromThrowable withholds its message).
func TestAlterConfigsStoreFailure(t *testing.T) {
	a, hs := handlerAgent(t)
	if _, err := hs.Store.CreateTopic(context.Background(), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	hs.hook = func(context.Context, string) error { return errors.New("store down") }
	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	inc.ValidateOnly = true
	inc.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic,
		ResourceName: "t", Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("retention.ms", "1000")}}}
	old := kmsg.NewPtrAlterConfigsRequest()
	old.ValidateOnly = true
	old.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t"}}
	for _, r := range []kmsg.IncrementalAlterConfigsResponseResource{
		a.mustHandle(t, inc).(*kmsg.IncrementalAlterConfigsResponse).Resources[0],
		kmsg.IncrementalAlterConfigsResponseResource(a.mustHandle(t, old).(*kmsg.AlterConfigsResponse).Resources[0]),
	} {
		if r.ErrorCode != kerr.UnknownServerError.Code || r.ErrorMessage != nil {
			t.Errorf("%s answered %v %v, want UNKNOWN_SERVER_ERROR with no message", r.ResourceName, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
	}
}
