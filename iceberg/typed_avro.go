package iceberg

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/apache/iceberg-go"
	havro "github.com/hamba/avro/v2"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// errUnmappable marks a writer schema that has no Iceberg form (a
// recursive type, a decimal wider than 38 digits, a value field named
// _kafka, …): its records go to the dead-letter table.
var errUnmappable = errors.New("schema cannot be a table")

// avroKind is the Avro encoding a node reads.
type avroKind uint8

const (
	akNull avroKind = iota
	akBool
	akInt
	akLong
	akFloat
	akDouble
	akBytes
	akString
	akFixed
	akEnum
	akArray
	akMap
	akUnion
	akRecord
)

// avroConv is how a primitive's value becomes its column's (logical types).
type avroConv uint8

const (
	cvNone       avroConv = iota
	cvMillis              // time-millis, timestamp-millis: ×1000 into microseconds
	cvDecimal             // big-endian two's complement unscaled value
	cvUUID                // the uuid's text into 16 bytes
	cvDate                // days since the epoch
	cvMicros              // time-micros, timestamp-micros as they are
	cvTimeMillis          // time-millis
)

// avroNode is one node of a writer schema, compiled for decoding: what to
// read from the payload, and where in the table's columns it goes (bind
// fills the slots for one table schema).
type avroNode struct {
	kind    avroKind
	conv    avroConv
	size    int      // fixed
	symbols []string // enum
	elem    *avroNode
	// union: members by branch index; opt is the one non-null branch of
	// a [null, T] union (its column is T's), -1 for a union that is a
	// struct of optional fields, whose slots are by branch (-1: null).
	members []*avroNode
	opt     int
	// record: the writer's fields in order and their names; slots are the
	// table struct's child per field (-1: a null-typed field, not a
	// column), missing the table's children the writer has no field for.
	// A struct-like union's names are its branches' field names ("" for
	// null), matched by name like a record's.
	fields  []*avroNode
	names   []string
	cols    []bool
	slots   []int
	missing []int
}

// avroMapper turns a writer schema into an Iceberg type and a node tree.
type avroMapper struct {
	nextID  int
	stack   []string                         // full names of the records being mapped (recursion)
	renames map[protoreflect.FullName]string // Protobuf fields renamed to their number's column
}

func (m *avroMapper) id() int { m.nextID++; return m.nextID }

// avroValueSchema maps a value's writer schema to the value columns of a
// typed table (a record's fields; any other schema is one column named
// value) and the node tree that decodes its payloads. Every column is
// optional, so that a later schema may drop a field and old rows read a
// new one as null; field ids are placeholders that the table's schema
// update replaces with fresh ones.
//
// Given the table's schema (else nil), a record field the table has no
// column for, one of whose Avro aliases it has, is that column: a field
// renamed in a later schema keeps filling its column.
func avroValueSchema(s havro.Schema, table *iceberg.Schema) (*iceberg.Schema, *avroNode, error) {
	m := &avroMapper{}
	if r, ok := deref(s).(*havro.RecordSchema); ok {
		t, n, err := m.record(r)
		if err != nil {
			return nil, nil, err
		}
		st := t.(*iceberg.StructType)
		if table != nil {
			tst := table.AsStruct()
			followAliases(r, st, n, &tst)
		}
		for _, f := range st.FieldList {
			if f.Name == ColKafka {
				return nil, nil, fmt.Errorf("%w: value field %s: the name holds the Kafka metadata", errUnmappable, ColKafka)
			}
		}
		return iceberg.NewSchema(0, st.FieldList...), n, nil
	}
	t, n, err := m.typ(s)
	if err != nil {
		return nil, nil, err
	}
	if t == nil {
		return nil, nil, fmt.Errorf("%w: a null value", errUnmappable)
	}
	top := &avroNode{kind: akRecord, fields: []*avroNode{n}, names: []string{ColValue}, cols: []bool{true}}
	return iceberg.NewSchema(0, iceberg.NestedField{ID: m.id(), Name: ColValue, Type: t}), top, nil
}

// followAliases renames the fields of st (a record r's columns, decoded
// by n) that table lacks to the alias table has, in nested records too
// (directly or as [null, record]).
func followAliases(r *havro.RecordSchema, st *iceberg.StructType, n *avroNode, table *iceberg.StructType) {
	for i, f := range r.Fields() {
		if !n.cols[i] {
			continue
		}
		name := n.names[i]
		j := fieldIndex(st, name)
		if fieldIndex(table, name) < 0 {
			for _, a := range f.Aliases() {
				if fieldIndex(table, a) >= 0 && fieldIndex(st, a) < 0 {
					st.FieldList[j].Name, n.names[i], name = a, a, a
					break
				}
			}
		}
		tj := fieldIndex(table, name)
		if tj < 0 {
			continue
		}
		sub, subNode := recordOf(f.Type(), n.fields[i])
		ist, ok1 := st.FieldList[j].Type.(*iceberg.StructType)
		tst, ok2 := table.FieldList[tj].Type.(*iceberg.StructType)
		if sub != nil && ok1 && ok2 {
			followAliases(sub, ist, subNode, tst)
		}
	}
}

// recordOf is the record a field's schema is, directly or as [null, record].
func recordOf(s havro.Schema, n *avroNode) (*havro.RecordSchema, *avroNode) {
	if r, ok := deref(s).(*havro.RecordSchema); ok {
		return r, n
	}
	if u, ok := deref(s).(*havro.UnionSchema); ok && n.kind == akUnion && n.opt >= 0 {
		if r, ok := deref(u.Types()[n.opt]).(*havro.RecordSchema); ok {
			return r, n.members[n.opt]
		}
	}
	return nil, nil
}

// bindTop binds a value's node to a table schema's top-level columns,
// the columns in skip (_kafka's, _key's) left to the caller.
func bindTop(n *avroNode, sc *iceberg.Schema, skip ...int) error {
	st := sc.AsStruct()
	if err := n.bind(&st, -1); err != nil {
		return err
	}
	kept := n.missing[:0]
	for _, j := range n.missing {
		if !slices.Contains(skip, j) {
			kept = append(kept, j)
		}
	}
	n.missing = kept
	return nil
}

func deref(s havro.Schema) havro.Schema {
	if r, ok := s.(*havro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// typ maps one schema; a nil type is Avro's null, which has no column.
func (m *avroMapper) typ(s havro.Schema) (iceberg.Type, *avroNode, error) {
	switch s := deref(s).(type) {
	case *havro.NullSchema:
		return nil, &avroNode{kind: akNull}, nil
	case *havro.PrimitiveSchema:
		return primitive(s)
	case *havro.FixedSchema:
		if d, ok := s.Logical().(*havro.DecimalLogicalSchema); ok {
			return decimal(d, &avroNode{kind: akFixed, size: s.Size(), conv: cvDecimal})
		}
		return iceberg.PrimitiveTypes.Binary, &avroNode{kind: akFixed, size: s.Size()}, nil
	case *havro.EnumSchema:
		return iceberg.PrimitiveTypes.String, &avroNode{kind: akEnum, symbols: s.Symbols()}, nil
	case *havro.ArraySchema:
		et, en, err := m.typ(s.Items())
		if err != nil {
			return nil, nil, err
		}
		if et == nil {
			return nil, nil, fmt.Errorf("%w: an array of nulls", errUnmappable)
		}
		return &iceberg.ListType{ElementID: m.id(), Element: et}, &avroNode{kind: akArray, elem: en}, nil
	case *havro.MapSchema:
		vt, vn, err := m.typ(s.Values())
		if err != nil {
			return nil, nil, err
		}
		if vt == nil {
			return nil, nil, fmt.Errorf("%w: a map of nulls", errUnmappable)
		}
		return &iceberg.MapType{KeyID: m.id(), KeyType: iceberg.PrimitiveTypes.String, ValueID: m.id(), ValueType: vt},
			&avroNode{kind: akMap, elem: vn}, nil
	case *havro.UnionSchema:
		return m.union(s)
	case *havro.RecordSchema:
		return m.record(s)
	}
	return nil, nil, fmt.Errorf("%w: Avro type %s", errUnmappable, s.Type())
}

func primitive(s *havro.PrimitiveSchema) (iceberg.Type, *avroNode, error) {
	var logical havro.LogicalType
	if l := s.Logical(); l != nil {
		logical = l.Type()
	}
	switch s.Type() {
	case havro.Boolean:
		return iceberg.PrimitiveTypes.Bool, &avroNode{kind: akBool}, nil
	case havro.Int:
		switch logical {
		case havro.Date:
			return iceberg.PrimitiveTypes.Date, &avroNode{kind: akInt, conv: cvDate}, nil
		case havro.TimeMillis:
			return iceberg.PrimitiveTypes.Time, &avroNode{kind: akInt, conv: cvTimeMillis}, nil
		}
		return iceberg.PrimitiveTypes.Int32, &avroNode{kind: akInt}, nil
	case havro.Long:
		switch logical {
		case havro.TimeMicros:
			return iceberg.PrimitiveTypes.Time, &avroNode{kind: akLong, conv: cvMicros}, nil
		case havro.TimestampMillis:
			return iceberg.PrimitiveTypes.TimestampTz, &avroNode{kind: akLong, conv: cvMillis}, nil
		case havro.TimestampMicros:
			return iceberg.PrimitiveTypes.TimestampTz, &avroNode{kind: akLong, conv: cvMicros}, nil
		case havro.LocalTimestampMillis:
			return iceberg.PrimitiveTypes.Timestamp, &avroNode{kind: akLong, conv: cvMillis}, nil
		case havro.LocalTimestampMicros:
			return iceberg.PrimitiveTypes.Timestamp, &avroNode{kind: akLong, conv: cvMicros}, nil
		}
		return iceberg.PrimitiveTypes.Int64, &avroNode{kind: akLong}, nil
	case havro.Float:
		return iceberg.PrimitiveTypes.Float32, &avroNode{kind: akFloat}, nil
	case havro.Double:
		return iceberg.PrimitiveTypes.Float64, &avroNode{kind: akDouble}, nil
	case havro.Bytes:
		if d, ok := s.Logical().(*havro.DecimalLogicalSchema); ok {
			return decimal(d, &avroNode{kind: akBytes, conv: cvDecimal})
		}
		return iceberg.PrimitiveTypes.Binary, &avroNode{kind: akBytes}, nil
	case havro.String:
		if logical == havro.UUID {
			return iceberg.PrimitiveTypes.UUID, &avroNode{kind: akString, conv: cvUUID}, nil
		}
		return iceberg.PrimitiveTypes.String, &avroNode{kind: akString}, nil
	}
	return nil, nil, fmt.Errorf("%w: Avro type %s", errUnmappable, s.Type())
}

func decimal(d *havro.DecimalLogicalSchema, n *avroNode) (iceberg.Type, *avroNode, error) {
	if d.Precision() < 1 || d.Precision() > 38 {
		return nil, nil, fmt.Errorf("%w: decimal(%d,%d): Iceberg decimals have 1 to 38 digits", errUnmappable, d.Precision(), d.Scale())
	}
	return iceberg.DecimalTypeOf(d.Precision(), d.Scale()), n, nil
}

// union maps [null, T] (either order) and [T] to T, and any other union
// to a struct with one optional field per non-null branch, named by the
// branch's type name (a named type's short name): adding a branch to the
// union later adds a field rather than renumbering the others.
func (m *avroMapper) union(s *havro.UnionSchema) (iceberg.Type, *avroNode, error) {
	n := &avroNode{kind: akUnion, opt: -1}
	var nonNull []int
	for i, b := range s.Types() {
		if _, ok := deref(b).(*havro.NullSchema); ok {
			n.members = append(n.members, &avroNode{kind: akNull})
			continue
		}
		nonNull = append(nonNull, i)
		n.members = append(n.members, nil)
	}
	switch len(nonNull) {
	case 0:
		return nil, n, nil
	case 1:
		t, mn, err := m.typ(s.Types()[nonNull[0]])
		if err != nil {
			return nil, nil, err
		}
		n.members[nonNull[0]], n.opt = mn, nonNull[0]
		return t, n, nil
	}
	st := &iceberg.StructType{}
	seen := map[string]bool{}
	n.names = make([]string, len(n.members))
	for _, i := range nonNull {
		b := s.Types()[i]
		name := string(deref(b).Type())
		if named, ok := deref(b).(havro.NamedSchema); ok {
			name = named.Name()
		}
		if seen[name] || name == "" {
			return nil, nil, fmt.Errorf("%w: union branches both named %s", errUnmappable, name)
		}
		seen[name] = true
		t, mn, err := m.typ(b)
		if err != nil {
			return nil, nil, err
		}
		n.members[i] = mn
		n.names[i] = name
		st.FieldList = append(st.FieldList, iceberg.NestedField{ID: m.id(), Name: name, Type: t})
	}
	return st, n, nil
}

func (m *avroMapper) record(r *havro.RecordSchema) (iceberg.Type, *avroNode, error) {
	for _, name := range m.stack {
		if name == r.FullName() {
			return nil, nil, fmt.Errorf("%w: record %s is recursive (Iceberg has no recursive types)", errUnmappable, name)
		}
	}
	m.stack = append(m.stack, r.FullName())
	defer func() { m.stack = m.stack[:len(m.stack)-1] }()
	st := &iceberg.StructType{}
	n := &avroNode{kind: akRecord}
	for _, f := range r.Fields() {
		t, fn, err := m.typ(f.Type())
		if err != nil {
			return nil, nil, fmt.Errorf("%s.%s: %w", r.FullName(), f.Name(), err)
		}
		n.fields = append(n.fields, fn)
		n.names = append(n.names, f.Name())
		n.cols = append(n.cols, t != nil)
		if t != nil {
			st.FieldList = append(st.FieldList, iceberg.NestedField{ID: m.id(), Name: f.Name(), Type: t, Doc: f.Doc()})
		}
	}
	if len(st.FieldList) == 0 {
		return nil, nil, fmt.Errorf("%w: record %s has no fields with values", errUnmappable, r.FullName())
	}
	return st, n, nil
}

// bind points n's slots at the columns of t, the table's type for the
// node (after the table's schema took in the writer schema's), skipping
// the struct children in skip (the top level's _kafka).
func (n *avroNode) bind(t iceberg.Type, skip int) error {
	switch n.kind {
	case akArray:
		lt, ok := t.(*iceberg.ListType)
		if !ok {
			return fmt.Errorf("array into %s", t)
		}
		return n.elem.bind(lt.Element, -1)
	case akMap:
		mt, ok := t.(*iceberg.MapType)
		if !ok {
			return fmt.Errorf("map into %s", t)
		}
		return n.elem.bind(mt.ValueType, -1)
	case akUnion:
		if n.opt >= 0 {
			return n.members[n.opt].bind(t, -1)
		}
		st, ok := t.(*iceberg.StructType)
		if !ok {
			if t == nil {
				return nil // [null]
			}
			return fmt.Errorf("union into %s", t)
		}
		n.slots = make([]int, len(n.members))
		n.missing = n.missing[:0]
		used := map[int]bool{}
		// Branches are matched to fields by the names union gave them.
		for i, name := range n.names {
			n.slots[i] = -1
			if name == "" {
				continue // null
			}
			j := fieldIndex(st, name)
			if j < 0 {
				return fmt.Errorf("union branch %s: no field", name)
			}
			n.slots[i] = j
			used[j] = true
			if err := n.members[i].bind(st.FieldList[j].Type, -1); err != nil {
				return err
			}
		}
		for j := range st.FieldList {
			if !used[j] {
				n.missing = append(n.missing, j)
			}
		}
		return nil
	case akRecord:
		st, ok := t.(*iceberg.StructType)
		if !ok {
			return fmt.Errorf("record into %s", t)
		}
		n.slots = make([]int, len(n.fields))
		n.missing = n.missing[:0]
		used := map[int]bool{skip: true}
		for i, fn := range n.fields {
			n.slots[i] = -1
			if !n.cols[i] {
				continue
			}
			j := fieldIndex(st, n.names[i])
			if j < 0 {
				return fmt.Errorf("field %s: no column", n.names[i])
			}
			n.slots[i] = j
			used[j] = true
			if err := fn.bind(st.FieldList[j].Type, -1); err != nil {
				return fmt.Errorf("%s: %w", n.names[i], err)
			}
		}
		for j := range st.FieldList {
			if !used[j] {
				n.missing = append(n.missing, j)
			}
		}
	}
	return nil
}

func fieldIndex(st *iceberg.StructType, name string) int {
	for j, f := range st.FieldList {
		if f.Name == name {
			return j
		}
	}
	return -1
}

// maxAvroItems bounds the items of one array or map block whose items may
// take no bytes (a record of nulls): anything else is bounded by the
// payload's length.
const maxAvroItems = 1 << 16

// checkCount refuses a block count no payload of this length can hold.
func checkCount(count int64, rest int) error {
	if count < 0 || count > math.MaxInt32 || (count > int64(rest) && count > maxAvroItems) {
		return fmt.Errorf("block of %d items in %d bytes", count, rest)
	}
	return nil
}
