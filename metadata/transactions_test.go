package metadata

import (
	"errors"
	"reflect"
	"testing"
)

func TestPlanTxnRun(t *testing.T) {
	data := func(pid int64, epoch int16, seq int32, n int64) BatchCommit {
		return BatchCommit{ByteLength: 1, Records: n, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Transactional: true}
	}
	marker := func(pid int64, epoch int16, m Marker) BatchCommit {
		return BatchCommit{ByteLength: 1, Records: 1, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: -1, Transactional: true, Marker: m}
	}
	open := func(epoch int16, first int64) *PartitionTxn { return &PartitionTxn{Epoch: epoch, FirstOffset: first} }
	for _, tc := range []struct {
		name     string
		txns     map[int64]*PartitionTxn // before
		batches  []BatchCommit
		want     []BatchResult // offsets from 100 on
		wantTxns map[int64]*PartitionTxn
		aborted  []AbortedTxn
	}{
		{"not in a transaction", map[int64]*PartitionTxn{}, []BatchCommit{data(1, 0, 0, 2)},
			[]BatchResult{{BaseOffset: -1, Err: ErrInvalidTxnState}}, map[int64]*PartitionTxn{}, nil},
		{"first batch sets the first offset", map[int64]*PartitionTxn{1: open(0, -1)}, []BatchCommit{data(1, 0, 0, 2), data(1, 0, 2, 1)},
			[]BatchResult{{BaseOffset: 100}, {BaseOffset: 102}},
			map[int64]*PartitionTxn{1: {Epoch: 0, FirstOffset: 100, Changed: true}}, nil},
		{"stale and unadded epochs", map[int64]*PartitionTxn{1: open(2, -1)}, []BatchCommit{data(1, 1, 0, 1), data(1, 3, 0, 1)},
			[]BatchResult{{BaseOffset: -1, Err: ErrInvalidProducerEpoch}, {BaseOffset: -1, Err: ErrInvalidTxnState}},
			map[int64]*PartitionTxn{1: open(2, -1)}, nil},
		{"abort marker records the range and closes", map[int64]*PartitionTxn{1: open(0, 40)},
			[]BatchCommit{data(1, 0, 5, 2), marker(1, 0, MarkerAbort), data(1, 0, 7, 1)},
			[]BatchResult{{BaseOffset: 100}, {BaseOffset: 102}, {BaseOffset: -1, Err: ErrInvalidTxnState}},
			map[int64]*PartitionTxn{1: {Epoch: 0, FirstOffset: 40, Closed: true}}, []AbortedTxn{{ProducerID: 1, FirstOffset: 40, LastOffset: 102}}},
		{"commit marker closes without a record", map[int64]*PartitionTxn{1: open(0, 40)}, []BatchCommit{marker(1, 0, MarkerCommit)},
			[]BatchResult{{BaseOffset: 100}}, map[int64]*PartitionTxn{1: {Epoch: 0, FirstOffset: 40, Closed: true}}, nil},
		{"abort of a transaction without data here", map[int64]*PartitionTxn{1: open(0, -1)}, []BatchCommit{marker(1, 0, MarkerAbort)},
			[]BatchResult{{BaseOffset: 100}}, map[int64]*PartitionTxn{1: {Epoch: 0, FirstOffset: -1, Closed: true}}, nil},
		{"a bumped-epoch marker fences the old epoch", map[int64]*PartitionTxn{1: open(0, 40)},
			[]BatchCommit{marker(1, 1, MarkerAbort), data(1, 0, 9, 1)},
			[]BatchResult{{BaseOffset: 100}, {BaseOffset: -1, Err: ErrInvalidProducerEpoch}},
			map[int64]*PartitionTxn{1: {Epoch: 0, FirstOffset: 40, Closed: true}}, []AbortedTxn{{ProducerID: 1, FirstOffset: 40, LastOffset: 100}}},
		{"a stale marker is refused", map[int64]*PartitionTxn{1: open(3, 40)}, []BatchCommit{marker(1, 2, MarkerCommit)},
			[]BatchResult{{BaseOffset: -1, Err: ErrInvalidProducerEpoch}}, map[int64]*PartitionTxn{1: open(3, 40)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := RunCommit{ByteOffset: 1000}
			for _, b := range tc.batches {
				r.BatchList = append(r.BatchList, b)
				r.ByteLength += b.ByteLength
				r.Records += b.Records
				r.Batches++
			}
			got, _, _, aborted := PlanTxnRun(100, r, map[int64]*ProducerState{}, tc.txns)
			for i := range tc.want {
				if got[i].BaseOffset != tc.want[i].BaseOffset || !errors.Is(got[i].Err, tc.want[i].Err) {
					t.Fatalf("batch %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			if !reflect.DeepEqual(tc.txns, tc.wantTxns) {
				t.Fatalf("transactions %+v, want %+v", tc.txns[1], tc.wantTxns[1])
			}
			if !reflect.DeepEqual(aborted, tc.aborted) {
				t.Fatalf("aborted %+v, want %+v", aborted, tc.aborted)
			}
		})
	}
}
