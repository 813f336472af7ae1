package storage

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"floe/internal/crc32c"
)

// Object format v2.
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
//	crc32c           uint32  of runs + run count + footer length
//	version          uint16  = 2
//	magic            "FLOE"
//
// The fixed tail (footer length, checksum, version, magic) sits at the very
// end so a reader that only knows the object's size can find the footer.
//
// The checksum covers the footer only: the body is Kafka record batches,
// each with a CRC-32C of its own over its attributes and records (checked
// when it is produced, and by every consumer), and a reader reads runs,
// never a whole body it could check. Version 1 objects, from earlier
// releases, have the same layout with the checksum over the body too;
// computing it was a second CRC pass over every produced byte.
//
// The footer makes an object self-describing without the metadata store,
// but nothing in floe reads it: the store's index rows say where each run
// lies, and fetches and the compactor read those byte ranges. The tests'
// parser (parseObject, object_parse_test.go) checks that what the writer
// writes holds together.
const (
	objectVersion = 2
	objectMagic   = "FLOE"

	runSize = 16 + 4 + 8 + 8 + 4 + 8 + 8 + 8
	// tailSize is footer length + crc + version + magic.
	tailSize = 4 + 4 + 2 + 4
	// minObjectSize is an object with an empty body and no runs.
	minObjectSize = 4 + tailSize
)

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
	crc     uint32 // CRC-32C of data (AddSummed)
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
	// unsummed counts the pending batches added without a checksum.
	unsummed int
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
	w.add(pendingBatch{topic: topic, partition: partition, data: batch, records: records, minTS: minTS, maxTS: maxTS})
	w.unsummed++
}

// AddSummed is Add for a batch whose CRC-32C (of all its bytes) the caller
// knows: when every batch of an object comes with one, FinishParts gives
// the object's checksum without reading the batches.
func (w *ObjectWriter) AddSummed(topic TopicID, partition int32, batch []byte, crc32c uint32, records int64, minTS, maxTS int64) {
	w.add(pendingBatch{topic: topic, partition: partition, data: batch, records: records, minTS: minTS, maxTS: maxTS, crc: crc32c})
}

func (w *ObjectWriter) add(p pendingBatch) {
	p.seq = len(w.pending)
	w.pending = append(w.pending, p)
	w.bodyLen += int64(len(p.data))
}

// Finish is FinishParts with the object copied into one buffer, for callers
// that want it whole (tests and benchmarks that Put objects they build):
// it returns the object and its runs in body order, both freshly allocated
// and owned by the caller. The writer is reset and may be reused. The
// produce path and the compactor use FinishParts, which does not copy.
func (w *ObjectWriter) Finish() (object []byte, runs []Run) {
	parts, runs, _ := w.FinishParts(nil)
	return bytes.Join(parts, nil), runs
}

// Size returns the size of the object Finish would return now.
func (w *ObjectWriter) Size() int64 {
	return ObjectSize(w.bodyLen, w.runCount())
}

// ObjectSize is the size of an object whose body holds bodyLen bytes in
// runs runs.
func ObjectSize(bodyLen int64, runs int) int64 {
	return bodyLen + int64(runs)*runSize + minObjectSize
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
// Bucket.Put, its runs in body order, and, when every batch was added with
// its checksum (AddSummed), the object's CRC-32C, folded from theirs. The
// batches are the caller's bytes as given to Add, so they must stay
// untouched until the object is stored; the footer and the runs are freshly
// allocated. parts is reused when its capacity suffices. The writer is
// reset and may be reused.
//
// Copying every produced byte into one buffer was a fifth of a produce-heavy
// agent's CPU, and the buffer doubled the memory an object held until its
// PUT ended.
func (w *ObjectWriter) FinishParts(parts [][]byte) ([][]byte, []Run, Checksum) {
	nruns := w.runCount()
	runs := make([]Run, 0, nruns)
	parts = slices.Grow(parts[:0], len(w.pending)+1)

	sum := Checksum{Known: w.unsummed == 0}
	pos := int64(0)
	for i := range w.pending {
		p := &w.pending[i]
		runs = addToRun(runs, p.topic, p.partition, pos, int64(len(p.data)), p.records, p.minTS, p.maxTS)
		parts = append(parts, p.data)
		pos += int64(len(p.data))
		if sum.Known {
			sum.CRC32C = crc32c.Combine(sum.CRC32C, p.crc, int64(len(p.data)))
		}
	}
	footer := appendFooter(make([]byte, 0, len(runs)*runSize+minObjectSize), runs)
	parts = append(parts, footer)
	if sum.Known {
		sum.CRC32C = crc32c.Update(sum.CRC32C, footer)
	}

	// Drop the references to the caller's batch bytes so they can be
	// collected, but keep the slice's capacity for the next object.
	clear(w.pending)
	w.pending = w.pending[:0]
	w.bodyLen, w.unsummed = 0, 0
	return parts, runs, sum
}

// addToRun counts a batch of length bytes at pos in the last of runs, or
// in a new run when it is the first batch of its partition.
func addToRun(runs []Run, topic TopicID, partition int32, pos, length, records, minTS, maxTS int64) []Run {
	if n := len(runs); n == 0 || runs[n-1].TopicID != topic || runs[n-1].Partition != partition {
		runs = append(runs, Run{TopicID: topic, Partition: partition, Offset: pos, MinTimestamp: minTS, MaxTimestamp: maxTS})
	}
	r := &runs[len(runs)-1]
	r.Length += length
	r.Batches++
	r.Records += records
	r.MinTimestamp = min(r.MinTimestamp, minTS)
	r.MaxTimestamp = max(r.MaxTimestamp, maxTS)
	return runs
}

// appendFooter appends the footer of an object with runs to b.
func appendFooter(b []byte, runs []Run) []byte {
	start := len(b)
	for i := range runs {
		b = appendRun(b, &runs[i])
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(runs)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(runs)*runSize+4))
	b = binary.BigEndian.AppendUint32(b, crc32c.Checksum(b[start:]))
	b = binary.BigEndian.AppendUint16(b, objectVersion)
	return append(b, objectMagic...)
}

// StreamWriter writes an object to an io.Writer as its batches come, for
// writers that cannot hold it (the compactor's merges): the same object
// an ObjectWriter lays out, except that the batches must be added grouped
// by partition, in the order FinishParts lays them out (topic id, then
// partition). Not safe for concurrent use.
type StreamWriter struct {
	w    io.Writer
	pos  int64
	runs []Run
}

// NewStreamWriter returns a writer of one object to w.
func NewStreamWriter(w io.Writer) *StreamWriter { return &StreamWriter{w: w} }

// Add writes one batch for partition of topic (arguments as
// ObjectWriter.Add's). A partition's batches must follow each other.
func (s *StreamWriter) Add(topic TopicID, partition int32, batch []byte, records, minTS, maxTS int64) error {
	if n := len(s.runs); n > 0 {
		last := &s.runs[n-1]
		if c := bytes.Compare(topic[:], last.TopicID[:]); c < 0 || c == 0 && partition < last.Partition {
			return fmt.Errorf("stream writer: partition %d of topic %x added after partition %d of topic %x",
				partition, topic[:], last.Partition, last.TopicID[:])
		}
	}
	if _, err := s.w.Write(batch); err != nil {
		return err
	}
	s.runs = addToRun(s.runs, topic, partition, s.pos, int64(len(batch)), records, minTS, maxTS)
	s.pos += int64(len(batch))
	return nil
}

// Finish writes the footer and returns the object's runs in body order.
func (s *StreamWriter) Finish() ([]Run, error) {
	if _, err := s.w.Write(appendFooter(nil, s.runs)); err != nil {
		return nil, err
	}
	return s.runs, nil
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

// ObjectKeyPrefixes returns the 256 prefixes NewObjectKey spreads keys
// over, "objects/00" to "objects/ff": the directories of a file bucket's
// objects.
func ObjectKeyPrefixes() []string {
	out := make([]string, 256)
	for i := range out {
		out[i] = fmt.Sprintf("objects/%02x", i)
	}
	return out
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
