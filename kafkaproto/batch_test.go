package kafkaproto

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testCodecs are the ways buildBatch can compress records; "xerial" is
// snappy (codec 2) in the framing the Java producer writes.
var testCodecs = []string{"none", "gzip", "snappy", "xerial", "lz4", "zstd"}

// encodeRecords encodes recs as the records section of a v2 batch, setting
// each record's offset delta to its index and its length.
func encodeRecords(recs []kmsg.Record) []byte {
	var out []byte
	for i := range recs {
		r := recs[i]
		r.OffsetDelta = int32(i)
		r.Length = 0
		body := r.AppendTo(nil)[1:] // drop the one-byte zero length
		r.Length = int32(len(body))
		out = r.AppendTo(out)
	}
	return out
}

// compressRecords compresses raw with the named codec and returns the codec
// number for the batch attributes.
func compressRecords(t testing.TB, codec string, raw []byte) (int16, []byte) {
	t.Helper()
	var buf bytes.Buffer
	switch codec {
	case "none":
		return 0, raw
	case "gzip":
		w := gzip.NewWriter(&buf)
		w.Write(raw)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return 1, buf.Bytes()
	case "snappy":
		return 2, snappy.Encode(nil, raw)
	case "xerial":
		return 2, xerialFrame(raw, 100)
	case "lz4":
		w := lz4.NewWriter(&buf)
		w.Write(raw)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return 3, buf.Bytes()
	case "zstd":
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		return 4, enc.EncodeAll(raw, nil)
	}
	t.Fatalf("unknown codec %q", codec)
	return 0, nil
}

// xerialFrame frames raw the way snappy-java's SnappyOutputStream does, in
// chunks of at most chunk bytes so that tests see several.
func xerialFrame(raw []byte, chunk int) []byte {
	out := append([]byte{}, xerialMagic...)
	out = binary.BigEndian.AppendUint32(out, 1)
	out = binary.BigEndian.AppendUint32(out, 1)
	for len(raw) > 0 {
		n := min(chunk, len(raw))
		block := snappy.Encode(nil, raw[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		raw = raw[n:]
	}
	return out
}

// buildBatch builds a valid v2 batch as a non-idempotent client would send
// it: base offset 0, leader epoch -1, no producer id.
func buildBatch(t testing.TB, codec string, firstTS int64, recs []kmsg.Record) []byte {
	t.Helper()
	attrs, data := compressRecords(t, codec, encodeRecords(recs))
	maxTS := firstTS
	for _, r := range recs {
		maxTS = max(maxTS, firstTS+r.TimestampDelta64)
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       firstTS,
		MaxTimestamp:         maxTS,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              data,
	}
	return fixBatch(rb.AppendTo(nil))
}

// fixBatch recomputes a batch's length and CRC after a test edited it.
func fixBatch(b []byte) []byte {
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// sampleRecords covers null and empty keys and values, headers with null
// and empty values, and negative and large timestamp deltas.
func sampleRecords() []kmsg.Record {
	return []kmsg.Record{
		{TimestampDelta64: 0, Key: []byte("k0"), Value: []byte("v0"),
			Headers: []kmsg.Header{{Key: "h", Value: []byte("x")}, {Key: "null", Value: nil}}},
		{TimestampDelta64: -5, Key: nil, Value: bytes.Repeat([]byte("compressible "), 40)},
		{TimestampDelta64: 1 << 40, Key: []byte{}, Value: nil,
			Headers: []kmsg.Header{{Key: "", Value: []byte{}}}},
	}
}

func TestParseBatchHeader(t *testing.T) {
	b := buildBatch(t, "none", 1_700_000_000_000, sampleRecords())
	binary.BigEndian.PutUint32(b[12:], 42)            // leader epoch
	binary.BigEndian.PutUint64(b[43:], 99)            // producer id
	binary.BigEndian.PutUint16(b[51:], 3)             // producer epoch
	binary.BigEndian.PutUint32(b[53:], 17)            // base sequence
	binary.BigEndian.PutUint16(b[21:], 0x10|0x08|0x4) // txn, log append time, lz4
	h, err := ParseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	want := BatchHeader{
		BaseOffset: 0, Length: int32(len(b) - 12), PartitionLeaderEpoch: 42, Magic: 2,
		CRC: h.CRC, Attributes: 0x1c, LastOffsetDelta: 2, FirstTimestamp: 1_700_000_000_000,
		MaxTimestamp: 1_700_000_000_000 + 1<<40, ProducerID: 99, ProducerEpoch: 3, BaseSequence: 17,
		NumRecords: 3,
	}
	if h != want {
		t.Fatalf("header\n got %+v\nwant %+v", h, want)
	}
	if h.CRC != binary.BigEndian.Uint32(b[17:]) {
		t.Fatalf("crc %x", h.CRC)
	}
	if h.Codec() != 4 || !h.IsTransactional() || h.IsControl() || h.TimestampType() != 1 || h.TotalSize() != len(b) {
		t.Fatalf("accessors: codec %d txn %v control %v tstype %d size %d",
			h.Codec(), h.IsTransactional(), h.IsControl(), h.TimestampType(), h.TotalSize())
	}

	// Legacy formats: enough to reject them.
	legacy := legacyMessage(1)
	h, err = ParseBatchHeader(legacy)
	if err != nil || h.Magic != 1 || h.Length != int32(len(legacy)-12) || h.BaseOffset != 0 {
		t.Fatalf("legacy: %+v %v", h, err)
	}
	for _, n := range []int{0, 16} {
		if _, err := ParseBatchHeader(b[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%d bytes: %v", n, err)
		}
	}
	if _, err := ParseBatchHeader(b[:60]); !errors.Is(err, ErrMalformed) {
		t.Fatalf("v2 header of 60 bytes: %v", err)
	}
}

// legacyMessage returns a magic 0 or 1 message set entry holding one
// message with a null key and the value "abc".
func legacyMessage(magic int8) []byte {
	var m []byte
	m = binary.BigEndian.AppendUint64(m, 0)
	m = binary.BigEndian.AppendUint32(m, 0) // size, patched below
	m = binary.BigEndian.AppendUint32(m, 0) // crc (IEEE over the rest; unchecked here)
	m = append(m, byte(magic), 0)
	if magic == 1 {
		m = binary.BigEndian.AppendUint64(m, 1_700_000_000_000)
	}
	m = binary.BigEndian.AppendUint32(m, 0xffffffff) // null key
	m = binary.BigEndian.AppendUint32(m, 3)
	m = append(m, "abc"...)
	binary.BigEndian.PutUint32(m[8:], uint32(len(m)-12))
	binary.BigEndian.PutUint32(m[12:], crc32.ChecksumIEEE(m[16:]))
	return m
}

func TestValidateProduced(t *testing.T) {
	valid := func() []byte { return buildBatch(t, "none", 1_700_000_000_000, sampleRecords()) }
	// edit returns a valid batch changed by fn, with length and CRC fixed.
	edit := func(fn func(b []byte) []byte) []byte { return fixBatch(fn(valid())) }
	setAttrs := func(a uint16) []byte {
		return edit(func(b []byte) []byte { binary.BigEndian.PutUint16(b[21:], a); return b })
	}

	for _, tc := range []struct {
		name  string
		batch []byte
		want  error
	}{
		{"valid", valid(), nil},
		{"leader epoch is not validated", func() []byte {
			b := valid()
			binary.BigEndian.PutUint32(b[12:], 12345) // outside the CRC
			return b
		}(), nil},
		{"transactional", setAttrs(0x10), nil},
		{"too short", valid()[:16], kerr.CorruptMessage},
		{"empty", nil, kerr.CorruptMessage},
		{"truncated", valid()[:100], kerr.CorruptMessage},
		{"trailing byte", append(valid(), 0), kerr.CorruptMessage},
		{"negative length", func() []byte {
			b := valid()
			binary.BigEndian.PutUint32(b[8:], 0xffffffff)
			return b
		}(), kerr.CorruptMessage},
		{"v2 shorter than header", func() []byte {
			b := valid()[:40]
			binary.BigEndian.PutUint32(b[8:], 28)
			return b
		}(), kerr.CorruptMessage},
		{"magic 0", legacyMessage(0), kerr.UnsupportedForMessageFormat},
		{"magic 1", legacyMessage(1), kerr.UnsupportedForMessageFormat},
		{"bad crc", func() []byte {
			b := valid()
			b[len(b)-1] ^= 1
			return b
		}(), kerr.CorruptMessage},
		{"base offset not 0", func() []byte {
			b := valid()
			binary.BigEndian.PutUint64(b, 5) // outside the CRC
			return b
		}(), kerr.InvalidRecord},
		{"no records", edit(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[23:], 0xffffffff)
			binary.BigEndian.PutUint32(b[57:], 0)
			return b[:61]
		}), kerr.InvalidRecord},
		{"count mismatch", edit(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[23:], 5)
			return b
		}), kerr.InvalidRecord},
		{"codec 5", setAttrs(5), kerr.CorruptMessage},
		{"codec 6", setAttrs(6), kerr.CorruptMessage},
		{"codec 7", setAttrs(7), kerr.CorruptMessage},
		{"control batch", setAttrs(0x20 | 0x10), kerr.InvalidRecord},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ValidateProduced(tc.batch)
			if err != tc.want { // kerr errors are singletons: compare exactly
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if tc.want == nil && (h.NumRecords != 3 || h.TotalSize() != len(tc.batch)) {
				t.Fatalf("header %+v", h)
			}
		})
	}
}

func TestValidateProducedEveryCodec(t *testing.T) {
	for _, codec := range testCodecs {
		b := buildBatch(t, codec, 1, sampleRecords())
		h, err := ValidateProduced(b)
		if err != nil {
			t.Fatalf("%s: %v", codec, err)
		}
		if want := map[string]int8{"none": 0, "gzip": 1, "snappy": 2, "xerial": 2, "lz4": 3, "zstd": 4}[codec]; h.Codec() != want {
			t.Fatalf("%s: codec %d", codec, h.Codec())
		}
	}
}

func TestSplitBatches(t *testing.T) {
	a := buildBatch(t, "none", 1, sampleRecords())
	b := buildBatch(t, "gzip", 2, sampleRecords())
	c := legacyMessage(1) // split does not judge formats
	records := append(append(append([]byte{}, a...), b...), c...)

	got, err := SplitBatches(records)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !bytes.Equal(got[0], a) || !bytes.Equal(got[1], b) || !bytes.Equal(got[2], c) {
		t.Fatalf("got %d batches", len(got))
	}
	if &got[1][0] != &records[len(a)] {
		t.Fatal("batches do not alias records")
	}
	// Appending to one batch must not overwrite the next.
	_ = append(got[0], 0xee)
	if cap(got[0]) != len(a) || records[len(a)] != b[0] {
		t.Fatal("append to a batch overwrote the next one")
	}

	for _, in := range [][]byte{nil, {}} {
		if got, err := SplitBatches(in); err != nil || len(got) != 0 {
			t.Fatalf("empty: %v %v", got, err)
		}
	}

	neg := append([]byte{}, a...)
	binary.BigEndian.PutUint32(neg[8:], 0x80000000)
	small := append([]byte{}, a...)
	binary.BigEndian.PutUint32(small[8:], 0)
	for name, in := range map[string][]byte{
		"partial batch":     records[:len(records)-1],
		"trailing bytes":    append(append([]byte{}, a...), 1, 2, 3, 4, 5),
		"eleven bytes":      a[:11],
		"negative length":   neg,
		"zero length":       small,
		"length past input": a[:len(a)-1],
	} {
		if _, err := SplitBatches(in); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSetBaseOffset(t *testing.T) {
	b := buildBatch(t, "zstd", 1, sampleRecords())
	SetBaseOffset(b, 1234567890123)
	h, err := ParseBatchHeader(b)
	if err != nil || h.BaseOffset != 1234567890123 {
		t.Fatalf("%+v %v", h, err)
	}
	// The CRC still holds: only the base offset check fails now.
	if _, err := ValidateProduced(b); err != kerr.InvalidRecord {
		t.Fatalf("validate after rewrite: %v", err)
	}
	SetBaseOffset(b, 0)
	if _, err := ValidateProduced(b); err != nil {
		t.Fatal(err)
	}
	short := []byte{1, 2, 3}
	SetBaseOffset(short, 9)
	if !bytes.Equal(short, []byte{1, 2, 3}) {
		t.Fatal("short slice changed")
	}
}

// batch16K is an uncompressed 16 KiB batch of 64 records.
func batch16K(t testing.TB) []byte {
	recs := make([]kmsg.Record, 64)
	for i := range recs {
		recs[i] = kmsg.Record{TimestampDelta64: int64(i), Key: []byte("key"), Value: bytes.Repeat([]byte{byte(i)}, 16<<10/64-12)}
	}
	return buildBatch(t, "none", 1_700_000_000_000, recs)
}

func TestValidateProducedDoesNotAllocate(t *testing.T) {
	b := batch16K(t)
	var err error
	allocs := testing.AllocsPerRun(100, func() { _, err = ValidateProduced(b) })
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per call", allocs)
	}
}

func BenchmarkValidateProduced(b *testing.B) {
	batch := batch16K(b)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ValidateProduced(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWalkBatches walks stored-batch runs: the base offset each batch gets,
// the offset returned (also on failure: that of the batch that failed),
// framing that does not hold, and a walk that fn stops.
func TestWalkBatches(t *testing.T) {
	three := buildBatch(t, "none", 1_700_000_000_000, sampleRecords())
	one := buildBatch(t, "zstd", 1_700_000_000_000, sampleRecords()[:1])
	// Key compaction's output: 1 record whose LastOffsetDelta covers the
	// 4 offsets it replaced.
	stretched := bytes.Clone(one)
	binary.BigEndian.PutUint32(stretched[offLastOffsetDelta:], 3)
	fixBatch(stretched)
	negDelta := bytes.Clone(one)
	binary.BigEndian.PutUint32(negDelta[offLastOffsetDelta:], 0xffffffff)
	fixBatch(negDelta)
	shortV2 := bytes.Clone(one[:BatchHeaderSize-1])
	binary.BigEndian.PutUint32(shortV2[offLength:], uint32(len(shortV2)-logOverhead))
	join := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	errStop := errors.New("stop")

	for _, tc := range []struct {
		name   string
		data   []byte
		stopAt int // fn fails at this call (1-based); 0 never
		bases  []int64
		end    int64
		err    error
	}{
		{name: "empty", data: nil, end: 100},
		{name: "one", data: three, bases: []int64{100}, end: 103},
		{name: "several", data: join(three, one, three), bases: []int64{100, 103, 104}, end: 107},
		{name: "stretched delta", data: join(one, stretched, one), bases: []int64{100, 101, 105}, end: 106},
		{name: "partial second", data: join(three, one[:len(one)-1]), bases: []int64{100}, end: 103, err: ErrMalformed},
		{name: "trailing bytes", data: join(three, one[:16]), bases: []int64{100}, end: 103, err: ErrMalformed},
		{name: "length past end", data: three[:BatchHeaderSize], end: 100, err: ErrMalformed},
		{name: "magic 0", data: join(three, legacyMessage(0)), bases: []int64{100}, end: 103, err: ErrMalformed},
		{name: "magic 1", data: legacyMessage(1), end: 100, err: ErrMalformed},
		{name: "v2 shorter than header", data: shortV2, end: 100, err: ErrMalformed},
		{name: "negative delta", data: join(one, negDelta), bases: []int64{100}, end: 101, err: ErrMalformed},
		{name: "stopped by fn", data: join(three, one, three), stopAt: 2, bases: []int64{100, 103}, end: 103, err: errStop},
		{name: "stopped at first", data: three, stopAt: 1, bases: []int64{100}, end: 100, err: errStop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bases []int64
			pos := 0
			end, err := WalkBatches(tc.data, 100, func(h BatchHeader, batch []byte, base int64) error {
				bases = append(bases, base)
				if !bytes.Equal(batch, tc.data[pos:pos+len(batch)]) || cap(batch) != len(batch) || h.TotalSize() != len(batch) {
					t.Fatalf("batch %d: %d bytes (cap %d) at %d, header says %d", len(bases), len(batch), cap(batch), pos, h.TotalSize())
				}
				pos += len(batch)
				if len(bases) == tc.stopAt {
					return errStop
				}
				return nil
			})
			if tc.err == nil && err != nil || tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if tc.err == errStop && err != errStop {
				t.Fatalf("fn's error came back as %v, not as is", err)
			}
			if end != tc.end || !slices.Equal(bases, tc.bases) {
				t.Fatalf("end %d, bases %v; want %d, %v", end, bases, tc.end, tc.bases)
			}
		})
	}
}

// TestBatchChecksum: the checksum of a whole batch folded from its CRC field
// is the checksum of its bytes, for every codec and any base offset (which
// the batch CRC does not cover); SetBatchCRC writes the field a producer
// would.
func TestBatchChecksum(t *testing.T) {
	table := crc32.MakeTable(crc32.Castagnoli)
	for _, codec := range testCodecs {
		b := buildBatch(t, codec, 1_700_000_000_000, sampleRecords())
		for _, base := range []int64{0, 1, 1 << 40} {
			SetBaseOffset(b, base)
			if got, want := BatchChecksum(b), crc32.Checksum(b, table); got != want {
				t.Fatalf("%s, base %d: BatchChecksum %08x, want %08x", codec, base, got, want)
			}
		}
		crc := binary.BigEndian.Uint32(b[17:])
		binary.BigEndian.PutUint32(b[17:], 0)
		SetBatchCRC(b)
		if got := binary.BigEndian.Uint32(b[17:]); got != crc {
			t.Fatalf("%s: SetBatchCRC wrote %08x, the producer %08x", codec, got, crc)
		}
	}
}
