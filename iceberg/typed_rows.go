package iceberg

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

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
	batch
	kafkaCols
	kafka int
	k     *array.StructBuilder
}

func newTypedBuilder(as *arrow.Schema) *typedBuilder {
	rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
	kafka := as.FieldIndices(ColKafka)[0]
	k := rb.Field(kafka).(*array.StructBuilder)
	return &typedBuilder{batch: batch{b: rb}, kafkaCols: newKafkaCols(k.FieldBuilder, 5), kafka: kafka, k: k}
}

// add appends one record: its value by vapp into the top-level columns
// (nil: every value column null, a tombstone), its key by kapp into _key
// when the table has it (nil: a null _key), and its _kafka struct. Both
// were checked whole: an error is a bug (errAppend).
func (b *typedBuilder) add(rec *rawRecord, vapp, kapp appender, size int) error {
	sc := b.b.Schema()
	skip := []int{b.kafka}
	keyIdx := -1
	if idx := sc.FieldIndices(ColTypedKey); len(idx) == 1 {
		keyIdx = idx[0]
		skip = append(skip, keyIdx)
	}
	if vapp == nil {
		for j := 0; j < sc.NumFields(); j++ {
			if !slices.Contains(skip, j) {
				b.b.Field(j).AppendNull()
			}
		}
	} else if err := vapp(func(name string) int {
		if idx := sc.FieldIndices(name); len(idx) == 1 {
			return idx[0]
		}
		return -1
	}, b.b.Field, sc.NumFields(), skip); err != nil {
		return err
	}
	if keyIdx >= 0 {
		kb := b.b.Field(keyIdx).(*array.StructBuilder)
		if kapp == nil {
			kb.AppendNull()
		} else {
			kb.Append(true)
			st := kb.Type().(*arrow.StructType)
			if err := kapp(func(name string) int {
				if i, ok := st.FieldIdx(name); ok {
					return i
				}
				return -1
			}, kb.FieldBuilder, kb.NumField(), nil); err != nil {
				return err
			}
		}
	}
	b.addKafka(rec)
	b.bytes += size
	return nil
}

func (b *typedBuilder) addKafka(rec *rawRecord) {
	b.k.Append(true)
	b.bytes += b.kafkaCols.add(rec.partition, rec.offset, rec.ts, rec.tsType, rec.r)
	b.n++
}

// rawRecord is one record a read_committed consumer sees, where the
// converter read it.
type rawRecord struct {
	partition int32
	offset    int64
	ts        int64 // milliseconds
	tsType    int8
	r         *kafkaproto.Record
}
