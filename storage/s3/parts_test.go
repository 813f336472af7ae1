package s3

import (
	"bytes"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPartsReader reads and seeks a body made of parts (empty ones
// included) with odd-sized reads, against the joined bytes.
func TestPartsReader(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var parts [][]byte
	for i := range 40 {
		p := make([]byte, rng.IntN(300)*(i%3)) // every third part empty
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		parts = append(parts, p)
	}
	want := slices.Concat(parts...)
	r := newPartsReader(parts)
	if r.Len() != len(want) {
		t.Fatalf("Len %d, want %d", r.Len(), len(want))
	}
	for range 50 {
		at := rng.Int64N(int64(len(want)) + 10)
		if got, err := r.Seek(at, io.SeekStart); err != nil || got != at {
			t.Fatalf("Seek(%d) = %d, %v", at, got, err)
		}
		var got []byte
		buf := make([]byte, 1+rng.IntN(500))
		for {
			n, err := r.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, want[min(at, int64(len(want))):]) {
			t.Fatalf("read from %d differs", at)
		}
	}
	if pos, _ := r.Seek(-5, io.SeekEnd); pos != int64(len(want))-5 || r.Len() != 5 {
		t.Fatalf("Seek(-5, end) = %d, Len %d", pos, r.Len())
	}
	if _, err := r.Seek(-1, io.SeekStart); err == nil {
		t.Fatal("negative position accepted")
	}
}
