package topicconfig

import "testing"

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
