package storage_test

import (
	"testing"

	"floe/storage"
)

// BenchmarkObjectWriter measures building one object from 1000 batches of
// 1 KiB spread over 100 partitions, with a reused writer as the agent's
// batcher recycles them (Finish copies the object, which the produce path's
// FinishParts does not): it allocates the object, the parts it is joined
// from, the footer and the run list, and nothing per batch.
func BenchmarkObjectWriter(b *testing.B) {
	batch := make([]byte, 1024)
	var topics [2]storage.TopicID
	topics[1][15] = 1
	w := storage.NewObjectWriter()
	b.ReportAllocs()
	b.SetBytes(1000 * 1024)
	for b.Loop() {
		for i := range 1000 {
			w.Add(topics[i%2], int32(i%100), batch, 10, int64(i), int64(i)+5)
		}
		obj, runs := w.Finish()
		if len(runs) != 100 || len(obj) < 1000*1024 {
			b.Fatalf("%d runs, %d bytes", len(runs), len(obj))
		}
	}
}
