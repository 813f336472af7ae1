package bench

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram is a log-linear latency histogram in the manner of HDR
// histograms: values below 2^subBits are counted exactly, larger ones in
// buckets whose width is 1/2^(subBits-1) of their value, so every quantile
// is reported within 0.8% of the true value whatever the range (1 ns to
// hours), in a fixed 60 KB. Record is lock-free and safe for concurrent
// use, so franz-go's callbacks can record from any goroutine; reading
// while recording gives a consistent-enough snapshot for a progress bar.
type Histogram struct {
	counts [numBuckets]atomic.Int64
	total  atomic.Int64
	sum    atomic.Int64 // nanoseconds; overflows only after ~292 years of latency
	min    atomic.Int64 // valid when total > 0
	max    atomic.Int64
}

const (
	subBits    = 8
	subCount   = 1 << subBits // exact values below this
	subHalf    = subCount / 2
	numBuckets = subCount + (63-subBits)*subHalf
)

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	h := &Histogram{}
	h.min.Store(math.MaxInt64)
	return h
}

// bucketOf maps a value (>= 0) to its bucket index.
func bucketOf(v int64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - subBits // >= 1
	sub := int(v >> shift)                   // in [subHalf, subCount)
	return subCount + (shift-1)*subHalf + sub - subHalf
}

// bucketRange returns the smallest and largest value counted in bucket i.
func bucketRange(i int) (lo, hi int64) {
	if i < subCount {
		return int64(i), int64(i)
	}
	shift := (i-subCount)/subHalf + 1
	sub := int64((i-subCount)%subHalf + subHalf)
	lo = sub << shift
	return lo, lo + (1 << shift) - 1
}

// Record counts one latency. Negative durations (a clock step) count as 0.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[bucketOf(v)].Add(1)
	h.total.Add(1)
	h.sum.Add(v)
	for {
		m := h.min.Load()
		if v >= m || h.min.CompareAndSwap(m, v) {
			break
		}
	}
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			break
		}
	}
}

// Count returns how many values were recorded.
func (h *Histogram) Count() int64 { return h.total.Load() }

// Max returns the largest value recorded, exactly (0 when empty).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Min returns the smallest value recorded, exactly (0 when empty).
func (h *Histogram) Min() time.Duration {
	if h.total.Load() == 0 {
		return 0
	}
	return time.Duration(h.min.Load())
}

// Mean returns the arithmetic mean (0 when empty).
func (h *Histogram) Mean() time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / n)
}

// Quantile returns the value below or at which a fraction q (0..1) of the
// recorded values lie: the upper end of the bucket holding the
// ceil(q*count)-th value, capped at the exact maximum, so it never
// understates a tail. It returns 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := max(int64(math.Ceil(q*float64(n))), 1)
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			_, hi := bucketRange(i)
			lo := h.min.Load()
			return time.Duration(min(max(hi, lo), h.max.Load()))
		}
	}
	return h.Max()
}

// Merge adds every value of o into h.
func (h *Histogram) Merge(o *Histogram) {
	if o.total.Load() == 0 {
		return
	}
	for i := range o.counts {
		if c := o.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
		}
	}
	h.total.Add(o.total.Load())
	h.sum.Add(o.sum.Load())
	for v := o.min.Load(); ; {
		m := h.min.Load()
		if v >= m || h.min.CompareAndSwap(m, v) {
			break
		}
	}
	for v := o.max.Load(); ; {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			break
		}
	}
}

// Latency is a histogram's summary in milliseconds, as written to JSON.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
	// Spectrum is the percentile curve the HTML chart draws: pairs of
	// (percentile, ms) at 0, 50, 75, 87.5, … up to 99.999 and the max.
	Spectrum [][2]float64 `json:"spectrum"`
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// Summary returns the histogram's summary.
func (h *Histogram) Summary() Latency {
	l := Latency{
		Count: h.Count(), Mean: ms(h.Mean()),
		P50: ms(h.Quantile(0.5)), P90: ms(h.Quantile(0.9)), P99: ms(h.Quantile(0.99)),
		P999: ms(h.Quantile(0.999)), Max: ms(h.Max()),
	}
	if l.Count == 0 {
		return l
	}
	// Halve the remaining tail at each step, as HDR percentile plots do,
	// so the chart spends its width on the tail.
	for tail := 1.0; tail > 1e-5; tail /= 2 {
		p := 1 - tail
		l.Spectrum = append(l.Spectrum, [2]float64{p * 100, ms(h.Quantile(p))})
	}
	l.Spectrum = append(l.Spectrum, [2]float64{100, l.Max})
	return l
}
