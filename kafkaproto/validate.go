package kafkaproto

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// RecordRules are the topic settings that ValidateRecords applies beyond
// the record format itself.
type RecordRules struct {
	// KeyRequired rejects records without a key, as Kafka does on topics
	// whose cleanup.policy includes compact: key compaction could never
	// supersede them.
	KeyRequired bool
	// Visit, when set, is called with each record's index, key and value
	// (nil when null) in order as the walk reads them, so that a caller
	// who looks at every record (the schema check) walks and decompresses
	// the batch once. Key and value alias the batch or the stream's window
	// and are valid only during the call. The walk may fail after some
	// calls: what Visit saw stands only if ValidateRecords returns nil.
	// Uncompressed batches and raw snappy blocks are walked once; other
	// codecs, streamed, are decompressed whole for Visit once they pass.
	Visit func(i int32, key, value []byte)
}

// CleanupPolicy parses a cleanup.policy value, a comma-separated list of
// "delete" and "compact", into the two policies it may enable.
func CleanupPolicy(v string) (del, compact bool) {
	for p := range strings.SplitSeq(v, ",") {
		switch strings.TrimSpace(p) {
		case "delete":
			del = true
		case "compact":
			compact = true
		}
	}
	return del, compact
}

// RecordError is why ValidateRecords rejects a batch: the partition's
// Kafka error, a message for the Produce response, and, when single records
// are at fault (Kafka's RecordValidationException: a record without a key
// on a compacted topic, an offset delta out of order), their indexes in the
// batch for the response's record errors.
type RecordError struct {
	Err     *kerr.Error
	Message string
	Records []int32
}

func (e *RecordError) Error() string { return e.Err.Message + ": " + e.Message }
func (e *RecordError) Unwrap() error { return e.Err }

// ValidateRecords walks every record of a produced batch that passed
// ValidateProduced, as Kafka's log validator and record iterator do before
// an append, and returns nil or a *RecordError:
//
//   - a record length past the data, fields that do not fill exactly a
//     record's length, a key, value or header past its record, a negative
//     header count or header key length, a count of headers that cannot
//     fit, fewer records than NumRecords or bytes after the last one:
//     INVALID_RECORD, as Kafka's InvalidRecordException
//   - offset deltas other than 0, 1, … NumRecords-1 in order (Kafka's "inner
//     record offsets", which it would rewrite; floe stores batches as
//     sent, so it rejects them), or, with rules.KeyRequired, a record
//     without a key: INVALID_RECORD naming the records
//   - a payload that does not decompress with its codec: CORRUPT_MESSAGE,
//     as for a batch whose CRC fails (Kafka answers UNKNOWN_SERVER_ERROR,
//     the KafkaException its decompressing stream throws)
//   - records decompressing past 256 MiB, the bound DecodeRecords reads:
//     MESSAGE_TOO_LARGE (a Java producer splits the batch and retries)
//
// Compressed records are checked as they stream out of a pooled decoder
// through a 16 KiB window, never decompressed whole, so memory does not
// follow what a batch claims; a zstd frame may not ask for a window above
// 8 MiB. A raw snappy block (not xerial-framed) cannot be streamed and is
// decoded into a pooled buffer, bounded by 32 times its compressed size.
// Uncompressed batches are walked in place; a valid batch costs no
// allocation per record.
func ValidateRecords(batch []byte, rules RecordRules) error {
	return validateRecords(batch, rules, maxDecompressed)
}

// validateRecords is ValidateRecords with the decompression bound as a
// parameter, so tests can exercise it without 256 MiB bombs.
func validateRecords(batch []byte, rules RecordRules, limit int) error {
	h, err := ParseBatchHeader(batch)
	if err != nil || h.Magic != 2 || h.TotalSize() != len(batch) || h.NumRecords < 0 {
		return &RecordError{Err: kerr.CorruptMessage, Message: "not a whole v2 record batch"}
	}
	data := batch[BatchHeaderSize:]
	v := validation{rules: rules}
	switch c := h.Codec(); {
	case c == 0:
		err = v.walk(&recordWalk{reader: reader{b: data}, n: h.NumRecords})
	case c == 2 && !bytes.HasPrefix(data, xerialMagic):
		err = v.snappyBlock(data, h.NumRecords, limit)
	case c > 4:
		return &RecordError{Err: kerr.CorruptMessage, Message: fmt.Sprintf("unknown compression codec %d", c)}
	default:
		visit := rules.Visit
		v.rules.Visit = nil // a stream's window does not keep keys and values
		err = streamRecords(c, data, h.NumRecords, limit, &v)
		if err == nil && len(v.bad) == 0 && visit != nil {
			err = visitWhole(c, data, h.NumRecords, limit, visit)
		}
	}
	return v.result(err)
}

// visitWhole shows visit the records of a compressed batch that passed the
// streamed walk, decompressed whole (the bound is limit) and walked again
// in memory.
func visitWhole(codec int8, data []byte, n int32, limit int, visit func(int32, []byte, []byte)) error {
	out, err := decompress(codec, data, limit)
	if err != nil {
		if errors.Is(err, errDecompressedTooLarge) {
			return err
		}
		return &decompressError{err}
	}
	v := validation{rules: RecordRules{Visit: visit}}
	return v.walk(&recordWalk{reader: reader{b: out}, n: n})
}

// validation is one ValidateRecords call: its rules and the records found
// at fault so far. Like Kafka, it goes on past a record at fault to name
// them all, and a framing failure ends it.
type validation struct {
	rules RecordRules
	bad   []int32
	first string // what is wrong with bad[0]
}

func (v *validation) walk(w *recordWalk) error {
	for {
		info, ok := w.next(nil)
		if !ok {
			return w.done()
		}
		i := w.i - 1
		if v.rules.Visit != nil {
			v.rules.Visit(i, info.key, info.value)
		}
		switch {
		case info.offsetDelta != i:
			v.fault(i, "offset delta", info.offsetDelta)
		case v.rules.KeyRequired && info.keyLen < 0:
			v.fault(i, "compacted topic cannot accept a record without a key", 0)
		}
	}
}

func (v *validation) fault(i int32, what string, got int32) {
	if len(v.bad) == 0 {
		v.first = what
		if what == "offset delta" {
			v.first = fmt.Sprintf("record %d has offset delta %d", i, got)
		}
	}
	v.bad = append(v.bad, i)
}

// result maps the walk's error, or the records at fault, to a RecordError.
func (v *validation) result(err error) error {
	if err == nil {
		if len(v.bad) == 0 {
			return nil
		}
		msg := v.first
		if len(v.bad) > 1 {
			msg = fmt.Sprintf("%s (and %d more records at fault)", msg, len(v.bad)-1)
		}
		return &RecordError{Err: kerr.InvalidRecord, Message: msg, Records: v.bad}
	}
	if errors.Is(err, errDecompressedTooLarge) {
		return &RecordError{Err: kerr.MessageTooLarge, Message: "records decompress past the 256 MiB bound"}
	}
	// Declared here, past the happy path: errors.As moves it to the heap.
	var de *decompressError
	if errors.As(err, &de) {
		return &RecordError{Err: kerr.CorruptMessage, Message: "records do not " + de.Error()}
	}
	return &RecordError{Err: kerr.InvalidRecord, Message: "record framing: " + err.Error()}
}

// snappyBlock walks the records of a raw snappy block, decoded into a
// pooled buffer.
func (v *validation) snappyBlock(data []byte, n int32, limit int) (err error) {
	buf := blockPool.Get().(*[]byte)
	out, err := func() (out []byte, err error) {
		defer func() {
			if p := recover(); p != nil {
				out, err = nil, fmt.Errorf("decoder panic: %v", p)
			}
		}()
		return decodeSnappyBlock(*buf, data, limit)
	}()
	if err != nil {
		blockPool.Put(buf)
		if errors.Is(err, errDecompressedTooLarge) {
			return err
		}
		return &decompressError{err}
	}
	err = v.walk(&recordWalk{reader: reader{b: out}, n: n})
	// Blocks this size come from ordinary batches; a buffer grown past
	// them by an odd one is left to the GC.
	if cap(out) <= maxPooledBlock {
		*buf = out[:0]
	}
	blockPool.Put(buf)
	return err
}

const maxPooledBlock = 4 << 20

var blockPool = sync.Pool{New: func() any { return new([]byte) }}
