// Package avro is the registry's Avro format (format.Format) over
// github.com/hamba/avro/v2: parsing with named types from references,
// Confluent's canonical and normalized strings, compatibility through
// hamba's checker in each direction, and payload validation by decoding.
// It knows nothing of HTTP, subjects or stores.
package avro

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	havro "github.com/hamba/avro/v2"

	"floe/schemaregistry/format"
)

// Format is Avro. Its zero value is ready to use.
type Format struct{}

var _ format.Format = Format{}

// New returns the Avro format.
func New() Format { return Format{} }

// Type implements format.Format.
func (Format) Type() string { return format.Avro }

// Schema is a parsed Avro schema.
type Schema struct {
	parsed     havro.Schema
	canonical  string
	normalized string
	resolved   string // canonical with referenced types inlined
}

var _ format.Schema = (*Schema)(nil)

// Canonical implements format.Schema.
func (s *Schema) Canonical() string { return s.canonical }

// Normalized implements format.Schema.
func (s *Schema) Normalized() string { return s.normalized }

// Formatted is the schema as ?format= asks for it: "resolved" with the
// referenced types defined inline (Java's toString without references),
// anything else the canonical form, as Confluent's formattedString.
func (s *Schema) Formatted(format string) string {
	if strings.EqualFold(strings.TrimSpace(format), "resolved") {
		return s.resolved
	}
	return s.canonical
}

// Avro returns the hamba schema, references resolved.
func (s *Schema) Avro() havro.Schema { return s.parsed }

// Validate implements format.Schema: the payload must be one value of
// the schema (validate.go's walk over the binary encoding) and nothing
// after it.
func (s *Schema) Validate(_ []int, payload []byte) error {
	w := walker{b: payload}
	if err := w.value(s.parsed, 0); err != nil {
		return fmt.Errorf("avro payload does not decode: %w", err)
	}
	if w.off != len(payload) {
		return fmt.Errorf("avro payload has %d bytes after its value", len(payload)-w.off)
	}
	return nil
}

// Parse implements format.Format. The references are parsed first, each
// after its own, into one cache of named types the schema can name.
func (Format) Parse(schema string, refs []format.Reference) (sc format.Schema, err error) {
	defer func() {
		// hamba has panicked on malformed input before; a schema is
		// user input, and a panic must not take the agent down.
		if r := recover(); r != nil {
			sc, err = nil, invalid(fmt.Errorf("%v", r))
		}
	}()
	cache := &havro.SchemaCache{}
	var refNames []string
	seen := map[string]bool{}
	defs := map[string]node{}
	if err := addRefs(cache, refs, seen, &refNames, defs, 0); err != nil {
		return nil, err
	}
	root, err := parseJSON(schema)
	if err != nil {
		return nil, invalid(err)
	}
	if err := caseExact(root); err != nil {
		return nil, invalid(err)
	}
	text := schema
	if lowerOrders(&root) {
		var b bytes.Buffer
		root.write(&b)
		text = b.String()
	}
	parsed, err := havro.ParseWithCache(text, "", cache)
	if err != nil {
		return nil, invalid(err)
	}
	out := &Schema{
		parsed:     parsed,
		canonical:  canonical(root, nil),
		normalized: normalized(root, refNames),
	}
	out.resolved = out.canonical
	if len(defs) > 0 {
		out.resolved = canonical(root, defs)
	}
	return out, nil
}

// avroKeys are the attributes Avro's parser reads, by their exact names.
var avroKeys = []string{"type", "name", "namespace", "fields", "items", "values", "symbols", "size",
	"aliases", "doc", "default", "order", "logicalType", "precision", "scale"}

// caseExact refuses an object that spells one of Avro's attributes in
// another case without spelling it right too: hamba's JSON decoding
// matches keys without regard to case, Java's parser (Confluent's) does
// not, and reads such a key as a property of its own, so {"nAme": …} is a
// schema without a name there, and would be printed without one here.
func caseExact(n node) error {
	switch n.kind {
	case 'a':
		for _, v := range n.arr {
			if err := caseExact(v); err != nil {
				return err
			}
		}
	case 'o':
		for _, m := range n.obj {
			for _, k := range avroKeys {
				if m.key != k && strings.EqualFold(m.key, k) {
					if _, ok := n.get(k); !ok {
						return fmt.Errorf("%q is not the attribute %q: Avro's names are case-sensitive", m.key, k)
					}
				}
			}
			if err := caseExact(m.val); err != nil {
				return err
			}
		}
	}
	return nil
}

// lowerOrders lowercases the order of fields: Java's parser takes
// "ASCENDING" (and Confluent's normalized form prints it so), hamba only
// "ascending". It reports whether it changed any.
func lowerOrders(n *node) bool {
	changed := false
	for i := range n.arr {
		changed = lowerOrders(&n.arr[i]) || changed
	}
	for i := range n.obj {
		m := &n.obj[i]
		if m.key == "order" && m.val.kind == 's' && m.val.str != strings.ToLower(m.val.str) {
			m.val.str = strings.ToLower(m.val.str)
			changed = true
		}
		changed = lowerOrders(&m.val) || changed
	}
	return changed
}

// invalidError is a schema that does not parse, worded as Confluent's
// 42201 answer is (capitalized, as clients see it).
type invalidError struct{ msg string }

func (e invalidError) Error() string { return e.msg }

func invalid(err error) error {
	return invalidError{"Invalid schema of type AVRO, details: " + strings.TrimPrefix(err.Error(), "avro: ")}
}

// maxRefDepth bounds how deep references may nest.
const maxRefDepth = 64

func addRefs(cache *havro.SchemaCache, refs []format.Reference, seen map[string]bool, names *[]string, defs map[string]node, depth int) error {
	if depth > maxRefDepth {
		return invalid(errors.New("references nested too deeply"))
	}
	for _, ref := range refs {
		key := fmt.Sprintf("%s/%d", ref.Subject, ref.Version)
		if seen[key] {
			continue
		}
		seen[key] = true
		if err := addRefs(cache, ref.References, seen, names, defs, depth+1); err != nil {
			return err
		}
		root, err := parseJSON(ref.Schema)
		if err != nil {
			return invalid(fmt.Errorf("reference %s: %w", ref.Name, err))
		}
		if _, err := havro.ParseWithCache(ref.Schema, "", cache); err != nil {
			return invalid(fmt.Errorf("reference %s: %w", ref.Name, err))
		}
		if root.kind == 'o' {
			*names = append(*names, definedName(root, ""))
		}
		collectDefs(root, "", defs)
	}
	return nil
}
