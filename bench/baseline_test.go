package bench

import (
	"context"
	"testing"
	"time"

	"floe/storage/mem"
)

func TestRawPutRateKeepsTheSchedule(t *testing.T) {
	t.Parallel()
	// 200 PUTs a second for 500 ms is 100 PUTs: slots 0..99 are due
	// before the end. Back to back, a memory bucket takes thousands.
	res, err := RawPut(context.Background(), RawPutConfig{Bucket: mem.New(), ObjectSize: 100, Concurrency: 4,
		Duration: 500 * time.Millisecond, Rate: 200})
	if err != nil {
		t.Fatal(err)
	}
	// A worker descheduled past the end may miss the last slots; none
	// may go beyond them.
	if n := res.RawPut.Puts; n < 90 || n > 100 || res.Errors != 0 {
		t.Errorf("%d PUTs and %d errors at 200/s for 500 ms, want 90-100 and 0", n, res.Errors)
	}
	if res.RawPut.Rate != 200 {
		t.Errorf("result's rate %g, want 200", res.RawPut.Rate)
	}
	// The last slot is due 495 ms in, so the run cannot end before it.
	if res.Produced.Seconds < 0.49 {
		t.Errorf("run took %.2f s, want ≥ 0.49", res.Produced.Seconds)
	}
}

func TestRawPutRejectsNegativeRate(t *testing.T) {
	t.Parallel()
	if _, err := RawPut(context.Background(), RawPutConfig{Bucket: mem.New(), ObjectSize: 1, Concurrency: 1, Duration: time.Millisecond, Rate: -1}); err == nil {
		t.Error("RawPut with a negative rate succeeded")
	}
}
