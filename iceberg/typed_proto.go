package iceberg

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Protobuf messages as Iceberg columns: fields by their proto names in
// declaration order; a oneof (not a proto3 optional) is a struct column
// named by the oneof, one optional field per member; repeated → list,
// map → map; enums → strings (the value's name; an unknown number as its
// decimal text); uint32 and fixed32 → long, uint64 and fixed64 →
// decimal(20,0) (Iceberg has no unsigned types); the well-known Timestamp
// → timestamptz, Duration → long microseconds, wrappers → their optional
// scalar, Struct, Value and ListValue → their JSON text. Fields with
// presence (messages, optional, oneof members) are null when absent;
// proto3 scalars without presence read their default, as proto3 does.

// protoValueSchema maps a message to the value columns of a typed table.
// Each column records its field number in its doc ("protobuf field N"):
// given the table's schema (else nil), a field the table has no column
// for, whose number a column of the same message has, is that column (a
// renamed field keeps filling it); renames maps such fields' full names
// to their columns.
func protoValueSchema(md protoreflect.MessageDescriptor, table *iceberg.Schema) (*iceberg.Schema, map[protoreflect.FullName]string, error) {
	m := &avroMapper{renames: map[protoreflect.FullName]string{}}
	var tst *iceberg.StructType
	if table != nil {
		st := table.AsStruct()
		tst = &st
	}
	t, err := m.protoMessage(md, tst)
	if err != nil {
		return nil, nil, err
	}
	st := t.(*iceberg.StructType)
	for _, f := range st.FieldList {
		if f.Name == ColKafka {
			return nil, nil, fmt.Errorf("%w: value field %s: the name holds the Kafka metadata", errUnmappable, ColKafka)
		}
	}
	return iceberg.NewSchema(0, st.FieldList...), m.renames, nil
}

// protoDoc is the doc of a Protobuf field's column: its number.
func protoDoc(fd protoreflect.FieldDescriptor) string {
	return fmt.Sprintf("protobuf field %d", fd.Number())
}

// protoColumn is the column of field fd: its name, or the column of its
// number it was renamed to.
func protoColumn(renames map[protoreflect.FullName]string, fd protoreflect.FieldDescriptor) string {
	if c, ok := renames[fd.FullName()]; ok {
		return c
	}
	return string(fd.Name())
}

// wktScalar is the column type of a well-known message that is one value.
func wktScalar(md protoreflect.MessageDescriptor) (iceberg.Type, bool) {
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		return iceberg.PrimitiveTypes.TimestampTz, true
	case "google.protobuf.Duration":
		return iceberg.PrimitiveTypes.Int64, true
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue":
		return iceberg.PrimitiveTypes.String, true
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
		"google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		return protoScalar(md.Fields().ByName("value")), true
	}
	return nil, false
}

func protoScalar(fd protoreflect.FieldDescriptor) iceberg.Type {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return iceberg.PrimitiveTypes.Bool
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return iceberg.PrimitiveTypes.Int32
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return iceberg.PrimitiveTypes.Int64
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return iceberg.DecimalTypeOf(20, 0)
	case protoreflect.FloatKind:
		return iceberg.PrimitiveTypes.Float32
	case protoreflect.DoubleKind:
		return iceberg.PrimitiveTypes.Float64
	case protoreflect.StringKind, protoreflect.EnumKind:
		return iceberg.PrimitiveTypes.String
	case protoreflect.BytesKind:
		return iceberg.PrimitiveTypes.Binary
	}
	return nil
}

func (m *avroMapper) protoMessage(md protoreflect.MessageDescriptor, table *iceberg.StructType) (iceberg.Type, error) {
	if t, ok := wktScalar(md); ok {
		return t, nil
	}
	for _, name := range m.stack {
		if name == string(md.FullName()) {
			return nil, fmt.Errorf("%w: message %s is recursive (Iceberg has no recursive types)", errUnmappable, name)
		}
	}
	m.stack = append(m.stack, string(md.FullName()))
	defer func() { m.stack = m.stack[:len(m.stack)-1] }()
	st := &iceberg.StructType{}
	oneofs := map[protoreflect.FullName]*iceberg.StructType{}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		name := string(fd.Name())
		var tt iceberg.Type
		if od := fd.ContainingOneof(); table != nil && (od == nil || od.IsSynthetic()) {
			if fieldIndex(table, name) < 0 {
				for _, c := range table.FieldList {
					if c.Doc == protoDoc(fd) && fields.ByName(protoreflect.Name(c.Name)) == nil {
						name = c.Name
						m.renames[fd.FullName()] = name
						break
					}
				}
			}
			if j := fieldIndex(table, name); j >= 0 {
				tt = table.FieldList[j].Type
			}
		}
		t, err := m.protoField(fd, tt)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", md.FullName(), fd.Name(), err)
		}
		f := iceberg.NestedField{ID: m.id(), Name: name, Type: t, Doc: protoDoc(fd)}
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			o, ok := oneofs[od.FullName()]
			if !ok {
				o = &iceberg.StructType{}
				oneofs[od.FullName()] = o
				st.FieldList = append(st.FieldList, iceberg.NestedField{ID: m.id(), Name: string(od.Name()), Type: o})
			}
			o.FieldList = append(o.FieldList, f)
			continue
		}
		st.FieldList = append(st.FieldList, f)
	}
	if len(st.FieldList) == 0 {
		return nil, fmt.Errorf("%w: message %s has no fields", errUnmappable, md.FullName())
	}
	return st, nil
}

func (m *avroMapper) protoField(fd protoreflect.FieldDescriptor, table iceberg.Type) (iceberg.Type, error) {
	if fd.IsMap() {
		kt := protoScalar(fd.MapKey())
		var tv iceberg.Type
		if mt, ok := table.(*iceberg.MapType); ok {
			tv = mt.ValueType
		}
		vt, err := m.protoSingle(fd.MapValue(), tv)
		if err != nil {
			return nil, err
		}
		if _, ok := kt.(iceberg.DecimalType); ok {
			kt = iceberg.PrimitiveTypes.String // uint64 keys as their decimal text
		}
		return &iceberg.MapType{KeyID: m.id(), KeyType: kt, ValueID: m.id(), ValueType: vt}, nil
	}
	if lt, ok := table.(*iceberg.ListType); ok && fd.IsList() {
		table = lt.Element
	}
	t, err := m.protoSingle(fd, table)
	if err != nil {
		return nil, err
	}
	if fd.IsList() {
		return &iceberg.ListType{ElementID: m.id(), Element: t}, nil
	}
	return t, nil
}

func (m *avroMapper) protoSingle(fd protoreflect.FieldDescriptor, table iceberg.Type) (iceberg.Type, error) {
	if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
		st, _ := table.(*iceberg.StructType)
		return m.protoMessage(fd.Message(), st)
	}
	return protoScalar(fd), nil
}

// decodeProto decodes payload as md and appends it to the top-level
// column builders; an error means it does not decode, and nothing was
// appended.
func decodeProto(md protoreflect.MessageDescriptor, payload []byte, as *arrow.Schema, cols func(int) array.Builder, skip int) error {
	msg := dynamicpb.NewMessage(md)
	if err := (proto.UnmarshalOptions{RecursionLimit: 100}).Unmarshal(payload, msg); err != nil {
		return fmt.Errorf("not a %s: %w", md.FullName(), err)
	}
	return appendChecked(func() {
		appendProtoFields(msg, nil, func(name string) int {
			if idx := as.FieldIndices(name); len(idx) == 1 {
				return idx[0]
			}
			return -1
		}, cols, as.NumFields(), skips(skip))
	})
}

// appendChecked runs an append of a decoded value, whose failures (must)
// are bugs: errAppend, which fails the cycle rather than the process.
func appendChecked(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errAppend, p)
		}
	}()
	f()
	return nil
}

// appendProtoFields appends msg's fields to the children of a struct
// (index by name, builders by index, n children); children the message
// has no field for are null.
func appendProtoFields(msg protoreflect.Message, renames map[protoreflect.FullName]string, index func(string) int, child func(int) array.Builder, n int, skip []int) {
	written := make([]bool, n)
	for _, j := range skip {
		written[j] = true
	}
	md := msg.Descriptor()
	oneofs := md.Oneofs()
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			continue
		}
		j := index(protoColumn(renames, fd))
		if j < 0 {
			panic(fmt.Sprintf("field %s: no column", fd.Name()))
		}
		written[j] = true
		appendProtoField(msg, renames, fd, child(j))
	}
	for i := 0; i < oneofs.Len(); i++ {
		od := oneofs.Get(i)
		if od.IsSynthetic() {
			continue
		}
		j := index(string(od.Name()))
		if j < 0 {
			panic(fmt.Sprintf("oneof %s: no column", od.Name()))
		}
		written[j] = true
		sb := child(j).(*array.StructBuilder)
		set := msg.WhichOneof(od)
		if set == nil {
			sb.AppendNull()
			continue
		}
		st := sb.Type().(*arrow.StructType)
		sb.Append(true)
		for k := 0; k < sb.NumField(); k++ {
			if st.Field(k).Name == string(set.Name()) {
				appendProtoField(msg, renames, set, sb.FieldBuilder(k))
			} else {
				sb.FieldBuilder(k).AppendNull()
			}
		}
	}
	for j, w := range written {
		if !w {
			child(j).AppendNull()
		}
	}
}

func appendProtoField(msg protoreflect.Message, renames map[protoreflect.FullName]string, fd protoreflect.FieldDescriptor, b array.Builder) {
	switch {
	case fd.IsMap():
		mb := b.(*array.MapBuilder)
		mb.Append(true)
		msg.Get(fd).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			appendProtoScalar(fd.MapKey(), k.Value(), mb.KeyBuilder())
			appendProtoSingle(renames, fd.MapValue(), v, mb.ItemBuilder())
			return true
		})
	case fd.IsList():
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		l := msg.Get(fd).List()
		for i := 0; i < l.Len(); i++ {
			appendProtoSingle(renames, fd, l.Get(i), lb.ValueBuilder())
		}
	case fd.HasPresence() && !msg.Has(fd):
		b.AppendNull()
	default:
		appendProtoSingle(renames, fd, msg.Get(fd), b)
	}
}

func appendProtoSingle(renames map[protoreflect.FullName]string, fd protoreflect.FieldDescriptor, v protoreflect.Value, b array.Builder) {
	if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
		appendProtoScalar(fd, v, b)
		return
	}
	m := v.Message()
	md := m.Descriptor()
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		f := md.Fields()
		must(appendTo(b, arrow.Timestamp(m.Get(f.ByName("seconds")).Int()*1e6+m.Get(f.ByName("nanos")).Int()/1000)))
		return
	case "google.protobuf.Duration":
		f := md.Fields()
		must(appendTo(b, m.Get(f.ByName("seconds")).Int()*1e6+m.Get(f.ByName("nanos")).Int()/1000))
		return
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue":
		text, err := protojson.Marshal(m.Interface())
		must(err)
		// protojson varies its spaces on purpose; the column is compact.
		var compact bytes.Buffer
		must(json.Compact(&compact, text))
		must(appendTo(b, compact.String()))
		return
	}
	if _, ok := wktScalar(md); ok { // a wrapper
		vf := md.Fields().ByName("value")
		appendProtoScalar(vf, m.Get(vf), b)
		return
	}
	sb := b.(*array.StructBuilder)
	sb.Append(true)
	st := sb.Type().(*arrow.StructType)
	appendProtoFields(m, renames, func(name string) int {
		if i, ok := st.FieldIdx(name); ok {
			return i
		}
		return -1
	}, sb.FieldBuilder, sb.NumField(), nil)
}

func appendProtoScalar(fd protoreflect.FieldDescriptor, v protoreflect.Value, b array.Builder) {
	var x any
	switch fd.Kind() {
	case protoreflect.BoolKind:
		x = v.Bool()
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		x = int32(v.Int())
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		x = v.Int()
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		x = int64(v.Uint())
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if _, ok := b.(*array.StringBuilder); ok { // a map key
			x = fmt.Sprint(v.Uint())
		} else {
			x = decimal128.FromU64(v.Uint())
		}
	case protoreflect.FloatKind:
		x = float32(v.Float())
	case protoreflect.DoubleKind:
		x = v.Float()
	case protoreflect.StringKind:
		x = v.String()
	case protoreflect.BytesKind:
		x = v.Bytes()
	case protoreflect.EnumKind:
		n := v.Enum()
		if ev := fd.Enum().Values().ByNumber(n); ev != nil {
			x = string(ev.Name())
		} else {
			x = fmt.Sprint(int32(n))
		}
	}
	must(appendTo(b, x))
}

// must panics on an append of the wrong type: the table's columns were
// made from the same descriptor, so only a bug gets there.
func must(err error) {
	if err != nil {
		panic(err)
	}
}
