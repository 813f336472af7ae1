package kafkaproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// batchOf wraps raw records, compressed with codec, in a batch claiming n
// records, with a valid CRC and lastOffsetDelta n-1: it passes
// ValidateProduced whatever the records are.
func batchOf(t testing.TB, codec string, n int32, raw []byte) []byte {
	t.Helper()
	attrs, data := compressRecords(t, codec, raw)
	b := batchWith(attrs, n, data)
	if _, err := ValidateProduced(b); err != nil {
		t.Fatalf("test batch fails ValidateProduced: %v", err)
	}
	return b
}

// mixedRecords are n records whose values range from empty to several
// times the stream window (every bigEvery-th record), so streamed fields
// straddle window refills.
func mixedRecords(n, bigEvery int) []kmsg.Record {
	rng := rand.New(rand.NewPCG(7, 7))
	recs := make([]kmsg.Record, n)
	for i := range recs {
		size := rng.IntN(300)
		if i%bigEvery == 3 {
			size = streamWindow*3 + rng.IntN(streamWindow)
		}
		v := make([]byte, size)
		for j := range v {
			v[j] = "abcdefgh"[rng.IntN(8)]
		}
		recs[i] = kmsg.Record{TimestampDelta64: int64(i), Key: fmt.Appendf(nil, "key-%d", i), Value: v}
		if i%7 == 0 {
			recs[i].Headers = []kmsg.Header{{Key: "h", Value: v[:min(len(v), 20)]}, {Key: "null"}}
		}
	}
	return recs
}

func TestValidateRecordsAcceptsEveryCodec(t *testing.T) {
	for _, codec := range testCodecs {
		t.Run(codec, func(t *testing.T) {
			for name, recs := range map[string][]kmsg.Record{"sample": sampleRecords(), "mixed": mixedRecords(200, 10)} {
				b := buildBatch(t, codec, 1_700_000_000_000, recs)
				if err := ValidateRecords(b, RecordRules{}); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
			// Every key of mixedRecords is set: a compacted topic takes them.
			if err := ValidateRecords(buildBatch(t, codec, 0, mixedRecords(50, 10)), RecordRules{KeyRequired: true}); err != nil {
				t.Errorf("keyed records on a compacted topic: %v", err)
			}
		})
	}
}

// TestValidateRecordsAcceptsFranzGo validates batches a real client
// produced, in every codec.
func TestValidateRecordsAcceptsFranzGo(t *testing.T) {
	for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		recs, _ := kgoTestRecords()
		var n int
		for _, field := range produceWithKgo(t, codec, recs) {
			batches, err := SplitBatches(field)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range batches {
				if err := ValidateRecords(b, RecordRules{}); err != nil {
					t.Errorf("codec %v: %v", codec, err)
				}
				n++
			}
		}
		if n == 0 {
			t.Fatalf("codec %v: no batches", codec)
		}
	}
}

// wantReject is what a rejected batch must answer.
type wantReject struct {
	code    *kerr.Error
	records []int32 // records named at fault
}

func checkReject(t *testing.T, name string, err error, want wantReject) {
	t.Helper()
	var re *RecordError
	if !errors.As(err, &re) {
		t.Errorf("%s: error %v, want a *RecordError with %v", name, err, want.code)
		return
	}
	if re.Err != want.code || !slices.Equal(re.Records, want.records) || re.Message == "" {
		t.Errorf("%s: %v (records %v), want %v (records %v)", name, err, re.Records, want.code, want.records)
	}
	if !errors.Is(err, want.code) {
		t.Errorf("%s: errors.Is(%v, %v) false", name, err, want.code)
	}
}

// TestValidateRecordsRejectsBadFraming runs every framing fault through
// every codec: the records decompress, but do not add up.
func TestValidateRecordsRejectsBadFraming(t *testing.T) {
	good := encodeRecords(sampleRecords())
	// tsDelta, offsetDelta, keyLen, valueLen, headerCount
	minimal := rawRecord(0, 0, -1, -1, 0)
	longBody := slices.Clone(minimal)
	longBody[0] = 2 * 7 // zigzag varint 7: one byte more than the fields use
	longBody = append(longBody, 0)
	withLen := func(n int64, body []byte) []byte { return append(binary.AppendVarint(nil, n), body...) }
	keyed := func(offsetDelta int64) []byte { return rawRecord(0, offsetDelta, 1, 'k', -1, 0) }

	invalid := wantReject{code: kerr.InvalidRecord}
	for _, tc := range []struct {
		name string
		n    int32
		raw  []byte
		want wantReject
	}{
		{"record count above the records", 4, good, invalid},
		{"record count below the records", 2, good, invalid},
		{"record length 2^31-1", 1, withLen(math.MaxInt32, minimal[1:]), invalid},
		{"record length above int32", 1, withLen(1<<40, minimal[1:]), invalid},
		{"negative record length", 1, withLen(-5, minimal[1:]), invalid},
		{"key length 2^31-1", 1, rawRecord(0, 0, math.MaxInt32, -1, 0), invalid},
		{"value length 2^31-1", 1, rawRecord(0, 0, -1, math.MaxInt32, 0), invalid},
		{"value past its record", 2, append(rawRecord(0, 0, -1, 5), minimal...), invalid},
		{"header count 2^31-1", 1, rawRecord(0, 0, -1, -1, math.MaxInt32), invalid},
		{"negative header count", 1, rawRecord(0, 0, -1, -1, -1), invalid},
		{"negative header key length", 1, rawRecord(0, 0, -1, -1, 1, -1, -1), invalid},
		{"header value past its record", 1, rawRecord(0, 0, -1, -1, 1, 0, 9), invalid},
		{"fields shorter than the record", 1, longBody, invalid},
		{"truncated varint", 1, []byte{0x80}, invalid},
		{"no attributes", 1, []byte{0}, invalid},
		{"trailing byte", 1, append(slices.Clone(minimal), 0), invalid},
		{"offset deltas swapped", 2, append(rawRecord(0, 1, -1, -1, 0), minimal...), wantReject{kerr.InvalidRecord, []int32{0, 1}}},
		{"offset delta skips", 3, slices.Concat(minimal, rawRecord(0, 1, -1, -1, 0), rawRecord(0, 5, -1, -1, 0)), wantReject{kerr.InvalidRecord, []int32{2}}},
		{"keyed records still framed", 2, append(keyed(0), keyed(1)[:4]...), invalid},
	} {
		for _, codec := range testCodecs {
			b := batchOf(t, codec, tc.n, tc.raw)
			checkReject(t, tc.name+"/"+codec, ValidateRecords(b, RecordRules{}), tc.want)
			// DecodeRecords rejects what is malformed too (it does not
			// check offset deltas: compacted batches have gaps).
			if tc.want.records == nil {
				if _, _, err := DecodeRecords(b); !errors.Is(err, ErrMalformed) {
					t.Errorf("%s/%s: DecodeRecords: %v", tc.name, codec, err)
				}
			}
		}
	}
}

func TestValidateRecordsNullKeyOnCompactedTopic(t *testing.T) {
	recs := sampleRecords() // record 1 has a null key, record 2 an empty one
	recs = append(recs, kmsg.Record{Value: []byte("no key either")})
	for _, codec := range testCodecs {
		b := buildBatch(t, codec, 0, recs)
		checkReject(t, "compacted/"+codec, ValidateRecords(b, RecordRules{KeyRequired: true}), wantReject{kerr.InvalidRecord, []int32{1, 3}})
		if err := ValidateRecords(b, RecordRules{}); err != nil {
			t.Errorf("not compacted/%s: %v", codec, err)
		}
	}
}

// TestValidateRecordsRejectsJunkPayload: payloads that are not their
// codec's format, with a valid CRC, and streams cut short.
func TestValidateRecordsRejectsJunkPayload(t *testing.T) {
	good := encodeRecords(sampleRecords())
	junk := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef, 0x42}, 40)
	corrupt := wantReject{code: kerr.CorruptMessage}
	cases := map[string][]byte{
		"gzip junk":               batchWith(1, 3, junk),
		"snappy junk":             batchWith(2, 3, junk),
		"snappy impossible claim": batchWith(2, 1, append(binary.AppendUvarint(nil, 1<<30), 0)),
		"xerial junk":             batchWith(2, 3, append(slices.Clone(xerialFrame(nil, 1)), junk...)),
		"xerial short header":     batchWith(2, 3, xerialMagic),
		"xerial bad chunk":        batchWith(2, 3, append(xerialFrame(good, 50), 0, 0, 0, 9, 1)),
		"lz4 junk":                batchWith(3, 3, junk),
		"zstd junk":               batchWith(4, 3, junk),
		"codec 6":                 batchWith(6, 3, good),
	}
	for _, codec := range []string{"gzip", "snappy", "xerial", "lz4", "zstd"} {
		attrs, data := compressRecords(t, codec, good)
		cases[codec+" cut short"] = batchWith(attrs, 3, data[:len(data)/2])
		if codec == "gzip" || codec == "zstd" {
			// These carry a checksum of what they decompress to; snappy
			// and (as clients write it) lz4 do not, so a flipped byte
			// there may just change a value.
			flipped := slices.Clone(data)
			flipped[len(flipped)/2] ^= 0x55
			cases[codec+" bit flipped"] = batchWith(attrs, 3, flipped)
		}
	}
	for name, b := range cases {
		checkReject(t, name, ValidateRecords(b, RecordRules{}), corrupt)
	}
}

// TestValidateRecordsZstdWindowBound: a frame asking for a window above
// maxZstdWindow is refused before the decoder allocates it.
func TestValidateRecordsZstdWindowBound(t *testing.T) {
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1), zstd.WithSingleSegment(false))
	if err != nil {
		t.Fatal(err)
	}
	w.Write(encodeRecords(sampleRecords()))
	w.Close()
	// Magic, a frame header descriptor without the single-segment flag,
	// then the window descriptor: exponent e in its top five bits declares
	// a window of 1 KiB << e. The content is unchanged, so any declared
	// window decodes it.
	frame := buf.Bytes()
	if frame[4]&0x20 != 0 {
		t.Fatalf("single-segment frame: % x", frame[:6])
	}
	window := func(log int) []byte {
		f := slices.Clone(frame)
		f[5] = byte(log-10) << 3
		return batchWith(4, 3, f)
	}
	if err := ValidateRecords(window(23), RecordRules{}); err != nil { // 8 MiB
		t.Fatalf("window of 8 MiB: %v", err)
	}
	for _, log := range []int{24, 30, 41} {
		checkReject(t, fmt.Sprintf("window of 2^%d", log), ValidateRecords(window(log), RecordRules{}), wantReject{code: kerr.CorruptMessage})
	}
}

// TestValidateRecordsBounded: records decompressing past the bound are
// too large, found as they stream.
func TestValidateRecordsBounded(t *testing.T) {
	const limit = 1 << 20
	// 40 records of 64 KiB of zeros: 2.5 MiB.
	recs := make([]kmsg.Record, 40)
	for i := range recs {
		recs[i] = kmsg.Record{Key: []byte("k"), Value: make([]byte, 64<<10)}
	}
	raw := encodeRecords(recs)
	for _, codec := range []string{"gzip", "snappy", "xerial", "lz4", "zstd"} {
		attrs, data := compressRecords(t, codec, raw)
		if codec == "xerial" {
			data = xerialFrame(raw, 64<<10)
		}
		b := batchWith(attrs, int32(len(recs)), data)
		checkReject(t, codec, validateRecords(b, RecordRules{}, limit), wantReject{code: kerr.MessageTooLarge})
		if err := validateRecords(b, RecordRules{}, 4*limit); err != nil {
			t.Errorf("%s under the bound: %v", codec, err)
		}
		// A length past the bound over a short stream is a lie: the
		// records end first.
		lie := batchOf(t, codec, 1, append(binary.AppendVarint(nil, 8*limit), make([]byte, 100)...))
		checkReject(t, codec+" length past the bound", validateRecords(lie, RecordRules{}, limit), wantReject{code: kerr.InvalidRecord})
	}
}

// TestValidateRecordsDoesNotAllocatePerRecord: a valid batch costs no
// allocation, whatever its codec and record count, once the pooled decoders
// are warm.
func TestValidateRecordsDoesNotAllocatePerRecord(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	for _, codec := range testCodecs {
		allocs := func(n int) float64 {
			b := buildBatch(t, codec, 0, mixedRecords(n, 100))
			var err error
			a := testing.AllocsPerRun(50, func() { err = ValidateRecords(b, RecordRules{KeyRequired: true}) })
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		small, large := allocs(10), allocs(1000)
		t.Logf("%s: %v allocations for 10 records, %v for 1000", codec, small, large)
		if small != 0 || large != 0 {
			t.Errorf("%s: %v allocations for 10 records, %v for 1000", codec, small, large)
		}
	}
}

// benchRecords is a ~64 KiB records section of 256 records with keys,
// headers and moderately compressible values, like application data.
func benchRecords() []kmsg.Record {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"order", "id", "user", "amount", "currency", "EUR", "status", "shipped", "true", "false", "sku", "qty"}
	recs := make([]kmsg.Record, 256)
	for i := range recs {
		var v []byte
		for len(v) < 220 {
			v = append(v, words[rng.IntN(len(words))]...)
			v = fmt.Appendf(v, ":%d,", rng.IntN(100000))
		}
		recs[i] = kmsg.Record{TimestampDelta64: int64(i), Key: fmt.Appendf(nil, "user-%d", rng.IntN(10000)), Value: v,
			Headers: []kmsg.Header{{Key: "trace", Value: fmt.Appendf(nil, "%016x", rng.Uint64())}}}
	}
	return recs
}

// BenchmarkValidateRecords measures the record walk per codec. MB/s is of
// the batch as produced; raw-MB/s of its records uncompressed.
func BenchmarkValidateRecords(b *testing.B) {
	recs := benchRecords()
	rawLen := len(encodeRecords(recs))
	for _, codec := range testCodecs {
		b.Run(codec, func(b *testing.B) {
			batch := buildBatch(b, codec, 1_700_000_000_000, recs)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if err := ValidateRecords(batch, RecordRules{KeyRequired: true}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rawLen)*float64(b.N)/b.Elapsed().Seconds()/1e6, "raw-MB/s")
		})
	}
}

// BenchmarkDecodeRecords is the decoder over the same batches, for
// comparison: it materialises what the validator streams.
func BenchmarkDecodeRecords(b *testing.B) {
	recs := benchRecords()
	for _, codec := range testCodecs {
		b.Run(codec, func(b *testing.B) {
			batch := buildBatch(b, codec, 1_700_000_000_000, recs)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := DecodeRecords(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
