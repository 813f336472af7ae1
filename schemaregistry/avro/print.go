package avro

import (
	"bytes"
	"slices"
	"strings"
)

// Two printers over a schema's JSON, both from what Avro's Java library
// and Confluent's registry print, because clients compare and look up
// schemas by these strings:
//
//   - canonical is Schema.toString(references, false), Confluent's
//     canonicalString: compact, keys in Java's order, names relative to the
//     enclosing namespace, a primitive without properties as a bare string
//     ("string", never {"type":"string"}), doc, aliases, defaults and other
//     properties kept, referenced types by name.
//   - normalized is Confluent's AvroSchemaUtils.toNormalizedString, the
//     Parsing Canonical Form extended with logical types, field order,
//     doc, aliases, defaults and properties (sorted), full names
//     everywhere: what normalize=true registers and compares.
//
// The JSON was parsed by hamba/avro first, so it is a valid schema: the
// printers do not validate.

var primitives = map[string]bool{
	"null": true, "boolean": true, "int": true, "long": true,
	"float": true, "double": true, "bytes": true, "string": true,
}

var (
	schemaReserved = []string{"doc", "fields", "items", "name", "namespace", "size", "symbols", "values", "type", "aliases"}
	fieldReserved  = []string{"default", "doc", "name", "order", "type", "aliases"}
)

// fullName resolves name in namespace space as Avro does: a name with a
// dot is full already.
func fullName(name, space string) string {
	if strings.Contains(name, ".") || space == "" {
		return name
	}
	return space + "." + name
}

// splitName returns the namespace and short name of a full name.
func splitName(full string) (space, name string) {
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "", full
}

// qualified is Java's Name.getQualified: the short name when the type is
// in the default namespace, else the full name.
func qualified(full, space string) string {
	ns, name := splitName(full)
	if ns == space {
		return name
	}
	return full
}

// definedName returns the full name a named type's object defines in the
// enclosing namespace space.
func definedName(n node, space string) string {
	name, _ := n.getString("name")
	if strings.Contains(name, ".") {
		return name
	}
	if ns, ok := n.getString("namespace"); ok {
		space = ns
	}
	return fullName(name, space)
}

func props(b *bytes.Buffer, n node, reserved []string, extra ...string) {
	for _, m := range n.obj {
		if slices.Contains(reserved, m.key) || slices.Contains(extra, m.key) {
			continue
		}
		b.WriteByte(',')
		writeString(b, m.key)
		b.WriteByte(':')
		m.val.write(b)
	}
}

// canonical prints n as Java's Schema.toString. With defs (the named
// types of the references, by full name) it prints Confluent's "resolved"
// format: a referenced type's definition where it is first used.
func canonical(n node, defs map[string]node) string {
	p := printer{defs: defs, done: map[string]bool{}}
	p.print(n, "")
	return p.b.String()
}

type printer struct {
	b    bytes.Buffer
	defs map[string]node
	done map[string]bool
}

// ref prints a reference to the named type full, or its definition when
// it is a referenced type not printed yet.
func (p *printer) ref(full, space string) {
	if def, ok := p.defs[full]; ok && !p.done[full] {
		p.print(def, space)
		return
	}
	writeString(&p.b, qualified(full, space))
}

func (p *printer) print(n node, space string) {
	b := &p.b
	switch n.kind {
	case 's':
		if primitives[n.str] {
			writeString(b, n.str)
			return
		}
		p.ref(fullName(n.str, space), space)
		return
	case 'a':
		b.WriteByte('[')
		for i, v := range n.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			p.print(v, space)
		}
		b.WriteByte(']')
		return
	case 'o':
	default:
		n.write(b)
		return
	}
	tv, _ := n.get("type")
	if tv.kind != 's' {
		p.print(tv, space)
		return
	}
	t := tv.str
	switch t {
	case "record", "error", "enum", "fixed":
		full := definedName(n, space)
		p.done[full] = true
		ns, name := splitName(full)
		b.WriteString(`{"type":`)
		writeString(b, t)
		b.WriteString(`,"name":`)
		writeString(b, name)
		if ns != space {
			b.WriteString(`,"namespace":`)
			writeString(b, ns)
		}
		if doc, ok := n.get("doc"); ok && doc.kind == 's' {
			b.WriteString(`,"doc":`)
			writeString(b, doc.str)
		}
		switch t {
		case "enum":
			b.WriteString(`,"symbols":`)
			syms, _ := n.get("symbols")
			syms.write(b)
			if def, ok := n.get("default"); ok {
				b.WriteString(`,"default":`)
				def.write(b)
			}
			props(b, n, schemaReserved, "default")
		case "fixed":
			b.WriteString(`,"size":`)
			size, _ := n.get("size")
			size.write(b)
			props(b, n, schemaReserved)
		default:
			b.WriteString(`,"fields":[`)
			fields, _ := n.get("fields")
			for i, f := range fields.arr {
				if i > 0 {
					b.WriteByte(',')
				}
				p.field(f, ns)
			}
			b.WriteByte(']')
			props(b, n, schemaReserved)
		}
		if aliases, ok := n.get("aliases"); ok && len(aliases.arr) > 0 {
			b.WriteString(`,"aliases":[`)
			for i, a := range aliases.arr {
				if i > 0 {
					b.WriteByte(',')
				}
				writeString(b, qualified(fullName(a.str, ns), ns))
			}
			b.WriteByte(']')
		}
		b.WriteByte('}')
	case "array", "map":
		key := "items"
		if t == "map" {
			key = "values"
		}
		b.WriteString(`{"type":`)
		writeString(b, t)
		b.WriteString(`,"` + key + `":`)
		child, _ := n.get(key)
		p.print(child, space)
		props(b, n, schemaReserved)
		b.WriteByte('}')
	default:
		if !primitives[t] {
			// {"type":"com.example.Named"}: a reference.
			p.ref(fullName(t, space), space)
			return
		}
		if len(n.obj) == 1 {
			writeString(b, t)
			return
		}
		b.WriteString(`{"type":`)
		writeString(b, t)
		props(b, n, schemaReserved)
		b.WriteByte('}')
	}
}

func (p *printer) field(f node, space string) {
	b := &p.b
	name, _ := f.getString("name")
	b.WriteString(`{"name":`)
	writeString(b, name)
	b.WriteString(`,"type":`)
	t, _ := f.get("type")
	p.print(t, space)
	if doc, ok := f.get("doc"); ok && doc.kind == 's' {
		b.WriteString(`,"doc":`)
		writeString(b, doc.str)
	}
	if def, ok := f.get("default"); ok {
		b.WriteString(`,"default":`)
		def.write(b)
	}
	if order, ok := f.getString("order"); ok && order != "ascending" {
		b.WriteString(`,"order":`)
		writeString(b, order)
	}
	if aliases, ok := f.get("aliases"); ok && len(aliases.arr) > 0 {
		b.WriteString(`,"aliases":`)
		aliases.write(b)
	}
	props(b, f, fieldReserved)
	b.WriteByte('}')
}

// normalizer prints the normalized form; seen holds the named types
// printed so far (and the referenced ones), which print as their full
// name after their first time.
type normalizer struct {
	b    bytes.Buffer
	seen map[string]bool
}

func normalized(n node, refNames []string) string {
	z := normalizer{seen: map[string]bool{}}
	for _, r := range refNames {
		z.seen[r] = true
	}
	z.print(n, "")
	return z.b.String()
}

// sortedProps writes the properties of n outside skip, sorted by key.
func (z *normalizer) sortedProps(n node, skip []string, extra ...string) {
	ms := slices.Clone(n.obj)
	slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
	props(&z.b, node{kind: 'o', obj: ms}, skip, extra...)
}

func (z *normalizer) sortedStrings(key string, n node, space string) {
	v, ok := n.get(key)
	if !ok || len(v.arr) == 0 {
		return
	}
	var names []string
	for _, a := range v.arr {
		names = append(names, fullName(a.str, space))
	}
	slices.Sort(names)
	names = slices.Compact(names)
	z.b.WriteString(`,"` + key + `":[`)
	for i, a := range names {
		if i > 0 {
			z.b.WriteByte(',')
		}
		writeString(&z.b, a)
	}
	z.b.WriteByte(']')
}

// collectDefs adds the named types n defines to defs, by full name, each
// with its full name as its name, so that it prints the same anywhere.
func collectDefs(n node, space string, defs map[string]node) {
	switch n.kind {
	case 'a':
		for _, v := range n.arr {
			collectDefs(v, space, defs)
		}
		return
	case 'o':
	default:
		return
	}
	t, _ := n.getString("type")
	switch t {
	case "record", "error", "enum", "fixed":
		full := definedName(n, space)
		def := node{kind: 'o', obj: slices.Clone(n.obj)}
		for i := range def.obj {
			if def.obj[i].key == "name" {
				def.obj[i].val = node{kind: 's', str: full}
			}
		}
		defs[full] = def
		ns, _ := splitName(full)
		fields, _ := n.get("fields")
		for _, f := range fields.arr {
			ft, _ := f.get("type")
			collectDefs(ft, ns, defs)
		}
	case "array":
		items, _ := n.get("items")
		collectDefs(items, space, defs)
	case "map":
		values, _ := n.get("values")
		collectDefs(values, space, defs)
	default:
		if tv, ok := n.get("type"); ok && tv.kind != 's' {
			collectDefs(tv, space, defs)
		}
	}
}

var logicalKeys = []string{"logicalType", "precision", "scale"}

func (z *normalizer) logical(n node) {
	lt, ok := n.getString("logicalType")
	if !ok {
		return
	}
	z.b.WriteString(`,"logicalType":`)
	writeString(&z.b, lt)
	if lt != "decimal" {
		return
	}
	if p, ok := n.get("precision"); ok {
		z.b.WriteString(`,"precision":`)
		p.write(&z.b)
	}
	if s, ok := n.get("scale"); ok && s.str != "0" {
		z.b.WriteString(`,"scale":`)
		s.write(&z.b)
	}
}

func (z *normalizer) print(n node, space string) {
	b := &z.b
	switch n.kind {
	case 's':
		if primitives[n.str] {
			writeString(b, n.str)
		} else {
			writeString(b, fullName(n.str, space))
		}
		return
	case 'a':
		b.WriteByte('[')
		for i, v := range n.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			z.print(v, space)
		}
		b.WriteByte(']')
		return
	case 'o':
	default:
		n.write(b)
		return
	}
	tv, _ := n.get("type")
	if tv.kind != 's' {
		z.print(tv, space)
		return
	}
	t := tv.str
	switch t {
	case "record", "error", "enum", "fixed":
		full := definedName(n, space)
		if z.seen[full] {
			writeString(b, full)
			return
		}
		z.seen[full] = true
		ns, _ := splitName(full)
		b.WriteString(`{"name":`)
		writeString(b, full)
		b.WriteString(`,"type":`)
		writeString(b, t)
		switch t {
		case "enum":
			b.WriteString(`,"symbols":`)
			syms, _ := n.get("symbols")
			syms.write(b)
		case "fixed":
			b.WriteString(`,"size":`)
			size, _ := n.get("size")
			size.write(b)
		default:
			b.WriteString(`,"fields":[`)
			fields, _ := n.get("fields")
			for i, f := range fields.arr {
				if i > 0 {
					b.WriteByte(',')
				}
				z.field(f, ns)
			}
			b.WriteByte(']')
		}
		z.logical(n)
		if doc, ok := n.getString("doc"); ok && doc != "" {
			b.WriteString(`,"doc":`)
			writeString(b, doc)
		}
		z.sortedStrings("aliases", n, ns)
		if def, ok := n.get("default"); ok && t == "enum" {
			b.WriteString(`,"default":`)
			def.write(b)
		}
		z.sortedProps(n, schemaReserved, append(logicalKeys, "default")...)
		b.WriteByte('}')
	case "array", "map":
		key := "items"
		if t == "map" {
			key = "values"
		}
		b.WriteString(`{"type":`)
		writeString(b, t)
		b.WriteString(`,"` + key + `":`)
		child, _ := n.get(key)
		z.print(child, space)
		z.logical(n)
		z.sortedProps(n, schemaReserved, logicalKeys...)
		b.WriteByte('}')
	default:
		if !primitives[t] {
			writeString(b, fullName(t, space))
			return
		}
		if len(n.obj) == 1 {
			writeString(b, t)
			return
		}
		b.WriteString(`{"type":`)
		writeString(b, t)
		z.logical(n)
		z.sortedProps(n, schemaReserved, logicalKeys...)
		b.WriteByte('}')
	}
}

func (z *normalizer) field(f node, space string) {
	b := &z.b
	name, _ := f.getString("name")
	b.WriteString(`{"name":`)
	writeString(b, name)
	b.WriteString(`,"type":`)
	t, _ := f.get("type")
	z.print(t, space)
	order, ok := f.getString("order")
	if !ok {
		order = "ascending"
	}
	b.WriteString(`,"order":`)
	writeString(b, strings.ToUpper(order))
	if doc, ok := f.getString("doc"); ok {
		b.WriteString(`,"doc":`)
		writeString(b, doc)
	}
	if aliases, ok := f.get("aliases"); ok && len(aliases.arr) > 0 {
		var names []string
		for _, a := range aliases.arr {
			names = append(names, a.str)
		}
		slices.Sort(names)
		names = slices.Compact(names)
		b.WriteString(`,"aliases":[`)
		for i, a := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, a)
		}
		b.WriteByte(']')
	}
	if def, ok := f.get("default"); ok {
		b.WriteString(`,"default":`)
		def.write(b)
	}
	z.sortedProps(f, fieldReserved)
	b.WriteByte('}')
}
