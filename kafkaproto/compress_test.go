package kafkaproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// targets are the compressions Recompress is tested into: every codec, and
// the level bounds of each codec that has levels.
var targets = []Compression{
	{CodecNone, 0},
	{CodecGzip, -1}, {CodecGzip, 1}, {CodecGzip, 9},
	{CodecSnappy, 0},
	{CodecLZ4, 1}, {CodecLZ4, 9}, {CodecLZ4, 17},
	{CodecZstd, -131072}, {CodecZstd, 3}, {CodecZstd, 22},
}

// kgoRecords decodes a batch the way a franz-go consumer does: its own
// decompressor and kmsg's record decoding, not floe's.
func kgoRecords(t *testing.T, batch []byte) []kmsg.Record {
	t.Helper()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(batch); err != nil {
		t.Fatalf("kmsg: %v", err)
	}
	raw, err := kgo.DefaultDecompressor().Decompress(rb.Records, kgo.CompressionCodecType(rb.Attributes&7))
	if err != nil {
		t.Fatalf("kgo decompress codec %d: %v", rb.Attributes&7, err)
	}
	recs := make([]kmsg.Record, rb.NumRecords)
	for i := range recs {
		n, _ := binary.Varint(raw)
		if err := recs[i].ReadFrom(raw); err != nil {
			t.Fatalf("kmsg record %d: %v", i, err)
		}
		_, l := binary.Varint(raw)
		raw = raw[l+int(n):]
	}
	if len(raw) != 0 {
		t.Fatalf("%d bytes after %d records", len(raw), rb.NumRecords)
	}
	return recs
}

func TestRecompress(t *testing.T) {
	recs := sampleRecords()
	for _, from := range testCodecs {
		src := buildBatch(t, from, 1_700_000_000_000, recs)
		// A transactional idempotent producer's batch under LogAppendTime:
		// every header field must survive.
		binary.BigEndian.PutUint32(src[12:], 7)                                          // leader epoch
		binary.BigEndian.PutUint64(src[43:], 4242)                                       // producer id
		binary.BigEndian.PutUint16(src[51:], 3)                                          // producer epoch
		binary.BigEndian.PutUint32(src[53:], 99)                                         // base sequence
		binary.BigEndian.PutUint16(src[21:], binary.BigEndian.Uint16(src[21:])|0x10|0x8) // txn, log append time
		fixBatch(src)
		sh, _ := ParseBatchHeader(src)
		want := kgoRecords(t, src)
		for _, to := range targets {
			t.Run(fmt.Sprintf("%s-to-%d-level%d", from, to.Codec, to.Level), func(t *testing.T) {
				orig := bytes.Clone(src)
				out, changed, err := Recompress(src, to)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(src, orig) {
					t.Fatal("Recompress changed its input")
				}
				if changed != (sh.Codec() != to.Codec) {
					t.Fatalf("changed %v from codec %d to %d", changed, sh.Codec(), to.Codec)
				}
				if !changed {
					if &out[0] != &src[0] {
						t.Fatal("an unchanged batch was copied")
					}
					return
				}
				// A broker would accept it: length, CRC, offsets, codec.
				h, err := ValidateProduced(out)
				if err != nil {
					t.Fatalf("ValidateProduced: %v", err)
				}
				wantH := sh
				wantH.Length, wantH.CRC = int32(len(out)-12), h.CRC
				wantH.Attributes = sh.Attributes&^7 | int16(to.Codec)
				if h != wantH {
					t.Fatalf("header\n got %+v\nwant %+v", h, wantH)
				}
				if err := ValidateRecords(out, RecordRules{}); err != nil {
					t.Fatalf("ValidateRecords: %v", err)
				}
				got := kgoRecords(t, out)
				for i := range want {
					want[i].Length, got[i].Length = 0, 0
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("records\n got %v\nwant %v", got, want)
				}
				// Back into the source codec: the records section is the
				// same bytes as before.
				back, _, err := Recompress(out, Compression{Codec: CodecNone})
				if err != nil {
					t.Fatal(err)
				}
				if plain := encodeRecords(recs); !bytes.Equal(back[BatchHeaderSize:], plain) {
					t.Fatal("records section differs after a round trip")
				}
			})
		}
	}
}

// TestRecompressCompresses: a compressible batch gets smaller in every
// codec, so the codec really is applied (not just its bits).
func TestRecompressCompresses(t *testing.T) {
	var recs []kmsg.Record
	for i := range 200 {
		recs = append(recs, kmsg.Record{Key: fmt.Appendf(nil, "key-%d", i), Value: bytes.Repeat([]byte("a fairly compressible value "), 8)})
	}
	src := buildBatch(t, "none", 1, recs)
	for _, to := range targets[1:] {
		out, _, err := Recompress(src, to)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > len(src)/3 {
			t.Errorf("codec %d level %d: %d bytes from %d", to.Codec, to.Level, len(out), len(src))
		}
	}
}

func TestRecompressLeavesAlone(t *testing.T) {
	// A control batch (a transaction marker) stays uncompressed, as Kafka
	// writes it.
	ctrl := buildBatch(t, "none", 1, []kmsg.Record{{Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0}}})
	binary.BigEndian.PutUint16(ctrl[21:], 0x30)
	fixBatch(ctrl)
	// A batch with no records (what Kafka's cleaner may leave) has none to
	// compress.
	empty := buildBatch(t, "none", 1, nil)
	for name, b := range map[string][]byte{"control": ctrl, "empty": empty} {
		out, changed, err := Recompress(b, Compression{Codec: CodecZstd, Level: 3})
		if err != nil || changed || !bytes.Equal(out, b) {
			t.Errorf("%s: changed %v err %v", name, changed, err)
		}
	}
}

func TestRecompressRefusesDamage(t *testing.T) {
	good := buildBatch(t, "snappy", 1, sampleRecords())
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 1
	// Records that do not add up to NumRecords, under a valid CRC.
	short := buildBatch(t, "none", 1, sampleRecords())
	binary.BigEndian.PutUint32(short[57:], 4)
	fixBatch(short)
	// A snappy block that does not decode, under a valid CRC.
	garbled := bytes.Clone(good)
	for i := BatchHeaderSize + 2; i < len(garbled); i++ {
		garbled[i] = 0xff
	}
	fixBatch(garbled)
	for name, b := range map[string][]byte{"crc": badCRC, "records": short, "codec": garbled, "truncated": good[:len(good)-3], "header": good[:30]} {
		if _, _, err := Recompress(b, Compression{Codec: CodecZstd}); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
		}
	}
	if _, _, err := Recompress(good, Compression{Codec: 5}); err == nil {
		t.Error("codec 5 accepted")
	}
}

// BenchmarkRecompress recompresses a 256 KiB batch of JSON-like records,
// as a producer's linger fills one, from uncompressed and from snappy into
// each codec at Kafka's default level: MB/s is of the batch as it came in.
func BenchmarkRecompress(b *testing.B) {
	var recs []kmsg.Record
	for i := 0; len(recs) == 0 || len(encodeRecords(recs)) < 256<<10; i++ {
		recs = append(recs, kmsg.Record{
			Key:   fmt.Appendf(nil, "user-%d", i%977),
			Value: fmt.Appendf(nil, `{"id":%d,"user":"user-%d","event":"page_view","path":"/products/%d","ts":%d,"ok":true}`, i, i%977, i%131, 1_700_000_000_000+int64(i)*37),
		})
	}
	for _, from := range []string{"none", "snappy"} {
		src := buildBatch(b, from, 1_700_000_000_000, recs)
		h, _ := ParseBatchHeader(src)
		for _, to := range []Compression{{CodecGzip, -1}, {CodecSnappy, 0}, {CodecLZ4, 9}, {CodecZstd, 3}, {CodecNone, 0}} {
			if to.Codec == h.Codec() {
				continue
			}
			b.Run(fmt.Sprintf("%s-to-%d", from, to.Codec), func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				b.ReportAllocs()
				var out []byte
				for b.Loop() {
					var err error
					if out, _, err = Recompress(src, to); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(out))/float64(len(src)), "out/in")
			})
		}
	}
}
