package kafkaproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"testing"
	"testing/iotest"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestSeed is req as a frame body (header and request, no size prefix),
// as kmsg's formatter writes it with client id "fuzz".
func requestSeed(req kmsg.Request) []byte {
	if req.Key() == 7 && req.GetVersion() == 0 {
		// kmsg's formatter stops after the v0 header, which has no client id.
		return rawHeader{key: 7, version: 0, corr: 1, clientID: -100}.bytes(string(req.AppendTo(nil)))
	}
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz")).AppendRequest(nil, req, 1)[4:]
}

// FuzzParseRequest feeds arbitrary frames to the header parser and decoder.
// Neither may panic, and a frame that parses must parse the same way again
// after kmsg re-encodes it.
//
// The seeds are every version of every API key kmsg knows, as a default
// (mostly empty) request, which covers every key and version the agent
// registers and every header version; testRequests add filled ones.
// FuzzAgentRequest (package agent) seeds filled requests of exactly the
// registered versions.
func FuzzParseRequest(f *testing.F) {
	for key := range int16(math.MaxInt16) {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		for v := range req.MaxVersion() + 1 {
			req.SetVersion(v)
			f.Add(requestSeed(req))
		}
	}
	for _, req := range testRequests(f) {
		f.Add(requestSeed(req))
	}
	f.Add(rawHeader{key: 18, version: 99, corr: 1, clientID: -1, tags: []byte{1, 0, 2, 'h', 'i'}}.bytes("body"))
	f.Add(rawHeader{key: 7, version: 0, corr: 1, clientID: -100}.bytes("\x00\x00\x00\x01"))
	f.Add(rawHeader{key: 999, version: 1, corr: 1, clientID: 0}.bytes(""))
	f.Fuzz(func(t *testing.T, frame []byte) {
		hdr, body, err := ParseRequestHeader(frame)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not ErrMalformed: %v", err)
			}
			return
		}
		if len(body) > len(frame)-8 {
			t.Fatalf("body of %d bytes from a %d byte frame", len(body), len(frame))
		}
		req, err := DecodeRequest(hdr, body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) || req != nil {
				t.Fatalf("decode: %v %v", req, err)
			}
			return
		}
		if hdr.APIKey == 7 && hdr.APIVersion == 0 {
			return
		}
		var opts []kmsg.RequestFormatterOpt
		if hdr.ClientID != nil {
			opts = append(opts, kmsg.FormatterClientID(*hdr.ClientID))
		}
		again := kmsg.NewRequestFormatter(opts...).AppendRequest(nil, req, hdr.CorrelationID)
		hdr2, body2, err := ParseRequestHeader(again[4:])
		if err != nil {
			t.Fatalf("re-encoded request does not parse: %v", err)
		}
		if hdr2.APIKey != hdr.APIKey || hdr2.APIVersion != hdr.APIVersion || hdr2.CorrelationID != hdr.CorrelationID ||
			(hdr2.ClientID == nil) != (hdr.ClientID == nil) || hdr.ClientID != nil && *hdr2.ClientID != *hdr.ClientID {
			t.Fatalf("header %+v became %+v", hdr, hdr2)
		}
		req2, err := DecodeRequest(hdr2, body2)
		if err != nil {
			t.Fatalf("re-encoded request does not decode: %v", err)
		}
		if !bytes.Equal(req2.AppendTo(nil), req.AppendTo(nil)) {
			t.Fatal("re-encoded request decodes differently")
		}
	})
}

// FuzzReadFrame reads frames from an arbitrary stream, in one-byte and
// half-sized reads, under a small and the default size limit. The frames
// returned must be exactly the stream's bytes after each size prefix, and
// reading must stop with the error that matches where and how the stream
// breaks off.
func FuzzReadFrame(f *testing.F) {
	f.Add(append(frameOf([]byte("first")), frameOf(nil)...), false)
	f.Add(append(frameOf(make([]byte, 64)), frameOf([]byte("x"))...), true)
	f.Add(binary.BigEndian.AppendUint32(nil, 65), false)
	f.Add(append(binary.BigEndian.AppendUint32(nil, 10), "12345"...), true)
	f.Add(append(binary.BigEndian.AppendUint32(nil, 0xffffffff), "rest"...), false)
	f.Add(append(binary.BigEndian.AppendUint32(nil, frameChunk+1), "short"...), false)
	f.Add([]byte{0, 0}, true)
	f.Fuzz(func(t *testing.T, stream []byte, oneByte bool) {
		for _, max := range []int32{64, DefaultMaxRequestSize} {
			var r io.Reader = iotest.HalfReader(bytes.NewReader(stream))
			if oneByte {
				r = iotest.OneByteReader(bytes.NewReader(stream))
			}
			rest := stream
			for {
				frame, err := ReadFrame(r, max)
				if err != nil {
					var want error
					switch {
					case len(rest) == 0:
						want = io.EOF
					case len(rest) < 4:
						want = io.ErrUnexpectedEOF
					case int32(binary.BigEndian.Uint32(rest)) < 0 || int32(binary.BigEndian.Uint32(rest)) > max:
						want = ErrFrameTooLarge
					default:
						want = io.ErrUnexpectedEOF
					}
					if !errors.Is(err, want) {
						t.Fatalf("max %d, %d bytes left: error %v, want %v", max, len(rest), err, want)
					}
					break
				}
				n := int(binary.BigEndian.Uint32(rest))
				if len(rest) < 4+n || !bytes.Equal(frame, rest[4:4+n]) || frame == nil {
					t.Fatalf("max %d: frame of %d bytes from a %d byte claim, %d bytes left", max, len(frame), n, len(rest))
				}
				rest = rest[4+n:]
			}
		}
	})
}

// seedBatches are valid batches in every codec plus edge cases.
func seedBatches(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, codec := range testCodecs {
		seeds = append(seeds, buildBatch(f, codec, 1_700_000_000_000, sampleRecords()))
	}
	seeds = append(seeds, legacyMessage(0), legacyMessage(1))
	return seeds
}

// FuzzSplitBatches checks that a records field splits into batches that
// exactly tile it, and that validating and decoding them never panics.
func FuzzSplitBatches(f *testing.F) {
	seeds := seedBatches(f)
	f.Add(bytes.Join(seeds, nil))
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, records []byte) {
		batches, err := SplitBatches(records)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not ErrMalformed: %v", err)
			}
			return
		}
		var n int
		for _, b := range batches {
			if !bytes.Equal(b, records[n:n+len(b)]) {
				t.Fatal("batches do not tile the input")
			}
			n += len(b)
			h, err := ParseBatchHeader(b)
			if err != nil && h.Magic == 2 && len(b) >= BatchHeaderSize {
				t.Fatalf("header of a split batch: %v", err)
			}
			if h.TotalSize() != len(b) {
				t.Fatalf("batch of %d bytes says %d", len(b), h.TotalSize())
			}
			if h, err := ValidateProduced(b); err == nil {
				if _, recs, err := DecodeRecords(b); err == nil && len(recs) != int(h.NumRecords) {
					t.Fatalf("%d records, header says %d", len(recs), h.NumRecords)
				}
			}
		}
		if n != len(records) {
			t.Fatalf("batches cover %d of %d bytes", n, len(records))
		}
	})
}

// FuzzWalkBatches walks arbitrary bytes as a stored run. A walk either fails
// with ErrMalformed or calls fn with v2 batches that exactly tile the input,
// each based where the previous one's offsets end, and returns the offset
// after the last; what it accepts, SplitBatches splits the same way.
func FuzzWalkBatches(f *testing.F) {
	seeds := seedBatches(f)
	f.Add(bytes.Join(seeds[:len(testCodecs)], nil), int64(0))
	for _, s := range seeds {
		f.Add(s, int64(1<<40))
	}
	f.Fuzz(func(t *testing.T, data []byte, base int64) {
		var batches [][]byte
		next := base
		end, err := WalkBatches(data, base, func(h BatchHeader, b []byte, at int64) error {
			if at != next || h.Magic != 2 || h.TotalSize() != len(b) || len(b) < BatchHeaderSize || h.LastOffsetDelta < 0 {
				t.Fatalf("batch at %d (want %d): magic %d, %d bytes, header says %d, delta %d",
					at, next, h.Magic, len(b), h.TotalSize(), h.LastOffsetDelta)
			}
			batches = append(batches, b)
			next = at + int64(h.LastOffsetDelta) + 1
			return nil
		})
		if end != next {
			t.Fatalf("returned %d, batches end at %d", end, next)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not ErrMalformed: %v", err)
			}
			return
		}
		if !bytes.Equal(bytes.Join(batches, nil), data) {
			t.Fatal("batches do not tile the input")
		}
		split, err := SplitBatches(data)
		if err != nil || len(split) != len(batches) {
			t.Fatalf("SplitBatches: %d batches, %v; the walk had %d", len(split), err, len(batches))
		}
	})
}

// FuzzDecodeRecords decodes arbitrary batches. So that mutations get past the
// header checks, each input is also decoded with its magic and length fixed
// up.
func FuzzDecodeRecords(f *testing.F) {
	for _, s := range seedBatches(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, batch []byte) {
		check := func(b []byte) {
			h, recs, err := DecodeRecords(b)
			if err != nil {
				if !errors.Is(err, ErrMalformed) || recs != nil {
					t.Fatalf("error %v with %d records", err, len(recs))
				}
				return
			}
			if len(recs) != int(h.NumRecords) {
				t.Fatalf("%d records, header says %d", len(recs), h.NumRecords)
			}
			// What ValidateRecords accepts, its Visit sees as DecodeRecords
			// decodes it.
			i := 0
			visit := func(_ int32, key, value []byte) {
				if i >= len(recs) || !bytes.Equal(key, recs[i].Key) || !bytes.Equal(value, recs[i].Value) || (key == nil) != (recs[i].Key == nil) || (value == nil) != (recs[i].Value == nil) {
					t.Fatalf("record %d: Visit saw %q %q, DecodeRecords %q %q", i, key, value, recs[i].Key, recs[i].Value)
				}
				i++
			}
			if err := ValidateRecords(b, RecordRules{Visit: visit}); err == nil && i != len(recs) {
				t.Fatalf("Visit saw %d of %d records", i, len(recs))
			}
		}
		check(batch)
		if len(batch) >= BatchHeaderSize {
			fixed := bytes.Clone(batch)
			fixed[16] = 2
			binary.BigEndian.PutUint32(fixed[8:], uint32(len(fixed)-12))
			check(fixed)
		}
	})
}

// FuzzRecompress recompresses arbitrary batches (magic, length and CRC
// fixed up so that mutations reach the records) into a codec the input
// picks: a batch that does not decode is refused with ErrMalformed, one
// that does comes out with the same records.
func FuzzRecompress(f *testing.F) {
	for _, s := range seedBatches(f) {
		f.Add(s, uint8(4))
	}
	f.Fuzz(func(t *testing.T, batch []byte, to uint8) {
		if len(batch) < BatchHeaderSize {
			return
		}
		b := bytes.Clone(batch)
		b[16] = 2
		fixBatch(b)
		c := Compression{Codec: int8(to % 5), Level: int(to/5) - 20}
		out, changed, err := Recompress(b, c)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v", err)
			}
			return
		}
		if !changed {
			return
		}
		_, want, err := DecodeRecords(b)
		if err != nil {
			t.Fatalf("recompressed a batch DecodeRecords refuses: %v", err)
		}
		h, got, err := DecodeRecords(out)
		if err != nil || h.Codec() != c.Codec || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("codec %d: %v, records differ: %v", h.Codec(), err, got)
		}
	})
}
