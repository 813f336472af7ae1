package jsonschema

import (
	"math/big"
	"strconv"
	"strings"

	"floe/schemaregistry/format"
)

// This file is Confluent's JSON Schema compatibility check (its
// json/diff package), rewritten: walk the writer's schema ("original") and
// the reader's ("update") side by side, note every difference by its
// Confluent type and path, and answer those outside compatibleChanges.
//
// Termination: each (original, update) pair of nodes is compared once and
// its differences remembered; a pair met again while it is still being
// compared (a $ref cycle) is assumed compatible for now. Because such an
// assumption may be wrong, the walk is repeated with the pairs found
// incompatible fed back in, until that set stops changing (it only grows,
// and is bounded by the number of pairs) — Confluent's fixpoint, so cycles
// answer as Confluent answers. maxSteps bounds the work on top of that.

// maxSteps bounds how many node pairs one check compares.
const maxSteps = 1000000

// maxDiffDepth bounds how many pairs may be being compared at once (the
// walk's recursion).
const maxDiffDepth = 10000

// maxPasses bounds the fixpoint's passes.
const maxPasses = 64

// tooComplex is the answer when a check runs past its bounds.
const tooComplex = "the schemas are too complex to compare for compatibility"

// Compatible reports why data written with writer cannot be read with
// reader, in the words of Confluent's verbose answer, the reader called
// "new" and the writer "old" (a BACKWARD check's words; CompatibleNamed
// names them otherwise).
func (f *Format) Compatible(reader, writer format.Schema) []string {
	return f.CompatibleNamed(reader, writer, "new", "old")
}

// CompatibleNamed is Compatible with the reader's and the writer's schema
// called readerName and writerName in the messages, as Confluent's checks
// call them: "new" and "old" for BACKWARD, "old" and "new" for FORWARD.
func (*Format) CompatibleNamed(reader, writer format.Schema, readerName, writerName string) []string {
	r, ok1 := reader.(*Schema)
	w, ok2 := writer.(*Schema)
	if !ok1 || !ok2 {
		return []string{"Incompatible because of different schema type"}
	}
	wt, ok1 := w.tree()
	rt, ok2 := r.tree()
	diffs, ok := compareSchemas(wt, rt)
	if !ok || !ok1 || !ok2 {
		return []string{tooComplex}
	}
	var out []string
	for _, d := range diffs {
		if !compatibleChanges[d.typ] {
			out = append(out, d.message(readerName, writerName))
		}
	}
	return out
}

type pair struct{ original, update *node }

// differ is one check's shared state; contexts are views of it at a path.
type differ struct {
	memo       map[pair][]difference
	inProgress map[pair]bool
	seed       map[pair][]difference
	optimistic bool
	steps      int // pairs compared, over every pass
	depth      int // pairs being compared
}

type context struct {
	d     *differ
	path  []string
	diffs []difference
}

// compareSchemas lists every difference from original to update; ok is
// false when the check ran past its bounds.
func compareSchemas(original, update *node) (diffs []difference, ok bool) {
	seed := map[pair][]difference{}
	steps := 0
	for pass := 0; pass < maxPasses; pass++ {
		d := &differ{memo: map[pair][]difference{}, inProgress: map[pair]bool{}, seed: seed, steps: steps}
		c := &context{d: d}
		c.compare(original, update)
		if d.steps > maxSteps {
			return nil, false
		}
		steps = d.steps
		next := map[pair][]difference{}
		for p, ds := range d.memo {
			if !allCompatible(ds) {
				next[p] = ds
			}
		}
		if !d.optimistic || sameKeys(next, seed) {
			return c.diffs, true
		}
		seed = next
	}
	return nil, false
}

func sameKeys(a, b map[pair][]difference) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

func allCompatible(ds []difference) bool {
	for _, d := range ds {
		if !compatibleChanges[d.typ] {
			return false
		}
	}
	return true
}

func (c *context) sub() *context {
	return &context{d: c.d, path: append([]string(nil), c.path...)}
}

func (c *context) compatible() bool { return allCompatible(c.diffs) }

func (c *context) pathString() string { return "#/" + strings.Join(c.path, "/") }

func (c *context) add(t diffType) {
	c.diffs = append(c.diffs, difference{t, c.pathString()})
}

// addAt adds t at the path's child attr.
func (c *context) addAt(attr string, t diffType) {
	c.enter(attr)
	c.add(t)
	c.leave()
}

func (c *context) enter(p string) { c.path = append(c.path, p) }
func (c *context) leave()         { c.path = c.path[:len(c.path)-1] }

// addRebased adds differences found relative to a pair at this path.
func (c *context) addRebased(ds []difference) {
	if len(c.path) == 0 {
		c.diffs = append(c.diffs, ds...)
		return
	}
	prefix := c.pathString()
	for _, d := range ds {
		p := prefix
		if len(d.path) > 2 {
			p += "/" + d.path[2:]
		}
		c.diffs = append(c.diffs, difference{d.typ, p})
	}
}

// deref follows references to what they name; an unresolved reference or a
// cycle of references alone (which matches anything) reads as {}.
func deref(n *node) *node {
	for i := 0; n != nil && n.kind == kRef; i++ {
		if n.target == nil || i > 64 {
			return &node{kind: kEmpty}
		}
		n = n.target
	}
	return n
}

// compare is Confluent's SchemaDiff.compare: the hub every rule recurses
// through.
func (c *context) compare(original, update *node) {
	switch {
	case original == nil && update == nil:
		return
	case original == nil:
		c.add(schemaAdded)
		return
	case update == nil:
		c.add(schemaRemoved)
		return
	}
	o, u := deref(original), deref(update)
	c.addRebased(c.memoized(o, u))
}

func (c *context) memoized(o, u *node) []difference {
	d := c.d
	key := pair{o, u}
	if ds, ok := d.memo[key]; ok {
		return ds
	}
	if d.inProgress[key] {
		if ds, ok := d.seed[key]; ok {
			return ds
		}
		d.optimistic = true
		return nil
	}
	d.steps++
	if d.steps > maxSteps || d.depth > maxDiffDepth {
		d.steps = maxSteps + 1 // the answer is "too complex"
		return nil
	}
	d.inProgress[key] = true
	d.depth++
	sc := &context{d: d}
	sc.compareTypes(o, u)
	d.depth--
	delete(d.inProgress, key)
	d.memo[key] = sc.diffs
	return sc.diffs
}

func (c *context) compareTypes(o, u *node) {
	switch {
	case o.kind != kCombined && u.kind == kCombined:
		if len(u.subs) == 1 {
			sc := c.sub()
			sc.compare(o, u.subs[0])
			if sc.compatible() {
				c.diffs = append(c.diffs, sc.diffs...)
				return
			}
		} else if u.criterion == "anyOf" || u.criterion == "oneOf" {
			for _, s := range u.subs {
				sc := c.sub()
				sc.compare(o, s)
				if sc.compatible() {
					c.diffs = append(c.diffs, sc.diffs...)
					c.add(sumTypeExtended)
					return
				}
			}
		}
	case o.kind == kCombined && u.kind != kCombined:
		if len(o.subs) == 1 {
			sc := c.sub()
			sc.compare(o.subs[0], u)
			if sc.compatible() {
				c.diffs = append(c.diffs, sc.diffs...)
				return
			}
		} else if o.criterion == "allOf" {
			for _, s := range o.subs {
				sc := c.sub()
				sc.compare(s, u)
				if sc.compatible() {
					c.diffs = append(c.diffs, sc.diffs...)
					c.add(productTypeNarrowed)
					return
				}
			}
		}
	}

	if o.kind != u.kind {
		if o.kind == kFalse || u.isEmpty() {
			return
		}
		if o.connectType == "bytes" && u.connectType == "bytes" {
			// Kafka Connect's decimals changed type and stayed readable.
			return
		}
		c.add(typeChanged)
		return
	}

	if !sameString(o.id, u.id) {
		c.add(idChanged)
	}
	if !sameString(o.title, u.title) {
		c.add(titleChanged)
	}
	if !sameString(o.description, u.description) {
		c.add(descriptionChanged)
	}
	if !sameString(o.def, u.def) {
		c.add(defaultChanged)
	}

	switch o.kind {
	case kString:
		c.compareString(o, u)
	case kNumber:
		c.compareNumber(o, u)
	case kConst:
		if o.constant != u.constant {
			c.addAt("const", enumArrayChanged)
		}
	case kEnum:
		c.compareEnum(o, u)
	case kCombined:
		c.compareCombined(o, u)
	case kNot:
		c.enter("not")
		sc := c.sub()
		// A reader's not must exclude no more than the writer's: the
		// wrapped schemas compare the other way round.
		sc.compare(u.not, o.not)
		if sc.compatible() {
			c.add(notTypeNarrowed)
		} else {
			c.add(notTypeExtended)
		}
		c.leave()
	case kObject:
		c.compareObject(o, u)
	case kArray:
		c.compareArray(o, u)
	}
}

func sameString(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// bound compares an optional limit, adding one of four types at attr.
func (c *context) bound(attr string, o, u *float64, added, removed, increased, decreased diffType) {
	switch {
	case o == nil && u == nil:
	case o == nil:
		c.addAt(attr, added)
	case u == nil:
		c.addAt(attr, removed)
	case *o < *u:
		c.addAt(attr, increased)
	case *o > *u:
		c.addAt(attr, decreased)
	}
}

func (c *context) compareString(o, u *node) {
	c.bound("maxLength", o.maxLength, u.maxLength, maxLengthAdded, maxLengthRemoved, maxLengthIncreased, maxLengthDecreased)
	c.bound("minLength", o.minLength, u.minLength, minLengthAdded, minLengthRemoved, minLengthIncreased, minLengthDecreased)
	switch {
	case o.pattern == nil && u.pattern != nil:
		c.addAt("pattern", patternAdded)
	case o.pattern != nil && u.pattern == nil:
		c.addAt("pattern", patternRemoved)
	case o.pattern != nil && *o.pattern != *u.pattern:
		c.addAt("pattern", patternChanged)
	}
}

func (c *context) compareNumber(o, u *node) {
	c.bound("maximum", o.maximum, u.maximum, maximumAdded, maximumRemoved, maximumIncreased, maximumDecreased)
	c.bound("minimum", o.minimum, u.minimum, minimumAdded, minimumRemoved, minimumIncreased, minimumDecreased)
	// Confluent tells a lowered exclusiveMaximum by comparing it with the
	// update's maximum, a slip that throws or misses the change; this
	// compares the exclusiveMaximums.
	c.bound("exclusiveMaximum", o.exclusiveMaximum, u.exclusiveMaximum, exclusiveMaximumAdded, exclusiveMaximumRemoved, exclusiveMaximumIncreased, exclusiveMaximumDecreased)
	c.bound("exclusiveMinimum", o.exclusiveMinimum, u.exclusiveMinimum, exclusiveMinimumAdded, exclusiveMinimumRemoved, exclusiveMinimumIncreased, exclusiveMinimumDecreased)
	om, um := o.multipleOf, u.multipleOf
	switch {
	case om == nil && um == nil:
	case om == nil:
		c.addAt("multipleOf", multipleOfAdded)
	case um == nil:
		c.addAt("multipleOf", multipleOfRemoved)
	case om.Cmp(um) == 0:
	case om.Sign() != 0 && isInteger(new(big.Rat).Quo(um, om)):
		c.addAt("multipleOf", multipleOfExpanded)
	case um.Sign() != 0 && isInteger(new(big.Rat).Quo(om, um)):
		c.addAt("multipleOf", multipleOfReduced)
	default:
		c.addAt("multipleOf", multipleOfChanged)
	}
	if o.integer != u.integer {
		if o.integer {
			c.add(typeExtended)
		} else {
			c.add(typeNarrowed)
		}
	}
}

func isInteger(r *big.Rat) bool { return r.IsInt() }

func (c *context) compareEnum(o, u *node) {
	if strings.Join(o.enum, "\x00") == strings.Join(u.enum, "\x00") {
		return
	}
	switch {
	case containsAll(u.enum, o.enum):
		c.addAt("enum", enumArrayExtended)
	case containsAll(o.enum, u.enum):
		c.addAt("enum", enumArrayNarrowed)
	default:
		c.addAt("enum", enumArrayChanged)
	}
}

func containsAll(set, of []string) bool {
	m := make(map[string]bool, len(set))
	for _, s := range set {
		m[s] = true
	}
	for _, s := range of {
		if !m[s] {
			return false
		}
	}
	return true
}

func (c *context) compareCombined(o, u *node) {
	if o.criterion != u.criterion {
		switch {
		case u.criterion == "anyOf",
			len(o.subs) == 1 && len(u.subs) == 1,
			len(o.subs) == 1 && u.criterion == "oneOf",
			len(u.subs) == 1 && o.criterion == "allOf":
			c.add(combinedTypeExtended)
		default:
			c.add(combinedTypeChanged)
			return
		}
	}
	os, us := distinct(o.subs), distinct(u.subs)
	switch {
	case len(os) < len(us):
		if u.criterion == "allOf" {
			c.add(productTypeExtended)
		} else {
			c.add(sumTypeExtended)
		}
	case len(os) > len(us):
		if o.criterion == "anyOf" || o.criterion == "oneOf" {
			c.add(sumTypeNarrowed)
		} else {
			c.add(productTypeNarrowed)
		}
	}
	// edges[i][j]: the differences when original member i is read as
	// update member j, for the compatible pairs only.
	edges := make([]map[int][]difference, len(os))
	for i, os := range os {
		c.enter(o.criterion + "/" + strconv.Itoa(i))
		edges[i] = map[int][]difference{}
		for j, us := range us {
			sc := c.sub()
			sc.compare(os, us)
			if sc.compatible() {
				edges[i][j] = sc.diffs
			}
		}
		c.leave()
	}
	match := maxMatching(edges, len(us))
	matched := 0
	for i, j := range match {
		if j >= 0 {
			matched++
			c.diffs = append(c.diffs, edges[i][j]...)
		}
	}
	if matched < min(len(os), len(us)) {
		c.add(combinedTypeSubschemasChanged)
	}
}

// distinct collapses members with the same JSON, as Confluent's set of
// subschemas does.
func distinct(ns []*node) []*node {
	seen := map[string]bool{}
	var out []*node
	for _, n := range ns {
		k := n.key()
		if !seen[k] {
			seen[k] = true
			out = append(out, n)
		}
	}
	return out
}

// maxMatching is a maximum bipartite matching of the left nodes (edges'
// indexes) to right ones (0..right-1), by augmenting paths: match[i] is the
// right node left node i is matched to, or -1.
func maxMatching(edges []map[int][]difference, right int) []int {
	match := make([]int, len(edges))
	owner := make([]int, right)
	for i := range match {
		match[i] = -1
	}
	for j := range owner {
		owner[j] = -1
	}
	var try func(i int, seen []bool) bool
	try = func(i int, seen []bool) bool {
		for j := 0; j < right; j++ {
			if _, ok := edges[i][j]; !ok || seen[j] {
				continue
			}
			seen[j] = true
			if owner[j] < 0 || try(owner[j], seen) {
				owner[j] = i
				match[i] = j
				return true
			}
		}
		return false
	}
	for i := range edges {
		try(i, make([]bool, right))
	}
	return match
}
