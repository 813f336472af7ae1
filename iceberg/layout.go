package iceberg

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Topic configs that make a topic a table. The agent validates them with
// CheckTopicConfig; the converter reads them from the store.
const (
	// ConfigEnabled turns conversion on ("true") or off ("false") for a
	// topic; unset follows the converter's default (--iceberg-default).
	ConfigEnabled = "floe.iceberg.enabled"
	// ConfigPartitionSpec is the table's partition spec, a comma-separated
	// list of TRANSFORM(COLUMN) with Iceberg's transform names: identity,
	// year, month, day, hour, bucket[N], truncate[W], void. It applies
	// when the table is created.
	ConfigPartitionSpec = "floe.iceberg.partition.spec"
	// DefaultPartitionSpec partitions by the day of the record timestamp.
	DefaultPartitionSpec = "day(timestamp)"
)

// Column names and field ids of every topic table. Ids are fixed so that a
// table's columns keep their ids whichever floe version created it; typed
// value columns (schema registry) will take ids above lastFieldID.
const (
	ColPartition     = "partition"
	ColOffset        = "offset"
	ColTimestamp     = "timestamp"
	ColTimestampType = "timestamp_type"
	ColKey           = "key"
	ColValue         = "value"
	ColHeaders       = "headers"

	idPartition, idOffset, idTimestamp, idTimestampType = 1, 2, 3, 4
	idKey, idValue, idHeaders                           = 5, 6, 7
	idHeaderElem, idHeaderKey, idHeaderValue            = 8, 9, 10
	lastFieldID                                         = 10
)

// Schema is the Iceberg schema of a topic table: one row per record.
// partition, offset, timestamp and timestamp_type are never null; a null
// key or value is a null, not an empty binary; headers is an empty list for
// records without headers, and a header's value may be null as in Kafka.
func Schema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{idPartition, idOffset},
		iceberg.NestedField{ID: idPartition, Name: ColPartition, Type: iceberg.PrimitiveTypes.Int32, Required: true,
			Doc: "Kafka partition"},
		iceberg.NestedField{ID: idOffset, Name: ColOffset, Type: iceberg.PrimitiveTypes.Int64, Required: true,
			Doc: "Kafka offset"},
		iceberg.NestedField{ID: idTimestamp, Name: ColTimestamp, Type: iceberg.PrimitiveTypes.TimestampTz, Required: true,
			Doc: "record timestamp, microseconds, UTC"},
		iceberg.NestedField{ID: idTimestampType, Name: ColTimestampType, Type: iceberg.PrimitiveTypes.Int32, Required: true,
			Doc: "0 CreateTime, 1 LogAppendTime"},
		iceberg.NestedField{ID: idKey, Name: ColKey, Type: iceberg.PrimitiveTypes.Binary, Doc: "record key, null when null"},
		iceberg.NestedField{ID: idValue, Name: ColValue, Type: iceberg.PrimitiveTypes.Binary, Doc: "record value, null for tombstones"},
		iceberg.NestedField{ID: idHeaders, Name: ColHeaders, Required: true, Doc: "record headers in order",
			Type: &iceberg.ListType{ElementID: idHeaderElem, ElementRequired: true, Element: &iceberg.StructType{
				FieldList: []iceberg.NestedField{
					{ID: idHeaderKey, Name: "key", Type: iceberg.PrimitiveTypes.String, Required: true},
					{ID: idHeaderValue, Name: "value", Type: iceberg.PrimitiveTypes.Binary},
				},
			}}},
	)
}

// arrowSchema is Schema as Arrow, with the field ids the Parquet writer
// needs.
func arrowSchema() (*arrow.Schema, error) {
	return table.SchemaToArrowSchema(Schema(), nil, true, false)
}

// ParsePartitionSpec parses a ConfigPartitionSpec value against Schema:
// each transform must exist and apply to its column's type (day() of
// timestamp, bucket[16](key), identity(partition), truncate[4](value), …).
// An empty value is the unpartitioned spec.
func ParsePartitionSpec(s string) (iceberg.PartitionSpec, error) {
	return parsePartitionSpec(s, false)
}

// parsePartitionSpec parses a ConfigPartitionSpec for a binary table or,
// typed set, a typed one: the same column names, as the fields of the
// _kafka struct.
func parsePartitionSpec(s string, typed bool) (iceberg.PartitionSpec, error) {
	sc := Schema()
	var opts []iceberg.PartitionOption
	seen := map[string]bool{}
	for _, term := range splitSpec(s) {
		open := strings.LastIndexByte(term, '(')
		if open <= 0 || !strings.HasSuffix(term, ")") {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition spec term %q: want TRANSFORM(COLUMN)", term)
		}
		name, col := strings.TrimSpace(term[:open]), strings.TrimSpace(term[open+1:len(term)-1])
		tr, err := iceberg.ParseTransform(name)
		if _, unknown := tr.(iceberg.UnknownTransform); unknown || err != nil {
			// iceberg-go parses names it does not know as a transform that
			// blocks every write; refuse them here instead.
			return iceberg.PartitionSpec{}, fmt.Errorf("partition spec term %q: invalid transform %q (want identity, year, month, day, hour, bucket[N], truncate[W], void)", term, name)
		}
		f, ok := sc.FindFieldByName(col)
		if !ok || f.ID > idHeaders || f.ID == idHeaders {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition spec term %q: no column %q (want one of partition, offset, timestamp, timestamp_type, key, value)", term, col)
		}
		if !tr.CanTransform(f.Type) {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition spec term %q: %s cannot transform %s", term, tr, f.Type)
		}
		target := partitionFieldName(col, tr)
		if seen[target] {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition spec term %q: %s given twice", term, target)
		}
		seen[target] = true
		if typed {
			opts = append(opts, iceberg.AddPartitionFieldByName(ColKafka+"."+col, target, tr, TypedSchema(), nil))
		} else {
			opts = append(opts, iceberg.AddPartitionFieldByName(col, target, tr, sc, nil))
		}
	}
	spec, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("partition spec %q: %w", s, err)
	}
	return spec, nil
}

// splitSpec splits on commas outside brackets and parentheses.
func splitSpec(s string) []string {
	var terms []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case ',':
			if depth == 0 {
				terms = append(terms, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if last := strings.TrimSpace(s[start:]); last != "" || len(terms) > 0 {
		terms = append(terms, last)
	}
	return terms
}

// partitionFieldName names a partition field as Spark and Java do:
// timestamp_day, key_bucket, partition (identity keeps the column's name).
func partitionFieldName(col string, tr iceberg.Transform) string {
	switch t := tr.(type) {
	case iceberg.IdentityTransform:
		return col
	case iceberg.BucketTransform:
		return col + "_bucket_" + strconv.Itoa(t.NumBuckets)
	case iceberg.TruncateTransform:
		return col + "_trunc_" + strconv.Itoa(t.Width)
	}
	return col + "_" + tr.String()
}

// CheckTopicConfig validates one of the floe.iceberg.* topic configs; other
// keys return an error naming them.
func CheckTopicConfig(key, value string) error {
	switch key {
	case ConfigEnabled:
		if value != "true" && value != "false" {
			return errors.New("must be true or false")
		}
		return nil
	case ConfigPartitionSpec:
		_, err := ParsePartitionSpec(value)
		return err
	}
	if ok, err := checkTypedConfig(key, value); ok {
		return err
	}
	return fmt.Errorf("unknown config %s", key)
}

// TableName is the table a topic becomes: its name with dots replaced by
// underscores, since engines read a dot as a namespace separator. Kafka
// warns about topics colliding on '.' and '_'; when two do, the table
// belongs to the first one converted (see Converter).
func TableName(topic string) string {
	return strings.ReplaceAll(topic, ".", "_")
}
