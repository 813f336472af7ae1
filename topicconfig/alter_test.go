package topicconfig

import (
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestApplyTopic is the pure part of IncrementalAlterConfigs on topics:
// APPEND to an unset list starts from the default, APPEND skips what is
// there, SUBTRACT removes every copy, the stored map is changed in place.
func TestApplyTopic(t *testing.T) {
	v := func(s string) *string { return &s }
	for _, tc := range []struct {
		cur     map[string]string
		changes []Change
		replace bool
		want    map[string]string
	}{
		{nil, []Change{{"cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, v("compact")}}, false,
			map[string]string{"cleanup.policy": "delete,compact"}},
		{map[string]string{"cleanup.policy": "compact"}, []Change{{"cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, v("compact,delete")}}, false,
			map[string]string{"cleanup.policy": "compact,delete"}},
		{map[string]string{"cleanup.policy": "compact,delete,compact"}, []Change{{"cleanup.policy", kmsg.IncrementalAlterConfigOpSubtract, v("compact")}}, false,
			map[string]string{"cleanup.policy": "delete"}},
		{map[string]string{"a": "1", "retention.ms": "5"}, []Change{{"retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil},
			{"segment.ms", kmsg.IncrementalAlterConfigOpSet, v("9")}}, false, map[string]string{"a": "1", "segment.ms": "9"}},
		{map[string]string{"a": "1"}, []Change{{"retention.ms", kmsg.IncrementalAlterConfigOpSet, v("9")}}, true,
			map[string]string{"retention.ms": "9"}},
	} {
		got, err := ApplyTopic(maps.Clone(tc.cur), tc.changes, tc.replace)
		if err != "" || !maps.Equal(got, tc.want) {
			t.Errorf("ApplyTopic(%v, %+v) = %v, %v; want %v", tc.cur, tc.changes, got, err, tc.want)
		}
	}
}

// TestApplyBroker: Kafka's broker-side checks, in its order, over the
// configs a change leaves; per-broker values are refused; APPEND to the
// unset log.cleanup.policy starts from the static default.
func TestApplyBroker(t *testing.T) {
	v := func(s string) *string { return &s }
	set := func(n, val string) Change { return Change{n, kmsg.IncrementalAlterConfigOpSet, v(val)} }
	for _, tc := range []struct {
		cur       map[string]string
		changes   []Change
		replace   bool
		perBroker bool
		want      map[string]string
		code      *kerr.Error
		msg       string
	}{
		{nil, []Change{set("log.retention.hours", "2")}, false, false, map[string]string{"log.retention.hours": "2"}, nil, ""},
		{map[string]string{"message.max.bytes": "5"}, []Change{{"log.cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, v("compact")}}, false, false,
			map[string]string{"message.max.bytes": "5", "log.cleanup.policy": "delete,compact"}, nil, ""},
		{map[string]string{"message.max.bytes": "5"}, []Change{set("log.retention.ms", "1")}, true, false, map[string]string{"log.retention.ms": "1"}, nil, ""},
		{map[string]string{"message.max.bytes": "5"}, []Change{{"message.max.bytes", kmsg.IncrementalAlterConfigOpDelete, nil}, {"num.io.threads", kmsg.IncrementalAlterConfigOpDelete, nil}},
			false, false, map[string]string{}, nil, ""},
		{nil, []Change{set("num.io.threads", "4"), set("log.segment.bytes", "1"), set("log.retention.ms", "x")}, false, false, nil,
			kerr.InvalidRequest, "Cannot update these configs dynamically: Set(log.segment.bytes, num.io.threads)"},
		{nil, []Change{set("log.retention.ms", "x")}, false, false, nil, kerr.InvalidRequest, "Invalid value x for configuration log.retention.ms: Not a number of type LONG"},
		{nil, []Change{{"message.max.bytes", kmsg.IncrementalAlterConfigOpSubtract, v("1")}}, false, false, nil,
			kerr.InvalidConfig, "Config value subtract is not allowed for config key: message.max.bytes"},
		{nil, []Change{set("log.retention.ms", "1")}, false, true, nil, kerr.InvalidRequest,
			"Cannot update these configs for one broker, floe sets them at the default cluster level only (an empty broker id): Set(log.retention.ms)"},
		{map[string]string{"log.retention.ms": "1"}, []Change{{"log.retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil}}, false, true, map[string]string{}, nil, ""},
	} {
		got, code, msg := ApplyBroker(maps.Clone(tc.cur), tc.changes, tc.replace, tc.perBroker, KafkaDefaults())
		if code != tc.code || msg != tc.msg || (code == nil && !maps.Equal(got, tc.want)) {
			t.Errorf("ApplyBroker(%v, %+v, replace %v, perBroker %v) = %v, %v %q; want %v, %v %q",
				tc.cur, tc.changes, tc.replace, tc.perBroker, got, code, msg, tc.want, tc.code, tc.msg)
		}
	}
}
