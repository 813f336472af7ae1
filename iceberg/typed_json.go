package iceberg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// JSON Schema as Iceberg columns: an object's properties (in the schema's
// order) → struct, an object with only additionalProperties → map<string,
// T>, array with items → list, string → string (formats date, date-time,
// time and uuid → date, timestamptz, time, uuid), integer → long, number
// → double, boolean → boolean; a type list or a oneOf/anyOf with null →
// optional; other type lists and oneOf/anyOf → a struct with one optional
// field per branch, named by the branch's type; a schema with no type
// (any JSON), a free-form object or an array without items → string, the
// value's JSON text. Local $refs (#/definitions/…, #/$defs/…) are
// followed; recursive ones, allOf, and refs to other subjects are refused.
// Properties a value has beyond the schema's are ignored, as JSON Schema
// allows them.

type jsKind uint8

const (
	jsNull jsKind = iota
	jsBool
	jsInt
	jsNumber
	jsString
	jsObject
	jsMap
	jsArray
	jsUnion
	jsText // any JSON, kept as its text
)

type jsFormat uint8

const (
	jfNone jsFormat = iota
	jfDate
	jfDateTime
	jfTime
	jfUUID
)

// jsonNode is one node of a JSON Schema, compiled for decoding. Unions
// (a type list or a oneOf/anyOf) hold their branches in members, named
// in names ("" for null); objects their properties in names and members.
type jsonNode struct {
	wrapped bool // the top of a value that is not an object: its one column
	kind    jsKind
	format  jsFormat
	elem    *jsonNode
	names   []string
	members []*jsonNode
}

type jsonMapper struct {
	root  map[string]json.RawMessage
	stack []string
	ids   avroMapper
}

// jsonValueSchema maps a JSON Schema's text to value columns and the node
// tree that decodes its values.
func jsonValueSchema(text string) (*iceberg.Schema, *jsonNode, error) {
	var root map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &root); err != nil {
		return nil, nil, fmt.Errorf("%w: the schema is not a JSON object: %v", errUnmappable, err)
	}
	m := &jsonMapper{root: root}
	t, n, err := m.schema([]byte(text))
	if err != nil {
		return nil, nil, err
	}
	if st, ok := t.(*iceberg.StructType); ok && n.kind == jsObject {
		for _, f := range st.FieldList {
			if f.Name == ColKafka {
				return nil, nil, fmt.Errorf("%w: value field %s: the name holds the Kafka metadata", errUnmappable, ColKafka)
			}
		}
		return iceberg.NewSchema(0, st.FieldList...), n, nil
	}
	if t == nil {
		return nil, nil, fmt.Errorf("%w: a null value", errUnmappable)
	}
	top := &jsonNode{wrapped: true, kind: jsObject, names: []string{ColValue}, members: []*jsonNode{n}}
	return iceberg.NewSchema(0, iceberg.NestedField{ID: m.ids.id(), Name: ColValue, Type: t}), top, nil
}

// jsonSchemaDoc is the part of a (sub)schema the mapping reads.
type jsonSchemaDoc struct {
	Ref                  string            `json:"$ref"`
	Type                 json.RawMessage   `json:"type"`
	Format               string            `json:"format"`
	Properties           json.RawMessage   `json:"properties"`
	AdditionalProperties json.RawMessage   `json:"additionalProperties"`
	Items                json.RawMessage   `json:"items"`
	OneOf                []json.RawMessage `json:"oneOf"`
	AnyOf                []json.RawMessage `json:"anyOf"`
	AllOf                []json.RawMessage `json:"allOf"`
	Enum                 []any             `json:"enum"`
}

func (m *jsonMapper) schema(raw []byte) (iceberg.Type, *jsonNode, error) {
	if t := bytes.TrimSpace(raw); bytes.Equal(t, []byte("true")) || bytes.Equal(t, []byte("{}")) {
		return iceberg.PrimitiveTypes.String, &jsonNode{kind: jsText}, nil
	}
	var d jsonSchemaDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, nil, fmt.Errorf("%w: subschema %s: %v", errUnmappable, raw, err)
	}
	if d.Ref != "" {
		return m.ref(d.Ref)
	}
	if len(d.AllOf) == 1 {
		return m.schema(d.AllOf[0])
	}
	if len(d.AllOf) > 1 {
		return nil, nil, fmt.Errorf("%w: allOf", errUnmappable)
	}
	if branches := append(d.OneOf, d.AnyOf...); len(branches) > 0 {
		return m.union(branches, nil)
	}
	var types []string
	if len(d.Type) > 0 {
		var one string
		if json.Unmarshal(d.Type, &one) == nil {
			types = []string{one}
		} else if err := json.Unmarshal(d.Type, &types); err != nil {
			return nil, nil, fmt.Errorf("%w: type %s", errUnmappable, d.Type)
		}
	}
	if len(types) == 0 {
		if d.Enum != nil {
			return iceberg.PrimitiveTypes.String, &jsonNode{kind: jsString}, nil
		}
		if d.Properties != nil {
			types = []string{"object"}
		} else {
			return iceberg.PrimitiveTypes.String, &jsonNode{kind: jsText}, nil
		}
	}
	if len(types) > 1 {
		var branches [][]byte
		for _, ty := range types {
			sub := d
			sub.Type, _ = json.Marshal(ty)
			b, _ := json.Marshal(sub)
			branches = append(branches, b)
		}
		return m.union(nil, branches)
	}
	switch types[0] {
	case "null":
		return nil, &jsonNode{kind: jsNull}, nil
	case "boolean":
		return iceberg.PrimitiveTypes.Bool, &jsonNode{kind: jsBool}, nil
	case "integer":
		return iceberg.PrimitiveTypes.Int64, &jsonNode{kind: jsInt}, nil
	case "number":
		return iceberg.PrimitiveTypes.Float64, &jsonNode{kind: jsNumber}, nil
	case "string":
		switch d.Format {
		case "date":
			return iceberg.PrimitiveTypes.Date, &jsonNode{kind: jsString, format: jfDate}, nil
		case "date-time":
			return iceberg.PrimitiveTypes.TimestampTz, &jsonNode{kind: jsString, format: jfDateTime}, nil
		case "time":
			return iceberg.PrimitiveTypes.Time, &jsonNode{kind: jsString, format: jfTime}, nil
		case "uuid":
			return iceberg.PrimitiveTypes.UUID, &jsonNode{kind: jsString, format: jfUUID}, nil
		}
		return iceberg.PrimitiveTypes.String, &jsonNode{kind: jsString}, nil
	case "array":
		if len(d.Items) == 0 || bytes.HasPrefix(bytes.TrimSpace(d.Items), []byte("[")) {
			return iceberg.PrimitiveTypes.String, &jsonNode{kind: jsText}, nil // tuples: their text
		}
		et, en, err := m.schema(d.Items)
		if err != nil {
			return nil, nil, err
		}
		if et == nil {
			return nil, nil, fmt.Errorf("%w: an array of nulls", errUnmappable)
		}
		return &iceberg.ListType{ElementID: m.ids.id(), Element: et}, &jsonNode{kind: jsArray, elem: en}, nil
	case "object":
		return m.object(d)
	}
	return nil, nil, fmt.Errorf("%w: type %q", errUnmappable, types[0])
}

func (m *jsonMapper) object(d jsonSchemaDoc) (iceberg.Type, *jsonNode, error) {
	if len(d.Properties) == 0 {
		ap := bytes.TrimSpace(d.AdditionalProperties)
		if len(ap) > 0 && ap[0] == '{' && !bytes.Equal(ap, []byte("{}")) {
			vt, vn, err := m.schema(ap)
			if err != nil {
				return nil, nil, err
			}
			if vt == nil {
				return nil, nil, fmt.Errorf("%w: a map of nulls", errUnmappable)
			}
			return &iceberg.MapType{KeyID: m.ids.id(), KeyType: iceberg.PrimitiveTypes.String, ValueID: m.ids.id(), ValueType: vt},
				&jsonNode{kind: jsMap, elem: vn}, nil
		}
		return iceberg.PrimitiveTypes.String, &jsonNode{kind: jsText}, nil // a free-form object: its text
	}
	keys, props, err := orderedObject(d.Properties)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: properties: %v", errUnmappable, err)
	}
	st := &iceberg.StructType{}
	n := &jsonNode{kind: jsObject}
	for i, k := range keys {
		t, pn, err := m.schema(props[i])
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", k, err)
		}
		if t == nil {
			continue
		}
		n.names = append(n.names, k)
		n.members = append(n.members, pn)
		st.FieldList = append(st.FieldList, iceberg.NestedField{ID: m.ids.id(), Name: k, Type: t})
	}
	if len(st.FieldList) == 0 {
		return nil, nil, fmt.Errorf("%w: an object with no properties with values", errUnmappable)
	}
	return st, n, nil
}

// union maps oneOf/anyOf branches, or a type list's (as subschemas).
func (m *jsonMapper) union(raw []json.RawMessage, typed [][]byte) (iceberg.Type, *jsonNode, error) {
	for _, r := range raw {
		typed = append(typed, r)
	}
	n := &jsonNode{kind: jsUnion}
	var types []iceberg.Type
	var nonNull []int
	for i, b := range typed {
		t, bn, err := m.schema(b)
		if err != nil {
			return nil, nil, err
		}
		n.members = append(n.members, bn)
		types = append(types, t)
		if t != nil {
			nonNull = append(nonNull, i)
		}
	}
	switch len(nonNull) {
	case 0:
		return nil, &jsonNode{kind: jsNull}, nil
	case 1:
		return types[nonNull[0]], n.members[nonNull[0]], nil // null when null
	}
	st := &iceberg.StructType{}
	seen := map[string]bool{}
	for _, i := range nonNull {
		name := jsKindName(n.members[i])
		if seen[name] {
			return nil, nil, fmt.Errorf("%w: two oneOf/anyOf branches of type %s", errUnmappable, name)
		}
		seen[name] = true
		n.names = append(n.names, name)
		st.FieldList = append(st.FieldList, iceberg.NestedField{ID: m.ids.id(), Name: name, Type: types[i]})
	}
	var members []*jsonNode
	for _, i := range nonNull {
		members = append(members, n.members[i])
	}
	n.members = members
	return st, n, nil
}

func jsKindName(n *jsonNode) string {
	return [...]string{"null", "boolean", "integer", "number", "string", "object", "map", "array", "union", "json"}[n.kind]
}

func (m *jsonMapper) ref(ref string) (iceberg.Type, *jsonNode, error) {
	var path []string
	switch {
	case strings.HasPrefix(ref, "#/definitions/"), strings.HasPrefix(ref, "#/$defs/"):
		path = strings.Split(strings.TrimPrefix(ref, "#/"), "/")
	default:
		return nil, nil, fmt.Errorf("%w: $ref %s (only local definitions are followed)", errUnmappable, ref)
	}
	for _, r := range m.stack {
		if r == ref {
			return nil, nil, fmt.Errorf("%w: %s is recursive (Iceberg has no recursive types)", errUnmappable, ref)
		}
	}
	var defs map[string]json.RawMessage
	if err := json.Unmarshal(m.root[path[0]], &defs); err != nil || len(path) != 2 || defs[path[1]] == nil {
		return nil, nil, fmt.Errorf("%w: $ref %s names nothing", errUnmappable, ref)
	}
	m.stack = append(m.stack, ref)
	defer func() { m.stack = m.stack[:len(m.stack)-1] }()
	return m.schema(defs[path[1]])
}

// orderedObject returns an object's keys in their order and their values.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, errors.New("not an object")
	}
	var keys []string
	var vals []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, t.(string))
		vals = append(vals, v)
	}
	return keys, vals, nil
}

// decodeJSON checks a JSON value against n, then appends it to the top
// level column builders at their names' indexes; an error means it does
// not fit, and nothing was appended.
func decodeJSON(n *jsonNode, payload []byte, as *arrow.Schema, cols func(int) array.Builder, skip int) error {
	obj, err := parseJSON(n, payload)
	if err != nil {
		return err
	}
	index := func(name string) int {
		if idx := as.FieldIndices(name); len(idx) == 1 {
			return idx[0]
		}
		return -1
	}
	if err := jsonFields(n, obj, index, cols, as.NumFields(), skips(skip)); err != nil {
		return fmt.Errorf("%w: %v", errAppend, err)
	}
	return nil
}

// parseJSON parses payload and checks it whole against n; the object it
// returns (a value that is not an object wrapped as {"value": …}) then
// appends without failing.
func parseJSON(n *jsonNode, payload []byte) (map[string]any, error) {
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
	if n.wrapped {
		obj = map[string]any{ColValue: v}
	} else if !ok {
		return nil, fmt.Errorf("a %T, not an object", v)
	}
	if err := jsonFields(n, obj, nil, nil, 0, nil); err != nil {
		return nil, err
	}
	return obj, nil
}

// skips is the one column index skip as a list (none when negative).
func skips(skip int) []int {
	if skip < 0 {
		return nil
	}
	return []int{skip}
}

// jsonFields checks (child nil) or appends an object's properties to the
// children of a struct; children the node has no property for are null.
func jsonFields(n *jsonNode, obj map[string]any, index func(string) int, child func(int) array.Builder, width int, skip []int) error {
	written := make([]bool, width)
	for _, j := range skip {
		written[j] = true
	}
	for i, name := range n.names {
		var b array.Builder
		if child != nil {
			j := index(name)
			if j < 0 {
				return fmt.Errorf("property %s: no column", name)
			}
			written[j] = true
			b = child(j)
		}
		if err := jsonValue(n.members[i], obj[name], b); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if child != nil {
		for j, w := range written {
			if !w {
				child(j).AppendNull()
			}
		}
	}
	return nil
}

func jsonValue(n *jsonNode, v any, b array.Builder) error {
	if v == nil {
		if b != nil {
			b.AppendNull()
		}
		return nil
	}
	switch n.kind {
	case jsBool:
		x, ok := v.(bool)
		if !ok {
			return fmt.Errorf("a %T, not a boolean", v)
		}
		return appendTo(b, x)
	case jsInt:
		num, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("a %T, not an integer", v)
		}
		x, err := num.Int64()
		if err != nil {
			return fmt.Errorf("%s is not a 64-bit integer", num)
		}
		return appendTo(b, x)
	case jsNumber:
		num, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("a %T, not a number", v)
		}
		x, err := num.Float64()
		if err != nil {
			return err
		}
		return appendTo(b, x)
	case jsString:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("a %T, not a string", v)
		}
		return appendJSONString(n.format, s, b)
	case jsText:
		text, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return appendTo(b, string(text))
	case jsArray:
		items, ok := v.([]any)
		if !ok {
			return fmt.Errorf("a %T, not an array", v)
		}
		var eb array.Builder
		if lb, ok := b.(*array.ListBuilder); ok {
			lb.Append(true)
			eb = lb.ValueBuilder()
		}
		for i, it := range items {
			if err := jsonValue(n.elem, it, eb); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return nil
	case jsMap:
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("a %T, not an object", v)
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var kb, ib array.Builder
		if mb, ok := b.(*array.MapBuilder); ok {
			mb.Append(true)
			kb, ib = mb.KeyBuilder(), mb.ItemBuilder()
		}
		for _, k := range keys {
			if err := appendTo(kb, k); err != nil {
				return err
			}
			if err := jsonValue(n.elem, obj[k], ib); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
		return nil
	case jsObject:
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("a %T, not an object", v)
		}
		sb, _ := b.(*array.StructBuilder)
		if sb == nil {
			return jsonFields(n, obj, nil, nil, 0, nil)
		}
		sb.Append(true)
		st := sb.Type().(*arrow.StructType)
		return jsonFields(n, obj, func(name string) int {
			if i, ok := st.FieldIdx(name); ok {
				return i
			}
			return -1
		}, sb.FieldBuilder, sb.NumField(), nil)
	case jsUnion:
		// The first branch the value fits is the one set.
		for i, m := range n.members {
			if jsonValue(m, v, nil) != nil {
				continue
			}
			sb, _ := b.(*array.StructBuilder)
			if sb == nil {
				return nil
			}
			st := sb.Type().(*arrow.StructType)
			sb.Append(true)
			for k := 0; k < sb.NumField(); k++ {
				if st.Field(k).Name != n.names[i] {
					sb.FieldBuilder(k).AppendNull()
					continue
				}
				if err := jsonValue(m, v, sb.FieldBuilder(k)); err != nil {
					return err
				}
			}
			return nil
		}
		return errors.New("the value fits no oneOf/anyOf branch")
	}
	return fmt.Errorf("json kind %d", n.kind)
}

func appendJSONString(f jsFormat, s string, b array.Builder) error {
	switch f {
	case jfDate:
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return err
		}
		return appendTo(b, arrow.Date32FromTime(d))
	case jfDateTime:
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return err
		}
		return appendTo(b, arrow.Timestamp(t.UnixMicro()))
	case jfTime:
		t, err := time.Parse("15:04:05.999999999Z07:00", s)
		if err != nil {
			if t, err = time.Parse("15:04:05.999999999", s); err != nil {
				return err
			}
		}
		day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
		return appendTo(b, arrow.Time64(t.Sub(day).Microseconds()))
	case jfUUID:
		u, err := uuid.Parse(s)
		if err != nil {
			return err
		}
		return appendTo(b, u)
	}
	return appendTo(b, s)
}
