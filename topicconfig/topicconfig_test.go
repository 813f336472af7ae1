package topicconfig

import (
	"testing"
	"time"
)

func TestPolicies(t *testing.T) {
	for _, tc := range []struct {
		v            string
		set          bool
		del, compact bool
	}{
		{"", false, true, false},
		{"delete", true, true, false},
		{"compact", true, false, true},
		{"compact,delete", true, true, true},
		{" delete , compact ", true, true, true},
		{"bogus", true, false, false},
	} {
		c := map[string]string{}
		if tc.set {
			c[CleanupPolicy] = tc.v
		}
		if d, k := Policies(c); d != tc.del || k != tc.compact {
			t.Errorf("Policies(%q): %v %v, want %v %v", tc.v, d, k, tc.del, tc.compact)
		}
	}
}

func TestDefaults(t *testing.T) {
	d := KafkaDefaults()
	d.Retention = -time.Millisecond
	for name, want := range map[string]string{
		RetentionMs: "-1", RetentionBytes: "-1", DeleteRetentionMs: "86400000",
		MinCleanableDirtyRatio: "0.5", MaxCompactionLagMs: "600000", MaxMessageBytes: "1048588",
	} {
		if v, ok := d.Value(name); !ok || v != want {
			t.Errorf("%s: %q %v, want %q", name, v, ok, want)
		}
	}
	if _, ok := d.Value("segment.bytes"); ok {
		t.Error("segment.bytes has no floe default")
	}
	c := map[string]string{RetentionMs: " 5000 ", MinCleanableDirtyRatio: "x"}
	if d.Int(c, RetentionMs) != 5000 || d.Int(c, RetentionBytes) != -1 || d.Float(c, MinCleanableDirtyRatio) != 0.5 {
		t.Errorf("Int/Float: %d %d %v", d.Int(c, RetentionMs), d.Int(c, RetentionBytes), d.Float(c, MinCleanableDirtyRatio))
	}
}

// TestCheckSet: a registered set check sees a topic's configs together
// and refuses in Check's words; CheckAll checks each config first.
func TestCheckSet(t *testing.T) {
	saved := setChecks
	defer func() { setChecks = saved }()
	RegisterSetCheck(func(c map[string]string) (string, string) {
		if c[RetentionMs] == "1000" && c[CleanupPolicy] == "compact" {
			return RetentionMs, "not with compaction"
		}
		return "", ""
	})
	for _, tc := range []struct {
		configs map[string]string
		want    string
	}{
		{map[string]string{RetentionMs: "1000"}, ""},
		{map[string]string{RetentionMs: "1000", CleanupPolicy: "compact"}, "Invalid value 1000 for configuration retention.ms: not with compaction"},
		{map[string]string{RetentionMs: "x", CleanupPolicy: "compact"}, "Invalid value x for configuration retention.ms: Not a number of type LONG"},
	} {
		if got := CheckAll(tc.configs); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.configs, got, tc.want)
		}
	}
	if got := CheckSet(map[string]string{RetentionMs: "1000", CleanupPolicy: "compact"}); got != "Invalid value 1000 for configuration retention.ms: not with compaction" {
		t.Errorf("CheckSet: %q", got)
	}
}
