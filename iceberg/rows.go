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

// batchBuilder lays records out as Arrow record batches of Schema. It is
// the one place records become columns: typed value columns (a schema
// registry's decoded values) will be appended here, after the fixed ones.
type batchBuilder struct {
	b        *array.RecordBuilder
	part     *array.Int32Builder
	offset   *array.Int64Builder
	ts       *array.TimestampBuilder
	tsType   *array.Int32Builder
	key      *array.BinaryBuilder
	value    *array.BinaryBuilder
	headers  *array.ListBuilder
	header   *array.StructBuilder
	hdrKey   *array.StringBuilder
	hdrValue *array.BinaryBuilder
	n, bytes int
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
	hl := rb.Field(6).(*array.ListBuilder)
	hs := hl.ValueBuilder().(*array.StructBuilder)
	return &batchBuilder{
		b:        rb,
		part:     rb.Field(0).(*array.Int32Builder),
		offset:   rb.Field(1).(*array.Int64Builder),
		ts:       rb.Field(2).(*array.TimestampBuilder),
		tsType:   rb.Field(3).(*array.Int32Builder),
		key:      rb.Field(4).(*array.BinaryBuilder),
		value:    rb.Field(5).(*array.BinaryBuilder),
		headers:  hl,
		header:   hs,
		hdrKey:   hs.FieldBuilder(0).(*array.StringBuilder),
		hdrValue: hs.FieldBuilder(1).(*array.BinaryBuilder),
	}
}

// add appends one record; ts is in milliseconds.
func (b *batchBuilder) add(partition int32, offset, ts int64, tsType int8, r *kafkaproto.Record) {
	b.part.Append(partition)
	b.offset.Append(offset)
	b.ts.Append(arrow.Timestamp(ts * 1000))
	b.tsType.Append(int32(tsType))
	appendNullable(b.key, r.Key)
	appendNullable(b.value, r.Value)
	b.headers.Append(true)
	for _, h := range r.Headers {
		b.header.Append(true)
		b.hdrKey.Append(h.Key)
		appendNullable(b.hdrValue, h.Value)
		b.bytes += len(h.Key) + len(h.Value)
	}
	b.n++
	b.bytes += len(r.Key) + len(r.Value) + 32
}

func appendNullable(b *array.BinaryBuilder, v []byte) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.Append(v)
}

func (b *batchBuilder) rows() int  { return b.n }
func (b *batchBuilder) full() bool { return b.n >= batchRows || b.bytes >= batchBytes }

// flush returns the records added since the last flush as one batch; the
// caller (iceberg-go's writer) releases it.
func (b *batchBuilder) flush() arrow.RecordBatch {
	b.n, b.bytes = 0, 0
	return b.b.NewRecordBatch()
}

func (b *batchBuilder) release() { b.b.Release() }
