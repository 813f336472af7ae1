package kafkaproto

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"floe/internal/crc32c"
)

// BatchHeaderSize is the size of a v2 record batch header, up to and
// including the record count.
const BatchHeaderSize = 61

// Offsets of v2 batch header fields. The CRC covers everything from the
// attributes to the end of the batch, so baseOffset, batchLength,
// partitionLeaderEpoch and magic can change without recomputing it.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offNumRecords      = 57

	// logOverhead is baseOffset plus batchLength: the bytes that precede
	// what batchLength counts, in every message format.
	logOverhead = 12
	// minLength is the smallest batchLength Kafka accepts (a v0 message:
	// crc, magic, attributes, key and value lengths).
	minLength = 14
)

// BatchHeader is the fixed 61-byte header of a v2 record batch.
type BatchHeader struct {
	BaseOffset           int64
	Length               int32 // batchLength: bytes after this field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// Codec returns the compression codec: 0 none, 1 gzip, 2 snappy, 3 lz4,
// 4 zstd.
func (h BatchHeader) Codec() int8 { return int8(h.Attributes & 7) }

// IsTransactional reports whether the batch belongs to a transaction.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&0x10 != 0 }

// IsControl reports whether the batch holds a transaction marker.
func (h BatchHeader) IsControl() bool { return h.Attributes&0x20 != 0 }

// TimestampType returns 0 for CreateTime and 1 for LogAppendTime.
func (h BatchHeader) TimestampType() int8 { return int8(h.Attributes>>3) & 1 }

// TotalSize returns the size of the whole batch on the wire.
func (h BatchHeader) TotalSize() int { return logOverhead + int(h.Length) }

// ParseBatchHeader parses the batch header at the start of b. A v2 batch
// needs at least BatchHeaderSize bytes. For any other magic (the legacy 0/1
// message formats, or garbage) only BaseOffset, Length and Magic are filled,
// with a nil error, so that callers can reject the batch with the right code.
// Fewer than 17 bytes, or a v2 batch shorter than its header, return an error
// wrapping ErrMalformed. ParseBatchHeader does not check the CRC or that b
// holds the whole batch.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	var h BatchHeader
	if len(b) < offMagic+1 {
		return h, fmt.Errorf("%w: batch of %d bytes is shorter than its magic offset", ErrMalformed, len(b))
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[offBaseOffset:]))
	h.Length = int32(binary.BigEndian.Uint32(b[offLength:]))
	h.Magic = int8(b[offMagic])
	if h.Magic != 2 {
		return h, nil
	}
	if len(b) < BatchHeaderSize {
		return h, fmt.Errorf("%w: v2 batch of %d bytes is shorter than its header", ErrMalformed, len(b))
	}
	h.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
	h.CRC = binary.BigEndian.Uint32(b[offCRC:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[offAttributes:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))
	h.FirstTimestamp = int64(binary.BigEndian.Uint64(b[offFirstTimestamp:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[offMaxTimestamp:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[offProducerID:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[offProducerEpoch:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[offBaseSequence:]))
	h.NumRecords = int32(binary.BigEndian.Uint32(b[offNumRecords:]))
	return h, nil
}

// SplitBatches splits a Produce records field into whole batches, each
// slice aliasing records. Empty or nil records return no batches. A
// trailing partial batch, a negative batchLength or one too small to be any
// message format returns an error wrapping ErrMalformed. Batches are not
// otherwise validated: any magic splits, so that a client's legacy message
// set is answered with its own error code. Stored batches, which are v2 and
// whose offsets matter, are walked with WalkBatches.
func SplitBatches(records []byte) ([][]byte, error) {
	var batches [][]byte
	for b := records; len(b) > 0; {
		if len(b) < logOverhead {
			return nil, fmt.Errorf("%w: %d trailing bytes are not a batch", ErrMalformed, len(b))
		}
		length := int32(binary.BigEndian.Uint32(b[offLength:]))
		if length < minLength {
			return nil, fmt.Errorf("%w: batch length %d", ErrMalformed, length)
		}
		size := logOverhead + int(length)
		if size > len(b) {
			return nil, fmt.Errorf("%w: partial batch: %d of %d bytes", ErrMalformed, len(b), size)
		}
		batches = append(batches, b[:size:size])
		b = b[size:]
	}
	return batches, nil
}

// ValidateProduced checks one batch from a client the way a Kafka broker
// does before appending it, and returns its header or a kerr error:
//
//   - shorter than a header, or batchLength disagreeing with len(b):
//     kerr.CorruptMessage
//   - magic other than 2: kerr.UnsupportedForMessageFormat
//   - CRC-32C of b[21:] not matching the CRC field: kerr.CorruptMessage
//   - base offset other than 0: kerr.InvalidRecord
//   - no records, or LastOffsetDelta+1 != NumRecords: kerr.InvalidRecord
//   - compression codec above 4: kerr.CorruptMessage (Kafka's answer to an
//     unknown codec)
//   - a control batch (only brokers write those): kerr.InvalidRecord
//
// PartitionLeaderEpoch is not validated: franz-go sends -1 and sarama 0.
// ValidateProduced does not allocate. It checks the header and the bytes'
// integrity only; ValidateRecords, run after it, walks the records.
func ValidateProduced(b []byte) (BatchHeader, error) {
	if len(b) < offMagic+1 {
		return BatchHeader{}, kerr.CorruptMessage
	}
	// With 17 bytes, ParseBatchHeader fails only for a v2 batch shorter
	// than its header: corrupt, but a wrong length or magic is reported
	// first, as Kafka does.
	h, err := ParseBatchHeader(b)
	if h.TotalSize() != len(b) {
		return h, kerr.CorruptMessage
	}
	if h.Magic != 2 {
		return h, kerr.UnsupportedForMessageFormat
	}
	if err != nil {
		return h, kerr.CorruptMessage
	}
	if crc32c.Checksum(b[offAttributes:]) != h.CRC {
		return h, kerr.CorruptMessage
	}
	if h.BaseOffset != 0 {
		return h, kerr.InvalidRecord
	}
	if h.NumRecords <= 0 || int64(h.LastOffsetDelta)+1 != int64(h.NumRecords) {
		return h, kerr.InvalidRecord
	}
	if h.Codec() > 4 {
		return h, kerr.CorruptMessage
	}
	if h.IsControl() {
		return h, kerr.InvalidRecord
	}
	return h, nil
}

// SetBatchCRC sets the CRC field of the v2 batch b (whose header is
// written) to the CRC-32C of its bytes from the attributes on, as a
// producer does.
func SetBatchCRC(b []byte) {
	binary.BigEndian.PutUint32(b[offCRC:], crc32c.Checksum(b[offAttributes:]))
}

// BatchChecksum returns the CRC-32C of all of b, a v2 batch whose CRC field
// was checked (ValidateProduced) or set (SetBatchCRC), from that field and
// the 21 bytes before the attributes: the bytes themselves are not read
// again. An object's checksum is folded from its batches' this way
// (storage.ObjectWriter).
func BatchChecksum(b []byte) uint32 {
	return crc32c.Combine(crc32c.Checksum(b[:offAttributes]), binary.BigEndian.Uint32(b[offCRC:]), int64(len(b)-offAttributes))
}

// SetBaseOffset rewrites the base offset of the batch at the start of b in
// place. The base offset is outside the CRC, so the batch stays valid. A
// slice shorter than 8 bytes (never a batch that passed ParseBatchHeader) is
// left unchanged.
func SetBaseOffset(b []byte, offset int64) {
	if len(b) < 8 {
		return
	}
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(offset))
}

// WalkBatches calls fn for each v2 batch of data, back to back, with its
// header, its bytes (capacity trimmed to the batch) and the absolute offset
// of its first record. The first batch is based at base and each next one
// at the previous base plus LastOffsetDelta+1: batches in objects keep the
// base offset 0 they were produced with (key compaction's output batches
// stretch LastOffsetDelta over the gaps it left), so their absolute offsets
// come from the index row's base offset. It returns the offset after the
// last batch, which a caller compares with the row's end offset.
//
// It is the walk of stored batches, which are all v2: framing that does not
// hold (fewer bytes than a header, a batch longer than what is left), a
// magic other than 2 or a negative LastOffsetDelta return an error wrapping
// ErrMalformed. An error from fn stops the walk and is returned as is. On
// any error the offset returned is the base of the batch that failed.
// Batches are not otherwise validated (no CRC check). Client-sent records,
// whose legacy formats must be answered with their own error code, are
// split by SplitBatches instead.
func WalkBatches(data []byte, base int64, fn func(h BatchHeader, batch []byte, base int64) error) (int64, error) {
	for len(data) > 0 {
		h, err := ParseBatchHeader(data)
		if err != nil {
			return base, err
		}
		size := h.TotalSize()
		if h.Magic != 2 || size < BatchHeaderSize || size > len(data) || h.LastOffsetDelta < 0 {
			return base, fmt.Errorf("%w: batch at offset %d: magic %d, %d bytes of %d left, last offset delta %d",
				ErrMalformed, base, h.Magic, size, len(data), h.LastOffsetDelta)
		}
		if err := fn(h, data[:size:size], base); err != nil {
			return base, err
		}
		data = data[size:]
		base += int64(h.LastOffsetDelta) + 1
	}
	return base, nil
}

// RecordTimestamp is the timestamp of a record of this batch: the batch's
// MaxTimestamp under LogAppendTime, else its first timestamp plus the
// record's delta, as Kafka consumers compute it.
func (h BatchHeader) RecordTimestamp(r Record) int64 {
	if h.TimestampType() == 1 {
		return h.MaxTimestamp
	}
	return h.FirstTimestamp + r.TimestampDelta
}
