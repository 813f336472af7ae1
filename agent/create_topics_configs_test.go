package agent

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreateTopicsConfigsCheckedAsAlterConfigs: CreateTopics checked two
// configs (max.message.bytes, cleanup.policy) and stored everything else as
// given, so a topic could be created with message.timestamp.type
// LogAppendTime, a retention.ms of "soon" or a misspelt name that
// AlterConfigs would then refuse to set. It uses AlterConfigs' table now: every value below gets
// the same code and message from CreateTopics as from an
// IncrementalAlterConfigs SET, and what is accepted is stored exactly.
// The accepted ones include the configs real client test suites create
// topics with (kafka-go: cleanup.policy compact with segment.bytes 200,
// retention.ms; franz-go's kgo: max.message.bytes); kgo's
// kfake.is_internal is refused as Kafka refuses it (its helper then falls
// back to __consumer_offsets).
func TestCreateTopicsConfigsCheckedAsAlterConfigs(t *testing.T) {
	ta := newParallelAgent(t)
	cl := ta.client(t)
	ta.createTopic(t, cl, "target", 1)
	ctx := context.Background()
	create := func(validateOnly bool, topic string, kv ...string) kmsg.CreateTopicsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis, req.ValidateOnly = 10_000, validateOnly
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
		for i := 0; i < len(kv); i += 2 {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
			rt.Configs = append(rt.Configs, c)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0]
	}
	for i, tc := range []struct {
		name, value string
		ok          bool
	}{
		{"cleanup.policy", "compact", true},
		{"cleanup.policy", "compact,delete", true},
		{"segment.bytes", "200", true},
		{"retention.ms", "3600000", true},
		{"retention.ms", "-1", true},
		{"max.message.bytes", "51200", true},
		{"max.message.bytes", "10485760", true},
		{"delete.retention.ms", "600000", true},
		{"min.insync.replicas", "2", true},
		{"compression.type", "producer", true},
		{"message.timestamp.type", "CreateTime", true},
		{"unclean.leader.election.enable", "false", true},
		{"kfake.is_internal", "true", false},
		{"retention.mss", "1", false},
		{"retention.ms", "soon", false},
		{"retention.ms", "-2", false},
		{"max.message.bytes", "-1", false},
		{"cleanup.policy", "forever", false},
		{"cleanup.policy", "", false},
		{"compression.type", "gzip", true},
		{"compression.type", "none", false},
		{"message.timestamp.type", "LogAppendTime", false},
		{"min.compaction.lag.ms", "1000", false},
		{"segment.bytes", "13", false},
		{"preallocate", "yes", false},
	} {
		alter := incrementalAlter(t, cl, true, incAlter{typ: kmsg.ConfigResourceTypeTopic, name: "target",
			configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp(tc.name, tc.value)}})[0]
		if (alter.ErrorCode == 0) != tc.ok {
			t.Fatalf("%s=%q: AlterConfigs says %v, want ok=%v", tc.name, tc.value, kerr.ErrorForCode(alter.ErrorCode), tc.ok)
		}
		for _, validateOnly := range []bool{true, false} {
			topic := fmt.Sprint("created-", i)
			st := create(validateOnly, topic, tc.name, tc.value)
			if st.ErrorCode != alter.ErrorCode || deref(st.ErrorMessage) != deref(alter.ErrorMessage) {
				t.Errorf("%s=%q (validate only %v): CreateTopics %v %q, AlterConfigs %v %q", tc.name, tc.value, validateOnly,
					kerr.ErrorForCode(st.ErrorCode), deref(st.ErrorMessage), kerr.ErrorForCode(alter.ErrorCode), deref(alter.ErrorMessage))
			}
			if st.ErrorCode != 0 {
				wantCode(t, tc.name+" refused", st.ErrorCode, kerr.InvalidConfig)
			}
			tp, err := ta.store.Topic(ctx, topic)
			switch {
			case validateOnly || !tc.ok:
				if err == nil {
					t.Fatalf("%s=%q (validate only %v): topic created", tc.name, tc.value, validateOnly)
				}
			case err != nil:
				t.Fatalf("%s=%q: %v", tc.name, tc.value, err)
			default:
				if want := map[string]string{tc.name: tc.value}; !maps.Equal(tp.Configs, want) {
					t.Fatalf("%s=%q: stored %v", tc.name, tc.value, tp.Configs)
				}
			}
		}
	}

	// kafka-go's compacted topic: both configs in one request.
	if st := create(false, "kafka-go-compact", "cleanup.policy", "compact", "segment.bytes", "200"); st.ErrorCode != 0 {
		t.Fatalf("kafka-go's compacted topic: %v %q", kerr.ErrorForCode(st.ErrorCode), deref(st.ErrorMessage))
	}
	// A null value is INVALID_CONFIG, as in Kafka's controller.
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "nulls", 1, 1
	for _, name := range []string{"retention.ms", "segment.ms"} {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name = name
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "null values", resp.Topics[0].ErrorCode, kerr.InvalidConfig)
	if got, want := deref(resp.Topics[0].ErrorMessage), "Null value not supported for topic configs: retention.ms,segment.ms"; got != want {
		t.Errorf("null values: message %q, want %q", got, want)
	}
}
