package kafkaproto

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sameBytes compares contents and nullness.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// wantRecord is a record as a test expects to read it back.
type wantRecord struct {
	ts      int64 // absolute, milliseconds
	key     []byte
	value   []byte
	headers []RecordHeader
}

func checkRecord(t *testing.T, where string, h BatchHeader, got Record, offsetDelta int32, want wantRecord) {
	t.Helper()
	if got.OffsetDelta != offsetDelta {
		t.Errorf("%s: offset delta %d, want %d", where, got.OffsetDelta, offsetDelta)
	}
	if ts := h.FirstTimestamp + got.TimestampDelta; ts != want.ts {
		t.Errorf("%s: timestamp %d, want %d", where, ts, want.ts)
	}
	if !sameBytes(got.Key, want.key) {
		t.Errorf("%s: key %q (nil %v), want %q (nil %v)", where, got.Key, got.Key == nil, want.key, want.key == nil)
	}
	if !sameBytes(got.Value, want.value) {
		t.Errorf("%s: value %q (nil %v), want %q (nil %v)", where, got.Value, got.Value == nil, want.value, want.value == nil)
	}
	if len(got.Headers) != len(want.headers) {
		t.Fatalf("%s: %d headers, want %d", where, len(got.Headers), len(want.headers))
	}
	for i, gh := range got.Headers {
		if wh := want.headers[i]; gh.Key != wh.Key || !sameBytes(gh.Value, wh.Value) {
			t.Errorf("%s: header %d = %q:%q, want %q:%q", where, i, gh.Key, gh.Value, wh.Key, wh.Value)
		}
	}
}

func TestDecodeRecordsEveryCodec(t *testing.T) {
	const firstTS = 1_700_000_000_000
	var want []wantRecord
	for _, r := range sampleRecords() {
		w := wantRecord{ts: firstTS + r.TimestampDelta64, key: r.Key, value: r.Value}
		for _, h := range r.Headers {
			w.headers = append(w.headers, RecordHeader{Key: h.Key, Value: h.Value})
		}
		want = append(want, w)
	}
	for _, codec := range testCodecs {
		t.Run(codec, func(t *testing.T) {
			b := buildBatch(t, codec, firstTS, sampleRecords())
			if codec == "xerial" && !bytes.HasPrefix(b[61:], xerialMagic) {
				t.Fatal("not xerial framed")
			}
			h, recs, err := DecodeRecords(b)
			if err != nil {
				t.Fatal(err)
			}
			if h.NumRecords != 3 || len(recs) != 3 {
				t.Fatalf("%d records, header says %d", len(recs), h.NumRecords)
			}
			for i := range recs {
				checkRecord(t, fmt.Sprint("record ", i), h, recs[i], int32(i), want[i])
			}
		})
	}
}

// kgoTestRecords are produced through franz-go. Values compress well so the
// client keeps the compressed form; one timestamp goes backwards so a delta
// is negative.
func kgoTestRecords() ([]*kgo.Record, []wantRecord) {
	base := time.UnixMilli(1_700_000_000_000)
	var recs []*kgo.Record
	var want []wantRecord
	for i := range 20 {
		r := &kgo.Record{
			Partition: 0,
			Key:       fmt.Appendf(nil, "key-%d", i),
			Value:     bytes.Repeat(fmt.Appendf(nil, "value %d ", i), 50),
			Timestamp: base.Add(time.Duration(i) * 7 * time.Millisecond),
		}
		switch i {
		case 3:
			r.Key = nil
		case 4:
			r.Key = []byte{}
		case 5:
			r.Value = nil
		case 6:
			r.Timestamp = base.Add(-5 * time.Millisecond)
		}
		switch i % 3 {
		case 0:
			r.Headers = []kgo.RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "null", Value: nil}}
		case 1:
			r.Headers = []kgo.RecordHeader{{Key: "", Value: []byte{}}}
		}
		w := wantRecord{ts: r.Timestamp.UnixMilli(), key: r.Key, value: r.Value}
		for _, h := range r.Headers {
			w.headers = append(w.headers, RecordHeader{Key: h.Key, Value: h.Value})
		}
		recs = append(recs, r)
		want = append(want, w)
	}
	return recs, want
}

// TestDecodeRecordsFromFranzGo decodes batches a real franz-go client
// produced to the in-process test broker, with every codec.
// TestValidateRecordsVisitsEveryCodec: RecordRules.Visit sees each
// record's key and value (null as nil) in order, for every codec, a record
// past the stream's 16 KiB window among them.
func TestValidateRecordsVisitsEveryCodec(t *testing.T) {
	big := kmsg.Record{Key: []byte("big"), Value: bytes.Repeat([]byte("0123456789abcdef"), 4096)} // 64 KiB
	for _, codec := range testCodecs {
		t.Run(codec, func(t *testing.T) {
			b := buildBatch(t, codec, 1_700_000_000_000, append(sampleRecords(), big))
			_, recs, err := DecodeRecords(b)
			if err != nil {
				t.Fatal(err)
			}
			var seen int32
			err = ValidateRecords(b, RecordRules{Visit: func(i int32, key, value []byte) {
				r := recs[i]
				if i != seen || !bytes.Equal(key, r.Key) || !bytes.Equal(value, r.Value) || (key == nil) != (r.Key == nil) || (value == nil) != (r.Value == nil) {
					t.Fatalf("record %d: key %q value %.40q, want %q %.40q", i, key, value, r.Key, r.Value)
				}
				seen++
			}})
			if err != nil || int(seen) != len(recs) {
				t.Fatalf("visited %d of %d: %v", seen, len(recs), err)
			}
		})
	}
}

func TestDecodeRecordsFromFranzGo(t *testing.T) {
	for _, tc := range []struct {
		name  string
		codec kgo.CompressionCodec
		want  int8
	}{
		{"none", kgo.NoCompression(), 0},
		{"gzip", kgo.GzipCompression(), 1},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			recs, want := kgoTestRecords()
			fields := produceWithKgo(t, tc.codec, recs)
			var got int
			for _, field := range fields {
				batches, err := SplitBatches(field)
				if err != nil {
					t.Fatal(err)
				}
				for _, b := range batches {
					h, err := ValidateProduced(b)
					if err != nil {
						t.Fatalf("client batch rejected: %v", err)
					}
					if h.Codec() != tc.want || h.ProducerID != producerID || h.ProducerEpoch != 0 {
						t.Fatalf("header %+v", h)
					}
					if tc.want == 2 {
						t.Logf("snappy batch, xerial framing: %v", bytes.HasPrefix(b[61:], xerialMagic))
					}
					h2, decoded, err := DecodeRecords(b)
					if err != nil {
						t.Fatal(err)
					}
					if h2 != h || len(decoded) != int(h.NumRecords) {
						t.Fatalf("%d records, header says %d", len(decoded), h.NumRecords)
					}
					var maxTS int64
					for i, r := range decoded {
						if got >= len(want) {
							t.Fatalf("more records than produced")
						}
						checkRecord(t, fmt.Sprint("record ", got), h, r, int32(i), want[got])
						maxTS = max(maxTS, want[got].ts)
						got++
					}
					if h.MaxTimestamp != maxTS {
						t.Errorf("max timestamp %d, want %d", h.MaxTimestamp, maxTS)
					}
				}
			}
			if got != len(want) {
				t.Fatalf("decoded %d records, produced %d", got, len(want))
			}
		})
	}
}

// rawRecord encodes one record body by hand so tests can produce encodings
// kmsg never would.
func rawRecord(fields ...int64) []byte {
	var body []byte
	body = append(body, 0) // attributes
	for _, f := range fields {
		body = binary.AppendVarint(body, f)
	}
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// batchWith wraps raw records bytes (already in codec form) into a batch
// claiming n records.
func batchWith(codec int16, n int32, data []byte) []byte {
	rb := kmsg.RecordBatch{Magic: 2, Attributes: codec, LastOffsetDelta: n - 1, NumRecords: n,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Records: data}
	return fixBatch(rb.AppendTo(nil))
}

func TestDecodeRecordsMalformed(t *testing.T) {
	good := encodeRecords(sampleRecords())
	// tsDelta, offsetDelta, keyLen, valueLen, headerCount
	minimal := rawRecord(0, 0, -1, -1, 0)
	if len(minimal) != minRecordSize {
		t.Fatalf("minimal record is %d bytes", len(minimal))
	}
	longBody := append([]byte{}, minimal...)
	longBody[0] = 2 * 7 // zigzag varint 7: one byte more than the fields use
	longBody = append(longBody, 0)

	for name, b := range map[string][]byte{
		"magic 1":               legacyMessage(1),
		"short":                 buildBatch(t, "none", 0, sampleRecords())[:60],
		"length mismatch":       append(buildBatch(t, "none", 0, sampleRecords()), 0),
		"more records claimed":  batchWith(0, 4, good),
		"fewer records claimed": batchWith(0, 2, good),
		"negative count":        batchWith(0, -1, good),
		"huge count":            batchWith(0, 1<<30, good),
		"codec 5":               batchWith(5, 3, good),
		"bad gzip":              batchWith(1, 3, good),
		"bad lz4":               batchWith(3, 3, good),
		"bad zstd":              batchWith(4, 3, good),
		"bad snappy":            batchWith(2, 3, []byte{0xff, 0xff, 0xff}),
		"xerial short header":   batchWith(2, 3, xerialMagic),
		"xerial bad chunk":      batchWith(2, 3, append(xerialFrame(good, 50), 0, 0, 0, 9, 1)),
		"xerial negative chunk": batchWith(2, 3, append(xerialFrame(good, 50), 0xff, 0xff, 0xff, 0xff)),
		"record size past end":  batchWith(0, 1, []byte{2 * 100, 0, 0}),
		"negative record size":  batchWith(0, 1, []byte{1}),
		"record body too long":  batchWith(0, 1, longBody),
		"truncated varint":      batchWith(0, 1, []byte{0x80}),
		"varint above int32":    batchWith(0, 1, binary.AppendVarint(nil, 1<<40)),
		"key past end":          batchWith(0, 1, rawRecord(0, 0, 50)),
		"negative header count": batchWith(0, 1, rawRecord(0, 0, -1, -1, -1)),
		"huge header count":     batchWith(0, 1, rawRecord(0, 0, -1, -1, 1<<30)),
		"negative header key":   batchWith(0, 1, rawRecord(0, 0, -1, -1, 1, -1, -1)),
		"header value past end": batchWith(0, 1, rawRecord(0, 0, -1, -1, 1, 0, 9)),
		"no attributes":         batchWith(0, 1, []byte{0}),
	} {
		if _, recs, err := DecodeRecords(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %d records, err %v", name, len(recs), err)
		}
	}

	// Kafka reads any negative key, value or header value length as null.
	rec := append(rawRecord(3, 0, -7, -2, 1, 1), 'h') // header key "h"
	rec = binary.AppendVarint(rec, -2)
	rec[0] = byte(2 * (len(rec) - 1)) // fix the one-byte length varint
	_, recs, err := DecodeRecords(batchWith(0, 1, rec))
	if err != nil {
		t.Fatal(err)
	}
	if r := recs[0]; r.Key != nil || r.Value != nil || r.TimestampDelta != 3 || len(r.Headers) != 1 ||
		r.Headers[0].Key != "h" || r.Headers[0].Value != nil {
		t.Fatalf("%+v", r)
	}
}

// TestDecodeRecordsBounded feeds every codec a bomb: input that decompresses
// to more than the limit. With the real limit the same paths guard 256 MiB.
func TestDecodeRecordsBounded(t *testing.T) {
	const limit = 1 << 20
	zeros := make([]byte, 2*limit)
	var gz, lz bytes.Buffer
	gw := gzip.NewWriter(&gz)
	gw.Write(zeros)
	gw.Close()
	lw := lz4.NewWriter(&lz)
	lw.Write(zeros)
	lw.Close()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	zs := enc.EncodeAll(zeros, nil)
	enc.Close()
	// A streamed zstd frame carries no content size: the limit must hold
	// while decoding, not only from the declared size.
	var zstream bytes.Buffer
	zw, _ := zstd.NewWriter(&zstream)
	zw.Write(zeros)
	zw.Close()

	for name, b := range map[string][]byte{
		"gzip":        batchWith(1, 1, gz.Bytes()),
		"lz4":         batchWith(3, 1, lz.Bytes()),
		"zstd":        batchWith(4, 1, zs),
		"zstd stream": batchWith(4, 1, zstream.Bytes()),
		"snappy":      batchWith(2, 1, snappy.Encode(nil, zeros)),
		"xerial":      batchWith(2, 1, xerialFrame(zeros, 64<<10)),
	} {
		if _, _, err := decodeBatch(b, limit); !errors.Is(err, ErrMalformed) || !errors.Is(err, errDecompressedTooLarge) {
			t.Errorf("%s: %v", name, err)
		}
	}

	// A snappy block may not claim more than its size can encode; 5 bytes
	// claiming 1 GiB must fail before allocating it.
	lie := binary.AppendUvarint(nil, 1<<30)
	lie = append(lie, 0)
	if _, _, err := DecodeRecords(batchWith(2, 1, lie)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("snappy length lie: %v", err)
	}
	// The real bound, through the zstd declared content size.
	big := make([]byte, maxDecompressed+1)
	enc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	zs = enc.EncodeAll(big, nil)
	enc.Close()
	big = nil
	if _, _, err := DecodeRecords(batchWith(4, 1, zs)); !errors.Is(err, errDecompressedTooLarge) {
		t.Fatalf("256 MiB zstd bomb: %v", err)
	}
}
