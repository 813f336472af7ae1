package storage

import (
	"bytes"
	"testing"
)

// TestFinishIntoReusesDirtyBuffer: an object laid out in a recycled buffer
// (full of an earlier object's bytes) is byte for byte the object Finish
// allocates, and lives in that buffer's memory; a buffer too small is not
// used.
func TestFinishIntoReusesDirtyBuffer(t *testing.T) {
	fill := func(w *ObjectWriter) {
		for i := range 20 {
			b := bytes.Repeat([]byte{byte(i)}, 100+i)
			w.Add(TopicID{byte(i % 3)}, int32(i%5), b, int64(i+1), int64(i), int64(i+10))
		}
	}
	w := NewObjectWriter()
	fill(w)
	size := w.Size()
	want, wantRuns := w.Finish()
	if int64(len(want)) != size {
		t.Fatalf("Size said %d, Finish wrote %d bytes", size, len(want))
	}

	dirty := bytes.Repeat([]byte{0xee}, int(size)+1000)
	fill(w)
	got, runs := w.FinishInto(dirty)
	if !bytes.Equal(got, want) {
		t.Fatal("FinishInto into a dirty buffer differs from Finish")
	}
	if &got[0] != &dirty[0] {
		t.Fatal("FinishInto did not use the buffer it was given")
	}
	if len(runs) != len(wantRuns) {
		t.Fatalf("%d runs, want %d", len(runs), len(wantRuns))
	}
	for i := range runs {
		if runs[i] != wantRuns[i] {
			t.Fatalf("run %d = %+v, want %+v", i, runs[i], wantRuns[i])
		}
	}
	if _, err := ParseObject(got); err != nil {
		t.Fatal(err)
	}

	small := make([]byte, 10)
	fill(w)
	got, _ = w.FinishInto(small)
	if !bytes.Equal(got, want) || &got[0] == &small[0] {
		t.Fatal("FinishInto with a too small buffer must allocate the same object")
	}
}

// BenchmarkFinishInto measures laying out a 4 MiB object of 1 KiB batches
// over 16 partitions into a recycled buffer, against Finish.
func BenchmarkFinishInto(b *testing.B) {
	batch := bytes.Repeat([]byte{1}, 1024)
	for _, into := range []bool{false, true} {
		name := "alloc"
		if into {
			name = "recycled"
		}
		b.Run(name, func(b *testing.B) {
			w := NewObjectWriter()
			var buf []byte
			b.SetBytes(4 << 20)
			b.ReportAllocs()
			for b.Loop() {
				for i := range 4096 {
					w.Add(TopicID{}, int32(i%16), batch, 1, 0, 0)
				}
				if into {
					buf, _ = w.FinishInto(buf)
				} else {
					_, _ = w.Finish()
				}
			}
		})
	}
}
