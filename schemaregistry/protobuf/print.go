package protobuf

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile/ast"
	"github.com/bufbuild/protocompile/linker"
	"github.com/bufbuild/protocompile/parser"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// The printer writes a file back in the layout of Confluent's
// ProtobufSchemaUtils.toString: syntax, package, imports, options, then all
// messages followed by all enums (message order is kept, as message indexes
// depend on it), then extends and services; two-space indents, where a blank
// line inside a nested block keeps its indent.
//
// It prints from the file as parsed: type names, option values, reserved
// and extensions statements and extend blocks as the text wrote them (the
// parse's syntax tree supplies what a descriptor forgets). A serialized
// schema has no text: it prints from its descriptor, type names fully
// qualified and without options.
//
// normalize applies Confluent's toNormalizedString: type names fully
// qualified with a leading dot (map values too), imports sorted and
// deduplicated, custom option names resolved and their settings merged,
// options sorted by name, fields sorted by number, oneofs sorted by their
// first field, enum values by number, reserved and extension values one a
// statement and sorted, extends grouped by extendee, and the syntax line
// kept only for proto3.
type printer struct {
	normalize bool
	// ignoreExt is format=ignore_extensions: custom options other than
	// Confluent's own, extension ranges and extends left out.
	ignoreExt bool
	syntax    string
	linked    protoreflect.FileDescriptor
	// res is the parse the file came from, nil for a serialized schema: it
	// holds the option values as written.
	res parser.Result
	// scope is the full name options are resolved in, and resolver finds
	// custom options (extensions) by full name, to normalize their names.
	scope    string
	resolver linker.Resolver
}

// enter makes name the scope until the returned func is called.
func (p *printer) enter(name string) func() {
	saved := p.scope
	if p.scope == "" {
		p.scope = name
	} else {
		p.scope += "." + name
	}
	return func() { p.scope = saved }
}

// source is a file as written: its descriptor before linking and, when it
// was parsed from text, the parse.
type source struct {
	proto *descriptorpb.FileDescriptorProto
	res   parser.Result
}

func printFile(s *Schema, src source, normalize, ignoreExt bool) string {
	f := src.proto
	p := printer{normalize: normalize, ignoreExt: ignoreExt, syntax: f.GetSyntax(), linked: s.file, res: src.res,
		scope: f.GetPackage(), resolver: linker.ResolverFromFile(s.file)}
	var b strings.Builder
	switch syn := f.GetSyntax(); {
	case syn == "editions":
		b.WriteString("edition = \"" + strings.TrimPrefix(f.GetEdition().String(), "EDITION_") + "\";\n")
	case syn == "proto3":
		b.WriteString("syntax = \"proto3\";\n")
	case s.declaredProto2 && !normalize:
		b.WriteString("syntax = \"proto2\";\n")
	}
	if f.Package != nil {
		b.WriteString("package " + f.GetPackage() + ";\n")
	}
	if len(f.Dependency) > 0 {
		public := map[int32]bool{}
		for _, i := range f.PublicDependency {
			public[i] = true
		}
		var plain, pub []string
		for i, d := range f.Dependency {
			if public[int32(i)] {
				pub = append(pub, d)
			} else {
				plain = append(plain, d)
			}
		}
		if normalize {
			slices.Sort(plain)
			plain = slices.Compact(plain)
			slices.Sort(pub)
			pub = slices.Compact(pub)
		}
		b.WriteString("\n")
		for _, d := range plain {
			b.WriteString("import \"" + d + "\";\n")
		}
		for _, d := range pub {
			b.WriteString("import public \"" + d + "\";\n")
		}
	}
	if opts := p.optionsOf(f.GetOptions()); len(opts) > 0 {
		b.WriteString("\n")
		for _, o := range opts {
			b.WriteString("option " + o + ";\n")
		}
	}
	msgs := p.visibleMessages(f.MessageType, nil)
	if len(msgs) > 0 || len(f.EnumType) > 0 {
		b.WriteString("\n")
		for _, m := range msgs {
			b.WriteString(p.message(m, p.linked.Messages().ByName(protoreflect.Name(m.GetName()))))
		}
		for _, e := range f.EnumType {
			b.WriteString(p.enum(e))
		}
	}
	if len(f.Extension) > 0 && !p.ignoreExt {
		b.WriteString("\n")
		b.WriteString(p.extends(f.Extension, p.linked.Extensions()))
	}
	if len(f.Service) > 0 {
		b.WriteString("\n")
		for _, sv := range f.Service {
			b.WriteString(p.service(sv))
		}
	}
	return b.String()
}

// indent prefixes every line of s with two spaces, blank ones included.
func indent(b *strings.Builder, s string) {
	s = strings.TrimSuffix(s, "\n")
	for _, line := range strings.Split(s, "\n") {
		b.WriteString("  " + line + "\n")
	}
}

// visibleMessages drops the messages the source never declared: map entries
// and the messages behind proto2 groups (printed with their group field).
func (p *printer) visibleMessages(msgs []*descriptorpb.DescriptorProto, fields []*descriptorpb.FieldDescriptorProto) []*descriptorpb.DescriptorProto {
	groups := map[string]bool{}
	for _, f := range fields {
		if f.GetType() == descriptorpb.FieldDescriptorProto_TYPE_GROUP {
			groups[lastName(f.GetTypeName())] = true
		}
	}
	var out []*descriptorpb.DescriptorProto
	for _, m := range msgs {
		if m.GetOptions().GetMapEntry() || groups[m.GetName()] {
			continue
		}
		out = append(out, m)
	}
	return out
}

func lastName(typeName string) string {
	return typeName[strings.LastIndexByte(typeName, '.')+1:]
}

func (p *printer) message(m *descriptorpb.DescriptorProto, lm protoreflect.MessageDescriptor) string {
	defer p.enter(m.GetName())()
	var b strings.Builder
	b.WriteString("message " + m.GetName() + " {")
	reserved, extensions := p.messageRanges(m)
	if r := p.rangeLines("reserved", reserved); len(r) > 0 {
		b.WriteString("\n")
		for _, line := range r {
			indent(&b, line)
		}
	}
	if opts := p.optionsOf(m.GetOptions()); len(opts) > 0 {
		b.WriteString("\n")
		for _, o := range opts {
			indent(&b, "option "+o+";")
		}
	}
	var plain, groups []*descriptorpb.FieldDescriptorProto
	oneofs := make([][]*descriptorpb.FieldDescriptorProto, len(m.OneofDecl))
	for _, f := range m.Field {
		switch {
		case f.OneofIndex != nil && !f.GetProto3Optional() && int(f.GetOneofIndex()) < len(oneofs):
			oneofs[f.GetOneofIndex()] = append(oneofs[f.GetOneofIndex()], f)
		case f.GetType() == descriptorpb.FieldDescriptorProto_TYPE_GROUP:
			groups = append(groups, f)
		default:
			plain = append(plain, f)
		}
	}
	byNumber := func(a, b *descriptorpb.FieldDescriptorProto) int { return cmp.Compare(a.GetNumber(), b.GetNumber()) }
	if len(plain) > 0 {
		if p.normalize {
			slices.SortStableFunc(plain, byNumber)
		}
		b.WriteString("\n")
		for _, f := range plain {
			indent(&b, p.field(m, f, lm))
		}
	}
	type oneof struct {
		decl   *descriptorpb.OneofDescriptorProto
		fields []*descriptorpb.FieldDescriptorProto
	}
	var ones []oneof
	for i, d := range m.OneofDecl {
		if len(oneofs[i]) == 0 && (p.normalize || isSyntheticOneof(m, int32(i))) {
			continue
		}
		ones = append(ones, oneof{d, oneofs[i]})
	}
	if p.normalize {
		for _, o := range ones {
			slices.SortStableFunc(o.fields, byNumber)
		}
		slices.SortStableFunc(ones, func(a, b oneof) int { return byNumber(a.fields[0], b.fields[0]) })
	}
	if len(ones) > 0 {
		b.WriteString("\n")
		for _, o := range ones {
			var ob strings.Builder
			ob.WriteString("oneof " + o.decl.GetName() + " {")
			if opts := p.optionsOf(o.decl.GetOptions()); len(opts) > 0 {
				ob.WriteString("\n")
				for _, op := range opts {
					indent(&ob, "option "+op+";")
				}
			}
			if len(o.fields) > 0 {
				ob.WriteString("\n")
				for _, f := range o.fields {
					indent(&ob, p.field(m, f, lm))
				}
			}
			ob.WriteString("}\n")
			indent(&b, ob.String())
		}
	}
	if len(groups) > 0 {
		if p.normalize {
			slices.SortStableFunc(groups, byNumber)
		}
		b.WriteString("\n")
		for _, g := range groups {
			indent(&b, p.group(m, g, lm))
		}
	}
	if lines := p.rangeLines("extensions", extensions); len(lines) > 0 && !p.ignoreExt {
		b.WriteString("\n")
		for _, l := range lines {
			indent(&b, l)
		}
	}
	if len(m.Extension) > 0 && !p.ignoreExt {
		var lext protoreflect.ExtensionDescriptors
		if lm != nil {
			lext = lm.Extensions()
		}
		b.WriteString("\n")
		indent(&b, p.extends(m.Extension, lext))
	}
	nested := p.visibleMessages(m.NestedType, m.Field)
	if len(nested) > 0 || len(m.EnumType) > 0 {
		b.WriteString("\n")
		for _, n := range nested {
			var ln protoreflect.MessageDescriptor
			if lm != nil {
				ln = lm.Messages().ByName(protoreflect.Name(n.GetName()))
			}
			indent(&b, p.message(n, ln))
		}
		for _, e := range m.EnumType {
			indent(&b, p.enum(e))
		}
	}
	b.WriteString("}\n")
	return b.String()
}

func isSyntheticOneof(m *descriptorpb.DescriptorProto, i int32) bool {
	for _, f := range m.Field {
		if f.OneofIndex != nil && f.GetOneofIndex() == i {
			return f.GetProto3Optional()
		}
	}
	return false
}

// maxTag is the largest field number; a range ending there prints as max.
const maxTag = 536_870_911

// mapEntry returns the map entry message a field's type names, if it is one.
func mapEntry(m *descriptorpb.DescriptorProto, f *descriptorpb.FieldDescriptorProto) *descriptorpb.DescriptorProto {
	if m == nil || f.GetLabel() != descriptorpb.FieldDescriptorProto_LABEL_REPEATED || f.TypeName == nil {
		return nil
	}
	name := lastName(f.GetTypeName())
	for _, n := range m.NestedType {
		if n.GetName() == name && n.GetOptions().GetMapEntry() {
			return n
		}
	}
	return nil
}

// typeText is a field's type as written, or fully qualified when
// normalizing.
func (p *printer) typeText(f *descriptorpb.FieldDescriptorProto, lf protoreflect.FieldDescriptor) string {
	if p.normalize && lf != nil {
		switch lf.Kind() {
		case protoreflect.MessageKind, protoreflect.GroupKind:
			return "." + string(lf.Message().FullName())
		case protoreflect.EnumKind:
			return "." + string(lf.Enum().FullName())
		}
	}
	if f.TypeName != nil {
		return f.GetTypeName()
	}
	return strings.ToLower(strings.TrimPrefix(f.GetType().String(), "TYPE_"))
}

func (p *printer) label(f *descriptorpb.FieldDescriptorProto, inOneof bool) string {
	switch f.GetLabel() {
	case descriptorpb.FieldDescriptorProto_LABEL_REPEATED:
		return "repeated "
	case descriptorpb.FieldDescriptorProto_LABEL_REQUIRED:
		return "required "
	}
	if f.Label == nil || inOneof {
		return ""
	}
	if f.GetProto3Optional() || p.syntax == "" || p.syntax == "proto2" {
		return "optional "
	}
	return ""
}

func (p *printer) field(m *descriptorpb.DescriptorProto, f *descriptorpb.FieldDescriptorProto, lm protoreflect.MessageDescriptor) string {
	var lf protoreflect.FieldDescriptor
	if lm != nil {
		lf = lm.Fields().ByNumber(protoreflect.FieldNumber(f.GetNumber()))
	}
	var b strings.Builder
	inOneof := f.OneofIndex != nil && !f.GetProto3Optional()
	if entry := mapEntry(m, f); entry != nil && len(entry.Field) == 2 {
		k, v := entry.Field[0], entry.Field[1]
		vt := p.typeText(v, nil)
		if p.normalize && lf != nil && lf.IsMap() {
			vt = p.typeText(v, lf.MapValue())
		}
		b.WriteString("map<" + p.typeText(k, nil) + ", " + vt + ">")
	} else {
		b.WriteString(p.label(f, inOneof))
		b.WriteString(p.typeText(f, lf))
	}
	b.WriteString(" " + f.GetName() + " = " + strconv.Itoa(int(f.GetNumber())))
	b.WriteString(p.fieldOptions(f.GetOptions(), f))
	b.WriteString(";")
	return b.String()
}

func (p *printer) group(m *descriptorpb.DescriptorProto, g *descriptorpb.FieldDescriptorProto, lm protoreflect.MessageDescriptor) string {
	var b strings.Builder
	b.WriteString(p.label(g, false) + "group " + lastName(g.GetTypeName()) + " = " + strconv.Itoa(int(g.GetNumber())) + " {")
	var body *descriptorpb.DescriptorProto
	for _, n := range m.NestedType {
		if n.GetName() == lastName(g.GetTypeName()) {
			body = n
		}
	}
	if body != nil && len(body.Field) > 0 {
		var lb protoreflect.MessageDescriptor
		if lm != nil {
			lb = lm.Messages().ByName(protoreflect.Name(body.GetName()))
		}
		fields := slices.Clone(body.Field)
		if p.normalize {
			slices.SortStableFunc(fields, func(a, b *descriptorpb.FieldDescriptorProto) int { return cmp.Compare(a.GetNumber(), b.GetNumber()) })
		}
		b.WriteString("\n")
		for _, f := range fields {
			indent(&b, p.field(body, f, lb))
		}
	}
	b.WriteString("}")
	return b.String()
}

// fieldOptions prints a field's (or enum value's, f nil) bracketed
// options: one on the line, several one per line. default and json_name go
// last, as Confluent adds them.
func (p *printer) fieldOptions(o optionsMsg, f *descriptorpb.FieldDescriptorProto) string {
	uos := o.GetUninterpretedOption()
	if p.res == nil && len(uos) == 0 {
		return bracketed(append(p.descOptions(o), p.fieldSpecials(f)...))
	}
	var special, rest []*descriptorpb.UninterpretedOption
	for _, uo := range uos {
		if n := optionName(uo); n == "default" || n == "json_name" {
			special = append(special, uo)
		} else {
			rest = append(rest, uo)
		}
	}
	slices.SortStableFunc(special, func(a, b *descriptorpb.UninterpretedOption) int {
		return strings.Compare(optionName(a), optionName(b))
	})
	return bracketed(p.options(append(rest, special...)))
}

func optionName(uo *descriptorpb.UninterpretedOption) string {
	var parts []string
	for _, n := range uo.Name {
		if n.GetIsExtension() {
			parts = append(parts, "("+n.GetNamePart()+")")
		} else {
			parts = append(parts, n.GetNamePart())
		}
	}
	return strings.Join(parts, ".")
}

// options prints each option as "name = value".
func (p *printer) options(uos []*descriptorpb.UninterpretedOption) []string {
	if p.ignoreExt {
		uos = slices.DeleteFunc(slices.Clone(uos), func(uo *descriptorpb.UninterpretedOption) bool {
			return len(uo.Name) > 0 && uo.Name[0].GetIsExtension() && !strings.HasPrefix(uo.Name[0].GetNamePart(), "confluent.")
		})
	}
	if len(uos) == 0 {
		return nil
	}
	if p.normalize && p.res != nil {
		return p.normalizedOptions(uos)
	}
	uos = slices.Clone(uos)
	if p.normalize {
		slices.SortStableFunc(uos, func(a, b *descriptorpb.UninterpretedOption) int {
			return strings.Compare(strings.Trim(optionName(a), "()"), strings.Trim(optionName(b), "()"))
		})
	}
	out := make([]string, 0, len(uos))
	for _, uo := range uos {
		value := ""
		if p.res != nil {
			if n, ok := p.res.OptionNode(uo).(*ast.OptionNode); ok {
				value = p.literal(p.res.AST(), n.Val)
			}
		}
		if value == "" {
			value = optionValue(uo)
		}
		out = append(out, optionName(uo)+" = "+value)
	}
	return out
}

func optionValue(uo *descriptorpb.UninterpretedOption) string {
	switch {
	case uo.IdentifierValue != nil:
		return uo.GetIdentifierValue()
	case uo.PositiveIntValue != nil:
		return strconv.FormatUint(uo.GetPositiveIntValue(), 10)
	case uo.NegativeIntValue != nil:
		return strconv.FormatInt(uo.GetNegativeIntValue(), 10)
	case uo.DoubleValue != nil:
		return strconv.FormatFloat(uo.GetDoubleValue(), 'g', -1, 64)
	case uo.StringValue != nil:
		return "\"" + escape(string(uo.GetStringValue())) + "\""
	case uo.AggregateValue != nil:
		return "{ " + uo.GetAggregateValue() + " }"
	}
	return ""
}

// escape is Confluent's escapeChars.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\v':
			b.WriteString(`\v`)
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '"':
			b.WriteString(`\"`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func (p *printer) enum(e *descriptorpb.EnumDescriptorProto) string {
	defer p.enter(e.GetName())()
	var b strings.Builder
	b.WriteString("enum " + e.GetName() + " {")
	reserved := p.rangeLines("reserved", p.enumReserved(e))
	if len(reserved) > 0 {
		b.WriteString("\n")
		for _, l := range reserved {
			indent(&b, l)
		}
	}
	opts := p.optionsOf(e.GetOptions())
	if len(reserved) == 0 && (len(opts) > 0 || len(e.Value) > 0) {
		b.WriteString("\n")
	}
	for _, o := range opts {
		indent(&b, "option "+o+";")
	}
	values := slices.Clone(e.Value)
	if p.normalize {
		slices.SortStableFunc(values, func(a, b *descriptorpb.EnumValueDescriptorProto) int {
			return cmp.Or(cmp.Compare(a.GetNumber(), b.GetNumber()), strings.Compare(a.GetName(), b.GetName()))
		})
	}
	for _, v := range values {
		indent(&b, v.GetName()+" = "+strconv.Itoa(int(v.GetNumber()))+p.fieldOptions(v.GetOptions(), nil)+";")
	}
	b.WriteString("}\n")
	return b.String()
}

// extends prints extension fields by extend block as the text wrote them;
// normalized (or without the text), grouped by the message they extend, in
// order of first appearance.
func (p *printer) extends(exts []*descriptorpb.FieldDescriptorProto, linked protoreflect.ExtensionDescriptors) string {
	type group struct {
		name   string
		fields []string
		nums   []int32
	}
	var groups []*group
	byName := map[string]*group{}
	for i, f := range exts {
		name := f.GetExtendee()
		var lf protoreflect.FieldDescriptor
		if linked != nil && i < linked.Len() {
			lf = linked.Get(i)
			if p.normalize {
				name = "." + string(lf.ContainingMessage().FullName())
			}
		}
		key := name
		if p.res != nil && !p.normalize {
			if fn, ok := p.res.FieldNode(f).(*ast.FieldNode); ok && fn.Extendee != nil {
				key = fmt.Sprintf("%p", fn.Extendee)
			}
		}
		g := byName[key]
		if g == nil {
			g = &group{name: name}
			byName[key] = g
			groups = append(groups, g)
		}
		line := p.label(f, false) + p.typeText(f, lf) + " " + f.GetName() + " = " + strconv.Itoa(int(f.GetNumber())) +
			p.fieldOptions(f.GetOptions(), f) + ";"
		g.fields = append(g.fields, line)
		g.nums = append(g.nums, f.GetNumber())
	}
	var b strings.Builder
	for _, g := range groups {
		b.WriteString("extend " + g.name + " {")
		if len(g.fields) > 0 {
			b.WriteString("\n")
			idx := make([]int, len(g.fields))
			for i := range idx {
				idx[i] = i
			}
			if p.normalize {
				slices.SortStableFunc(idx, func(a, c int) int { return cmp.Compare(g.nums[a], g.nums[c]) })
			}
			for _, i := range idx {
				indent(&b, g.fields[i])
			}
		}
		b.WriteString("}\n")
	}
	return b.String()
}

func (p *printer) service(sv *descriptorpb.ServiceDescriptorProto) string {
	defer p.enter(sv.GetName())()
	var b strings.Builder
	b.WriteString("service " + sv.GetName() + " {")
	if opts := p.optionsOf(sv.GetOptions()); len(opts) > 0 {
		b.WriteString("\n")
		for _, o := range opts {
			indent(&b, "option "+o+";")
		}
	}
	ls := p.linked.Services().ByName(protoreflect.Name(sv.GetName()))
	if len(sv.Method) > 0 {
		b.WriteString("\n")
		for _, m := range sv.Method {
			in, out := m.GetInputType(), m.GetOutputType()
			if p.normalize && ls != nil {
				if lm := ls.Methods().ByName(protoreflect.Name(m.GetName())); lm != nil {
					in, out = "."+string(lm.Input().FullName()), "."+string(lm.Output().FullName())
				}
			}
			var rb strings.Builder
			rb.WriteString("rpc " + m.GetName() + " (")
			if m.GetClientStreaming() {
				rb.WriteString("stream ")
			}
			rb.WriteString(in + ") returns (")
			if m.GetServerStreaming() {
				rb.WriteString("stream ")
			}
			rb.WriteString(out + ")")
			if opts := p.optionsOf(m.GetOptions()); len(opts) > 0 {
				rb.WriteString(" {\n")
				for _, o := range opts {
					indent(&rb, "option "+o+";")
				}
				rb.WriteString("}")
			}
			rb.WriteString(";")
			indent(&b, rb.String())
		}
	}
	b.WriteString("}\n")
	return b.String()
}
