package storage

import (
	"bytes"
	"errors"
	"testing"
)

// footerSeeds are real objects as the ObjectWriter writes them: empty, one
// batch, and several partitions of several topics with several batches
// each (added out of order, so that Finish groups and sorts them).
func footerSeeds() [][]byte {
	empty, _ := NewObjectWriter().Finish()

	w := NewObjectWriter()
	w.Add(topic(1), 0, batchData(0, 61), 1, 1_700_000_000_000, 1_700_000_000_000)
	one, _ := w.Finish()

	w = NewObjectWriter()
	for i, p := range []struct {
		topic     byte
		partition int32
	}{{7, 2}, {3, 0}, {7, 0}, {3, 0}, {7, 2}, {3, 11}, {7, 2}} {
		w.Add(topic(p.topic), p.partition, batchData(i, 20+i*7), int64(i+1), int64(100*i), int64(100*i+50))
	}
	several, _ := w.Finish()
	return [][]byte{empty, one, several}
}

// FuzzObjectFooter parses arbitrary bytes as an object. parseObject must
// never panic, must fail only with errCorruptObject, and every run of an
// object it accepts must lie inside the object's body, after the previous
// run, in (topic id, partition) order, with at least one batch: the
// guarantees callers slice the body by without further checks.
//
// The whole-object checksum would stop nearly every mutation before the
// footer is read, so with reseal set the input's checksum is recomputed
// first, as a writer that wrote a bad footer would have.
func FuzzObjectFooter(f *testing.F) {
	for _, obj := range footerSeeds() {
		f.Add(obj, false)
		f.Add(obj, true)
	}
	f.Add([]byte(objectMagic), true)
	f.Fuzz(func(t *testing.T, obj []byte, resealed bool) {
		if resealed && len(obj) >= minObjectSize {
			obj = reseal(bytes.Clone(obj))
		}
		runs, err := parseObject(obj)
		if err != nil {
			if !errors.Is(err, errCorruptObject) || runs != nil {
				t.Fatalf("error %v with %d runs", err, len(runs))
			}
			return
		}
		bodyLen := int64(len(obj) - tailSize - len(runs)*runSize - 4)
		if bodyLen < 0 {
			t.Fatalf("%d runs do not fit a %d byte object", len(runs), len(obj))
		}
		next := int64(0)
		for i, r := range runs {
			// Written so that crafted values cannot overflow the check.
			if r.Offset < next || r.Offset > bodyLen || r.Length < 0 || r.Length > bodyLen-r.Offset || r.Batches <= 0 {
				t.Fatalf("run %d %+v outside body [%d, %d) or with no batches", i, r, next, bodyLen)
			}
			if i > 0 && compareRuns(&runs[i-1], &r) >= 0 {
				t.Fatalf("run %d %+v not after run %d %+v", i, r, i-1, runs[i-1])
			}
			next = r.Offset + r.Length
		}
	})
}
