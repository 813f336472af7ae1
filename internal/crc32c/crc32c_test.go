package crc32c

import (
	"math/rand/v2"
	"testing"
)

// TestCombine checks Combine against the checksum of the bytes themselves,
// for empty, short and long strings split everywhere near their ends and at
// random points.
func TestCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 63, 64, 65, 1000, 1 << 16, 1<<20 + 3} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		want := Checksum(b)
		splits := []int{0, n}
		if n > 2 {
			splits = append(splits, 1, n-1, rng.IntN(n))
		}
		for _, s := range splits {
			if got := Combine(Checksum(b[:s]), Checksum(b[s:]), int64(n-s)); got != want {
				t.Fatalf("len %d split at %d: Combine = %08x, want %08x", n, s, got, want)
			}
		}
		if got := Update(Checksum(b[:n/2]), b[n/2:]); got != want {
			t.Fatalf("len %d: Update = %08x, want %08x", n, got, want)
		}
	}
}

// TestCombineMany folds a thousand pieces of random lengths, as an object's
// checksum is folded from its batches'.
func TestCombineMany(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var all []byte
	var crc uint32
	for range 1000 {
		piece := make([]byte, rng.IntN(3000))
		for i := range piece {
			piece[i] = byte(rng.Uint32())
		}
		all = append(all, piece...)
		crc = Combine(crc, Checksum(piece), int64(len(piece)))
	}
	if want := Checksum(all); crc != want {
		t.Fatalf("folded %08x, want %08x", crc, want)
	}
}

func BenchmarkCombine(b *testing.B) {
	for b.Loop() {
		Combine(0x12345678, 0x9abcdef0, 600<<10)
	}
}
