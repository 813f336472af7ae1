package storage

import (
	"bytes"
	"cmp"
	"slices"
	"testing"
)

// TestStreamWriterMatchesObjectWriter: the object a StreamWriter streams
// is byte for byte the one ObjectWriter lays out from the same batches,
// with the same runs, and its size is ObjectSize's.
func TestStreamWriterMatchesObjectWriter(t *testing.T) {
	adds := []added{
		{topic(2), 0, batchData(0, 10), 3, 100, 110},
		{topic(1), 5, batchData(1, 7), 1, 50, 50},
		{topic(2), 0, batchData(2, 20), 5, 90, 120},
		{topic(1), 2, batchData(3, 1), 1, 7, 8},
		{topic(2), 1, batchData(4, 30), 2, -5, 1000},
		{topic(1), 5, batchData(5, 3), 4, 40, 60},
	}
	w := NewObjectWriter()
	for _, a := range adds {
		w.Add(a.topic, a.partition, a.data, a.records, a.minTS, a.maxTS)
	}
	want, wantRuns := w.Finish()

	// The stream takes them in body order: by topic, partition, then Add
	// order (a stable sort keeps it).
	sorted := slices.Clone(adds)
	slices.SortStableFunc(sorted, func(a, b added) int {
		if c := bytes.Compare(a.topic[:], b.topic[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.partition, b.partition)
	})
	var buf bytes.Buffer
	s := NewStreamWriter(&buf)
	var body int64
	for _, a := range sorted {
		if err := s.Add(a.topic, a.partition, a.data, a.records, a.minTS, a.maxTS); err != nil {
			t.Fatal(err)
		}
		body += int64(len(a.data))
	}
	runs, err := s.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("streamed object differs:\n got %x\nwant %x", buf.Bytes(), want)
	}
	if !slices.Equal(runs, wantRuns) {
		t.Fatalf("runs %+v, want %+v", runs, wantRuns)
	}
	if got := ObjectSize(body, len(runs)); got != int64(len(want)) {
		t.Fatalf("ObjectSize = %d, want %d", got, len(want))
	}
	if _, err := parseObject(buf.Bytes()); err != nil {
		t.Fatalf("parse: %v", err)
	}
}

// TestStreamWriterRefusesOutOfOrder: a partition added after a later one
// would make a second run of it; the writer refuses it.
func TestStreamWriterRefusesOutOfOrder(t *testing.T) {
	s := NewStreamWriter(&bytes.Buffer{})
	if err := s.Add(topic(1), 3, batchData(0, 5), 1, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(topic(1), 2, batchData(1, 5), 1, 0, 0); err == nil {
		t.Fatal("partition 2 after 3 was accepted")
	}
	if err := s.Add(topic(0), 9, batchData(1, 5), 1, 0, 0); err == nil {
		t.Fatal("topic 0 after topic 1 was accepted")
	}
}
