package metadata

import (
	"errors"
	"math"
	"testing"
)

func TestCheckSequence(t *testing.T) {
	b := func(pid int64, epoch int16, seq int32, n int64) BatchCommit {
		return BatchCommit{ByteLength: 1, Records: n, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}
	}
	for _, tc := range []struct {
		name    string
		batches []BatchCommit
		want    []BatchResult // offsets from 100 on
	}{
		{"unknown producer starts anywhere", []BatchCommit{b(1, 0, 17, 2), b(1, 0, 19, 1)},
			[]BatchResult{{BaseOffset: 100}, {BaseOffset: 102}}},
		{"gap", []BatchCommit{b(1, 0, 0, 2), b(1, 0, 3, 1)},
			[]BatchResult{{BaseOffset: 100}, {BaseOffset: -1, Err: ErrOutOfOrderSequence}}},
		{"retry within the window", []BatchCommit{b(1, 0, 0, 1), b(1, 0, 1, 1), b(1, 0, 2, 1), b(1, 0, 0, 1)},
			[]BatchResult{{BaseOffset: 100}, {BaseOffset: 101}, {BaseOffset: 102}, {BaseOffset: 100, Duplicate: true}}},
		{"retry older than five batches is out of order",
			[]BatchCommit{b(1, 0, 0, 1), b(1, 0, 1, 1), b(1, 0, 2, 1), b(1, 0, 3, 1), b(1, 0, 4, 1), b(1, 0, 5, 1), b(1, 0, 0, 1)},
			[]BatchResult{{BaseOffset: 100}, {BaseOffset: 101}, {BaseOffset: 102}, {BaseOffset: 103}, {BaseOffset: 104}, {BaseOffset: 105},
				{BaseOffset: -1, Err: ErrOutOfOrderSequence}}},
		{"sequence wraps past MaxInt32", []BatchCommit{b(1, 0, math.MaxInt32-1, 2), b(1, 0, 0, 1)},
			[]BatchResult{{BaseOffset: 100}, {BaseOffset: 102}}},
		{"stale epoch", []BatchCommit{b(1, 1, 0, 1), b(1, 0, 1, 1)},
			[]BatchResult{{BaseOffset: 100}, {BaseOffset: -1, Err: ErrInvalidProducerEpoch}}},
		{"producers are independent; plain batches unchecked", []BatchCommit{b(1, 0, 5, 1), b(2, 0, 0, 1), b(-1, -1, -1, 3), b(1, 0, 6, 1)},
			[]BatchResult{{BaseOffset: 100}, {BaseOffset: 101}, {BaseOffset: 102}, {BaseOffset: 105}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := RunCommit{ByteOffset: 1000}
			for _, x := range tc.batches {
				r.BatchList = append(r.BatchList, x)
				r.ByteLength += x.ByteLength
				r.Records += x.Records
				r.Batches++
			}
			got, segs, _ := PlanRun(100, r, map[int64]*ProducerState{})
			for i := range tc.want {
				if got[i].BaseOffset != tc.want[i].BaseOffset || got[i].Duplicate != tc.want[i].Duplicate || !errors.Is(got[i].Err, tc.want[i].Err) {
					t.Fatalf("batch %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			// Index rows cover exactly the accepted batches, densely.
			next := int64(100)
			for _, s := range segs {
				if s.BaseOffset != next {
					t.Fatalf("segment %+v does not start at %d", s, next)
				}
				next = s.EndOffset
			}
		})
	}
}
