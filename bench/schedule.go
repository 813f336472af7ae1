package bench

import (
	"time"
)

// Schedule is an open-loop send plan: record i (0-based, across all
// producers) is due at Start + i/Rate. Latencies are measured from a
// record's due time, not from when a producer got round to sending it, so
// a stalled broker (or a producer blocked by backpressure) shows up as
// latency of every record that should have been sent meanwhile instead of
// silently lowering the rate: this is what keeps the figures free of
// coordinated omission. A zero Rate means closed loop: as fast as the
// broker accepts, each record due when it is handed to the client.
type Schedule struct {
	Start time.Time
	// Rate is records per second over all producers; 0 means unlimited.
	Rate float64
}

// Open reports whether the schedule has a fixed rate.
func (s Schedule) Open() bool { return s.Rate > 0 }

// At returns when record i is due. For a closed-loop schedule it is Start.
func (s Schedule) At(i int64) time.Time {
	if s.Rate <= 0 || i <= 0 {
		return s.Start
	}
	// Float seconds lose no precision that matters: at 1e7 records/s for a
	// day the error is below a nanosecond per record.
	return s.Start.Add(time.Duration(float64(i) / s.Rate * 1e9))
}

// Due returns how many records are due by now (records 0..Due-1), which
// for a closed-loop schedule is unlimited (-1).
func (s Schedule) Due(now time.Time) int64 {
	if s.Rate <= 0 {
		return -1
	}
	if now.Before(s.Start) {
		return 0
	}
	return int64(now.Sub(s.Start).Seconds()*s.Rate) + 1
}

// Count returns how many records a run of duration d sends at this rate
// (unlimited, -1, when closed loop).
func (s Schedule) Count(d time.Duration) int64 {
	if s.Rate <= 0 {
		return -1
	}
	return int64(d.Seconds() * s.Rate)
}
