package iceberg

import (
	"errors"
	"fmt"
	"slices"
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
	terms, err := parseSpecTerms(s)
	if err != nil {
		return iceberg.PartitionSpec{}, err
	}
	return bindSpec(s, terms, Schema(), false)
}

// specTerm is one TRANSFORM(COLUMN) of a ConfigPartitionSpec: col as
// written, a Kafka column or (typed tables) a value column, nested
// fields by dotted path.
type specTerm struct {
	text, col string
	tr        iceberg.Transform
}

// kafkaSpecColumns are the columns a spec names by the same names in
// binary and typed tables (in typed ones, _kafka's fields); any other
// name is a binary table's value or a typed table's value column.
var kafkaSpecColumns = []string{ColPartition, ColOffset, ColTimestamp, ColTimestampType, ColKey}

// parseSpecTerms checks a ConfigPartitionSpec's syntax and transforms
// whatever the table: TRANSFORM(COLUMN) terms with Iceberg's transform
// names, columns as dotted paths, the Kafka columns with transforms
// their types take, no partition field twice, one time transform a
// column. Which other columns exist
// depends on the table (bindSpec).
func parseSpecTerms(s string) ([]specTerm, error) {
	var terms []specTerm
	seen, timed := map[string]bool{}, map[string]string{}
	sc := Schema()
	for _, term := range splitSpec(s) {
		open := strings.IndexByte(term, '(')
		if open <= 0 || !strings.HasSuffix(term, ")") {
			return nil, fmt.Errorf("partition spec term %q: want TRANSFORM(COLUMN)", term)
		}
		name, col := strings.TrimSpace(term[:open]), strings.TrimSpace(term[open+1:len(term)-1])
		tr, err := iceberg.ParseTransform(name)
		if _, unknown := tr.(iceberg.UnknownTransform); unknown || err != nil {
			// iceberg-go parses names it does not know as a transform that
			// blocks every write; refuse them here instead.
			return nil, fmt.Errorf("partition spec term %q: invalid transform %q (want identity, year, month, day, hour, bucket[N], truncate[W], void)", term, name)
		}
		for _, part := range strings.Split(col, ".") {
			if part == "" || strings.ContainsAny(part, "()[], \t") {
				return nil, fmt.Errorf("partition spec term %q: want TRANSFORM(COLUMN), a column or a dotted path to a nested field", term)
			}
		}
		if slices.Contains(kafkaSpecColumns, col) {
			if f, _ := sc.FindFieldByName(col); !tr.CanTransform(f.Type) {
				return nil, fmt.Errorf("partition spec term %q: %s cannot transform %s", term, tr, f.Type)
			}
		}
		target := partitionFieldName(col, tr)
		if seen[target] {
			return nil, fmt.Errorf("partition spec term %q: %s given twice", term, target)
		}
		seen[target] = true
		switch tr.(type) {
		case iceberg.YearTransform, iceberg.MonthTransform, iceberg.DayTransform, iceberg.HourTransform:
			if prev, ok := timed[col]; ok {
				return nil, fmt.Errorf("partition spec term %q: conflicts with %q (Iceberg takes one of year, month, day, hour of a column)", term, prev)
			}
			timed[col] = term
		}
		terms = append(terms, specTerm{text: term, col: col, tr: tr})
	}
	return terms, nil
}

// onlyKafkaColumns reports whether terms name the Kafka columns alone,
// which every table has from its creation.
func onlyKafkaColumns(terms []specTerm) bool {
	for _, t := range terms {
		if !slices.Contains(kafkaSpecColumns, t.col) {
			return false
		}
	}
	return true
}

// bindSpec binds parsed terms (of spec s) to the schema of a binary
// table (typed unset: the Kafka columns and value) or of a typed table
// (the Kafka columns are _kafka's fields; other names are value or _key
// columns, nested ones by dotted path through structs). A column must
// exist, be primitive, not sit inside a list or a map, and have a type
// its transform takes: bucket (int, long, decimal, date, time,
// timestamps, string, uuid, binary), truncate (int, long, decimal,
// string, binary), year/month/day (date, timestamps), hour (timestamps).
func bindSpec(s string, terms []specTerm, sc *iceberg.Schema, typed bool) (iceberg.PartitionSpec, error) {
	var opts []iceberg.PartitionOption
	for _, t := range terms {
		path := t.col
		switch {
		case typed && slices.Contains(kafkaSpecColumns, t.col):
			path = ColKafka + "." + t.col
		case !typed && !slices.Contains(kafkaSpecColumns, t.col) && t.col != ColValue:
			return iceberg.PartitionSpec{}, fmt.Errorf("partition spec term %q: no column %q (want one of partition, offset, timestamp, timestamp_type, key, value; value columns need %s or %s other than %s)",
				t.text, t.col, ConfigValueMode, ConfigKeyMode, ModeBinary)
		}
		typ, err := specSource(sc, path)
		if err != nil {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition spec term %q: %w", t.text, err)
		}
		if !t.tr.CanTransform(typ) {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition spec term %q: %s cannot transform %s", t.text, t.tr, typ)
		}
		opts = append(opts, iceberg.AddPartitionFieldByName(path, partitionFieldName(t.col, t.tr), t.tr, sc, nil))
	}
	spec, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("partition spec %q: %w", s, err)
	}
	return spec, nil
}

// specSource finds a partition source column by dotted path: a primitive
// column, top-level or in structs (not in a list or a map: Iceberg
// partitions by one value per row).
func specSource(sc *iceberg.Schema, path string) (iceberg.Type, error) {
	fields := sc.Fields()
	parts := strings.Split(path, ".")
	for i, part := range parts {
		j := slices.IndexFunc(fields, func(f iceberg.NestedField) bool { return f.Name == part })
		if j < 0 {
			return nil, fmt.Errorf("no column %q", path)
		}
		f := fields[j]
		if i == len(parts)-1 {
			if _, ok := f.Type.(iceberg.PrimitiveType); !ok {
				return nil, fmt.Errorf("column %q is a %s, not a primitive column", path, f.Type)
			}
			return f.Type, nil
		}
		st, ok := f.Type.(*iceberg.StructType)
		if !ok {
			return nil, fmt.Errorf("column %q: %s is a %s, and a partition source may only be nested in structs", path, strings.Join(parts[:i+1], "."), f.Type)
		}
		fields = st.FieldList
	}
	return nil, fmt.Errorf("no column %q", path)
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
// timestamp_day, key_bucket, partition (identity keeps the column's name);
// a nested column's dots are underscores (customer_region), as iceberg-go
// refuses dots in a partition field's name.
func partitionFieldName(col string, tr iceberg.Transform) string {
	col = strings.ReplaceAll(col, ".", "_")
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
		// Which columns exist depends on the modes: checkConfigSet.
		_, err := parseSpecTerms(value)
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
