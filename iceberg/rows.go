package iceberg

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"floe/kafkaproto"
)

// Arrow record batches are cut at this many rows or bytes of keys, values
// and headers, whichever comes first, inside an index row too: six are in
// flight in iceberg-go's writer (write.go), each in buffers grown by
// doubling. At 8 MiB, cut only between index rows (a row of an 8 MiB
// object was one batch), they were most of a cycle's memory; at 512 KiB
// the benchmarks convert as fast.
const (
	batchRows  = 8192
	batchBytes = 512 << 10
)

// batch is what every builder of record batches shares: the record
// builder and the rows and bytes added since the last flush.
type batch struct {
	b        *array.RecordBuilder
	n, bytes int
}

func (b *batch) rows() int  { return b.n }
func (b *batch) full() bool { return b.n >= batchRows || b.bytes >= batchBytes }

// flush returns the records added since the last flush as one batch; the
// caller (iceberg-go's writer) releases it.
func (b *batch) flush() arrow.RecordBatch {
	b.n, b.bytes = 0, 0
	return b.b.NewRecordBatch()
}

func (b *batch) release() { b.b.Release() }

// kafkaCols are the builders of a record's Kafka metadata, the binary
// table's leading columns and a typed table's _kafka struct alike: field
// i of partition, offset, timestamp, timestamp_type, key, then the
// headers list at index headers.
type kafkaCols struct {
	part     *array.Int32Builder
	offset   *array.Int64Builder
	ts       *array.TimestampBuilder
	tsType   *array.Int32Builder
	key      *array.BinaryBuilder
	headers  *array.ListBuilder
	header   *array.StructBuilder
	hdrKey   *array.StringBuilder
	hdrValue *array.BinaryBuilder
}

func newKafkaCols(field func(int) array.Builder, headers int) kafkaCols {
	hl := field(headers).(*array.ListBuilder)
	hs := hl.ValueBuilder().(*array.StructBuilder)
	return kafkaCols{
		part:     field(0).(*array.Int32Builder),
		offset:   field(1).(*array.Int64Builder),
		ts:       field(2).(*array.TimestampBuilder),
		tsType:   field(3).(*array.Int32Builder),
		key:      field(4).(*array.BinaryBuilder),
		headers:  hl,
		header:   hs,
		hdrKey:   hs.FieldBuilder(0).(*array.StringBuilder),
		hdrValue: hs.FieldBuilder(1).(*array.BinaryBuilder),
	}
}

// add appends one record's metadata (ts in milliseconds) and returns the
// bytes it counts for: key, headers and 32 for the fixed columns.
func (c *kafkaCols) add(partition int32, offset, ts int64, tsType int8, r *kafkaproto.Record) int {
	c.part.Append(partition)
	c.offset.Append(offset)
	c.ts.Append(arrow.Timestamp(ts * 1000))
	c.tsType.Append(int32(tsType))
	appendNullable(c.key, r.Key)
	c.headers.Append(true)
	n := len(r.Key) + 32
	for _, h := range r.Headers {
		c.header.Append(true)
		c.hdrKey.Append(h.Key)
		appendNullable(c.hdrValue, h.Value)
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// batchBuilder lays records out as Arrow record batches of Schema: the
// Kafka columns and the value as bytes.
type batchBuilder struct {
	batch
	kafkaCols
	value *array.BinaryBuilder
}

func newBatchBuilder() (*batchBuilder, error) {
	as, err := arrowSchema()
	if err != nil {
		return nil, err
	}
	return newBatchBuilderFor(as), nil
}

// newBatchBuilderFor lays records out in as, whose first columns are
// Schema's (a dead-letter table's adds its error after them).
func newBatchBuilderFor(as *arrow.Schema) *batchBuilder {
	rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
	return &batchBuilder{
		batch:     batch{b: rb},
		kafkaCols: newKafkaCols(rb.Field, 6),
		value:     rb.Field(5).(*array.BinaryBuilder),
	}
}

// add appends one record; ts is in milliseconds.
func (b *batchBuilder) add(partition int32, offset, ts int64, tsType int8, r *kafkaproto.Record) {
	b.bytes += b.kafkaCols.add(partition, offset, ts, tsType, r) + len(r.Value)
	appendNullable(b.value, r.Value)
	b.n++
}

func appendNullable(b *array.BinaryBuilder, v []byte) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.Append(v)
}
