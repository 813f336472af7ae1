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
