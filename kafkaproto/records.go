package kafkaproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/klauspost/compress/gzip"
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
// and zstd. Malformed batches, records that do not add up to NumRecords,
// records decompressing to more than 256 MiB and zstd frames asking for a
// window above 8 MiB return an error wrapping ErrMalformed. It reads records
// with the same reader and decoders as ValidateRecords, so a batch that
// passed validation decodes.
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
	w := recordWalk{reader: reader{b: data}, n: n}
	for {
		var rec Record
		if _, ok := w.next(&rec); !ok {
			break
		}
		recs = append(recs, rec)
	}
	if err := w.done(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return recs, nil
}

// recordWalk reads the n records of one batch's records section in order,
// as Kafka's record iterator does: each record's length within what is
// left, its fields filling exactly that length, n records and not a byte
// after the last. DecodeRecords and ValidateRecords both walk records with
// it, so what the validator accepts the decoder reads the same way.
type recordWalk struct {
	reader
	n, i int32 // records claimed, records read
}

// recordInfo is what a walk reports of each record, decoded or not.
type recordInfo struct {
	offsetDelta int32
	keyLen      int32 // negative: null key
	// key and value alias the reader's bytes (nil when null): valid until
	// the next read of a stream, for as long as the data in memory.
	key, value []byte
}

// next reads the next record, decoding it into rec (whose Key, Value and
// header values then alias the reader's bytes) or, with rec nil, checking
// and skipping its fields without keeping them. It reports false after the
// last record or on a failure, which done returns.
func (w *recordWalk) next(rec *Record) (recordInfo, bool) {
	if w.err != nil || w.i >= w.n {
		return recordInfo{}, false
	}
	w.lim = math.MaxInt
	size := w.varint32()
	if w.err == nil && (size < 0 || int(size) > w.left()) {
		w.fail("record size")
	}
	if w.err == nil {
		w.lim = int(size) // never negative: a failed reader keeps lim 0
	}
	info := w.record(rec)
	if w.err == nil && w.lim != 0 {
		w.fail("record size") // fields end before the declared size
	}
	if w.err != nil {
		w.err = fmt.Errorf("record %d of %d: %w", w.i, w.n, w.err)
		return recordInfo{}, false
	}
	w.i++
	return info, true
}

// done reports the walk's failure, if any, once next has returned false:
// fewer records than claimed, or bytes after the last one.
func (w *recordWalk) done() error {
	if w.err == nil && w.i < w.n {
		w.err = fmt.Errorf("%d of %d records read", w.i, w.n)
	}
	if w.err == nil && w.more() {
		w.err = fmt.Errorf("bytes after the last of %d records", w.n)
	}
	return w.err
}

// reader reads the varint-framed fields of v2 records. Its bytes b are
// either the whole records section in memory (src nil) or a window onto a
// decompressor (see stream) that each read refills as needed. lim is what
// the current record may still read: a record's fields must fill exactly
// its declared size, as Kafka checks, so a bad length cannot shift the next
// record. The first failure is kept in err and every later read returns
// zero values.
type reader struct {
	b   []byte
	lim int
	src *stream
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = errors.New("bad " + what)
	}
	r.b, r.lim = nil, 0
}

// left is how many bytes may still follow: the rest of the data in memory.
// A stream's length is known only at its end, so a record's length is
// checked as it streams: the stream ends first (a length that lies), or
// passes the decompression bound (too large).
func (r *reader) left() int {
	if r.src == nil {
		return len(r.b)
	}
	return math.MaxInt
}

// more reports whether any byte is left.
func (r *reader) more() bool {
	if r.src != nil {
		r.src.fill(r, 1)
	}
	return r.err == nil && len(r.b) > 0
}

// varint64 and varint32 read a zigzag varint. Most lengths and deltas fit
// one byte, read before any call; varint32 reads two bytes the same way,
// the lengths of records and values of 64 bytes to 8 KiB (a quarter off
// BenchmarkValidateRecords/none). The rest is varintSlow.
func (r *reader) varint64() int64 {
	if len(r.b) > 0 && r.b[0] < 0x80 && r.lim > 0 {
		x := r.b[0]
		r.b, r.lim = r.b[1:], r.lim-1
		return int64(x>>1) ^ -int64(x&1)
	}
	return r.varintSlow()
}

func (r *reader) varint32() int32 {
	if len(r.b) > 0 && r.b[0] < 0x80 && r.lim > 0 {
		x := r.b[0]
		r.b, r.lim = r.b[1:], r.lim-1
		return int32(x>>1) ^ -int32(x&1)
	}
	if len(r.b) > 1 && r.b[1] < 0x80 && r.lim > 1 {
		// Two bytes: the length of a record, key or value of up to 8 KiB.
		x := uint32(r.b[0]&0x7f) | uint32(r.b[1])<<7
		r.b, r.lim = r.b[2:], r.lim-2
		return int32(x>>1) ^ -int32(x&1)
	}
	v := r.varintSlow()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail("varint")
		return 0
	}
	return int32(v)
}

func (r *reader) varintSlow() int64 {
	if r.src != nil && len(r.b) < binary.MaxVarintLen64 {
		r.src.fill(r, binary.MaxVarintLen64)
	}
	v, n := binary.Varint(r.b)
	if n <= 0 || n > r.lim {
		r.fail("varint")
		return 0
	}
	r.b, r.lim = r.b[n:], r.lim-n
	return v
}

// bytes consumes the record's next n bytes and returns them, or, reading a
// stream, skips them and returns nil: a key or value may be larger than the
// window, and validation needs only its length.
func (r *reader) bytes(n int) []byte {
	// After a failure lim is 0: any n > 0 fails again, keeping the first err.
	if uint(n) > uint(r.lim) {
		r.fail("length")
		return nil
	}
	r.lim -= n
	if r.src != nil {
		r.src.skip(r, n)
		return nil
	}
	// In memory lim never exceeds len(b): next checked the record's size.
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// nullableBytes reads a varint length and that many bytes; like Kafka, any
// negative length means null (nil, with the length returned as -1).
func (r *reader) nullableBytes() ([]byte, int32) {
	n := r.varint32()
	if r.err != nil || n < 0 {
		return nil, -1
	}
	return r.bytes(int(n)), n
}

// record reads one record's fields within lim, filling rec unless it is nil.
func (r *reader) record(rec *Record) recordInfo {
	var info recordInfo
	r.bytes(1) // attributes: unused by record format v2
	tsDelta := r.varint64()
	info.offsetDelta = r.varint32()
	key, kl := r.nullableBytes()
	value, _ := r.nullableBytes()
	info.keyLen = kl
	info.key, info.value = key, value
	n := r.varint32()
	if r.err != nil {
		return info
	}
	// Each header takes at least two bytes (two one-byte lengths).
	if n < 0 || int(n) > r.lim/2 {
		r.fail("header count")
		return info
	}
	if rec != nil {
		*rec = Record{OffsetDelta: info.offsetDelta, TimestampDelta: tsDelta, Key: key, Value: value}
		if n > 0 {
			rec.Headers = make([]RecordHeader, 0, n)
		}
	}
	for range n {
		// Header keys are never null: Kafka rejects a negative length.
		kl := r.varint32()
		if r.err == nil && kl < 0 {
			r.fail("header key length")
		}
		k := r.bytes(int(kl))
		v, _ := r.nullableBytes()
		if r.err != nil {
			return info
		}
		if rec != nil {
			rec.Headers = append(rec.Headers, RecordHeader{Key: string(k), Value: v})
		}
	}
	return info
}

// decompress returns the decompressed records section of a batch, failing if
// it exceeds limit bytes.
func decompress(codec int8, src []byte, limit int) (out []byte, err error) {
	if codec == 2 && !bytes.HasPrefix(src, xerialMagic) {
		return decodeSnappyBlock(nil, src, limit)
	}
	c := codecPool.Get().(*codecs)
	// The decoders are third-party code fed hostile bytes: a bug in one
	// must fail this batch, not the process. A decoder that panicked is
	// not pooled again.
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("decoder panic: %v", p)
			return
		}
		c.release()
	}()
	r, err := c.open(codec, src, limit)
	if err != nil {
		return nil, err
	}
	return readBounded(r, len(src), limit)
}

// codecs holds one decompressor of each kind, reused across batches through
// codecPool: each carries tens of KiB of decoder state (a zstd decoder up
// to its window), so creating them per batch would dominate small batches.
// A codecs is used by one goroutine at a time; decoders are created on
// first use.
type codecs struct {
	src    bytes.Reader
	gzip   *gzip.Reader
	lz4    *lz4.Reader
	zstd   *zstd.Decoder
	xerial xerialReader
	stream stream // ValidateRecords' window onto one of the above
}

var codecPool = sync.Pool{New: func() any { return new(codecs) }}

// maxZstdWindow bounds the history a zstd frame may ask the decoder to
// keep, so that a frame claiming a large window cannot make each decoder
// allocate it. 8 MiB is the largest window RFC 8878 recommends decoders
// support and encoders stay within; Kafka clients' defaults use 64 KiB
// (franz-go) to 2 MiB (zstd level 3 in the Java client and librdkafka).
const maxZstdWindow = 8 << 20

// open returns a reader of the decompressed records section src, for
// codecs 1 (gzip), 3 (lz4), 4 (zstd) and 2 when framed the xerial way; a
// raw snappy block cannot be streamed (its copies may reach back across the
// whole block) and is decoded by decodeSnappyBlock instead. The reader
// fails once more than limit bytes decompress only for xerial; callers
// count the others. It is valid until release.
func (c *codecs) open(codec int8, src []byte, limit int) (io.Reader, error) {
	c.src.Reset(src)
	switch codec {
	case 1:
		if c.gzip == nil {
			zr, err := gzip.NewReader(&c.src)
			if err != nil {
				return nil, err
			}
			c.gzip = zr
			return zr, nil
		}
		if err := c.gzip.Reset(&c.src); err != nil {
			return nil, err
		}
		return c.gzip, nil
	case 2:
		if err := c.xerial.reset(src, limit); err != nil {
			return nil, err
		}
		return &c.xerial, nil
	case 3:
		if c.lz4 == nil {
			c.lz4 = lz4.NewReader(nil)
		}
		c.lz4.Reset(&c.src)
		return c.lz4, nil
	case 4:
		if c.zstd == nil {
			// One goroutine-free decoder per codecs: concurrency 1 decodes
			// synchronously inside Read.
			d, err := zstd.NewReader(nil,
				zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(maxZstdWindow),
				zstd.WithDecoderMaxMemory(maxDecompressed))
			if err != nil {
				return nil, err
			}
			c.zstd = d
		}
		if err := c.zstd.Reset(&c.src); err != nil {
			return nil, err
		}
		return c.zstd, nil
	default:
		return nil, errors.New("unknown compression codec")
	}
}

// release drops the references to the last batch and pools c again.
func (c *codecs) release() {
	c.src.Reset(nil)
	c.xerial.reset(nil, 0)
	if cap(c.xerial.out) > maxPooledBlock {
		c.xerial.out = nil
	}
	if c.zstd != nil {
		_ = c.zstd.Reset(nil)
	}
	codecPool.Put(c)
}

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

// decodeSnappyBlock decodes one raw snappy block into dst's array if it
// fits, else a new one. What it allocates is bounded by the block's size
// (maxSnappyRatio) and limit, never by its claim alone.
func decodeSnappyBlock(dst, src []byte, limit int) ([]byte, error) {
	l, err := snappyLen(src, 0, limit)
	if err != nil {
		return nil, err
	}
	if cap(dst) < l {
		dst = make([]byte, l)
	}
	return snappy.Decode(dst[:l], src)
}

// xerialReader decodes xerial-framed snappy one chunk at a time, so what it
// holds is one chunk's output (snappy-java writes 32 KiB chunks), not the
// whole records section.
type xerialReader struct {
	rem   []byte // chunks not yet decoded
	out   []byte // the current chunk's output; its array is reused
	pos   int    // bytes of out already read
	total int    // bytes decoded so far
	limit int
}

// reset starts reading src, checking its header; nil src releases the
// previous input.
func (x *xerialReader) reset(src []byte, limit int) error {
	*x = xerialReader{out: x.out[:0], limit: limit}
	if src == nil {
		return nil
	}
	if len(src) < xerialHeaderSize || !bytes.HasPrefix(src, xerialMagic) {
		return errors.New("short xerial header")
	}
	x.rem = src[xerialHeaderSize:]
	return nil
}

func (x *xerialReader) Read(p []byte) (int, error) {
	for x.pos == len(x.out) {
		if len(x.rem) == 0 {
			return 0, io.EOF
		}
		chunk, next, err := xerialChunk(x.rem)
		if err != nil {
			return 0, err
		}
		out, err := decodeSnappyBlock(x.out, chunk, x.limit-x.total)
		if err != nil {
			return 0, err
		}
		x.out, x.pos, x.rem = out, 0, next
		x.total += len(out)
	}
	n := copy(p, x.out[x.pos:])
	x.pos += n
	return n, nil
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
