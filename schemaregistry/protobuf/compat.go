package protobuf

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"floe/schemaregistry/format"
)

// Compatibility follows Confluent's protobuf diff (SchemaDiff,
// MessageSchemaDiff, FieldSchemaDiff, EnumSchemaDiff): the writer's file is
// the original and the reader's the update; every difference between them
// is found, and those outside compatibleChanges make the pair incompatible.
// It works on linked descriptors rather than on the parsed text, so names
// are already resolved; where Confluent looks at what the text wrote (a
// field's label, map fields) the descriptor is read the same way.

// DiffType names a difference as Confluent's Difference.Type does.
type DiffType string

// The differences Confluent's diff reports.
const (
	PackageChanged                 DiffType = "PACKAGE_CHANGED"
	MessageAdded                   DiffType = "MESSAGE_ADDED"
	MessageRemoved                 DiffType = "MESSAGE_REMOVED"
	MessageMoved                   DiffType = "MESSAGE_MOVED"
	EnumAdded                      DiffType = "ENUM_ADDED"
	EnumRemoved                    DiffType = "ENUM_REMOVED"
	EnumConstAdded                 DiffType = "ENUM_CONST_ADDED"
	EnumConstChanged               DiffType = "ENUM_CONST_CHANGED"
	EnumConstRemoved               DiffType = "ENUM_CONST_REMOVED"
	FieldAdded                     DiffType = "FIELD_ADDED"
	FieldRemoved                   DiffType = "FIELD_REMOVED"
	FieldNameChanged               DiffType = "FIELD_NAME_CHANGED"
	FieldKindChanged               DiffType = "FIELD_KIND_CHANGED"
	FieldScalarKindChanged         DiffType = "FIELD_SCALAR_KIND_CHANGED"
	FieldNamedTypeChanged          DiffType = "FIELD_NAMED_TYPE_CHANGED"
	FieldNumericLabelChanged       DiffType = "FIELD_NUMERIC_LABEL_CHANGED"
	FieldStringOrBytesLabelChanged DiffType = "FIELD_STRING_OR_BYTES_LABEL_CHANGED"
	RequiredFieldAdded             DiffType = "REQUIRED_FIELD_ADDED"
	RequiredFieldRemoved           DiffType = "REQUIRED_FIELD_REMOVED"
	OneofAdded                     DiffType = "ONEOF_ADDED"
	OneofRemoved                   DiffType = "ONEOF_REMOVED"
	OneofFieldAdded                DiffType = "ONEOF_FIELD_ADDED"
	OneofFieldRemoved              DiffType = "ONEOF_FIELD_REMOVED"
	OneofFieldMovedToTopLevel      DiffType = "ONEOF_FIELD_MOVED_TO_TOP_LEVEL"
	MultipleFieldsMovedToOneof     DiffType = "MULTIPLE_FIELDS_MOVED_TO_ONEOF"
	FieldMovedToExistingOneof      DiffType = "FIELD_MOVED_TO_EXISTING_ONEOF"
)

// compatibleChanges is Confluent's SchemaDiff.COMPATIBLE_CHANGES.
var compatibleChanges = map[DiffType]bool{
	MessageAdded: true, MessageMoved: true,
	EnumAdded: true, EnumRemoved: true,
	EnumConstAdded: true, EnumConstChanged: true, EnumConstRemoved: true,
	FieldAdded: true, FieldRemoved: true, FieldNameChanged: true,
	FieldStringOrBytesLabelChanged: true,
	OneofAdded:                     true, OneofRemoved: true, OneofFieldAdded: true,
	OneofFieldMovedToTopLevel: true,
}

// Compatible reports whether t is one of Confluent's compatible changes.
func (t DiffType) Compatible() bool { return compatibleChanges[t] }

// descriptions are Confluent's Difference descriptions; the first %s names
// the reader's schema, the second the writer's.
var descriptions = map[DiffType]string{
	PackageChanged:             "The package at '%[3]s' in the %[1]s schema does not match the package in the %[2]s schema",
	MessageRemoved:             "The %[1]s schema is missing a MESSAGE type at path '%[3]s' in the %[2]s schema",
	FieldKindChanged:           "The type of a field at path '%[3]s' in the %[1]s schema does not match the %[2]s schema",
	FieldScalarKindChanged:     "The kind of a SCALAR field at path '%[3]s' in the %[1]s schema does not match its kind in the %[2]s schema",
	FieldNamedTypeChanged:      "The type of a MESSAGE field at path '%[3]s' in the %[1]s schema does not match its type in the %[2]s schema",
	FieldNumericLabelChanged:   "The label for a NUMERIC field at path '%[3]s' in the %[1]s schema does not match its label in the %[2]s schema",
	RequiredFieldAdded:         "A required field  at path '%[3]s' in the %[1]s schema is missing in the %[2]s schema",
	RequiredFieldRemoved:       "The %[1]s schema is missing a required field at path: '%[3]s' in the %[2]s schema",
	OneofFieldRemoved:          "The %[1]s schema is missing a oneof field at path '%[3]s' in the %[2]s schema",
	OneofFieldMovedToTopLevel:  "The oneof field at path '%[3]s' in the %[1]s schema was moved out of its oneof to a top-level field in the %[2]s schema",
	MultipleFieldsMovedToOneof: "Multiple fields in the oneof at path '%[3]s' in the %[1]s schema are outside a oneof in the %[2]s schema",
	FieldMovedToExistingOneof:  "A field in the oneof at path '%[3]s' in the %[1]s schema is outside an existing oneof in the %[2]s schema",
}

// Difference is one difference between a writer's schema (the original)
// and a reader's (the update), at a path such as #/Outer/Inner/3: message
// names, then a oneof's name or a field's number.
type Difference struct {
	Type DiffType
	Path string
}

// Message is the difference in Confluent's verbose words, its schemas named
// readerRole and writerRole ("new" and "old" when a new schema is checked
// backward).
func (d Difference) Message(readerRole, writerRole string) string {
	desc := ""
	if f, ok := descriptions[d.Type]; ok {
		desc = fmt.Sprintf(f, readerRole, writerRole, d.Path)
	}
	return `{errorType:"` + string(d.Type) + `", description:"` + desc + `"}`
}

func (d Difference) String() string { return string(d.Type) + " " + d.Path }

// differentType is Confluent's answer when the other schema is not Protobuf.
const differentType = "Incompatible because of different schema type"

// Compatible reports why data written with writer cannot be read with
// reader, the schemas named as a BACKWARD check names them: the reader is
// "new", the writer "old". CompatibleAs names them otherwise.
func (f protobufFormat) Compatible(reader, writer format.Schema) []string {
	return CompatibleAs(reader, writer, "new", "old")
}

// CompatibleAs is the format's CompatibleAs, for callers holding a
// format.Format: they reach it through an interface of their own.
func (f protobufFormat) CompatibleAs(reader, writer format.Schema, readerRole, writerRole string) []string {
	return CompatibleAs(reader, writer, readerRole, writerRole)
}

// CompatibleAs is Compatible with the schemas' roles named as Confluent's
// message names them (its SchemaValidatorBuilder): a FORWARD check, which
// asks whether the old schema reads the new one's data, is
// CompatibleAs(old, new, "old", "new"); FULL is that followed by the
// BACKWARD check.
func CompatibleAs(reader, writer format.Schema, readerRole, writerRole string) []string {
	r, ok1 := reader.(*Schema)
	w, ok2 := writer.(*Schema)
	if !ok1 || !ok2 {
		return []string{differentType}
	}
	var out []string
	for _, d := range Diff(w, r) {
		if !d.Type.Compatible() {
			out = append(out, d.Message(readerRole, writerRole))
		}
	}
	return out
}

// Diff lists every difference from original to update, compatible or not.
func Diff(original, update *Schema) []Difference {
	c := &differ{orig: original, upd: update, memo: map[[2]protoreflect.MessageDescriptor]*memoEntry{}}
	cx := c.newCtx(nil)
	if original.file.Package() != update.file.Package() {
		cx.add(PackageChanged)
	}
	cx.compareTypes(original.file.Messages(), update.file.Messages(), original.file.Enums(), update.file.Enums())
	return cx.diffs
}

// differ holds what every comparison of one pair of schemas shares.
type differ struct {
	orig, upd *Schema
	// memo keeps the differences found by comparing two messages that
	// fields refer to, by pair: a type referred to from many fields is
	// compared once, which bounds the work on deep or wide type graphs.
	memo map[[2]protoreflect.MessageDescriptor]*memoEntry
}

type memoEntry struct {
	done  bool
	diffs []Difference
}

// ctx is Confluent's diff Context: a path being walked, the original
// messages whose fields are being compared (a recursive type is not
// entered twice), and the differences found.
type ctx struct {
	d     *differ
	path  []string
	inMsg map[protoreflect.MessageDescriptor]bool
	diffs []Difference
	seen  map[Difference]bool
}

func (c *differ) newCtx(inMsg map[protoreflect.MessageDescriptor]bool) *ctx {
	m := map[protoreflect.MessageDescriptor]bool{}
	for k := range inMsg {
		m[k] = true
	}
	return &ctx{d: c, inMsg: m, seen: map[Difference]bool{}}
}

func (cx *ctx) push(elem string) { cx.path = append(cx.path, elem) }
func (cx *ctx) pop()             { cx.path = cx.path[:len(cx.path)-1] }

func (cx *ctx) add(t DiffType) {
	cx.addDiff(Difference{Type: t, Path: "#/" + strings.Join(cx.path, "/")})
}

func (cx *ctx) addDiff(d Difference) {
	if cx.seen[d] {
		return
	}
	cx.seen[d] = true
	cx.diffs = append(cx.diffs, d)
}

// isGroup reports whether f is a proto2 group: Confluent's parser keeps
// groups apart from fields and messages, and its diff never looks at them.
func isGroup(f protoreflect.FieldDescriptor) bool {
	return f.Kind() == protoreflect.GroupKind && f.ParentFile().Syntax() == protoreflect.Proto2
}

// isGroupBody reports whether m is the message behind a proto2 group.
func isGroupBody(m protoreflect.MessageDescriptor) bool {
	parent, ok := m.Parent().(protoreflect.MessageDescriptor)
	if !ok {
		return false
	}
	fields := parent.Fields()
	for i := 0; i < fields.Len(); i++ {
		if f := fields.Get(i); isGroup(f) && f.Message() == m {
			return true
		}
	}
	return false
}

// declared lists the messages a scope declares, map entries and group
// bodies left out as Confluent's parsed text has neither, with their index
// among them.
func declared(msgs protoreflect.MessageDescriptors) (map[string]protoreflect.MessageDescriptor, map[string]int) {
	byName := map[string]protoreflect.MessageDescriptor{}
	index := map[string]int{}
	n := 0
	for i := 0; i < msgs.Len(); i++ {
		m := msgs.Get(i)
		if m.IsMapEntry() || isGroupBody(m) {
			continue
		}
		byName[string(m.Name())] = m
		index[string(m.Name())] = n
		n++
	}
	return byName, index
}

func sortedKeys[A, B any](a map[string]A, b map[string]B) []string {
	var names []string
	for k := range a {
		names = append(names, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return names
}

// compareTypes is SchemaDiff.compareTypeElements: the messages and enums a
// file or message declares.
func (cx *ctx) compareTypes(om, um protoreflect.MessageDescriptors, oe, ue protoreflect.EnumDescriptors) {
	origMsgs, origIdx := declared(om)
	updMsgs, updIdx := declared(um)
	for _, name := range sortedKeys(origMsgs, updMsgs) {
		cx.push(name)
		o, u := origMsgs[name], updMsgs[name]
		switch {
		case u == nil:
			cx.add(MessageRemoved)
		case o == nil:
			cx.add(MessageAdded)
		default:
			cx.compareMessage(o, u)
			// Moving a message is compatible: a record's message indexes
			// are read against the schema of its own id.
			if origIdx[name] != updIdx[name] {
				cx.add(MessageMoved)
			}
		}
		cx.pop()
	}
	origEnums := map[string]protoreflect.EnumDescriptor{}
	for i := 0; i < oe.Len(); i++ {
		origEnums[string(oe.Get(i).Name())] = oe.Get(i)
	}
	updEnums := map[string]protoreflect.EnumDescriptor{}
	for i := 0; i < ue.Len(); i++ {
		updEnums[string(ue.Get(i).Name())] = ue.Get(i)
	}
	for _, name := range sortedKeys(origEnums, updEnums) {
		cx.push(name)
		o, u := origEnums[name], updEnums[name]
		switch {
		case u == nil:
			cx.add(EnumRemoved)
		case o == nil:
			cx.add(EnumAdded)
		default:
			cx.compareEnum(o, u)
		}
		cx.pop()
	}
}

// compareEnum is EnumSchemaDiff: constants by number.
func (cx *ctx) compareEnum(o, u protoreflect.EnumDescriptor) {
	byNum := func(e protoreflect.EnumDescriptor) map[protoreflect.EnumNumber]string {
		m := map[protoreflect.EnumNumber]string{}
		vals := e.Values()
		for i := 0; i < vals.Len(); i++ {
			if _, ok := m[vals.Get(i).Number()]; !ok {
				m[vals.Get(i).Number()] = string(vals.Get(i).Name())
			}
		}
		return m
	}
	on, un := byNum(o), byNum(u)
	var nums []protoreflect.EnumNumber
	for n := range on {
		nums = append(nums, n)
	}
	for n := range un {
		if _, ok := on[n]; !ok {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	for _, n := range nums {
		cx.push(strconv.Itoa(int(n)))
		oname, inO := on[n]
		uname, inU := un[n]
		switch {
		case !inU:
			cx.add(EnumConstRemoved)
		case !inO:
			cx.add(EnumConstAdded)
		case oname != uname:
			cx.add(EnumConstChanged)
		}
		cx.pop()
	}
}

// realOneof is the oneof a field is declared in, "" for none: proto3
// optional's synthetic oneofs are not oneofs in the text.
func realOneof(f protoreflect.FieldDescriptor) string {
	if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
		return string(o.Name())
	}
	return ""
}

// compareMessage is MessageSchemaDiff.compare: every field by number
// wherever it sits (top level or in a oneof), so a move between oneofs
// cannot hide a change of type; then the nested types.
func (cx *ctx) compareMessage(o, u protoreflect.MessageDescriptor) {
	if !cx.inMsg[o] {
		cx.inMsg[o] = true
		defer delete(cx.inMsg, o)
		cx.compareFields(o, u)
	}
	cx.compareTypes(o.Messages(), u.Messages(), o.Enums(), u.Enums())
}

func (cx *ctx) compareFields(o, u protoreflect.MessageDescriptor) {
	of, uf := o.Fields(), u.Fields()
	origOneofs := map[string][]protoreflect.FieldDescriptor{}
	updOneofs := map[string]bool{}
	for i := 0; i < of.Len(); i++ {
		if name := realOneof(of.Get(i)); name != "" {
			origOneofs[name] = append(origOneofs[name], of.Get(i))
		}
	}
	for i := 0; i < u.Oneofs().Len(); i++ {
		if od := u.Oneofs().Get(i); !od.IsSynthetic() {
			updOneofs[string(od.Name())] = true
		}
	}
	for i := 0; i < o.Oneofs().Len(); i++ {
		if od := o.Oneofs().Get(i); !od.IsSynthetic() {
			if _, ok := origOneofs[string(od.Name())]; !ok {
				origOneofs[string(od.Name())] = nil
			}
		}
	}

	// A oneof gone by name with none of its fields left anywhere is a whole
	// deletion, which Confluent lets pass; a oneof that lost only some of its
	// fields reports each lost one below.
	deleted := map[string]bool{}
	for name, fields := range origOneofs {
		if updOneofs[name] {
			continue
		}
		survives := false
		for _, f := range fields {
			if uf.ByNumber(f.Number()) != nil {
				survives = true
			}
		}
		if !survives {
			deleted[name] = true
		}
	}

	// Fields made mutually exclusive that were not: an update oneof whose
	// fields already existed in more than one original group (a oneof, or
	// each top-level field alone). New fields do not count, as old data
	// never set them.
	for i := 0; i < u.Oneofs().Len(); i++ {
		od := u.Oneofs().Get(i)
		if od.IsSynthetic() {
			continue
		}
		groups := map[string]bool{}
		movedIn := 0
		for j := 0; j < od.Fields().Len(); j++ {
			prev := of.ByNumber(od.Fields().Get(j).Number())
			if prev == nil {
				continue
			}
			if name := realOneof(prev); name != "" {
				groups["oneof:"+name] = true
			} else {
				groups["field:"+strconv.Itoa(int(prev.Number()))] = true
				movedIn++
			}
		}
		if len(groups) > 1 {
			cx.push(string(od.Name()))
			if movedIn > 1 {
				cx.add(MultipleFieldsMovedToOneof)
			} else {
				cx.add(FieldMovedToExistingOneof)
			}
			cx.pop()
		}
	}

	for _, name := range sortedKeys(origOneofs, updOneofs) {
		_, inO := origOneofs[name]
		cx.push(name)
		switch {
		case !updOneofs[name]:
			cx.add(OneofRemoved)
		case !inO:
			cx.add(OneofAdded)
		}
		cx.pop()
	}

	var nums []protoreflect.FieldNumber
	for i := 0; i < of.Len(); i++ {
		nums = append(nums, of.Get(i).Number())
	}
	for i := 0; i < uf.Len(); i++ {
		if of.ByNumber(uf.Get(i).Number()) == nil {
			nums = append(nums, uf.Get(i).Number())
		}
	}
	slices.Sort(nums)
	for _, n := range nums {
		tag := strconv.Itoa(int(n))
		ofd, ufd := of.ByNumber(n), uf.ByNumber(n)
		if (ofd != nil && isGroup(ofd)) || (ufd != nil && isGroup(ufd)) {
			continue
		}
		switch {
		case ufd == nil:
			if name := realOneof(ofd); name != "" {
				if !deleted[name] {
					cx.push(name)
					cx.push(tag)
					cx.add(OneofFieldRemoved)
					cx.pop()
					cx.pop()
				}
			} else {
				cx.push(tag)
				if ofd.Cardinality() == protoreflect.Required {
					cx.add(RequiredFieldRemoved)
				} else {
					cx.add(FieldRemoved)
				}
				cx.pop()
			}
		case ofd == nil:
			if name := realOneof(ufd); name != "" {
				cx.push(name)
				cx.push(tag)
				cx.add(OneofFieldAdded)
				cx.pop()
				cx.pop()
			} else {
				cx.push(tag)
				if ufd.Cardinality() == protoreflect.Required {
					cx.add(RequiredFieldAdded)
				} else {
					cx.add(FieldAdded)
				}
				cx.pop()
			}
		default:
			origOneof, updOneof := realOneof(ofd), realOneof(ufd)
			if origOneof != "" && updOneof == "" {
				cx.push(tag)
				cx.add(OneofFieldMovedToTopLevel)
				cx.pop()
			}
			depth := 1
			if updOneof != "" {
				cx.push(updOneof)
				depth = 2
			}
			cx.push(tag)
			cx.compareField(ofd, ufd)
			for ; depth > 0; depth-- {
				cx.pop()
			}
		}
	}
}

// compareField is FieldSchemaDiff.compare.
func (cx *ctx) compareField(o, u protoreflect.FieldDescriptor) {
	if o.Name() != u.Name() {
		cx.add(FieldNameChanged)
	}
	cx.compareLabelsAndTypes(writtenLabel(o), writtenLabel(u), o, u)
}

// writtenLabel is the label the text wrote: "" where it wrote none (proto3
// singular fields, oneof fields, maps), which never counts as a change.
func writtenLabel(f protoreflect.FieldDescriptor) string {
	switch {
	case f.IsMap():
		return ""
	case f.Cardinality() == protoreflect.Repeated:
		return "repeated"
	case f.Cardinality() == protoreflect.Required:
		return "required"
	case f.HasOptionalKeyword():
		return "optional"
	}
	return ""
}

type kind int

const (
	scalarKind kind = iota
	mapKind
	messageKind
)

func kindOf(f protoreflect.FieldDescriptor) kind {
	switch {
	case f.IsMap():
		return mapKind
	case f.Kind() == protoreflect.MessageKind || f.Kind() == protoreflect.GroupKind:
		return messageKind
	}
	return scalarKind
}

// scalarGroup puts the scalars that read each other's wire values in one
// group, as Confluent does after protobuf's guide to updating a message:
// enums are numbers.
func scalarGroup(k protoreflect.Kind) string {
	switch k {
	case protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Int64Kind,
		protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.BoolKind:
		return "GENERAL_NUMBER"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "SIGNED_NUMBER"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "STRING_OR_BYTES"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return "FIXED32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return "FIXED64"
	case protoreflect.FloatKind:
		return "FLOAT"
	case protoreflect.DoubleKind:
		return "DOUBLE"
	}
	return k.String()
}

func (cx *ctx) compareLabelsAndTypes(ol, ul string, o, u protoreflect.FieldDescriptor) {
	ok, uk := kindOf(o), kindOf(u)
	if ok != uk {
		cx.add(FieldKindChanged)
		return
	}
	switch ok {
	case scalarKind:
		og, ug := scalarGroup(o.Kind()), scalarGroup(u.Kind())
		switch {
		case og != ug:
			cx.add(FieldScalarKindChanged)
		case ol != "" && ul != "" && ol != ul:
			if og == "STRING_OR_BYTES" {
				cx.add(FieldStringOrBytesLabelChanged)
			} else {
				cx.add(FieldNumericLabelChanged)
			}
		}
	case messageKind:
		cx.compareMessageTypes(o.Message(), u.Message())
	case mapKind:
		cx.compareLabelsAndTypes("", "", o.MapKey(), u.MapKey())
		cx.compareLabelsAndTypes("", "", o.MapValue(), u.MapValue())
	}
}

// localName is a type's name within its package.
func localName(m protoreflect.MessageDescriptor) string {
	name, pkg := string(m.FullName()), string(m.ParentFile().Package())
	if pkg != "" && strings.HasPrefix(name, pkg+".") {
		return name[len(pkg)+1:]
	}
	return name
}

// originOf names the file a type comes from: the schema itself, a
// reference (subject and version) or, with ok false, a built-in file.
func (s *Schema) originOf(m protoreflect.MessageDescriptor) (o origin, ok bool) {
	path := m.ParentFile().Path()
	if path == s.file.Path() {
		return origin{version: -1}, true
	}
	o, found := s.origins[path]
	if !found || o.builtin {
		return origin{}, false
	}
	return o, true
}

// compareMessageTypes is FieldSchemaDiff.compareMessageTypes: a message
// field keeps its type if the type keeps its name within its package; a
// type from another file (another reference, or another version of it) is
// compared field by field as well, its differences reported at its own
// path, and any incompatible one makes the field's type changed.
func (cx *ctx) compareMessageTypes(o, u protoreflect.MessageDescriptor) {
	oname, uname := localName(o), localName(u)
	if oname != uname {
		cx.add(FieldNamedTypeChanged)
		return
	}
	oo, ook := cx.d.orig.originOf(o)
	uo, uok := cx.d.upd.originOf(u)
	if ook && uok && oo.subject == uo.subject && oo.version == uo.version {
		return
	}
	key := [2]protoreflect.MessageDescriptor{o, u}
	e := cx.d.memo[key]
	if e == nil {
		e = &memoEntry{}
		cx.d.memo[key] = e
		sub := cx.d.newCtx(cx.inMsg)
		sub.path = strings.Split(oname, ".")
		sub.compareMessage(o, u)
		e.diffs, e.done = sub.diffs, true
	} else if !e.done {
		// A type that refers to itself through other files: its fields
		// are being compared further up.
		return
	}
	incompatible := false
	for _, d := range e.diffs {
		cx.addDiff(d)
		if !d.Type.Compatible() {
			incompatible = true
		}
	}
	if incompatible {
		cx.add(FieldNamedTypeChanged)
	}
}
