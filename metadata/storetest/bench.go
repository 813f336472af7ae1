package storetest

import (
	"context"
	"fmt"
	"testing"

	"floe/metadata"
)

// Bench measures CommitObject with 1 and 500 runs per object (one run per
// partition of a 500-partition topic); ns/op is the latency of one commit
// from a single caller. open must return a new, empty store.
func Bench(b *testing.B, open func(b *testing.B) metadata.Store) {
	for _, runs := range []int{1, 500} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			s := open(b)
			ctx := context.Background()
			tp, err := s.CreateTopic(ctx, "bench", 500, nil)
			if err != nil {
				b.Fatal(err)
			}
			obj := metadata.ObjectCommit{Size: int64(runs) * 1000, AgentID: "bench", Runs: make([]metadata.RunCommit, runs)}
			for i := range obj.Runs {
				obj.Runs[i] = metadata.RunCommit{TopicID: tp.ID, Partition: int32(i), ByteOffset: int64(i) * 1000,
					ByteLength: 1000, Batches: 1, Records: 10, MinTimestamp: 1, MaxTimestamp: 2}
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				obj.Key = fmt.Sprintf("bench-%d", i)
				if _, err := s.CommitObject(ctx, obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
