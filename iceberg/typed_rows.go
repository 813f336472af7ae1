package iceberg

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"google.golang.org/protobuf/reflect/protoreflect"

	"floe/kafkaproto"
)

// ColKafka is the struct column of a typed table that holds a record's
// Kafka metadata: partition, offset, timestamp, timestamp_type, key and
// headers, named as the binary table's columns. One struct rather than
// top-level columns because value fields are top-level: _kafka is the one
// name a value field may not have (such a schema's records go to the
// dead-letter table), where prefixed top-level columns would reserve six.
const ColKafka = "_kafka"

// propLayout marks a table's layout: "typed" for typed tables; binary
// tables, older than the property, have none.
const (
	propLayout  = "floe.layout"
	layoutTyped = "typed"
)

// TypedSchema is the schema a typed table is created with: the _kafka
// struct alone; value columns are added by the schema updates that take
// in each writer schema.
func TypedSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: ColKafka, Required: true, Doc: "the Kafka record's metadata",
			Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
				{ID: 2, Name: ColPartition, Type: iceberg.PrimitiveTypes.Int32, Required: true, Doc: "Kafka partition"},
				{ID: 3, Name: ColOffset, Type: iceberg.PrimitiveTypes.Int64, Required: true, Doc: "Kafka offset"},
				{ID: 4, Name: ColTimestamp, Type: iceberg.PrimitiveTypes.TimestampTz, Required: true, Doc: "record timestamp, microseconds, UTC"},
				{ID: 5, Name: ColTimestampType, Type: iceberg.PrimitiveTypes.Int32, Required: true, Doc: "0 CreateTime, 1 LogAppendTime"},
				{ID: 6, Name: ColKey, Type: iceberg.PrimitiveTypes.Binary, Doc: "record key, null when null"},
				{ID: 7, Name: ColHeaders, Required: true, Doc: "record headers in order",
					Type: &iceberg.ListType{ElementID: 8, ElementRequired: true, Element: &iceberg.StructType{
						FieldList: []iceberg.NestedField{
							{ID: 9, Name: "key", Type: iceberg.PrimitiveTypes.String, Required: true},
							{ID: 10, Name: "value", Type: iceberg.PrimitiveTypes.Binary},
						},
					}}},
			}}})
}

// typedBuilder lays records out as Arrow record batches of a typed
// table's schema: the _kafka struct, and value columns decoded by an
// avroNode bound to the same schema.
type typedBuilder struct {
	b        *array.RecordBuilder
	kafka    int
	k        *array.StructBuilder
	part     *array.Int32Builder
	offset   *array.Int64Builder
	ts       *array.TimestampBuilder
	tsType   *array.Int32Builder
	key      *array.BinaryBuilder
	headers  *array.ListBuilder
	header   *array.StructBuilder
	hdrKey   *array.StringBuilder
	hdrValue *array.BinaryBuilder
	n, bytes int
}

func newTypedBuilder(as *arrow.Schema) *typedBuilder {
	rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
	kafka := as.FieldIndices(ColKafka)[0]
	k := rb.Field(kafka).(*array.StructBuilder)
	hl := k.FieldBuilder(5).(*array.ListBuilder)
	hs := hl.ValueBuilder().(*array.StructBuilder)
	return &typedBuilder{
		b: rb, kafka: kafka, k: k,
		part:     k.FieldBuilder(0).(*array.Int32Builder),
		offset:   k.FieldBuilder(1).(*array.Int64Builder),
		ts:       k.FieldBuilder(2).(*array.TimestampBuilder),
		tsType:   k.FieldBuilder(3).(*array.Int32Builder),
		key:      k.FieldBuilder(4).(*array.BinaryBuilder),
		headers:  hl,
		header:   hs,
		hdrKey:   hs.FieldBuilder(0).(*array.StringBuilder),
		hdrValue: hs.FieldBuilder(1).(*array.BinaryBuilder),
	}
}

// addAvro appends one record whose value payload (the wire format's
// prefix cut) decodes with n; an error means it does not, and nothing
// was appended. A nil n appends a row with every value column null (a
// tombstone).
func (b *typedBuilder) addAvro(rec *rawRecord, n *avroNode, payload []byte) error {
	if n == nil {
		for j := 0; j < b.b.Schema().NumFields(); j++ {
			if j != b.kafka {
				b.b.Field(j).AppendNull()
			}
		}
	} else if err := decodeAvro(n, payload, b.b.Field); err != nil {
		return err
	}
	b.addKafka(rec)
	b.bytes += len(payload)
	return nil
}

// addProto appends one record whose value payload (prefix and message
// indexes cut) decodes as md; an error means it does not, and nothing was
// appended.
func (b *typedBuilder) addProto(rec *rawRecord, md protoreflect.MessageDescriptor, payload []byte) error {
	if err := decodeProto(md, payload, b.b.Schema(), b.b.Field, b.kafka); err != nil {
		return err
	}
	b.addKafka(rec)
	b.bytes += len(payload)
	return nil
}

// addJSON appends one record whose value payload (prefix cut) fits the
// JSON Schema n; an error means it does not, and nothing was appended.
func (b *typedBuilder) addJSON(rec *rawRecord, n *jsonNode, payload []byte) error {
	if err := decodeJSON(n, payload, b.b.Schema(), b.b.Field, b.kafka); err != nil {
		return err
	}
	b.addKafka(rec)
	b.bytes += len(payload)
	return nil
}

func (b *typedBuilder) addKafka(rec *rawRecord) {
	r := rec.r
	b.k.Append(true)
	b.part.Append(rec.partition)
	b.offset.Append(rec.offset)
	b.ts.Append(arrow.Timestamp(rec.ts * 1000))
	b.tsType.Append(int32(rec.tsType))
	appendNullable(b.key, r.Key)
	b.headers.Append(true)
	for _, h := range r.Headers {
		b.header.Append(true)
		b.hdrKey.Append(h.Key)
		appendNullable(b.hdrValue, h.Value)
		b.bytes += len(h.Key) + len(h.Value)
	}
	b.n++
	b.bytes += len(r.Key) + 32
}

func (b *typedBuilder) rows() int  { return b.n }
func (b *typedBuilder) full() bool { return b.n >= batchRows || b.bytes >= batchBytes }

func (b *typedBuilder) flush() arrow.RecordBatch {
	b.n, b.bytes = 0, 0
	return b.b.NewRecordBatch()
}

func (b *typedBuilder) release() { b.b.Release() }

// rawRecord is one record a read_committed consumer sees, where the
// converter read it.
type rawRecord struct {
	partition int32
	offset    int64
	ts        int64 // milliseconds
	tsType    int8
	r         *kafkaproto.Record
}
