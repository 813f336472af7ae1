package bench

import (
	"testing"
	"time"
)

func TestScheduleOpenLoop(t *testing.T) {
	start := time.Unix(1000, 0)
	s := Schedule{Start: start, Rate: 4000} // one record every 250 µs
	if !s.Open() {
		t.Fatal("fixed rate not open loop")
	}
	for _, c := range []struct {
		i    int64
		want time.Duration
	}{{-3, 0}, {0, 0}, {1, 250 * time.Microsecond}, {4000, time.Second}, {4_000_000, 1000 * time.Second}} {
		if got := s.At(c.i).Sub(start); got != c.want {
			t.Errorf("At(%d) = +%v, want +%v", c.i, got, c.want)
		}
	}
	for _, c := range []struct {
		at   time.Duration
		want int64
	}{{-time.Second, 0}, {0, 1}, {249 * time.Microsecond, 1}, {250 * time.Microsecond, 2}, {time.Second, 4001}} {
		if got := s.Due(start.Add(c.at)); got != c.want {
			t.Errorf("Due(+%v) = %d, want %d", c.at, got, c.want)
		}
	}
	if got := s.Count(10 * time.Second); got != 40000 {
		t.Errorf("Count(10s) = %d", got)
	}
	// Due and At agree: every record counted as due by t is scheduled at
	// or before t, and the next one after it.
	for _, at := range []time.Duration{0, 1, 333 * time.Microsecond, 7 * time.Second} {
		now := start.Add(at)
		n := s.Due(now)
		if s.At(n-1).After(now) || !s.At(n).After(now) {
			t.Errorf("at +%v: Due %d but At(%d)=+%v At(%d)=+%v", at, n, n-1, s.At(n-1).Sub(start), n, s.At(n).Sub(start))
		}
	}
}

func TestScheduleClosedLoop(t *testing.T) {
	start := time.Unix(1000, 0)
	s := Schedule{Start: start}
	if s.Open() || s.Due(start.Add(time.Hour)) != -1 || s.Count(time.Hour) != -1 || !s.At(12345).Equal(start) {
		t.Fatal("closed-loop schedule has a rate")
	}
}

func TestScheduleLatencyCountsFromDueTime(t *testing.T) {
	// A broker stall of 1 s at 1000 records/s: each record's latency is
	// measured from its due time, so the records that should have been
	// sent during the stall carry it (1 s down to 1 ms) instead of
	// vanishing, which is what coordinated omission would do.
	start := time.Unix(0, 0)
	s := Schedule{Start: start, Rate: 1000}
	h := NewHistogram()
	resume := start.Add(time.Second) // everything due before is sent then
	for i := range int64(2000) {
		due := s.At(i)
		sent := max(due.UnixNano(), resume.UnixNano())
		h.Record(time.Duration(sent-due.UnixNano()) + time.Millisecond) // 1 ms service time
	}
	if h.Max() != 1001*time.Millisecond {
		t.Errorf("max %v, want 1.001s", h.Max())
	}
	if p50 := h.Quantile(0.5); p50 < time.Millisecond || p50 > 2*time.Millisecond {
		t.Errorf("p50 %v, want ~1ms", p50)
	}
	if p75 := h.Quantile(0.75); p75 < 490*time.Millisecond || p75 > 510*time.Millisecond {
		t.Errorf("p75 %v, want ~500ms: the stall must show in the tail", p75)
	}
}
