package topicconfig

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestBrokerNamesUnique(t *testing.T) {
	seen := map[string]string{}
	for topic, d := range Defs {
		if d.Broker == "" {
			continue
		}
		if other, ok := seen[d.Broker]; ok {
			t.Errorf("%s and %s both default from %s", topic, other, d.Broker)
		}
		seen[d.Broker] = topic
	}
	for _, name := range BrokerNames() {
		b, ok := Broker(name)
		if !ok {
			t.Errorf("BrokerNames lists %s, Broker does not know it", name)
			continue
		}
		if Defs[b.Topic].Effect == Inert {
			t.Errorf("%s defaults the inert %s", name, b.Topic)
		}
	}
	for _, name := range []string{"", "log.segment.bytes", "log.cleaner.threads", "num.io.threads", "retention.ms"} {
		if _, ok := Broker(name); ok {
			t.Errorf("Broker(%q) is dynamic", name)
		}
	}
}

func TestCheckBroker(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"log.retention.ms", "60000", ""},
		{"log.retention.ms", "x", "Invalid value x for configuration log.retention.ms: Not a number of type LONG"},
		{"log.retention.hours", "-1", ""},
		{"log.retention.hours", "1.5", "Invalid value 1.5 for configuration log.retention.hours: Not a number of type INT"},
		{"message.max.bytes", "-3", "Invalid value -3 for configuration message.max.bytes: Value must be at least 0"},
		{"log.cleanup.policy", "compact,delete", ""},
		{"log.cleanup.policy", "bogus", "Invalid value bogus for configuration log.cleanup.policy: String must be one of: compact, delete"},
		{"log.message.timestamp.type", "CreateTime", ""},
		{"log.segment.bytes", "1", "Cannot update these configs dynamically: Set(log.segment.bytes)"},
		{"log.cleaner.backoff.ms", "0", ""},
		{"log.cleaner.backoff.ms", "-1", "Invalid value -1 for configuration log.cleaner.backoff.ms: Value must be at least 0"},
	} {
		if got := CheckBroker(tc.name, tc.value); got != tc.want {
			t.Errorf("CheckBroker(%s, %s) = %q, want %q", tc.name, tc.value, got, tc.want)
		}
	}
	if why := CheckBroker("log.message.timestamp.type", "LogAppendTime"); why == "" {
		t.Error("a fixed config's other value passes as a broker default")
	}
}

func TestWithDynamic(t *testing.T) {
	static := KafkaDefaults()
	if got := static.Default(RetentionMs); got != "604800000" {
		t.Fatalf("static retention.ms %s", got)
	}
	for _, tc := range []struct {
		stored map[string]string
		want   string
	}{
		{map[string]string{"log.retention.hours": "2"}, "7200000"},
		{map[string]string{"log.retention.hours": "2", "log.retention.minutes": "3"}, "180000"},
		{map[string]string{"log.retention.hours": "2", "log.retention.minutes": "3", "log.retention.ms": "42"}, "42"},
		{map[string]string{"log.retention.minutes": "-5"}, "-1"},
		{map[string]string{"log.retention.ms": "bad", "log.retention.hours": "1"}, "3600000"},
		{map[string]string{"log.segment.bytes": "1"}, "604800000"},
	} {
		d := static.WithDynamic(tc.stored)
		if got := d.Default(RetentionMs); got != tc.want {
			t.Errorf("WithDynamic(%v) retention.ms = %s, want %s", tc.stored, got, tc.want)
		}
		if got := d.Static(RetentionMs); got != "604800000" {
			t.Errorf("WithDynamic(%v) static retention.ms = %s", tc.stored, got)
		}
	}
	d := static.WithDynamic(map[string]string{"message.max.bytes": " 2000 ", "log.cleanup.policy": "compact", "log.retention.ms": "1000", "log.retention.hours": "3", "bogus": "1"})
	if got := d.Int(map[string]string{}, MaxMessageBytes); got != 2000 {
		t.Errorf("max.message.bytes %d, want the dynamic 2000", got)
	}
	if got := d.Int(map[string]string{MaxMessageBytes: "5"}, MaxMessageBytes); got != 5 {
		t.Errorf("max.message.bytes %d, want the topic's 5", got)
	}
	if del, compact := d.Policies(nil); del || !compact {
		t.Errorf("dynamic compact: Policies %v %v", del, compact)
	}
	if del, compact := d.Policies(map[string]string{CleanupPolicy: "delete"}); !del || compact {
		t.Errorf("the topic's own policy: %v %v", del, compact)
	}
	if del, compact := static.Policies(nil); !del || compact {
		t.Errorf("static policy: %v %v", del, compact)
	}
	if got := d.DynamicBroker(); len(got) != 4 || got["bogus"] != "" {
		t.Errorf("DynamicBroker %v", got)
	}
	if _, ok := d.CleanerBackoff(); ok {
		t.Error("a backoff nobody set")
	}
	b := static.WithDynamic(map[string]string{CleanerBackoff: "1500"})
	if got, ok := b.CleanerBackoff(); !ok || got != 1500*time.Millisecond || b.Default(RetentionMs) != "604800000" {
		t.Errorf("backoff %v %v, retention.ms %s", got, ok, b.Default(RetentionMs))
	}
	syn := d.Synonyms(RetentionMs)
	want := []Synonym{{"log.retention.ms", "1000", true}, {"log.retention.hours", "3", true}, {"log.retention.ms", "604800000", false}}
	if !slices.Equal(syn, want) {
		t.Errorf("Synonyms(retention.ms) %v, want %v", syn, want)
	}
	if got := static.Synonyms(MaxMessageBytes); !slices.Equal(got, []Synonym{{"message.max.bytes", "1048588", false}}) {
		t.Errorf("static Synonyms(max.message.bytes) %v", got)
	}
}

type readerFunc func(context.Context) (map[string]string, error)

func (f readerFunc) ClusterConfigs(ctx context.Context) (map[string]string, error) { return f(ctx) }

func TestLive(t *testing.T) {
	l := NewLive(KafkaDefaults())
	ctx := context.Background()
	if err := l.Refresh(ctx, readerFunc(func(context.Context) (map[string]string, error) {
		return map[string]string{"log.retention.bytes": "10"}, nil
	})); err != nil {
		t.Fatal(err)
	}
	if got := l.Get().Default(RetentionBytes); got != "10" {
		t.Fatalf("after refresh retention.bytes %s", got)
	}
	boom := errors.New("boom")
	if err := l.Refresh(ctx, readerFunc(func(context.Context) (map[string]string, error) { return nil, boom })); !errors.Is(err, boom) {
		t.Fatalf("refresh error %v", err)
	}
	if got := l.Get().Default(RetentionBytes); got != "10" {
		t.Fatalf("a failed refresh changed retention.bytes to %s", got)
	}
	if err := l.Refresh(ctx, readerFunc(func(context.Context) (map[string]string, error) { return map[string]string{}, nil })); err != nil {
		t.Fatal(err)
	}
	if got := l.Get().Default(RetentionBytes); got != "-1" {
		t.Fatalf("after removal retention.bytes %s, want the static -1", got)
	}
}
