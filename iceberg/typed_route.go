package iceberg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// ColTypedKey is the struct column of a typed table whose key is typed
// (floe.iceberg.key.mode other than binary): the key's fields, decoded as
// a value's are (a key that is not a record is _key.value); null for a
// null key. Like _kafka, a value field may not have its name.
const ColTypedKey = "_key"

// resolved is one side (key or value) of a record, resolved to the
// schema that decodes it: ws and its cache key, and the payload left
// once any framing is cut; null for a null key or value; reason and
// detail when it cannot be decoded at all.
type resolved struct {
	ws             *writerSchema
	key            string
	payload        []byte
	null           bool
	reason, detail string
}

// resolve finds the schema of one side of a record (v: its bytes) in the
// side's mode. An error is the cycle's (the registry's store failing).
func (w *typedWrite) resolve(v []byte, isKey bool, cur *table.Table) (resolved, error) {
	mode, subject, message := w.cfg.valueMode, w.cfg.valueSubject, w.cfg.protobufMessage
	if isKey {
		mode, subject, message = w.cfg.keyMode, w.cfg.keySubject, ""
	}
	if v == nil {
		return resolved{null: true, key: "null"}, nil
	}
	switch mode {
	case ModeJSON:
		ws, key, err := w.inferred(v, cur, isKey)
		if err != nil {
			reason := reasonDecode
			switch {
			case errors.Is(err, errInfer):
				reason = reasonIncompatible
			case errors.Is(err, errUnmappable):
				reason = reasonUnmappable
			}
			return resolved{reason: reason, detail: err.Error()}, nil
		}
		return resolved{ws: ws, key: key, payload: v}, nil
	case ModeSchemaLatest:
		ws, key, err := w.latest(isKey, subject, message)
		if err != nil {
			return resolved{}, err
		}
		if ws.reason != "" {
			return resolved{reason: ws.reason, detail: ws.err.Error()}, nil
		}
		return resolved{ws: ws, key: key, payload: v}, nil
	}
	if len(v) < 5 || v[0] != 0 {
		return resolved{reason: reasonUnframed, detail: "does not start with magic byte 0 and a schema id"}, nil
	}
	id := int(binary.BigEndian.Uint32(v[1:5]))
	ws, err := w.writer(id)
	if err != nil {
		return resolved{}, err
	}
	payload, key := v[5:], strconv.Itoa(id)
	if ws.proto != nil {
		var h sr.ConfluentHeader
		index, rest, err := h.DecodeIndex(payload, 64)
		if err != nil {
			return resolved{reason: reasonDecode, detail: fmt.Sprintf("schema %d: the Protobuf message indexes do not decode: %v", id, err)}, nil
		}
		p := ws.proto
		payload, key = rest, fmt.Sprint(id, index)
		ws = w.protoMessage(key, func() (protoreflect.MessageDescriptor, error) { return p.Message(index) })
	}
	if ws.reason != "" {
		return resolved{reason: ws.reason, detail: ws.err.Error()}, nil
	}
	return resolved{ws: ws, key: key, payload: payload}, nil
}

// plan is how a (value schema, key schema) pair is laid out in the
// table's schema of one segment: Avro nodes bound to the columns.
type plan struct {
	val, key   *avroNode
	valRenames map[protoreflect.FullName]string // Protobuf fields renamed to their number's column
	keyRenames map[protoreflect.FullName]string
}

// route appends r to the typed table's batch or to the dead-letter
// table's, or reports that its schemas must first evolve the table's. An
// error is the cycle's (the registry's store failing, a bug).
func (w *typedWrite) route(r *rawRecord, cur *table.Table, as *arrow.Schema, plans map[string]*plan, refused map[string]error, carried bool, b *typedBuilder) (bool, error) {
	val, err := w.resolve(r.r.Value, false, cur)
	if err != nil {
		return false, err
	}
	if val.reason != "" {
		return false, w.dead(r, val.reason, "the value "+val.detail)
	}
	keyTyped := w.cfg.keyMode != ModeBinary
	k := resolved{null: true}
	if keyTyped {
		if k, err = w.resolve(r.r.Key, true, cur); err != nil {
			return false, err
		}
		if k.reason != "" {
			return false, w.dead(r, k.reason, "the key "+k.detail)
		}
	}
	pkey := val.key + " | " + k.key
	if err, ok := refused[pkey]; ok {
		return false, w.dead(r, refusedReason(err), err.Error())
	}
	pl, ok := plans[pkey]
	if !ok {
		pl = &plan{}
		ice := iceberg.NewSchema(0)
		if !val.null {
			ice = val.ws.ice
			switch {
			case val.ws.avro != nil:
				// A node of its own per segment (bind fills it), its
				// fields renamed to the columns their aliases name.
				ice, pl.val, _ = avroValueSchema(val.ws.avro, cur.Schema())
			case val.ws.md != nil:
				ice, pl.valRenames, _ = protoValueSchema(val.ws.md, cur.Schema())
			}
		}
		// A null key adds nothing: _key comes with the first key (an
		// empty struct would be an empty Parquet group).
		if keyTyped && !k.null {
			kice := k.ws.ice
			switch {
			case k.ws.avro != nil:
				kice, pl.key, _ = avroValueSchema(k.ws.avro, keyTableSchema(cur))
			case k.ws.md != nil:
				kice, pl.keyRenames, _ = protoValueSchema(k.ws.md, keyTableSchema(cur))
			}
			// The key's placeholder ids, moved past the value's.
			next := ice.HighestFieldID() + 1
			kice, err := iceberg.AssignFreshSchemaIDs(kice, func() int { next++; return next })
			if err != nil {
				return false, fmt.Errorf("key schema %s: %w", k.key, err)
			}
			kst := kice.AsStruct()
			fields := append(ice.Fields(), iceberg.NestedField{ID: next + 1, Name: ColTypedKey, Type: &kst})
			if _, clash := ice.FindFieldByName(ColTypedKey); clash {
				refused[pkey] = fmt.Errorf("%w: value field %s: the name holds the typed key", errUnmappable, ColTypedKey)
				return false, w.dead(r, reasonUnmappable, refused[pkey].Error())
			}
			ice = iceberg.NewSchema(0, fields...)
		}
		applied, err := cur.NewTransaction().UpdateSchema(true, false).UnionByNameWith(ice).Apply()
		if err == nil && !applied.Equals(cur.Schema()) {
			if err = pendingBinds(cur, ice); err != nil {
				refused[pkey] = fmt.Errorf("schemas %s: %w", pkey, err)
				name := TableName(w.t.Name)
				w.c.reportOnce("partition_spec/"+name, "records to the dead-letter table: the table's partition spec does not bind to their schema",
					name, refused[pkey])
				return false, w.dead(r, reasonPartitionSpec, refused[pkey].Error())
			}
			if !carried {
				w.evolve = ice
				return true, nil
			}
			err = errors.New("the table's schema update did not take the schema in")
		}
		if err != nil {
			refused[pkey] = fmt.Errorf("schemas %s and the table's schema: %w", pkey, err)
			return false, w.dead(r, reasonIncompatible, refused[pkey].Error())
		}
		skip := []int{as.FieldIndices(ColKafka)[0]}
		if idx := as.FieldIndices(ColTypedKey); len(idx) == 1 {
			skip = append(skip, idx[0])
		}
		if pl.val != nil {
			if err := bindTop(pl.val, cur.Schema(), skip...); err != nil {
				return false, fmt.Errorf("schema %s: bind to the table: %w", val.key, err)
			}
		}
		if pl.key != nil {
			if err := bindTop(pl.key, keyTableSchema(cur)); err != nil {
				return false, fmt.Errorf("key schema %s: bind to the table: %w", k.key, err)
			}
		}
		plans[pkey] = pl
	}
	vapp, err := prepare(val, pl.val, pl.valRenames)
	if err != nil {
		return false, w.dead(r, reasonDecode, fmt.Sprintf("the value (schema %s): %v", val.key, err))
	}
	var kapp appender
	if keyTyped {
		if kapp, err = prepare(k, pl.key, pl.keyRenames); err != nil {
			return false, w.dead(r, reasonDecode, fmt.Sprintf("the key (schema %s): %v", k.key, err))
		}
	}
	return false, b.add(r, vapp, kapp, len(val.payload))
}

// refusedReason is the dead-letter reason of a refused pair of schemas.
func refusedReason(err error) string {
	if errors.Is(err, errPartitionSpec) {
		return reasonPartitionSpec
	}
	return reasonIncompatible
}

// keyTableSchema is the table's _key struct as a schema (empty if none).
func keyTableSchema(cur *table.Table) *iceberg.Schema {
	if f, ok := cur.Schema().FindFieldByName(ColTypedKey); ok {
		if st, ok := f.Type.(*iceberg.StructType); ok {
			return iceberg.NewSchema(0, st.FieldList...)
		}
	}
	return iceberg.NewSchema(0)
}

// appender appends a checked key or value to the children of a struct
// (the top-level columns, or _key's): index finds a child by name, cols
// returns it, width is their number, skip the children it must leave
// alone. Its errors are errAppend: bugs.
type appender func(index func(string) int, cols func(int) array.Builder, width int, skip []int) error

// prepare checks one side of a record whole against its schema and
// returns what appends it; an error means it does not decode.
func prepare(res resolved, n *avroNode, renames map[protoreflect.FullName]string) (appender, error) {
	if res.null {
		return nil, nil
	}
	ws := res.ws
	switch {
	case ws.md != nil:
		msg := dynamicpb.NewMessage(ws.md)
		if err := (proto.UnmarshalOptions{RecursionLimit: 100}).Unmarshal(res.payload, msg); err != nil {
			return nil, fmt.Errorf("not a %s: %w", ws.md.FullName(), err)
		}
		return func(index func(string) int, cols func(int) array.Builder, width int, skip []int) error {
			return appendChecked(func() { appendProtoFields(msg, renames, index, cols, width, skip) })
		}, nil
	case ws.jnode != nil:
		obj, err := parseJSON(ws.jnode, res.payload)
		if err != nil {
			return nil, err
		}
		return func(index func(string) int, cols func(int) array.Builder, width int, skip []int) error {
			if err := jsonFields(ws.jnode, obj, index, cols, width, skip); err != nil {
				return fmt.Errorf("%w: %v", errAppend, err)
			}
			return nil
		}, nil
	}
	if err := checkAvro(n, res.payload); err != nil {
		return nil, err
	}
	return func(_ func(string) int, cols func(int) array.Builder, _ int, _ []int) error {
		return appendAvro(n, res.payload, cols)
	}, nil
}
