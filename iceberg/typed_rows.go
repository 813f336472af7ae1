package iceberg

import (
	"github.com/apache/iceberg-go"
)

// ColKafka is the struct column of a typed table that holds a record's
// Kafka metadata: partition, offset, timestamp, timestamp_type, key and
// headers, named as the binary table's columns. One struct rather than
// top-level columns because value fields are top-level: _kafka is the one
// name a value field may not have (such a schema's records go to the
// dead-letter table), where prefixed top-level columns would reserve six.
const ColKafka = "_kafka"

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

