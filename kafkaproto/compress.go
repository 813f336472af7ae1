package kafkaproto

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"floe/internal/crc32c"
)

// The compression codecs of a v2 batch's attributes (their low three bits).
const (
	CodecNone   int8 = 0
	CodecGzip   int8 = 1
	CodecSnappy int8 = 2
	CodecLZ4    int8 = 3
	CodecZstd   int8 = 4
)

// Compression is what a batch's records are compressed with: a codec and,
// for gzip, lz4 and zstd, the level in Kafka's terms (its topic configs
// compression.gzip.level: -1 for the default or 1..9; compression.lz4.level:
// 1..17; compression.zstd.level: -131072..22). Levels map onto the ones
// the Go encoders have: lz4 up to 9 is its fast mode and 10 to 17 its
// high-compression levels 1 to 8; zstd levels fall into the encoder's four
// speeds (zstd.EncoderLevelFromZstd).
type Compression struct {
	Codec int8
	Level int
}

// Recompress returns the v2 batch with its records compressed as c, and
// true, unless it is already in c's codec, is a control batch (Kafka
// writes those uncompressed) or holds no records: then it returns batch
// itself and false. Everything else is kept: base offset, last offset
// delta, timestamps, producer id, epoch and sequence, the transactional
// and timestamp-type bits, and the records byte for byte; only the
// attributes' codec bits, the batch length and the CRC change.
//
// A batch is recompressed only if its CRC holds and its records decode
// exactly (as DecodeRecords reads them): bytes that were damaged would
// otherwise come out under a fresh, valid CRC. Such a batch, or one of an
// unknown codec, returns an error wrapping ErrMalformed; c naming no codec
// (above 4) is an error of its own.
func Recompress(batch []byte, c Compression) ([]byte, bool, error) {
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return nil, false, err
	}
	if h.Magic != 2 || h.TotalSize() != len(batch) || h.NumRecords < 0 {
		return nil, false, fmt.Errorf("%w: not a whole v2 record batch", ErrMalformed)
	}
	if c.Codec < CodecNone || c.Codec > CodecZstd {
		return nil, false, fmt.Errorf("recompress: unknown codec %d", c.Codec)
	}
	if h.Codec() == c.Codec || h.IsControl() || h.NumRecords == 0 {
		return batch, false, nil
	}
	if crc32c.Checksum(batch[offAttributes:]) != h.CRC {
		return nil, false, fmt.Errorf("%w: batch CRC does not match its bytes", ErrMalformed)
	}
	raw := batch[BatchHeaderSize:]
	if codec := h.Codec(); codec != CodecNone {
		if raw, err = decompress(codec, raw, maxDecompressed); err != nil {
			return nil, false, fmt.Errorf("%w: codec %d: %w", ErrMalformed, codec, err)
		}
	}
	w := recordWalk{reader: reader{b: raw}, n: h.NumRecords}
	for _, ok := w.next(nil); ok; _, ok = w.next(nil) {
	}
	if err := w.done(); err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	out := make([]byte, BatchHeaderSize, BatchHeaderSize+len(raw)/2+64)
	copy(out, batch[:BatchHeaderSize])
	if out, err = compress(out, raw, c); err != nil {
		return nil, false, err
	}
	binary.BigEndian.PutUint32(out[offLength:], uint32(len(out)-logOverhead))
	binary.BigEndian.PutUint16(out[offAttributes:], uint16(h.Attributes&^7|int16(c.Codec)))
	SetBatchCRC(out)
	return out, true, nil
}

// compress appends src compressed as c to dst. Snappy is written as one
// raw block, as franz-go, librdkafka and sarama producers write it; every
// Kafka client reads it (the Java one's xerial reader takes raw blocks too).
func compress(dst, src []byte, c Compression) ([]byte, error) {
	switch c.Codec {
	case CodecNone:
		return append(dst, src...), nil
	case CodecSnappy:
		at := len(dst)
		dst = append(dst, make([]byte, snappy.MaxEncodedLen(len(src)))...)
		return dst[:at+len(snappy.Encode(dst[at:], src))], nil
	case CodecZstd:
		enc, err := zstdEncoder(zstd.EncoderLevelFromZstd(c.Level))
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(src, dst), nil
	}
	buf := bytes.NewBuffer(dst)
	if c.Codec == CodecGzip {
		level := c.Level
		if level < gzip.BestSpeed || level > gzip.BestCompression {
			level = gzip.DefaultCompression
		}
		pool := &gzipWriters[level+1]
		zw, _ := pool.Get().(*gzip.Writer)
		if zw == nil {
			var err error
			if zw, err = gzip.NewWriterLevel(buf, level); err != nil {
				return nil, err
			}
		}
		zw.Reset(buf)
		defer func() { zw.Reset(nil); pool.Put(zw) }() // not holding on to dst
		if _, err := zw.Write(src); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	// lz4's frame format, as Kafka's producers write it since 0.10.
	// Kafka's levels up to its default 9 get lz4's fast compressor, those
	// above its high-compression levels 1 to 8: the Go HC levels take 8 to
	// 30 times the time of fast for batches 5 to 8% smaller
	// (BenchmarkRecompress), too slow for a default.
	level := min(max(c.Level-9, 0), 8)
	pool := &lz4Writers[level]
	zw, _ := pool.Get().(*lz4.Writer)
	if zw == nil {
		zw = lz4.NewWriter(buf)
		if err := zw.Apply(lz4.CompressionLevelOption(lz4Levels[level])); err != nil {
			return nil, err
		}
	}
	zw.Reset(buf)
	defer func() { zw.Reset(nil); pool.Put(zw) }()
	if _, err := zw.Write(src); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var lz4Levels = [...]lz4.CompressionLevel{lz4.Fast, lz4.Level1, lz4.Level2, lz4.Level3,
	lz4.Level4, lz4.Level5, lz4.Level6, lz4.Level7, lz4.Level8}

// The gzip writers by level (-1..9) and lz4 writers by level (0 fast,
// 1..8 high compression), pooled: each holds hundreds of KiB of state, more than a small
// batch it compresses.
var (
	gzipWriters [11]sync.Pool
	lz4Writers  [9]sync.Pool
)

// zstdEncoders are made once per speed and shared: EncodeAll may be called
// concurrently, and each encoder keeps its state between calls.
var (
	zstdMu       sync.Mutex
	zstdEncoders = map[zstd.EncoderLevel]*zstd.Encoder{}
)

// zstdWindow is the window recompressed zstd frames declare: well inside
// what floe's decoder (maxZstdWindow) and clients' accept, and as large as
// the batches the compactor recompresses usually are.
const zstdWindow = 1 << 20

func zstdEncoder(level zstd.EncoderLevel) (*zstd.Encoder, error) {
	zstdMu.Lock()
	defer zstdMu.Unlock()
	if e, ok := zstdEncoders[level]; ok {
		return e, nil
	}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithWindowSize(zstdWindow))
	if err != nil {
		return nil, err
	}
	zstdEncoders[level] = e
	return e, nil
}
