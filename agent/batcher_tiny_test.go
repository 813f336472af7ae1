package agent

import (
	"testing"
	"time"
)

func TestTinyWait(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	cases := []struct {
		name              string
		interval          time.Duration
		pending, flushMax int64
		waited            time.Duration
		want              time.Duration
	}{
		{"tiny at the end of dev's interval: 15 ms more", 5 * ms, 70 << 10, 8 << 20, 5 * ms, 15 * ms},
		{"tiny, waited part of the extra", 5 * ms, 70 << 10, 8 << 20, 12 * ms, 8 * ms},
		{"tiny, the extra spent: cut", 5 * ms, 70 << 10, 8 << 20, 20 * ms, 0},
		{"tiny, less than a millisecond left: cut", 5 * ms, 70 << 10, 8 << 20, 19*ms + 500*time.Microsecond, 0},
		{"a full MiB: cut", 5 * ms, 1 << 20, 8 << 20, 5 * ms, 0},
		{"FlushBytes below a MiB is the bar", 5 * ms, 300 << 10, 256 << 10, 5 * ms, 0},
		{"short interval: at most 3 intervals more", 2 * ms, 10 << 10, 8 << 20, 2 * ms, 6 * ms},
		{"S3's 250 ms: 15 ms more at most", 250 * ms, 10 << 10, 8 << 20, 250 * ms, 15 * ms},
	}
	for _, c := range cases {
		if got := tinyWait(c.interval, c.pending, c.flushMax, c.waited); got != c.want {
			t.Errorf("%s: tinyWait = %v, want %v", c.name, got, c.want)
		}
	}
}
