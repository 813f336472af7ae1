// Package jsonschema is the schema registry's JSON Schema format: it parses a
// schema (drafts 4, 6, 7, 2019-09 and 2020-12; draft-07 when $schema is
// absent, as Confluent does) with the schemas its references name, gives the
// forms Confluent stores and compares it in (Canonical: the text minified with
// its key order kept; Normalized: keys sorted), validates payloads against it,
// and answers Confluent's JSON Schema compatibility rules (diff.go) with the
// messages of Confluent's verbose answer.
//
// It owns no state and does no I/O: a $ref resolves only to the schema itself
// or to one of the references the registry hands to Parse, never to the
// network or the file system, and no input (a malformed schema, circular
// $refs, a payload) may make it panic or loop forever.
//
// Files: jsonschema.go (the format.Format, parsing, validation),
// value.go (the JSON tree that keeps key order, and Jackson-like writing),
// model.go (schemas as Confluent's differ sees them), diff.go (the walk and
// the rules for types, bounds, enums and combined schemas), diff_content.go
// (the rules for objects and arrays) and difference.go (Confluent's
// difference types, its compatible set and its messages).
package jsonschema

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"regexp/syntax"
	"strings"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"

	"floe/schemaregistry/format"
)

// baseURI is where a schema without an $id lives, Confluent's choice too
// ("mem://input"): a relative $ref such as "address.json" resolves to
// mem://input/address.json, where the reference named "address.json" is
// served.
const baseURI = "mem://input"

// maxReferenceDepth bounds how deeply references may refer to references.
const maxReferenceDepth = 64

var _ format.Format = (*Format)(nil)

// Format is the JSON Schema format. Its zero value is ready to use.
type Format struct{}

// New returns the JSON Schema format.
func New() format.Format { return &Format{} }

// Type is "JSON".
func (*Format) Type() string { return format.JSON }

// Schema is a parsed JSON Schema. It is immutable once parsed and safe for
// concurrent use: the registry may cache one per id and validate many
// produces with it at once.
type Schema struct {
	root     *value
	compiled *sjs.Schema
	// docs are the root and every reference's document, by the URL each is
	// served at; the differ follows $refs through them.
	docs map[string]*value
	// draft is the root's draft: 4, 6, 7, 2019 or 2020.
	draft int

	canonical, normalized string
}

var _ format.Schema = (*Schema)(nil)

// ErrInvalid marks every error Parse returns: the schema is not valid
// (Confluent's 42201).
var ErrInvalid = errors.New("invalid schema")

type invalidError struct{ detail string }

func (e *invalidError) Error() string {
	return "Invalid schema of type JSON, details: " + e.detail
}

func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(format string, args ...any) error {
	return &invalidError{detail: fmt.Sprintf(format, args...)}
}

// Parse parses text and the references it names. The error reads like
// Confluent's 42201 message and matches ErrInvalid.
func (*Format) Parse(text string, refs []format.Reference) (format.Schema, error) {
	root, err := parseValue([]byte(text))
	if err != nil {
		return nil, invalid("Invalid JSON: %v", err)
	}
	if root.kind != 'o' && root.kind != 'b' {
		return nil, invalid("Invalid JSON schema: expected an object or boolean at the root")
	}
	s := &Schema{root: root, docs: map[string]*value{}, draft: draftOf(root)}

	resources := map[string]*value{}
	if err := collectReferences(refs, resources, 0); err != nil {
		return nil, err
	}

	c := sjs.NewCompiler()
	c.DefaultDraft(sjs.Draft7)
	c.UseRegexpEngine(lenientRegexp)
	ld := &loader{resources: resources, docs: s.docs}
	c.UseLoader(ld)
	rootURL := baseURI
	if id := rootID(root); id != "" {
		if u, err := url.Parse(id); err == nil && u.IsAbs() {
			rootURL = stripFragment(u.String())
		}
	}
	s.docs[rootURL] = root
	if rootURL != baseURI {
		s.docs[baseURI] = root
	}
	doc := root.toAny()
	if m, ok := doc.(map[string]any); ok && s.draft == 7 {
		// A $schema naming no draft we know is read as draft-07, as
		// Confluent reads it, rather than fetched as a meta-schema.
		if v, ok := m["$schema"].(string); ok && !knownDraft(v) {
			delete(m, "$schema")
		}
	}
	if err := c.AddResource(rootURL, doc); err != nil {
		return nil, invalid("%v", err)
	}
	compiled, err := compile(c, rootURL)
	if err != nil {
		return nil, invalid("%v", err)
	}
	s.compiled = compiled
	// Every reference is available to the differ, loaded by the validator
	// or not (a reference may name a schema only reached through $id).
	for name, doc := range resources {
		if _, ok := s.docs[name]; !ok {
			s.docs[name] = doc
		}
	}
	s.canonical = root.compact(false)
	s.normalized = root.compact(true)
	return s, nil
}

// compile runs the compiler, turning a panic in it (which junk must never
// cause, but the library is not ours) into an error.
func compile(c *sjs.Compiler, loc string) (sch *sjs.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("compiling the schema failed: %v", r)
		}
	}()
	return c.Compile(loc)
}

// collectReferences gathers refs and the references they make in turn, each
// under its name resolved against the base URI (and its name as given).
func collectReferences(refs []format.Reference, into map[string]*value, depth int) error {
	if depth > maxReferenceDepth {
		return invalid("references nested deeper than %d levels", maxReferenceDepth)
	}
	for _, r := range refs {
		doc, err := parseValue([]byte(r.Schema))
		if err != nil {
			return invalid("Invalid JSON in reference %q: %v", r.Name, err)
		}
		for _, key := range referenceKeys(r.Name) {
			if _, ok := into[key]; !ok {
				into[key] = doc
			}
		}
		if err := collectReferences(r.References, into, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// referenceKeys are the URLs a reference named name is served at.
func referenceKeys(name string) []string {
	keys := []string{stripFragment(name)}
	if u, err := url.Parse(name); err == nil {
		base, _ := url.Parse(baseURI + "/")
		keys = append(keys, stripFragment(base.ResolveReference(u).String()))
	}
	return keys
}

func stripFragment(u string) string {
	s, _, _ := strings.Cut(u, "#")
	return s
}

// loader serves the validator the documents among the references, and
// refuses every other URL: nothing is fetched from the network or read from
// the file system.
type loader struct {
	resources map[string]*value
	docs      map[string]*value
}

var errNotReference = errors.New("not among the schema's references (floe never fetches schemas from the network or the file system)")

func (l *loader) Load(u string) (any, error) {
	doc := l.lookup(u)
	if doc == nil {
		return nil, errNotReference
	}
	l.docs[u] = doc
	return doc.toAny(), nil
}

// lookup finds the reference served at u: by its exact URL, else by the
// last path segment of a relative reference name (a root with an $id of
// https://example.com/a/b.json resolves "c.json" to
// https://example.com/a/c.json, which the reference names as "c.json").
func (l *loader) lookup(u string) *value {
	if doc, ok := l.resources[u]; ok {
		return doc
	}
	pu, err := url.Parse(u)
	if err != nil {
		return nil
	}
	for name, doc := range l.resources {
		n, err := url.Parse(name)
		if err != nil || n.IsAbs() || n.Path == "" {
			continue
		}
		if strings.HasSuffix(pu.Path, "/"+strings.TrimPrefix(path.Clean(n.Path), "./")) {
			return doc
		}
	}
	return nil
}

// knownDraft reports whether u names one of the drafts' meta-schemas.
func knownDraft(u string) bool {
	u = strings.TrimSuffix(u, "#")
	u = strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
	switch u {
	case "json-schema.org/draft/2020-12/schema", "json-schema.org/draft/2019-09/schema",
		"json-schema.org/draft-07/schema", "json-schema.org/draft-06/schema",
		"json-schema.org/draft-04/schema":
		return true
	}
	return false
}

// lenientRegexp compiles pattern and patternProperties with Go's regexp.
// A pattern using what Go's RE2 syntax lacks (lookarounds, backreferences,
// possessive quantifiers), which Confluent's Java regexps accept, is
// accepted too, and matches every string: a schema Confluent registers must
// register here, at the price of that one pattern going unchecked when
// payloads are validated. A pattern that is malformed in any syntax
// (an unclosed group) is still refused.
func lenientRegexp(s string) (sjs.Regexp, error) {
	re, err := regexp.Compile(s)
	if err == nil {
		return re, nil
	}
	var se *syntax.Error
	if errors.As(err, &se) {
		switch se.Code {
		case syntax.ErrInvalidPerlOp, syntax.ErrInvalidEscape, syntax.ErrInvalidRepeatOp,
			syntax.ErrInvalidNamedCapture, syntax.ErrInvalidCharClass:
			return anyString(s), nil
		}
	}
	return nil, err
}

// anyString is a pattern that matches every string.
type anyString string

func (a anyString) String() string        { return string(a) }
func (anyString) MatchString(string) bool { return true }

// draftOf is the draft a document's $schema names: 2020, 2019, 6 or 4, and
// 7 otherwise (Confluent's default).
func draftOf(doc *value) int {
	s := doc.get("$schema")
	if s == nil || s.kind != 's' {
		return 7
	}
	switch {
	case strings.Contains(s.str, "2020-12"):
		return 2020
	case strings.Contains(s.str, "2019-09"):
		return 2019
	case strings.Contains(s.str, "draft-06"):
		return 6
	case strings.Contains(s.str, "draft-04"):
		return 4
	}
	return 7
}

// rootID is the document's $id (id in draft 4), or "".
func rootID(doc *value) string {
	key := "$id"
	if draftOf(doc) == 4 {
		key = "id"
	}
	if v := doc.get(key); v != nil && v.kind == 's' {
		return v.str
	}
	return ""
}

// Canonical is the schema as Confluent stores it: minified, keys in their
// order.
func (s *Schema) Canonical() string { return s.canonical }

// Normalized is Canonical with every object's keys sorted.
func (s *Schema) Normalized() string { return s.normalized }

// Validate reports whether payload is a JSON document valid against the
// schema; index is ignored. The error names the first failing location and
// why.
func (s *Schema) Validate(_ []int, payload []byte) (err error) {
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("payload is not JSON: %w", err)
	}
	// A produce must never bring the broker down: a panic in the library
	// (it has panicked compiling multipleOf 1e9999999) refuses the record.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("payload could not be validated: %v", r)
		}
	}()
	err = s.compiled.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *sjs.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	// The leaf prints as "at '/location': why".
	return fmt.Errorf("payload is not valid: %s", firstLeaf(ve).Error())
}

// firstLeaf is the first error among e's causes that has no causes itself:
// the deepest reason of the first failure.
func firstLeaf(e *sjs.ValidationError) *sjs.ValidationError {
	for len(e.Causes) > 0 {
		e = e.Causes[0]
	}
	return e
}
