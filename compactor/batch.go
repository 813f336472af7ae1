package compactor

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"

	"floe/kafkaproto"
	"floe/metadata"
)

// keptRecord is one record that survives key compaction, with its absolute
// offset and timestamp (the batch it came from is gone).
type keptRecord struct {
	offset    int64
	timestamp int64
	rec       kafkaproto.Record
}

// encodeBatch writes an uncompressed v2 record batch holding recs, whose
// base offset is base and which spans the offsets [base, base+span): its
// lastOffsetDelta is span-1 even when the last record has a smaller delta,
// as Kafka's log cleaner leaves batches. The fetch path walks batches by
// lastOffsetDelta+1 from an index row's base offset, so covering the gap up
// to the next batch keeps that walk exact without any change to it.
//
// The batch carries no producer id (-1): its records come from many
// producer batches, and producer state lives in the metadata store.
// recs must be non-empty, in offset order, inside [base, base+span), and
// span must fit an int32.
func encodeBatch(base, span int64, recs []keptRecord) []byte {
	firstTS, maxTS := recs[0].timestamp, recs[0].timestamp
	for _, r := range recs {
		firstTS = min(firstTS, r.timestamp)
		maxTS = max(maxTS, r.timestamp)
	}
	b := make([]byte, kafkaproto.BatchHeaderSize, kafkaproto.BatchHeaderSize+64*len(recs))
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	// b[8:12] batchLength, filled below; b[12:16] leader epoch 0.
	b[16] = 2 // magic
	// b[17:21] crc, filled below; b[21:23] attributes 0: no codec, CreateTime.
	binary.BigEndian.PutUint32(b[23:], uint32(span-1))
	binary.BigEndian.PutUint64(b[27:], uint64(firstTS))
	binary.BigEndian.PutUint64(b[35:], uint64(maxTS))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0)) // producer id -1
	binary.BigEndian.PutUint16(b[51:], 0xffff)     // producer epoch -1
	binary.BigEndian.PutUint32(b[53:], 0xffffffff) // base sequence -1
	binary.BigEndian.PutUint32(b[57:], uint32(len(recs)))
	var body []byte
	for _, r := range recs {
		body = body[:0]
		body = append(body, 0) // record attributes
		body = binary.AppendVarint(body, r.timestamp-firstTS)
		body = binary.AppendVarint(body, r.offset-base)
		body = appendVarBytes(body, r.rec.Key)
		body = appendVarBytes(body, r.rec.Value)
		body = binary.AppendVarint(body, int64(len(r.rec.Headers)))
		for _, h := range r.rec.Headers {
			body = binary.AppendVarint(body, int64(len(h.Key)))
			body = append(body, h.Key...)
			body = appendVarBytes(body, h.Value)
		}
		b = binary.AppendVarint(b, int64(len(body)))
		b = append(b, body...)
	}
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	kafkaproto.SetBatchCRC(b)
	return b
}

// appendVarBytes appends a varint length and v; nil is length -1 (null).
func appendVarBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

// unreadableError is a source row whose bytes do not parse: batches that do
// not frame or span other offsets than the row's, records that do not
// decode. A job skips what it cannot read and goes on with the rest
// (reportUnreadable), where other errors (the store, the bucket, the
// lease) end the job.
type unreadableError struct {
	row metadata.IndexEntry
	err error
}

func unreadable(r metadata.IndexEntry, err error) error { return &unreadableError{row: r, err: err} }

func (e *unreadableError) Error() string {
	return fmt.Sprintf("row %x/%d [%d,%d) in %s: %v", e.row.TopicID, e.row.Partition, e.row.BaseOffset, e.row.EndOffset, e.row.ObjectKey, e.err)
}

func (e *unreadableError) Unwrap() error { return e.err }

// unreadableLogEvery is how often one partition that stays unreadable is
// logged again; every skip is counted.
const unreadableLogEvery = time.Hour

type unreadableKey struct {
	job       string
	topic     metadata.TopicID
	partition int32
}

// reportUnreadable counts a partition a job skipped because it could not
// read it (floe_compactor_unreadable_partitions_total) and logs it, at most
// once per unreadableLogEvery per partition and job. topic is the name when
// the job knows it.
func (c *Compactor) reportUnreadable(job, topic string, e *unreadableError) {
	c.metrics.unreadable.WithLabelValues(job).Inc()
	if !c.logDue(unreadableKey{job, e.row.TopicID, e.row.Partition}) {
		return
	}
	c.log.Warn("skipped a partition that cannot be read", "job", job, "topic", topic,
		"topic_id", hex.EncodeToString(e.row.TopicID[:]), "partition", e.row.Partition,
		"object", e.row.ObjectKey, "base_offset", e.row.BaseOffset, "err", e.err)
}

// logDue reports whether a warning about key (a comparable value naming what
// it is about) is due: not logged in the last unreadableLogEvery. Warnings
// that would repeat every round are logged through it.
func (c *Compactor) logDue(key any) bool {
	now := time.Now()
	c.loggedMu.Lock()
	defer c.loggedMu.Unlock()
	if last, ok := c.logged[key]; ok && now.Sub(last) < unreadableLogEvery {
		return false
	}
	if c.logged == nil {
		c.logged = map[any]time.Time{}
	}
	c.logged[key] = now
	return true
}

// reportHeld logs, once an hour per topic, that retention keeps records
// its Iceberg table does not have yet.
func (c *Compactor) reportHeld(topic string, partition int32, want, hold int64) {
	type heldKey struct{ topic string }
	if c.logDue(heldKey{topic}) {
		c.log.Warn("retention keeps records the topic's Iceberg table does not have yet",
			"topic", topic, "partition", partition, "retention_start", want, "converted_up_to", hold)
	}
}
