package avro

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	havro "github.com/hamba/avro/v2"

	"floe/schemaregistry/format"
)

// Compatibility as Avro's Java SchemaCompatibility decides it, with its
// findings where it finds them (a JSON pointer into the reader schema)
// and worded as Confluent's Difference prints them, because that is what
// a verbose compatibility answer shows. hamba's checker agrees on the
// verdict but stops at its first finding and words it its own way.
//
// Java's quirks are kept: a writer union's branch is checked from a fresh
// root (its findings are not reported, only the missing branch), and a
// reader/writer pair is judged once, its findings remembered with the
// location of their first visit.

// incompat is one of Java's Incompatibility: its type, message and
// location.
type incompat struct {
	typ, msg string
	loc      []string
}

type pairKey struct{ r, w havro.Schema }

type checker struct {
	memo map[pairKey]*[]incompat // nil while in progress
}

func deref(s havro.Schema) havro.Schema {
	if r, ok := s.(*havro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

func typeName(s havro.Schema) string { return strings.ToUpper(string(s.Type())) }

func (c *checker) compat(token string, r, w havro.Schema, loc []string) []incompat {
	r, w = deref(r), deref(w)
	loc = append(slices.Clip(loc), token)
	key := pairKey{r, w}
	if res, seen := c.memo[key]; seen {
		if res == nil {
			return nil // recursion: compatible unless proven otherwise
		}
		return *res
	}
	c.memo[key] = nil
	res := c.calc(r, w, loc)
	c.memo[key] = &res
	return res
}

func at(typ, msg string, loc []string, extra ...string) []incompat {
	return []incompat{{typ: typ, msg: msg, loc: append(slices.Clone(loc), extra...)}}
}

func mismatch(r, w havro.Schema, loc []string) []incompat {
	return at("TYPE_MISMATCH", fmt.Sprintf("reader type: %s not compatible with writer type: %s", typeName(r), typeName(w)), loc)
}

func (c *checker) calc(r, w havro.Schema, loc []string) []incompat {
	if r.Type() == w.Type() {
		switch r := r.(type) {
		case *havro.ArraySchema:
			return c.compat("items", r.Items(), w.(*havro.ArraySchema).Items(), loc)
		case *havro.MapSchema:
			return c.compat("values", r.Values(), w.(*havro.MapSchema).Values(), loc)
		case *havro.FixedSchema:
			wf := w.(*havro.FixedSchema)
			out := names(r, wf, loc)
			if r.Size() != wf.Size() {
				out = append(out, at("FIXED_SIZE_MISMATCH", fmt.Sprintf("expected: %d, found: %d", wf.Size(), r.Size()), loc, "size")...)
			}
			return out
		case *havro.EnumSchema:
			we := w.(*havro.EnumSchema)
			out := names(r, we, loc)
			var missing []string
			for _, s := range we.Symbols() {
				if !slices.Contains(r.Symbols(), s) {
					missing = append(missing, s)
				}
			}
			slices.Sort(missing)
			missing = slices.Compact(missing)
			if len(missing) > 0 && !(r.HasDefault() && slices.Contains(r.Symbols(), r.Default())) {
				out = append(out, at("MISSING_ENUM_SYMBOLS", "["+strings.Join(missing, ", ")+"]", loc, "symbols")...)
			}
			return out
		case *havro.RecordSchema:
			wr := w.(*havro.RecordSchema)
			out := names(r, wr, loc)
			return append(out, c.fields(r, wr, loc)...)
		case *havro.UnionSchema:
			var out []incompat
			for i, wb := range w.(*havro.UnionSchema).Types() {
				if len(c.compat("", r, wb, nil)) > 0 {
					out = append(out, at("MISSING_UNION_BRANCH", "reader union lacking writer type: "+typeName(deref(wb)), loc, strconv.Itoa(i))...)
				}
			}
			return out
		}
		return nil // primitives of one type
	}
	if wu, ok := w.(*havro.UnionSchema); ok {
		var out []incompat
		for i, wb := range wu.Types() {
			out = append(out, c.compat(strconv.Itoa(i), r, wb, loc)...)
		}
		return out
	}
	wt := w.Type()
	switch r.Type() {
	case havro.Long:
		if wt == havro.Int {
			return nil
		}
	case havro.Float:
		if wt == havro.Int || wt == havro.Long {
			return nil
		}
	case havro.Double:
		if wt == havro.Int || wt == havro.Long || wt == havro.Float {
			return nil
		}
	case havro.Bytes:
		if wt == havro.String {
			return nil
		}
	case havro.String:
		if wt == havro.Bytes {
			return nil
		}
	case havro.Union:
		for _, rb := range r.(*havro.UnionSchema).Types() {
			if len(c.compat("", rb, w, nil)) == 0 {
				return nil
			}
		}
		return at("MISSING_UNION_BRANCH", "reader union lacking writer type: "+typeName(w), loc)
	}
	return mismatch(r, w, loc)
}

// names is Java's checkSchemaNames: the same full name, or the writer's
// among the reader's aliases.
func names(r, w havro.NamedSchema, loc []string) []incompat {
	if r.FullName() == w.FullName() || slices.Contains(r.Aliases(), w.FullName()) {
		return nil
	}
	return at("NAME_MISMATCH", "expected: "+w.FullName(), loc, "name")
}

func (c *checker) fields(r, w *havro.RecordSchema, loc []string) []incompat {
	var out []incompat
	for i, rf := range r.Fields() {
		floc := append(slices.Clip(loc), "fields", strconv.Itoa(i))
		wf := writerField(w, rf)
		switch {
		case wf != nil:
			out = append(out, c.compat("type", rf.Type(), wf.Type(), floc)...)
		case rf.HasDefault():
		case isEnumWithDefault(rf.Type()):
			// Java compares the enum with the writer record itself.
			out = append(out, c.compat("type", rf.Type(), w, floc)...)
		default:
			out = append(out, at("READER_FIELD_MISSING_DEFAULT_VALUE", rf.Name(), floc)...)
		}
	}
	return out
}

func isEnumWithDefault(s havro.Schema) bool {
	e, ok := deref(s).(*havro.EnumSchema)
	return ok && e.HasDefault()
}

// writerField is Java's lookupWriterField: by the reader field's name,
// then its aliases.
func writerField(w *havro.RecordSchema, rf *havro.Field) *havro.Field {
	for _, name := range append([]string{rf.Name()}, rf.Aliases()...) {
		for _, wf := range w.Fields() {
			if wf.Name() == name {
				return wf
			}
		}
	}
	return nil
}

// location is Java's Incompatibility.getLocation: a JSON pointer without
// the root token.
func location(loc []string) string {
	parts := make([]string, 0, len(loc))
	for _, p := range loc[1:] {
		parts = append(parts, strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1"))
	}
	return "/" + strings.Join(parts, "/")
}

// difference words a finding as Confluent's Difference, the reader's and
// the writer's schema called readerRole and writerRole.
func difference(in incompat, readerRole, writerRole string) string {
	p := location(in.loc)
	var desc string
	switch in.typ {
	case "FIXED_SIZE_MISMATCH":
		desc = "The size of FIXED type field at path '" + p + "' in the " + readerRole + " schema does not match with the " + writerRole + " schema"
	case "TYPE_MISMATCH":
		desc = "The type (path '" + p + "') of a field in the " + readerRole + " schema does not match with the " + writerRole + " schema"
	case "NAME_MISMATCH":
		desc = "The name of the schema has changed (path '" + p + "')"
	case "MISSING_ENUM_SYMBOLS":
		desc = "The " + readerRole + " schema is missing enum symbols '" + in.msg + "' at path '" + p + "' in the " + writerRole + " schema"
	case "MISSING_UNION_BRANCH":
		desc = "The " + readerRole + " schema is missing a type inside a union field at path '" + p + "' in the " + writerRole + " schema"
	case "READER_FIELD_MISSING_DEFAULT_VALUE":
		desc = "The field '" + in.msg + "' at path '" + p + "' in the " + readerRole + " schema has no default value and is missing in the " + writerRole + " schema"
	}
	return "{errorType:'" + in.typ + "', description:'" + desc + "', additionalInfo:'" + in.msg + "'}"
}

// Compatible implements format.Format: the findings of reading what
// writer wrote with reader, the reader called the new schema and the
// writer the old one (a BACKWARD check's words).
func (f Format) Compatible(reader, writer format.Schema) []string {
	return f.CompatibleAs(reader, writer, "new", "old")
}

// CompatibleAs is Compatible with the schemas' roles named as Confluent's
// checks name them: FORWARD asks CompatibleAs(old, new, "old", "new").
func (Format) CompatibleAs(reader, writer format.Schema, readerRole, writerRole string) []string {
	r, ok1 := reader.(*Schema)
	w, ok2 := writer.(*Schema)
	if !ok1 || !ok2 {
		return []string{"Incompatible because of different schema type"}
	}
	c := checker{memo: map[pairKey]*[]incompat{}}
	var out []string
	for _, in := range c.compat("", r.parsed, w.parsed, nil) {
		out = append(out, difference(in, readerRole, writerRole))
	}
	return out
}
