package storage

import (
	"bytes"
	"hash/crc32"
	"slices"
	"testing"
)

// TestFinishPartsReferencesBatches: FinishParts returns the caller's batch
// slices themselves (no copy), grouped by partition in Add order, then a
// footer; joined, they are a valid object whose runs hold each
// partition's batches.
func TestFinishPartsReferencesBatches(t *testing.T) {
	w := NewObjectWriter()
	var batches [][]byte
	want := map[int32][]byte{} // partition -> expected run bytes
	for i := range 20 {
		b := bytes.Repeat([]byte{byte(i)}, 100+i)
		p := int32(i % 5)
		batches = append(batches, b)
		want[p] = append(want[p], b...)
		w.Add(TopicID{7}, p, b, int64(i+1), int64(i), int64(i+10))
	}
	size := w.Size()
	scratch := make([][]byte, 0, 64)
	parts, runs, _ := w.FinishParts(scratch)
	if &parts[:1][0] != &scratch[:1][0] {
		t.Error("FinishParts did not reuse the parts slice it was given")
	}
	if len(parts) != len(batches)+1 {
		t.Fatalf("%d parts, want %d batches and a footer", len(parts), len(batches)+1)
	}
	// Body order: partition 0's batches (0, 5, 10, 15), then partition 1's...
	k := 0
	for p := range 5 {
		for i := p; i < 20; i += 5 {
			if &parts[k][0] != &batches[i][0] || len(parts[k]) != len(batches[i]) {
				t.Fatalf("part %d is not batch %d itself", k, i)
			}
			k++
		}
	}

	object := slices.Concat(parts...)
	if int64(len(object)) != size {
		t.Fatalf("Size said %d, parts hold %d bytes", size, len(object))
	}
	parsed, err := parseObject(object)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(parsed, runs) {
		t.Fatalf("parsed runs %+v, FinishParts said %+v", parsed, runs)
	}
	for _, r := range runs {
		if got := object[r.Offset : r.Offset+r.Length]; !bytes.Equal(got, want[r.Partition]) {
			t.Errorf("partition %d: run bytes differ", r.Partition)
		}
	}

	// The writer is reset: the next object holds only what is added next.
	w.Add(TopicID{7}, 0, []byte("x"), 1, 0, 0)
	if again, _ := w.Finish(); len(again) != 1+runSize+minObjectSize {
		t.Fatalf("second object is %d bytes", len(again))
	}
}

// BenchmarkFinish measures laying out a 4 MiB object of 1 KiB batches over
// 16 partitions: as parts for a vectored PUT, and copied into one buffer.
func BenchmarkFinish(b *testing.B) {
	batch := bytes.Repeat([]byte{1}, 1024)
	for _, name := range []string{"parts", "copy"} {
		b.Run(name, func(b *testing.B) {
			w := NewObjectWriter()
			var parts [][]byte
			b.SetBytes(4 << 20)
			b.ReportAllocs()
			for b.Loop() {
				for i := range 4096 {
					w.Add(TopicID{}, int32(i%16), batch, 1, 0, 0)
				}
				if name == "parts" {
					parts, _, _ = w.FinishParts(parts)
				} else {
					_, _ = w.Finish()
				}
			}
		})
	}
}

// TestFinishPartsChecksum: with every batch added with its CRC-32C, the
// object's checksum is that of its bytes, folded without reading them (the
// batches are laid out in another order than added); one batch without a
// checksum leaves the object's unknown, and the reused writer starts over.
func TestFinishPartsChecksum(t *testing.T) {
	w := NewObjectWriter()
	for i := range 30 {
		b := bytes.Repeat([]byte{byte(i), byte(i >> 1)}, 50+7*i)
		w.AddSummed(TopicID{byte(i % 3)}, int32(i%4), b, crc32.Checksum(b, castagnoli), 1, 0, 0)
	}
	parts, _, sum := w.FinishParts(nil)
	if want := crc32.Checksum(slices.Concat(parts...), castagnoli); !sum.Known || sum.CRC32C != want {
		t.Fatalf("checksum %+v, want %08x known", sum, want)
	}
	w.AddSummed(TopicID{1}, 0, []byte("summed"), crc32.Checksum([]byte("summed"), castagnoli), 1, 0, 0)
	w.Add(TopicID{1}, 1, []byte("not summed"), 1, 0, 0)
	if _, _, sum := w.FinishParts(nil); sum.Known {
		t.Fatalf("an object with a batch added without its checksum has checksum %+v", sum)
	}
	parts, _, sum = w.FinishParts(nil) // empty: the footer alone
	if want := crc32.Checksum(slices.Concat(parts...), castagnoli); !sum.Known || sum.CRC32C != want {
		t.Fatalf("empty object: checksum %+v, want %08x known", sum, want)
	}
}
