package kafkaproto

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Record is one record of a v2 batch. Key, Value and header values alias the
// batch (uncompressed) or the buffer it was decompressed into.
type Record struct {
	OffsetDelta    int32
	TimestampDelta int64
	Key, Value     []byte // nil when null
	Headers        []RecordHeader
}

// RecordHeader is one record header. Kafka header keys are never null.
type RecordHeader struct {
	Key   string
	Value []byte // nil when null
}

// maxDecompressed bounds a batch's decompressed records so that a small
// hostile batch (a decompression bomb) cannot take the process's memory.
const maxDecompressed = 256 << 20

// minRecordSize is the smallest encoded record: a one-byte length varint,
// then attributes, timestampDelta, offsetDelta, keyLen, valueLen and header
// count of one byte each. Untrusted counts are bounded with it.
const minRecordSize = 7

// DecodeRecords decompresses and decodes the records of one v2 batch, which
// must be exactly the batch's TotalSize bytes. It is meant for reads such as
// timestamp lookups on batches that were validated when produced, so it does
// not check the CRC. Codecs 0..4 are supported: none, gzip, snappy (a raw
// block, or the xerial framing of the Java producer), lz4 (frame format)
// and zstd. Malformed batches, records that do not add up to NumRecords, and
// records decompressing to more than 256 MiB return an error wrapping
// ErrMalformed.
func DecodeRecords(batch []byte) (BatchHeader, []Record, error) {
	return decodeBatch(batch, maxDecompressed)
}

// decodeBatch is DecodeRecords with the decompression bound as a parameter,
// so tests can exercise it without building 256 MiB bombs.
func decodeBatch(batch []byte, limit int) (BatchHeader, []Record, error) {
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return h, nil, err
	}
	if h.Magic != 2 {
		return h, nil, fmt.Errorf("%w: batch magic %d", ErrMalformed, h.Magic)
	}
	if h.TotalSize() != len(batch) {
		return h, nil, fmt.Errorf("%w: batch length %d does not match %d bytes", ErrMalformed, h.Length, len(batch))
	}
	if h.NumRecords < 0 {
		return h, nil, fmt.Errorf("%w: record count %d", ErrMalformed, h.NumRecords)
	}
	data := batch[BatchHeaderSize:]
	if c := h.Codec(); c != 0 {
		if data, err = decompress(c, data, limit); err != nil {
			return h, nil, fmt.Errorf("%w: codec %d: %w", ErrMalformed, c, err)
		}
	}
	recs, err := decodeRecords(data, h.NumRecords)
	return h, recs, err
}

// decodeRecords decodes exactly n records filling all of data.
func decodeRecords(data []byte, n int32) ([]Record, error) {
	recs := make([]Record, 0, min(int(n), len(data)/minRecordSize))
	r := reader{b: data}
	for i := range n {
		size := r.varint32()
		if r.err == nil && (size < 0 || int(size) > len(r.b)) {
			r.fail("record size")
		}
		if r.err != nil {
			return nil, fmt.Errorf("%w: record %d of %d: %v", ErrMalformed, i, n, r.err)
		}
		// A record's fields must fill exactly its declared size, as Kafka
		// checks, so a bad length cannot shift the next record.
		body := reader{b: r.b[:size]}
		r.b = r.b[size:]
		rec := body.record()
		if body.err == nil && len(body.b) != 0 {
			body.fail("record size")
		}
		if body.err != nil {
			return nil, fmt.Errorf("%w: record %d of %d: %v", ErrMalformed, i, n, body.err)
		}
		recs = append(recs, rec)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last of %d records", ErrMalformed, len(r.b), n)
	}
	return recs, nil
}

// reader decodes the varint-framed fields of a record. The first failure is
// kept in err and every later read returns zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = errors.New("bad " + what)
	}
	r.b = nil
}

func (r *reader) varint64() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint32() int32 {
	v := r.varint64()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail("varint")
		return 0
	}
	return int32(v)
}

// nullableBytes reads a varint length and that many bytes; like Kafka, any
// negative length means null.
func (r *reader) nullableBytes() []byte {
	n := r.varint32()
	if r.err != nil || n < 0 {
		return nil
	}
	if int(n) > len(r.b) {
		r.fail("length")
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) record() Record {
	var rec Record
	if len(r.b) < 1 {
		r.fail("attributes")
		return rec
	}
	r.b = r.b[1:] // attributes: unused by record format v2
	rec.TimestampDelta = r.varint64()
	rec.OffsetDelta = r.varint32()
	rec.Key = r.nullableBytes()
	rec.Value = r.nullableBytes()
	n := r.varint32()
	if r.err != nil {
		return rec
	}
	// Each header takes at least two bytes (two one-byte lengths).
	if n < 0 || int(n) > len(r.b)/2 {
		r.fail("header count")
		return rec
	}
	if n > 0 {
		rec.Headers = make([]RecordHeader, 0, n)
	}
	for range n {
		kl := r.varint32()
		if r.err == nil && (kl < 0 || int(kl) > len(r.b)) {
			r.fail("header key length")
		}
		if r.err != nil {
			return rec
		}
		key := string(r.b[:kl])
		r.b = r.b[kl:]
		rec.Headers = append(rec.Headers, RecordHeader{Key: key, Value: r.nullableBytes()})
	}
	return rec
}

// decompress returns the decompressed records section of a batch, failing if
// it exceeds limit bytes.
func decompress(codec int8, src []byte, limit int) (out []byte, err error) {
	// The decoders are third-party code fed hostile bytes: a bug in one
	// must fail this batch, not the process.
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("decoder panic: %v", p)
		}
	}()
	switch codec {
	case 1:
		// Readers are pooled: each carries tens of KiB of decoder state.
		zr, _ := gzipReaders.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(bytes.NewReader(src))
		} else {
			err = zr.Reset(bytes.NewReader(src))
		}
		if err != nil {
			return nil, err
		}
		defer gzipReaders.Put(zr)
		return readBounded(zr, len(src), limit)
	case 2:
		return decodeSnappy(src, limit)
	case 3:
		lr := lz4Readers.Get().(*lz4.Reader)
		lr.Reset(bytes.NewReader(src))
		defer lz4Readers.Put(lr)
		return readBounded(lr, len(src), limit)
	case 4:
		dec, err := zstdDecoder()
		if err != nil {
			return nil, err
		}
		out, err := dec.DecodeAll(src, nil)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || len(out) > limit {
			return nil, errDecompressedTooLarge
		}
		return out, err
	default:
		return nil, errors.New("unknown compression codec")
	}
}

var (
	gzipReaders sync.Pool // *gzip.Reader, created on first use
	lz4Readers  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
)

// readBounded reads r to the end, failing past limit bytes. The buffer
// starts from a guess based on the compressed size and grows with what
// actually decodes, never with what the input claims.
func readBounded(r io.Reader, srcLen, limit int) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, min(4*srcLen+512, 8<<20, limit+1)))
	n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if n > int64(limit) {
		return nil, errDecompressedTooLarge
	}
	return buf.Bytes(), nil
}

var errDecompressedTooLarge = errors.New("records decompress past the size limit")

// zstdDecoder is shared: DecodeAll is safe for concurrent use. Its memory
// bound rejects frames declaring or producing more than maxDecompressed.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(maxDecompressed))
})

// xerialMagic starts snappy data framed the way snappy-java's
// SnappyOutputStream writes it (the Java producer): the magic, an int32
// version and an int32 minimum compatible version, then chunks of an int32
// big-endian length and a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// maxSnappyRatio bounds the decoded length a snappy block may claim: the
// format's best ratio is a 64-byte copy in 3 bytes, so a block claiming more
// than this is lying, and rejecting it avoids allocating the claim.
const maxSnappyRatio = 32

func decodeSnappy(src []byte, limit int) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		if _, err := snappyLen(src, 0, limit); err != nil {
			return nil, err
		}
		return snappy.Decode(nil, src)
	}
	if len(src) < xerialHeaderSize {
		return nil, errors.New("short xerial header")
	}
	// First pass: check every chunk's framing and claimed size so the
	// output is allocated once and bounded.
	total := 0
	for rem := src[xerialHeaderSize:]; len(rem) > 0; {
		chunk, next, err := xerialChunk(rem)
		if err != nil {
			return nil, err
		}
		l, err := snappyLen(chunk, total, limit)
		if err != nil {
			return nil, err
		}
		total += l
		rem = next
	}
	out := make([]byte, 0, total)
	for rem := src[xerialHeaderSize:]; len(rem) > 0; {
		chunk, next, _ := xerialChunk(rem)
		l, _ := snappy.DecodedLen(chunk)
		dec, err := snappy.Decode(out[len(out):len(out)+l], chunk)
		if err != nil {
			return nil, err
		}
		out = out[:len(out)+len(dec)]
		rem = next
	}
	return out, nil
}

// xerialChunk splits the first chunk off xerial-framed data.
func xerialChunk(b []byte) (chunk, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, errors.New("truncated xerial chunk length")
	}
	n := int32(binary.BigEndian.Uint32(b))
	b = b[4:]
	if n < 0 || int(n) > len(b) {
		return nil, nil, errors.New("bad xerial chunk length")
	}
	return b[:n], b[n:], nil
}

// snappyLen returns the decoded length a snappy block claims, rejecting a
// claim that is impossible for the block's size or would take the output
// (already have bytes) past limit.
func snappyLen(block []byte, have, limit int) (int, error) {
	l, err := snappy.DecodedLen(block)
	if err != nil {
		return 0, err
	}
	if l > maxSnappyRatio*len(block)+64 {
		return 0, errors.New("snappy block claims an impossible decoded length")
	}
	if l > limit-have {
		return 0, errDecompressedTooLarge
	}
	return l, nil
}
