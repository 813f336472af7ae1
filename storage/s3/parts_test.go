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

// failingWriter takes n bytes, then fails.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) <= w.n {
		w.n -= len(p)
		return len(p), nil
	}
	n := w.n
	w.n = 0
	return n, io.ErrShortWrite
}

// WriteTo writes the rest of the body from wherever the reader is, and
// leaves it where a failed write stopped.
func TestPartsReaderWriteTo(t *testing.T) {
	parts := [][]byte{[]byte("hello "), nil, []byte("parts"), []byte(" reader")}
	want := slices.Concat(parts...)
	r := newPartsReader(parts)
	for at := range int64(len(want)) + 2 {
		r.Seek(at, io.SeekStart)
		var b bytes.Buffer
		n, err := r.WriteTo(&b)
		rest := want[min(at, int64(len(want))):]
		if err != nil || n != int64(len(rest)) || !bytes.Equal(b.Bytes(), rest) || r.Len() != 0 {
			t.Fatalf("WriteTo from %d: %d, %v, %q (Len after %d), want %q", at, n, err, b.Bytes(), r.Len(), rest)
		}
	}
	r.Seek(0, io.SeekStart)
	if n, err := r.WriteTo(&failingWriter{n: 8}); n != 8 || err == nil {
		t.Fatalf("WriteTo a failing writer: %d, %v", n, err)
	}
	rest, _ := io.ReadAll(r)
	if !bytes.Equal(rest, want[8:]) {
		t.Fatalf("after a failed WriteTo, read %q, want %q", rest, want[8:])
	}
}
