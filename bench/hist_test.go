package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketRangeRoundTrip(t *testing.T) {
	// Every bucket's bounds map back to it, buckets tile the values with no
	// gap, and a bucket is never wider than 1/128 of its lower bound.
	prevHi := int64(-1)
	for i := range numBuckets {
		lo, hi := bucketRange(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ended at %d", i, lo, prevHi)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d [%d,%d] maps back to %d and %d", i, lo, hi, bucketOf(lo), bucketOf(hi))
		}
		if lo >= subCount && float64(hi-lo+1)/float64(lo) > 1.0/128 {
			t.Fatalf("bucket %d [%d,%d] too wide", i, lo, hi)
		}
		prevHi = hi
		if hi == math.MaxInt64 {
			if i != numBuckets-1 {
				t.Fatalf("MaxInt64 in bucket %d of %d", i, numBuckets)
			}
			return
		}
	}
	t.Fatalf("last bucket ends at %d, not MaxInt64", prevHi)
}

func TestHistogramExactSmallValues(t *testing.T) {
	h := NewHistogram()
	for v := 1; v <= 100; v++ {
		h.Record(time.Duration(v))
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0, 1}, {0.01, 1}, {0.5, 50}, {0.9, 90}, {0.99, 99}, {0.999, 100}, {1, 100}} {
		if got := h.Quantile(c.q); got != c.want {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if h.Count() != 100 || h.Min() != 1 || h.Max() != 100 || h.Mean() != 50 {
		t.Errorf("count %d min %v max %v mean %v", h.Count(), h.Min(), h.Max(), h.Mean())
	}
}

func TestHistogramQuantilesWithinPrecision(t *testing.T) {
	// Log-normal latencies from 10 µs to seconds, compared with the exact
	// order statistic: the histogram may overstate by a bucket, never
	// understate.
	rng := rand.New(rand.NewPCG(1, 2))
	h := NewHistogram()
	vals := make([]int64, 200_000)
	for i := range vals {
		v := int64(math.Exp(rng.NormFloat64()*2 + 13)) // median ~0.44 ms
		vals[i] = v
		h.Record(time.Duration(v))
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 0.9999} {
		exact := vals[int(math.Ceil(q*float64(len(vals))))-1]
		got := int64(h.Quantile(q))
		if got < exact || float64(got-exact) > float64(exact)/128+1 {
			t.Errorf("Quantile(%v) = %d, exact %d", q, got, exact)
		}
	}
	if h.Max() != time.Duration(vals[len(vals)-1]) || h.Min() != time.Duration(vals[0]) {
		t.Errorf("min/max %v %v, want %d %d", h.Min(), h.Max(), vals[0], vals[len(vals)-1])
	}
}

func TestHistogramEdges(t *testing.T) {
	h := NewHistogram()
	if h.Quantile(0.99) != 0 || h.Max() != 0 || h.Min() != 0 || h.Mean() != 0 || h.Summary().Spectrum != nil {
		t.Fatal("empty histogram reports values")
	}
	h.Record(-5 * time.Second) // a clock step back counts as 0
	h.Record(time.Duration(math.MaxInt64))
	if h.Min() != 0 || h.Max() != time.Duration(math.MaxInt64) || h.Quantile(1) != time.Duration(math.MaxInt64) {
		t.Fatalf("min %v max %v q1 %v", h.Min(), h.Max(), h.Quantile(1))
	}
	if h.Quantile(-1) != 0 || h.Quantile(2) != h.Max() || h.Quantile(math.NaN()) < 0 {
		t.Fatal("out-of-range quantiles not clamped")
	}
}

func TestHistogramMergeAndSummary(t *testing.T) {
	a, b, all := NewHistogram(), NewHistogram(), NewHistogram()
	for i := range 1000 {
		d := time.Duration(i) * time.Millisecond
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
		all.Record(d)
	}
	a.Merge(b)
	a.Merge(NewHistogram())
	for _, q := range []float64{0, 0.5, 0.99, 1} {
		if a.Quantile(q) != all.Quantile(q) {
			t.Errorf("merged Quantile(%v) = %v, want %v", q, a.Quantile(q), all.Quantile(q))
		}
	}
	s := a.Summary()
	if s.Count != 1000 || s.Max != 999 || s.P50 < 499 || s.P50 > 503 || s.P99 < 989 || s.P99 > 997 {
		t.Errorf("summary %+v", s)
	}
	// The spectrum rises monotonically from 0% to 100% (the max).
	sp := s.Spectrum
	if sp[0][0] != 0 || sp[len(sp)-1] != [2]float64{100, 999} {
		t.Errorf("spectrum ends %v .. %v", sp[0], sp[len(sp)-1])
	}
	for i := 1; i < len(sp); i++ {
		if sp[i][0] <= sp[i-1][0] || sp[i][1] < sp[i-1][1] {
			t.Errorf("spectrum not monotonic at %d: %v then %v", i, sp[i-1], sp[i])
		}
	}
}
