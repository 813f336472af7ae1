package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"regexp"
	"testing"
)

func topic(b byte) TopicID {
	var t TopicID
	for i := range t {
		t[i] = b
	}
	return t
}

type added struct {
	topic     TopicID
	partition int32
	data      []byte
	records   int64
	minTS     int64
	maxTS     int64
}

// batchData returns recognizable bytes for the i-th batch.
func batchData(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*31 + j)
	}
	return b
}

func TestObjectRoundTrip(t *testing.T) {
	adds := []added{
		{topic(2), 0, batchData(0, 10), 3, 100, 110},
		{topic(1), 5, batchData(1, 7), 1, 50, 50},
		{topic(2), 0, batchData(2, 20), 5, 90, 120},
		{topic(1), 2, batchData(3, 1), 1, 7, 8},
		{topic(2), 1, batchData(4, 30), 2, -5, 1000},
		{topic(1), 5, batchData(5, 3), 4, 40, 60},
		{topic(2), 0, batchData(6, 4), 1, 95, 95},
	}
	w := NewObjectWriter()
	var total int64
	for i, a := range adds {
		w.Add(a.topic, a.partition, a.data, a.records, a.minTS, a.maxTS)
		total += int64(len(a.data))
		if w.bodyLen != total || len(w.pending) != i+1 {
			t.Fatalf("after %d adds: %d body bytes, %d batches; want %d %d", i+1, w.bodyLen, len(w.pending), total, i+1)
		}
	}
	obj, runs := w.Finish()
	if w.bodyLen != 0 || len(w.pending) != 0 {
		t.Fatalf("writer not reset: %d body bytes, %d batches", w.bodyLen, len(w.pending))
	}

	cat := func(idx ...int) []byte {
		var b []byte
		for _, i := range idx {
			b = append(b, adds[i].data...)
		}
		return b
	}
	wantBodies := [][]byte{cat(3), cat(1, 5), cat(0, 2, 6), cat(4)}
	wantRuns := []Run{
		{TopicID: topic(1), Partition: 2, Offset: 0, Length: 1, Batches: 1, Records: 1, MinTimestamp: 7, MaxTimestamp: 8},
		{TopicID: topic(1), Partition: 5, Offset: 1, Length: 10, Batches: 2, Records: 5, MinTimestamp: 40, MaxTimestamp: 60},
		{TopicID: topic(2), Partition: 0, Offset: 11, Length: 34, Batches: 3, Records: 9, MinTimestamp: 90, MaxTimestamp: 120},
		{TopicID: topic(2), Partition: 1, Offset: 45, Length: 30, Batches: 1, Records: 2, MinTimestamp: -5, MaxTimestamp: 1000},
	}
	if fmt.Sprint(runs) != fmt.Sprint(wantRuns) {
		t.Fatalf("runs\n got %v\nwant %v", runs, wantRuns)
	}
	for i, r := range runs {
		if got := obj[r.Offset : r.Offset+r.Length]; !bytes.Equal(got, wantBodies[i]) {
			t.Errorf("run %d body %x, want %x", i, got, wantBodies[i])
		}
	}
	if want := 75 + 4*runSize + minObjectSize; len(obj) != want {
		t.Errorf("object size %d, want %d", len(obj), want)
	}
	parsed, err := parseObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(parsed) != fmt.Sprint(wantRuns) {
		t.Fatalf("parsed runs\n got %v\nwant %v", parsed, wantRuns)
	}
}

func TestObjectEmpty(t *testing.T) {
	obj, runs := NewObjectWriter().Finish()
	if len(runs) != 0 || len(obj) != minObjectSize {
		t.Fatalf("empty object: %d runs, %d bytes", len(runs), len(obj))
	}
	parsed, err := parseObject(obj)
	if err != nil || len(parsed) != 0 {
		t.Fatalf("parseObject(empty) = %v, %v", parsed, err)
	}
}

func TestObjectWriterReuse(t *testing.T) {
	w := NewObjectWriter()
	w.Add(topic(1), 0, []byte("first"), 1, 1, 1)
	obj1, _ := w.Finish()
	keep := bytes.Clone(obj1)
	w.Add(topic(1), 0, []byte("second!"), 1, 2, 2)
	obj2, runs2 := w.Finish()
	if !bytes.Equal(obj1, keep) {
		t.Fatal("second Finish changed the first object")
	}
	if len(runs2) != 1 || string(obj2[:runs2[0].Length]) != "second!" || runs2[0].Batches != 1 {
		t.Fatalf("second object runs %v body %q", runs2, obj2[:7])
	}
}

// TestObjectWriterAllocs checks that the produce path does not allocate per
// batch. The agent's batcher recycles its writers and calls FinishParts(nil)
// once per object: a warm writer then allocates the parts slice, the footer
// and the run list per object (one more under the race detector, which
// keeps an allocation slices.Grow otherwise elides), as many for 1000
// batches as for 10.
func TestObjectWriterAllocs(t *testing.T) {
	batch := make([]byte, 100)
	perObject := func(batches int) float64 {
		w := NewObjectWriter()
		fill := func() {
			for i := range batches {
				w.Add(topic(byte(i%3)), int32(i%50), batch, 1, int64(i), int64(i))
			}
			_, _, _ = w.FinishParts(nil)
		}
		fill()
		return testing.AllocsPerRun(20, fill)
	}
	few, many := perObject(10), perObject(1000)
	if many > few || many > 4 {
		t.Fatalf("%v allocations per object of 1000 batches, %v of 10; want as many, at most 4", many, few)
	}
}

func sampleObject() []byte {
	w := NewObjectWriter()
	w.Add(topic(9), 3, []byte("hello"), 2, 10, 20)
	w.Add(topic(4), 1, []byte("world!"), 1, 5, 5)
	w.Add(topic(9), 3, []byte("again"), 3, 30, 40)
	obj, _ := w.Finish()
	return obj
}

// reseal recomputes the checksum of a modified object, so that tests can
// reach the checks that come after it: of its footer (as its footer length
// says, when that fits the object), or for version 1 of all of it.
func reseal(obj []byte) []byte {
	n := len(obj)
	from := 0
	if fl := int(binary.BigEndian.Uint32(obj[n-14:])); binary.BigEndian.Uint16(obj[n-6:]) != 1 && fl <= n-tailSize {
		from = n - tailSize - fl
	}
	binary.BigEndian.PutUint32(obj[n-10:], crc32.Checksum(obj[from:n-10], castagnoli))
	return obj
}

// An object of version 1 (earlier releases: the checksum covers the body
// too) still parses; a change to its body fails its checksum.
func TestParseObjectVersion1(t *testing.T) {
	obj := sampleObject()
	n := len(obj)
	binary.BigEndian.PutUint16(obj[n-6:], 1)
	reseal(obj)
	runs, err := parseObject(obj)
	if err != nil || len(runs) != 2 {
		t.Fatalf("version 1 object: %v, %d runs", err, len(runs))
	}
	obj[0] ^= 1
	if _, err := parseObject(obj); !errors.Is(err, errCorruptObject) {
		t.Fatalf("version 1 object with a changed body: err %v", err)
	}
}

func TestParseObjectCorruption(t *testing.T) {
	good := sampleObject()
	if _, err := parseObject(good); err != nil {
		t.Fatal(err)
	}
	// Every byte of the footer is checked; the body's batches carry their
	// own CRC-32C (kafkaproto checks them), which the object's does not
	// repeat.
	n := len(good)
	bodyLen := n - minObjectSize - 2*runSize
	for i := bodyLen; i < n; i++ {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(good)
			bad[i] ^= mask
			if _, err := parseObject(bad); !errors.Is(err, errCorruptObject) {
				t.Fatalf("flip %02x at byte %d: err %v, want errCorruptObject", mask, i, err)
			}
		}
	}
	for n := range len(good) {
		if _, err := parseObject(good[:n]); !errors.Is(err, errCorruptObject) {
			t.Fatalf("truncated to %d bytes: err %v", n, err)
		}
		if _, err := parseObject(good[len(good)-n:]); !errors.Is(err, errCorruptObject) {
			t.Fatalf("first %d bytes cut: err %v", len(good)-n, err)
		}
	}

	firstRun := bodyLen
	secondRun := bodyLen + runSize
	cases := map[string]func(b []byte){
		"version 3": func(b []byte) { binary.BigEndian.PutUint16(b[n-6:], 3) },
		"footer length not a run multiple": func(b []byte) {
			binary.BigEndian.PutUint32(b[n-14:], 4+runSize+1)
		},
		"footer length beyond object": func(b []byte) {
			binary.BigEndian.PutUint32(b[n-14:], uint32(n))
		},
		"footer length below count": func(b []byte) { binary.BigEndian.PutUint32(b[n-14:], 0) },
		"count disagrees":           func(b []byte) { binary.BigEndian.PutUint32(b[n-18:], 3) },
		"run past body": func(b []byte) {
			binary.BigEndian.PutUint64(b[secondRun+28:], uint64(bodyLen))
		},
		"run length overflows": func(b []byte) {
			binary.BigEndian.PutUint64(b[secondRun+28:], 1<<63-1)
		},
		"negative offset": func(b []byte) {
			binary.BigEndian.PutUint64(b[firstRun+20:], 1<<63)
		},
		"runs overlap": func(b []byte) {
			binary.BigEndian.PutUint64(b[secondRun+20:], 1)
		},
		"zero batches": func(b []byte) { binary.BigEndian.PutUint32(b[firstRun+36:], 0) },
		"partitions out of order": func(b []byte) {
			copy(b[secondRun:secondRun+20], b[firstRun:firstRun+20])
			binary.BigEndian.PutUint32(b[secondRun+16:], 0)
		},
		"partition twice": func(b []byte) { copy(b[secondRun:secondRun+20], b[firstRun:firstRun+20]) },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			bad := bytes.Clone(good)
			mutate(bad)
			if _, err := parseObject(reseal(bad)); !errors.Is(err, errCorruptObject) {
				t.Fatalf("err %v, want errCorruptObject", err)
			}
		})
	}
}

func TestNewObjectKey(t *testing.T) {
	re := regexp.MustCompile(`^objects/([0-9a-f]{2})/[0-9]{13}-([0-9a-f]{16})$`)
	seen := map[string]bool{}
	prefixes := map[string]bool{}
	for range 1000 {
		k := NewObjectKey()
		m := re.FindStringSubmatch(k)
		if m == nil {
			t.Fatalf("key %q does not match %v", k, re)
		}
		if m[1] != m[2][:2] {
			t.Fatalf("key %q: prefix is not the first random byte", k)
		}
		if !IsObjectKey(k) {
			t.Fatalf("IsObjectKey(%q) = false", k)
		}
		if seen[k] {
			t.Fatalf("duplicate key %q", k)
		}
		seen[k] = true
		prefixes[m[1]] = true
	}
	// 1000 uniform draws over 256 prefixes miss more than 56 of them with
	// a probability far below 1e-9.
	if len(prefixes) < 200 {
		t.Fatalf("1000 keys used only %d prefixes", len(prefixes))
	}
}

func TestIsObjectKeyRefuses(t *testing.T) {
	good := "objects/ab/1764590000000-ab0123456789cdef"
	if !IsObjectKey(good) {
		t.Fatalf("IsObjectKey(%q) = false", good)
	}
	for _, k := range []string{
		"", "objects/", good + "0", good[:len(good)-1], "x" + good[1:],
		"objects/ab/1764590000000-cd0123456789cdef", // prefix is not the first random byte
		"objects/AB/1764590000000-AB0123456789cdef", // upper case hex
		"objects/ab/17645900000a0-ab0123456789cdef", // not a digit
		"objects/ab/1764590000000_ab0123456789cdef",
		"objects/ab/1764590000000-ab0123456789cdeg",
		"objects/ab/../../../etc/passwd-ab012345678",
		"objects/ab\\1764590000000-ab0123456789cdef",
		"iceberg/ab/1764590000000-ab0123456789cdef",
	} {
		if IsObjectKey(k) {
			t.Errorf("IsObjectKey(%q) = true", k)
		}
	}
}

func FuzzParseObject(f *testing.F) {
	f.Add(sampleObject())
	empty, _ := NewObjectWriter().Finish()
	f.Add(empty)
	f.Add([]byte("FLOE"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, obj []byte) {
		runs, err := parseObject(obj)
		if err != nil {
			if !errors.Is(err, errCorruptObject) {
				t.Fatalf("error %v does not wrap errCorruptObject", err)
			}
			return
		}
		// An accepted object must be exactly what its runs describe:
		// rebuilding the footer from them gives back the same bytes, and
		// every run can be sliced out of the body.
		footerLen := len(runs)*runSize + 4
		bodyLen := len(obj) - tailSize - footerLen
		var footer []byte
		for i := range runs {
			footer = appendRun(footer, &runs[i])
			_ = obj[runs[i].Offset : runs[i].Offset+runs[i].Length]
		}
		footer = binary.BigEndian.AppendUint32(footer, uint32(len(runs)))
		if !bytes.Equal(footer, obj[bodyLen:bodyLen+footerLen]) {
			t.Fatalf("runs %v do not re-encode to the footer", runs)
		}

		// Feeding the runs' bytes back through a writer reproduces runs
		// with the same lengths and counts.
		w := NewObjectWriter()
		for _, r := range runs {
			w.Add(r.TopicID, r.Partition, obj[r.Offset:r.Offset+r.Length], r.Records, r.MinTimestamp, r.MaxTimestamp)
		}
		again, runs2 := w.Finish()
		if _, err := parseObject(again); err != nil {
			t.Fatalf("rewritten object does not parse: %v", err)
		}
		var want, got int64
		for _, r := range runs {
			want += r.Length
		}
		for _, r := range runs2 {
			got += r.Length
		}
		if got != want {
			t.Fatalf("rewritten runs hold %d bytes, want %d", got, want)
		}
	})
}
