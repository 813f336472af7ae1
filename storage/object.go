package storage

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"time"
)

// Object format v1.
//
// An object is a body followed by a footer. The body holds Kafka record
// batches exactly as produced, grouped by partition so that any partition's
// batches can be served with one ranged GET. The footer, all big-endian, is:
//
//	runs...          each runSize bytes: topic id (16) | partition int32 |
//	                 offset int64 | length int64 | batches int32 |
//	                 records int64 | min ts int64 | max ts int64
//	run count        uint32
//	footer length    uint32  bytes of runs + run count
//	crc32c           uint32  of body + runs + run count + footer length
//	version          uint16  = 1
//	magic            "FLOE"
//
// The fixed tail (footer length, checksum, version, magic) sits at the very
// end so a reader that only knows the object's size can find the footer.
//
// The footer makes an object self-describing without the metadata store,
// but nothing in floe reads it: the store's index rows say where each run
// lies, and fetches and the compactor read those byte ranges. The tests'
// parser (parseObject, object_parse_test.go) checks that what the writer
// writes holds together.
const (
	objectVersion = 1
	objectMagic   = "FLOE"

	runSize = 16 + 4 + 8 + 8 + 4 + 8 + 8 + 8
	// tailSize is footer length + crc + version + magic.
	tailSize = 4 + 4 + 2 + 4
	// minObjectSize is an object with an empty body and no runs.
	minObjectSize = 4 + tailSize
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// TopicID is a Kafka topic id (UUID bytes).
type TopicID [16]byte

// Run describes the contiguous bytes of one partition inside an object: the
// partition's record batches, exactly as produced, back to back.
type Run struct {
	TopicID   TopicID
	Partition int32
	// Offset is the byte position of the run's first batch in the object.
	Offset int64
	// Length is the number of bytes of the run.
	Length int64
	// Batches is the number of record batches in the run.
	Batches int32
	// Records is the sum over batches of lastOffsetDelta+1: the number of
	// offsets the run occupies once committed.
	Records      int64
	MinTimestamp int64
	MaxTimestamp int64
}

// pendingBatch is one Add call, kept until Finish lays out the body.
type pendingBatch struct {
	topic     TopicID
	partition int32
	// seq is the Add order; it keeps batches of one partition in order
	// through an unstable (and allocation-free) sort.
	seq     int
	data    []byte
	records int64
	minTS   int64
	maxTS   int64
}

// ObjectWriter collects batches for one object. Batches may be added for any
// partition in any order; within a partition they keep the order of Add.
// Not safe for concurrent use.
//
// A writer may be reused once FinishParts (or Finish) has returned: it
// keeps its slice of pending batches, so that adding a batch to a warm
// writer does not allocate and an object costs its footer and run list
// only. The agent's batcher recycles its writers for that reason; a new
// writer grows the slice by doubling, about log2(batches) allocations per
// object.
type ObjectWriter struct {
	pending []pendingBatch
	bodyLen int64
}

// NewObjectWriter returns an empty writer.
func NewObjectWriter() *ObjectWriter {
	return &ObjectWriter{}
}

// Add appends one batch for partition of topic. The batch's bytes are
// referenced, not copied, until Finish: the caller must not modify them
// before then. records is the number of offsets the batch occupies
// (lastOffsetDelta+1); minTS and maxTS are its timestamp bounds.
func (w *ObjectWriter) Add(topic TopicID, partition int32, batch []byte, records int64, minTS, maxTS int64) {
	w.pending = append(w.pending, pendingBatch{
		topic:     topic,
		partition: partition,
		seq:       len(w.pending),
		data:      batch,
		records:   records,
		minTS:     minTS,
		maxTS:     maxTS,
	})
	w.bodyLen += int64(len(batch))
}

// Finish is FinishParts with the object copied into one buffer, for callers
// that want it whole (tests and benchmarks that Put objects they build):
// it returns the object and its runs in body order, both freshly allocated
// and owned by the caller. The writer is reset and may be reused. The
// produce path and the compactor use FinishParts, which does not copy.
func (w *ObjectWriter) Finish() (object []byte, runs []Run) {
	parts, runs := w.FinishParts(nil)
	return bytes.Join(parts, nil), runs
}

// Size returns the size of the object Finish would return now.
func (w *ObjectWriter) Size() int64 {
	return w.bodyLen + int64(w.runCount())*runSize + minObjectSize
}

func (w *ObjectWriter) runCount() int {
	// Counting needs the batches grouped by partition; sorting here is
	// what Finish would do anyway, and a sorted slice sorts fast.
	w.sort()
	n := 0
	for i := range w.pending {
		if i == 0 || !samePartition(&w.pending[i-1], &w.pending[i]) {
			n++
		}
	}
	return n
}

func (w *ObjectWriter) sort() {
	slices.SortFunc(w.pending, func(a, b pendingBatch) int {
		if c := bytes.Compare(a.topic[:], b.topic[:]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.partition, b.partition); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
}

// FinishParts lays out the body grouped by partition (runs sorted by topic
// id then partition) and appends the footer, without copying the batches:
// it returns the object as the consecutive slices it is made of — the
// batches given to Add, in body order, then the footer — for a vectored
// Bucket.Put, and its runs in body order. The batches are
// the caller's bytes as given to Add, so they must stay untouched until the
// object is stored; the footer and the runs are freshly allocated. parts is
// reused when its capacity suffices. The writer is reset and may be reused.
//
// Copying every produced byte into one buffer was a fifth of a produce-heavy
// agent's CPU, and the buffer doubled the memory an object held until its
// PUT ended.
func (w *ObjectWriter) FinishParts(parts [][]byte) ([][]byte, []Run) {
	nruns := w.runCount()
	runs := make([]Run, 0, nruns)
	parts = slices.Grow(parts[:0], len(w.pending)+1)

	crc := uint32(0)
	pos := int64(0)
	for i := range w.pending {
		p := &w.pending[i]
		if i == 0 || !samePartition(&w.pending[i-1], p) {
			runs = append(runs, Run{
				TopicID:      p.topic,
				Partition:    p.partition,
				Offset:       pos,
				MinTimestamp: p.minTS,
				MaxTimestamp: p.maxTS,
			})
		}
		r := &runs[len(runs)-1]
		parts = append(parts, p.data)
		crc = crc32.Update(crc, castagnoli, p.data)
		pos += int64(len(p.data))
		r.Length += int64(len(p.data))
		r.Batches++
		r.Records += p.records
		r.MinTimestamp = min(r.MinTimestamp, p.minTS)
		r.MaxTimestamp = max(r.MaxTimestamp, p.maxTS)
	}

	footer := make([]byte, 0, len(runs)*runSize+minObjectSize)
	for i := range runs {
		footer = appendRun(footer, &runs[i])
	}
	footer = binary.BigEndian.AppendUint32(footer, uint32(len(runs)))
	footer = binary.BigEndian.AppendUint32(footer, uint32(len(runs)*runSize+4))
	crc = crc32.Update(crc, castagnoli, footer)
	footer = binary.BigEndian.AppendUint32(footer, crc)
	footer = binary.BigEndian.AppendUint16(footer, objectVersion)
	footer = append(footer, objectMagic...)
	parts = append(parts, footer)

	// Drop the references to the caller's batch bytes so they can be
	// collected, but keep the slice's capacity for the next object.
	clear(w.pending)
	w.pending = w.pending[:0]
	w.bodyLen = 0
	return parts, runs
}

func samePartition(a, b *pendingBatch) bool {
	return a.topic == b.topic && a.partition == b.partition
}

func appendRun(b []byte, r *Run) []byte {
	b = append(b, r.TopicID[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(r.Partition))
	b = binary.BigEndian.AppendUint64(b, uint64(r.Offset))
	b = binary.BigEndian.AppendUint64(b, uint64(r.Length))
	b = binary.BigEndian.AppendUint32(b, uint32(r.Batches))
	b = binary.BigEndian.AppendUint64(b, uint64(r.Records))
	b = binary.BigEndian.AppendUint64(b, uint64(r.MinTimestamp))
	b = binary.BigEndian.AppendUint64(b, uint64(r.MaxTimestamp))
	return b
}

// NewObjectKey returns a fresh key spread over 256 prefixes:
// "objects/<2 hex chars>/<unix ms 13 digits>-<16 random hex chars>". The
// prefix is the first random byte, so keys written in the same millisecond
// still land on different prefixes (S3 scales request rates per prefix).
func NewObjectKey() string {
	var rnd [8]byte
	// crypto/rand.Read never returns an error (it panics if the system's
	// source fails, which nothing here could recover from anyway).
	_, _ = rand.Read(rnd[:])
	suffix := hex.EncodeToString(rnd[:])
	return fmt.Sprintf("objects/%s/%013d-%s", suffix[:2], time.Now().UnixMilli(), suffix)
}

// IsObjectKey reports whether key has the form NewObjectKey gives, so that
// a range asked for by key from outside (another agent, over HTTP) names
// one of floe's objects and nothing else in the bucket or, with a file
// bucket, on the disk.
func IsObjectKey(key string) bool {
	const prefix = "objects/"
	rest, ok := strings.CutPrefix(key, prefix)
	// "xx/" + 13 digits + "-" + 16 hex = 33 bytes.
	if !ok || len(rest) != 33 || rest[2] != '/' || rest[16] != '-' || rest[:2] != rest[17:19] {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case i == 2 || i == 16:
		case i > 2 && i < 16:
			if c < '0' || c > '9' {
				return false
			}
		case (c < '0' || c > '9') && (c < 'a' || c > 'f'):
			return false
		}
	}
	return true
}
