package jsonschema

import (
	"errors"
	"math/big"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// This file turns a schema's JSON into the tree Confluent's differ walks.
// Confluent loads a JSON Schema into everit's schema classes (drafts 2019-09
// and 2020-12 through json-sKema, translated into the same classes) and its
// rules are written against those classes, not against keywords, so the
// tree keeps their shapes:
//   - "type": "string" is a string schema, "type": ["string", "null"] an
//     anyOf of one schema per type, and without "type" each family of
//     keywords present (array, object, number, string) gives a schema of
//     its own;
//   - enum, const, not and each of allOf/anyOf/oneOf are schemas of their
//     own beside the typed one, and when one object holds several of these
//     they are joined in a synthetic allOf;
//   - a $ref is a reference to the schema it resolves to (in drafts 4-7 its
//     sibling keywords are ignored, as they are by everit).
// Nodes are built once per JSON value, so a $ref cycle is a cycle of
// pointers; the differ, not the builder, breaks it.

type kind int

const (
	kEmpty kind = iota // {}: everit's EmptySchema
	kTrue              // true: TrueSchema, an EmptySchema of another class
	kFalse
	kNull
	kBoolean
	kString
	kNumber
	kObject
	kArray
	kEnum
	kConst
	kCombined
	kNot
	kRef
)

// maxNodes bounds the tree built for one schema, and maxBuildDepth how
// deeply building recurses (through chains of $refs a tree may be deeper
// than its text). A schema past either is not compared at all (its checks
// answer tooComplex) rather than compared in part.
const (
	maxNodes      = 100000
	maxBuildDepth = 10000
)

type node struct {
	kind kind
	src  *value
	// part tells the schemas one JSON object gives apart (the string and the
	// enum of {"type":"string","enum":[…]}): an allOf's duplicate members
	// collapse by src and part.
	part     string
	keyCache string

	id, title, description, def *string
	connectType                 string

	// string
	minLength, maxLength *float64
	pattern              *string

	// number
	integer                            bool
	maximum, minimum, exclusiveMaximum *float64
	exclusiveMinimum                   *float64
	multipleOf                         *big.Rat
	minProperties, maxProperties       *float64
	minItems, maxItems                 *float64
	minContains, maxContains           *float64
	properties                         []property
	required                           map[string]bool
	patternProperties                  []patternProperty
	noAdditional                       bool  // additionalProperties or additionalItems is false
	additional                         *node // their schema, when one is given
	propertyDependencies               map[string][]string
	schemaDependencies                 map[string]*node
	dependencyOrder                    []string
	unevaluated                        *node // unevaluatedProperties or unevaluatedItems
	allItems                           *node
	tuple                              []*node
	unique                             bool

	// enum and const: each value's normalized text
	enum     []string
	constant string

	// combined
	criterion string
	subs      []*node

	not *node

	target *node // kRef: what the reference resolves to (nil: unresolved)
}

type property struct {
	name   string
	schema *node
}

type patternProperty struct {
	re     *regexp.Regexp
	schema *node
}

func (n *node) isEmpty() bool { return n.kind == kEmpty || n.kind == kTrue }

// key identifies n's JSON for collapsing duplicates.
func (n *node) key() string {
	if n.keyCache == "" {
		n.keyCache = n.part + "|"
		if n.src != nil {
			n.keyCache += n.src.compact(true)
		}
	}
	return n.keyCache
}

// docContext is where a value sits: its document's draft and the base URI
// its relative $refs resolve against.
type docContext struct {
	draft int
	base  *url.URL
}

type builder struct {
	s         *Schema
	memo      map[*value]*node
	ids       map[string]*value     // absolute $id URL (no fragment) -> schema
	anchs     map[string]*value     // absolute URL#anchor -> schema
	ctxOf     map[*value]docContext // the context each indexed value is in
	count     int
	depth     int
	truncated bool // past maxNodes or maxBuildDepth
}

// tree builds the differ's tree of s; ok is false when s is too big or
// too deep to build whole.
func (s *Schema) tree() (root *node, ok bool) {
	b := &builder{
		s:     s,
		memo:  map[*value]*node{},
		ids:   map[string]*value{},
		anchs: map[string]*value{},
		ctxOf: map[*value]docContext{},
	}
	for u, doc := range s.docs {
		base, err := url.Parse(u)
		if err != nil {
			continue
		}
		b.ids[u] = doc
		b.index(doc, docContext{draft: draftOfOr(doc, s.draft), base: base}, 0)
	}
	base, _ := url.Parse(baseURI)
	for u, doc := range s.docs {
		if doc == s.root {
			if p, err := url.Parse(u); err == nil && u != baseURI {
				base = p
			}
		}
	}
	root = b.build(s.root, docContext{draft: s.draft, base: base})
	return root, !b.truncated
}

// draftOfOr is a referenced document's own draft when it names one, else
// the root's.
func draftOfOr(doc *value, root int) int {
	if doc.get("$schema") == nil {
		return root
	}
	return draftOf(doc)
}

// enter is c moved into v: v's $id, if it has one, is the new base.
func (c docContext) enter(v *value) docContext {
	key := "$id"
	if c.draft == 4 {
		key = "id"
	}
	id := v.get(key)
	if id == nil || id.kind != 's' || strings.HasPrefix(id.str, "#") {
		return c
	}
	u, err := url.Parse(id.str)
	if err != nil {
		return c
	}
	nc := c
	nc.base = c.base.ResolveReference(u)
	nc.base.Fragment = ""
	return nc
}

// index records the $ids and anchors of doc's subschemas.
func (b *builder) index(v *value, c docContext, depth int) {
	if depth > maxDepth {
		return
	}
	switch v.kind {
	case 'o':
		nc := c.enter(v)
		if nc.base != c.base {
			b.ids[nc.base.String()] = v
		}
		c = nc
		if _, ok := b.ctxOf[v]; !ok {
			b.ctxOf[v] = c
		}
		key := "$id"
		if c.draft == 4 {
			key = "id"
		}
		if id := v.get(key); id != nil && id.kind == 's' && strings.HasPrefix(id.str, "#") {
			b.anchs[c.base.String()+id.str] = v
		}
		if a := v.get("$anchor"); a != nil && a.kind == 's' {
			b.anchs[c.base.String()+"#"+a.str] = v
		}
		for _, m := range v.members {
			if m.key == "enum" || m.key == "const" || m.key == "default" || m.key == "examples" {
				continue
			}
			b.index(m.val, c, depth+1)
		}
	case 'a':
		for _, it := range v.items {
			b.index(it, c, depth+1)
		}
	}
}

// resolve finds what ref, met in context c, points at.
func (b *builder) resolve(ref string, c docContext) (*value, docContext, bool) {
	r, err := url.Parse(ref)
	if err != nil {
		return nil, c, false
	}
	u := c.base.ResolveReference(r)
	frag := u.Fragment
	u.Fragment = ""
	docURL := u.String()
	doc, ok := b.ids[docURL]
	if !ok {
		doc, ok = b.s.docs[docURL]
	}
	if !ok {
		l := loader{resources: b.s.docs}
		if doc = l.lookup(docURL); doc == nil {
			return nil, c, false
		}
	}
	dc, ok := b.ctxOf[doc]
	if !ok {
		dc = docContext{draft: draftOfOr(doc, b.s.draft), base: u}
	}
	if frag == "" {
		return doc, dc, true
	}
	if !strings.HasPrefix(frag, "/") {
		v, ok := b.anchs[docURL+"#"+frag]
		if !ok {
			return nil, c, false
		}
		return v, b.contextOf(v, dc), true
	}
	v := doc
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v.kind {
		case 'o':
			v = v.get(tok)
		case 'a':
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v.items) {
				return nil, c, false
			}
			v = v.items[i]
		default:
			v = nil
		}
		if v == nil {
			return nil, c, false
		}
	}
	return v, b.contextOf(v, dc), true
}

func (b *builder) contextOf(v *value, fallback docContext) docContext {
	if c, ok := b.ctxOf[v]; ok {
		return c
	}
	return fallback
}

// build is v's node, built once.
func (b *builder) build(v *value, c docContext) *node {
	if n, ok := b.memo[v]; ok {
		return n
	}
	n := &node{src: v}
	b.memo[v] = n
	b.count++
	if b.count > maxNodes || b.depth > maxBuildDepth {
		b.truncated = true
		return n
	}
	b.depth++
	defer func() { b.depth-- }()
	switch v.kind {
	case 'b':
		n.kind = kFalse
		if v.boolean {
			n.kind = kTrue
		}
		return n
	case 'o':
	default:
		return n
	}
	c = c.enter(v)

	var parts []*node
	if ref := v.get("$ref"); ref != nil && ref.kind == 's' {
		r := &node{kind: kRef, src: v, part: "$ref"}
		if target, tc, ok := b.resolve(ref.str, c); ok {
			r.target = b.build(target, tc)
		}
		if c.draft <= 7 {
			*n = *r
			n.part = ""
			return n
		}
		parts = append(parts, r)
	}
	if e := v.get("enum"); e != nil && e.kind == 'a' {
		parts = append(parts, &node{kind: kEnum, src: v, part: "enum", enum: valueSet(e.items)})
	}
	for _, crit := range []string{"allOf", "anyOf", "oneOf"} {
		if a := v.get(crit); a != nil && a.kind == 'a' {
			cn := &node{kind: kCombined, src: v, part: crit, criterion: crit}
			for _, it := range a.items {
				cn.subs = append(cn.subs, b.build(it, c))
			}
			parts = append(parts, cn)
		}
	}
	if not := v.get("not"); not != nil {
		parts = append(parts, &node{kind: kNot, src: v, part: "not", not: b.build(not, c)})
	}
	if k := v.get("const"); k != nil && c.draft >= 6 {
		parts = append(parts, &node{kind: kConst, src: v, part: "const", constant: k.compact(true)})
	}
	parts = append(parts, b.typed(v, c)...)

	switch len(parts) {
	case 0:
		n.kind = kEmpty
	case 1:
		*n = *parts[0]
		n.part = ""
	default:
		n.kind = kCombined
		n.criterion = "allOf"
		n.subs = parts
	}
	n.src = v
	b.common(n, v, c)
	return n
}

// typed is the schemas v's "type" gives, or without one those its keyword
// families give.
func (b *builder) typed(v *value, c docContext) []*node {
	t := v.get("type")
	switch {
	case t != nil && t.kind == 's':
		return []*node{b.ofType(v, c, t.str)}
	case t != nil && t.kind == 'a':
		any := &node{kind: kCombined, src: v, part: "type", criterion: "anyOf"}
		for _, it := range t.items {
			if it.kind == 's' {
				any.subs = append(any.subs, b.ofType(v, c, it.str))
			}
		}
		return []*node{any}
	}
	var out []*node
	for _, family := range []struct {
		typ      string
		keywords []string
	}{
		{"array", []string{"items", "additionalItems", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", "unevaluatedItems"}},
		{"object", []string{"properties", "required", "minProperties", "maxProperties", "dependencies", "dependentRequired", "dependentSchemas", "patternProperties", "additionalProperties", "propertyNames", "unevaluatedProperties"}},
		{"number", []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}},
		{"string", []string{"minLength", "maxLength", "pattern", "format"}},
	} {
		for _, k := range family.keywords {
			kv := v.get(k)
			if k == "properties" && c.draft >= 2019 && kv != nil && kv.kind == 'o' && len(kv.members) == 0 {
				// Confluent's 2019-09/2020-12 translation makes nothing of
				// an empty properties.
				continue
			}
			if kv != nil {
				n := b.ofType(v, c, family.typ)
				n.part = "implicit " + family.typ
				out = append(out, n)
				break
			}
		}
	}
	return out
}

func (b *builder) ofType(v *value, c docContext, typ string) *node {
	n := &node{src: v, part: typ}
	switch typ {
	case "null":
		n.kind = kNull
	case "boolean":
		n.kind = kBoolean
	case "string":
		n.kind = kString
		n.minLength = number(v.get("minLength"))
		n.maxLength = number(v.get("maxLength"))
		if p := v.get("pattern"); p != nil && p.kind == 's' {
			n.pattern = &p.str
		}
	case "integer", "number":
		n.kind = kNumber
		n.integer = typ == "integer"
		n.maximum = number(v.get("maximum"))
		n.minimum = number(v.get("minimum"))
		if c.draft >= 6 {
			n.exclusiveMaximum = number(v.get("exclusiveMaximum"))
			n.exclusiveMinimum = number(v.get("exclusiveMinimum"))
		}
		if m := v.get("multipleOf"); m != nil && m.kind == 'n' {
			n.multipleOf = rational(m.str)
		}
	case "object":
		b.object(n, v, c)
	case "array":
		b.array(n, v, c)
	default:
		n.kind = kEmpty
	}
	return n
}

func (b *builder) object(n *node, v *value, c docContext) {
	n.kind = kObject
	if p := v.get("properties"); p != nil && p.kind == 'o' {
		for _, m := range p.members {
			n.properties = append(n.properties, property{m.key, b.build(m.val, c)})
		}
	}
	n.required = map[string]bool{}
	if r := v.get("required"); r != nil && r.kind == 'a' {
		for _, it := range r.items {
			if it.kind == 's' {
				n.required[it.str] = true
			}
		}
	}
	if pp := v.get("patternProperties"); pp != nil && pp.kind == 'o' {
		for _, m := range pp.members {
			re, err := regexp.Compile(m.key)
			if err != nil {
				// Not a pattern Go reads (the validator accepted the
				// schema, so this is unreachable today): it matches
				// nothing here.
				re = regexp.MustCompile(`$.^`)
			}
			n.patternProperties = append(n.patternProperties, patternProperty{re, b.build(m.val, c)})
		}
	}
	n.noAdditional, n.additional = b.additionalOf(v.get("additionalProperties"), c)
	n.propertyDependencies = map[string][]string{}
	n.schemaDependencies = map[string]*node{}
	for _, key := range []string{"dependencies", "dependentRequired", "dependentSchemas"} {
		d := v.get(key)
		if d == nil || d.kind != 'o' {
			continue
		}
		for _, m := range d.members {
			if _, seen := n.propertyDependencies[m.key]; seen {
				continue
			}
			if _, seen := n.schemaDependencies[m.key]; seen {
				continue
			}
			if m.val.kind == 'a' {
				var names []string
				for _, it := range m.val.items {
					if it.kind == 's' {
						names = append(names, it.str)
					}
				}
				n.propertyDependencies[m.key] = names
			} else {
				n.schemaDependencies[m.key] = b.build(m.val, c)
			}
			n.dependencyOrder = append(n.dependencyOrder, m.key)
		}
	}
	n.minProperties = number(v.get("minProperties"))
	n.maxProperties = number(v.get("maxProperties"))
	if c.draft >= 2019 {
		if u := v.get("unevaluatedProperties"); u != nil {
			n.unevaluated = b.build(u, c)
		}
	}
}

func (b *builder) array(n *node, v *value, c docContext) {
	n.kind = kArray
	items, prefix := v.get("items"), v.get("prefixItems")
	if c.draft >= 2020 {
		// Draft 2020-12 as Confluent translates it: prefixItems is the
		// tuple; items false forbids more items, items true says nothing,
		// and an items schema is every item's without a tuple and the
		// additional items' with one.
		if prefix != nil && prefix.kind == 'a' {
			n.tuple = []*node{}
			for _, it := range prefix.items {
				n.tuple = append(n.tuple, b.build(it, c))
			}
		}
		switch {
		case items == nil:
		case items.kind == 'b':
			n.noAdditional = !items.boolean
		case n.tuple == nil:
			n.allItems = b.build(items, c)
		default:
			n.additional = b.build(items, c)
		}
	} else {
		if items != nil && items.kind == 'a' {
			n.tuple = []*node{}
			for _, it := range items.items {
				n.tuple = append(n.tuple, b.build(it, c))
			}
		} else if items != nil {
			n.allItems = b.build(items, c)
		}
		n.noAdditional, n.additional = b.additionalOf(v.get("additionalItems"), c)
	}
	n.minItems = number(v.get("minItems"))
	n.maxItems = number(v.get("maxItems"))
	if u := v.get("uniqueItems"); u != nil && u.kind == 'b' {
		n.unique = u.boolean
	}
	n.minContains = number(v.get("minContains"))
	if c.draft >= 2019 && n.minContains == nil && v.get("contains") != nil {
		// Confluent's 2019-09/2020-12 translation writes contains' default
		// minContains of 1 down.
		one := 1.0
		n.minContains = &one
	}
	n.maxContains = number(v.get("maxContains"))
	if c.draft >= 2019 {
		if u := v.get("unevaluatedItems"); u != nil {
			n.unevaluated = b.build(u, c)
		}
	}
}

// additionalOf reads additionalProperties or additionalItems as everit
// does: false forbids, true or absent permits without a schema, and any
// other schema (even {}) is the schema of what is added.
func (b *builder) additionalOf(a *value, c docContext) (forbidden bool, schema *node) {
	switch {
	case a == nil:
		return false, nil
	case a.kind == 'b':
		return !a.boolean, nil
	}
	return false, b.build(a, c)
}

// common sets the keywords every schema has.
func (b *builder) common(n *node, v *value, c docContext) {
	str := func(key string) *string {
		if s := v.get(key); s != nil && s.kind == 's' {
			return &s.str
		}
		return nil
	}
	switch {
	case c.draft == 4:
		n.id = str("id")
	case c.draft <= 7:
		n.id = str("$id")
	}
	n.title = str("title")
	n.description = str("description")
	if d := v.get("default"); d != nil {
		s := d.compact(true)
		n.def = &s
	}
	if ct := str("connect.type"); ct != nil {
		n.connectType = *ct
	}
}

func number(v *value) *float64 {
	if v == nil || v.kind != 'n' {
		return nil
	}
	f, err := strconv.ParseFloat(v.str, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil
	}
	// Out of range reads as ±Inf or 0, on the right side of every bound.
	return &f
}

// rational is a number literal exactly, unless its exponent is so large
// that the exact value would cost real memory and time (1e9999999): then
// nil, as if absent.
func rational(lit string) *big.Rat {
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(lit[i+1:], "+"))
		if err != nil || e > 1000 || e < -1000 {
			return nil
		}
	}
	r, ok := new(big.Rat).SetString(lit)
	if !ok {
		return nil
	}
	return r
}

// valueSet is the distinct normalized texts of vals, sorted.
func valueSet(vals []*value) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range vals {
		s := v.compact(true)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
