package sqlstore

import (
	"testing"
	"time"
)

// TestTime: both stores' time columns scan into one time.Time: a
// timestamptz as it is, unix milliseconds as that instant, NULL and 0 (no
// time, in either store) as the zero time.
func TestTime(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	for _, tc := range []struct {
		src  any
		want time.Time
	}{
		{nil, time.Time{}},
		{at, at},
		{int64(1_700_000_000_123), at},
		{int64(0), time.Time{}},
	} {
		got := time.Unix(1, 0) // overwritten every time
		if err := Time(&got).(timeScanner).Scan(tc.src); err != nil || !got.Equal(tc.want) {
			t.Errorf("Scan(%v) = %v %v, want %v", tc.src, got, err, tc.want)
		}
	}
	var got time.Time
	if err := Time(&got).(timeScanner).Scan("2024-01-01"); err == nil {
		t.Error("Scan of a string: no error")
	}
}
