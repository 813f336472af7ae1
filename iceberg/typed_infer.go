package iceberg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
)

// floe.iceberg.value.mode=json: no registry; each value must be a JSON
// object, whose columns are inferred from the value itself. true/false →
// boolean, an integer literal → long, any other number → double, a
// string → string, an object → struct (fields by name, sorted), an array
// → list of its items' merged type; null, empty arrays and empty objects
// say nothing and add no column. Types widen only as Iceberg evolves
// them: an integer into a double column is a double; a fraction into a
// long column, or a string where a number was, cannot be (Iceberg has no
// long → double promotion) and sends the record to the dead-letter table
// as incompatible_schema.

// errInfer marks a value whose parts disagree (an array of numbers and
// strings).
var errInfer = errors.New("no one type fits the value")

// inferJSON infers the value columns of one JSON object.
func inferJSON(payload []byte) (*iceberg.Schema, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a %T, not a JSON object", v)
	}
	m := &avroMapper{}
	t, err := m.inferObject(obj)
	if err != nil {
		return nil, err
	}
	if _, kafka := obj[ColKafka]; kafka {
		return nil, fmt.Errorf("%w: value field %s: the name holds the Kafka metadata", errUnmappable, ColKafka)
	}
	if t == nil {
		return iceberg.NewSchema(0), nil
	}
	return iceberg.NewSchema(0, t.(*iceberg.StructType).FieldList...), nil
}

func (m *avroMapper) infer(v any) (iceberg.Type, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return iceberg.PrimitiveTypes.Bool, nil
	case json.Number:
		if _, err := v.Int64(); err == nil && !strings.ContainsAny(string(v), ".eE") {
			return iceberg.PrimitiveTypes.Int64, nil
		}
		return iceberg.PrimitiveTypes.Float64, nil
	case string:
		return iceberg.PrimitiveTypes.String, nil
	case []any:
		var et iceberg.Type
		for _, it := range v {
			t, err := m.infer(it)
			if err != nil {
				return nil, err
			}
			if et, err = m.merge(et, t); err != nil {
				return nil, err
			}
		}
		if et == nil {
			return nil, nil
		}
		return &iceberg.ListType{ElementID: m.id(), Element: et}, nil
	case map[string]any:
		return m.inferObject(v)
	}
	return nil, fmt.Errorf("%w: a %T", errInfer, v)
}

func (m *avroMapper) inferObject(obj map[string]any) (iceberg.Type, error) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	st := &iceberg.StructType{}
	for _, k := range keys {
		t, err := m.infer(obj[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		if t != nil {
			st.FieldList = append(st.FieldList, iceberg.NestedField{ID: m.id(), Name: k, Type: t})
		}
	}
	if len(st.FieldList) == 0 {
		return nil, nil
	}
	return st, nil
}

// merge is the type that holds values of a and b (nil: nothing known).
func (m *avroMapper) merge(a, b iceberg.Type) (iceberg.Type, error) {
	switch {
	case a == nil:
		return b, nil
	case b == nil:
		return a, nil
	}
	if isNumber(a) && isNumber(b) {
		if a.Equals(b) {
			return a, nil
		}
		return iceberg.PrimitiveTypes.Float64, nil
	}
	switch at := a.(type) {
	case *iceberg.ListType:
		if bt, ok := b.(*iceberg.ListType); ok {
			et, err := m.merge(at.Element, bt.Element)
			if err != nil {
				return nil, err
			}
			return &iceberg.ListType{ElementID: at.ElementID, Element: et}, nil
		}
	case *iceberg.StructType:
		if bt, ok := b.(*iceberg.StructType); ok {
			out := &iceberg.StructType{FieldList: append([]iceberg.NestedField(nil), at.FieldList...)}
			for _, f := range bt.FieldList {
				j := fieldIndex(out, f.Name)
				if j < 0 {
					out.FieldList = append(out.FieldList, f)
					continue
				}
				t, err := m.merge(out.FieldList[j].Type, f.Type)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", f.Name, err)
				}
				out.FieldList[j].Type = t
			}
			return out, nil
		}
	default:
		if a.Equals(b) {
			return a, nil
		}
	}
	return nil, fmt.Errorf("%w: %s and %s", errInfer, a, b)
}

func isNumber(t iceberg.Type) bool {
	return t.Equals(iceberg.PrimitiveTypes.Int64) || t.Equals(iceberg.PrimitiveTypes.Float64)
}

// fitInferred returns t with long wherever the table's type is double
// (an integer literal in a double column is a double), so that the
// table's schema takes it in.
func fitInferred(t, table iceberg.Type) iceberg.Type {
	switch tt := t.(type) {
	case *iceberg.ListType:
		if lt, ok := table.(*iceberg.ListType); ok {
			return &iceberg.ListType{ElementID: tt.ElementID, Element: fitInferred(tt.Element, lt.Element)}
		}
	case *iceberg.StructType:
		st, ok := table.(*iceberg.StructType)
		if !ok {
			return t
		}
		out := &iceberg.StructType{}
		for _, f := range tt.FieldList {
			if j := fieldIndex(st, f.Name); j >= 0 {
				f.Type = fitInferred(f.Type, st.FieldList[j].Type)
			}
			out.FieldList = append(out.FieldList, f)
		}
		return out
	default:
		if t.Equals(iceberg.PrimitiveTypes.Int64) && table != nil && table.Equals(iceberg.PrimitiveTypes.Float64) {
			return iceberg.PrimitiveTypes.Float64
		}
	}
	return t
}

// jsonNodeOf is the node that decodes values of an inferred type.
func jsonNodeOf(t iceberg.Type) *jsonNode {
	switch tt := t.(type) {
	case *iceberg.ListType:
		return &jsonNode{kind: jsArray, elem: jsonNodeOf(tt.Element)}
	case *iceberg.StructType:
		n := &jsonNode{kind: jsObject}
		for _, f := range tt.FieldList {
			n.names = append(n.names, f.Name)
			n.members = append(n.members, jsonNodeOf(f.Type))
		}
		return n
	}
	switch {
	case t.Equals(iceberg.PrimitiveTypes.Bool):
		return &jsonNode{kind: jsBool}
	case t.Equals(iceberg.PrimitiveTypes.Int64):
		return &jsonNode{kind: jsInt}
	case t.Equals(iceberg.PrimitiveTypes.Float64):
		return &jsonNode{kind: jsNumber}
	}
	return &jsonNode{kind: jsString}
}
