package protobuf

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile/ast"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Option values are printed as Confluent prints what its parser (Square's
// Wire) reads: a message literal becomes an ordered map whose repeated keys
// gather into a list, printed one "key: value" a line in braces; a list is
// printed one element a line in brackets; strings are quoted again with
// Confluent's escapes; numbers and identifiers keep their text.

// optEntry is one key of a message literal; val is a string (already
// printed), an optList or an optMap.
type optEntry struct {
	key string
	val any
}

type (
	optMap  []optEntry
	optList []any
)

// literal prints an option's value as written.
func (p *printer) literal(f *ast.FileNode, v ast.ValueNode) string {
	return p.format(p.value(f, v))
}

func (p *printer) value(f *ast.FileNode, v ast.ValueNode) any {
	switch n := v.(type) {
	case *ast.MessageLiteralNode:
		var m optMap
		for _, el := range n.Elements {
			key := string(el.Name.Name.AsIdentifier())
			if el.Name.IsExtension() {
				key = "[" + key + "]"
				if el.Name.IsAnyTypeReference() {
					key = "[" + string(el.Name.URLPrefix.AsIdentifier()) + "/" + string(el.Name.Name.AsIdentifier()) + "]"
				}
			}
			val := p.value(f, el.Val)
			if i := slices.IndexFunc(m, func(e optEntry) bool { return e.key == key }); i >= 0 {
				// A repeated key gathers its values into one flat list.
				l, ok := m[i].val.(optList)
				if !ok {
					l = optList{m[i].val}
				}
				if vl, ok := val.(optList); ok {
					l = append(l, vl...)
				} else {
					l = append(l, val)
				}
				m[i].val = l
				continue
			}
			m = append(m, optEntry{key, val})
		}
		return m
	case *ast.ArrayLiteralNode:
		l := optList{}
		for _, el := range n.Elements {
			l = append(l, p.value(f, el))
		}
		return l
	case ast.StringValueNode:
		return "\"" + escape(n.AsString()) + "\""
	}
	return rawText(f, v)
}

// rawText is a node's source text without comments or spacing: "-5" for a
// negative number written "- 5".
func rawText(f *ast.FileNode, n ast.Node) string {
	if cn, ok := n.(ast.CompositeNode); ok {
		var b strings.Builder
		for _, ch := range cn.Children() {
			b.WriteString(rawText(f, ch))
		}
		return b.String()
	}
	return f.NodeInfo(n).RawText()
}

func (p *printer) format(v any) string {
	switch v := v.(type) {
	case optMap:
		if p.normalize {
			v = slices.Clone(v)
			v = slices.DeleteFunc(v, func(e optEntry) bool {
				l, ok := e.val.(optList)
				return ok && len(l) == 0
			})
			slices.SortStableFunc(v, func(a, b optEntry) int { return strings.Compare(a.key, b.key) })
		}
		var b strings.Builder
		b.WriteString("{\n")
		for i, e := range v {
			line := e.key + ": " + p.format(e.val)
			if i < len(v)-1 {
				line += ","
			}
			indent(&b, line)
		}
		b.WriteString("}")
		return b.String()
	case optList:
		if p.normalize && len(v) == 1 {
			return p.format(v[0])
		}
		var b strings.Builder
		b.WriteString("[\n")
		for i, e := range v {
			line := p.format(e)
			if i < len(v)-1 {
				line += ","
			}
			indent(&b, line)
		}
		b.WriteString("]")
		return b.String()
	case string:
		if p.normalize {
			return normalNumber(v)
		}
		return v
	}
	return ""
}

// normalNumber is a number as Confluent's normalize prints it (Java's
// DecimalFormat: no exponent, at most three decimals, no trailing zeros);
// anything else (a string, an identifier, inf) is kept.
func normalNumber(s string) string {
	if s == "" || !strings.ContainsAny(s[:1], "-+.0123456789") {
		return s
	}
	// Text format's float suffix: 1.5f is 1.5.
	if n := len(s); n > 1 && (s[n-1] == 'f' || s[n-1] == 'F') && strings.ContainsAny(s[n-2:n-1], ".0123456789") &&
		!strings.HasPrefix(strings.ToLower(strings.TrimLeft(s, "-+")), "0x") {
		s = s[:n-1]
	}
	if i, err := strconv.ParseInt(s, 0, 64); err == nil {
		return strconv.FormatInt(i, 10)
	}
	if u, err := strconv.ParseUint(s, 0, 64); err == nil {
		return strconv.FormatUint(u, 10)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return s
	}
	t := strings.TrimRight(strconv.FormatFloat(f, 'f', 3, 64), "0")
	t = strings.TrimSuffix(t, ".")
	if t == "-0" {
		t = "0"
	}
	return t
}

// normalizedOptions is Confluent's normalize of an option list: custom
// option names resolved to their full names, a dotted path turned into
// nested maps ("(a).b.c = 1" is "(pkg.a) = { b: { c: 1 } }"), the options
// sorted by name, and the settings of one non-repeated option merged.
func (p *printer) normalizedOptions(uos []*descriptorpb.UninterpretedOption) []string {
	type opt struct {
		name string // without parentheses, to sort by
		ext  protoreflect.FieldDescriptor
		val  any
	}
	f := p.res.AST()
	var opts []opt
	for _, uo := range uos {
		if len(uo.Name) == 0 {
			continue
		}
		n, ok := p.res.OptionNode(uo).(*ast.OptionNode)
		var val any
		if ok {
			val = p.value(f, n.Val)
		} else {
			val = optionValue(uo)
		}
		first := uo.Name[0]
		o := opt{name: first.GetNamePart()}
		if first.GetIsExtension() {
			o.ext, o.name = p.resolveExtension(first.GetNamePart())
		}
		for i := len(uo.Name) - 1; i >= 1; i-- {
			key := uo.Name[i].GetNamePart()
			if uo.Name[i].GetIsExtension() {
				key = "[" + key + "]"
			}
			val = optMap{{key, val}}
		}
		o.val = val
		opts = append(opts, o)
	}
	slices.SortStableFunc(opts, func(a, b opt) int { return strings.Compare(a.name, b.name) })
	var out []string
	for i := 0; i < len(opts); {
		j := i + 1
		for j < len(opts) && opts[j].name == opts[i].name {
			j++
		}
		group := opts[i:j]
		if e := group[0].ext; e != nil && !e.IsList() {
			merged := group[0].val
			for _, o := range group[1:] {
				merged = mergeValues(e.Message(), merged, o.val, false)
			}
			group = []opt{{name: group[0].name, ext: e, val: merged}}
		}
		for _, o := range group {
			name := o.name
			if o.ext != nil {
				name = "(" + name + ")"
			}
			out = append(out, name+" = "+p.format(o.val))
		}
		i = j
	}
	return out
}

// mergeValues merges two settings of one option: message literals key by
// key (md is their type, when known), a singular value replaced by the
// later one, a repeated field's values gathered.
func mergeValues(md protoreflect.MessageDescriptor, a, b any, repeated bool) any {
	am, aok := a.(optMap)
	bm, bok := b.(optMap)
	if aok && bok && !repeated {
		out := slices.Clone(am)
		for _, e := range bm {
			var fd protoreflect.FieldDescriptor
			if md != nil {
				fd = md.Fields().ByName(protoreflect.Name(e.key))
			}
			i := slices.IndexFunc(out, func(x optEntry) bool { return x.key == e.key })
			if i < 0 {
				out = append(out, e)
				continue
			}
			var sub protoreflect.MessageDescriptor
			if fd != nil {
				sub = fd.Message()
			}
			out[i].val = mergeValues(sub, out[i].val, e.val, fd == nil || fd.IsList())
		}
		return out
	}
	if !repeated {
		return b
	}
	l := optList{}
	for _, v := range []any{a, b} {
		if vl, ok := v.(optList); ok {
			l = append(l, vl...)
		} else {
			l = append(l, v)
		}
	}
	return l
}

// resolveExtension finds a custom option by the name the text used, from
// the innermost scope out, as protobuf resolves names.
func (p *printer) resolveExtension(name string) (protoreflect.FieldDescriptor, string) {
	find := func(full string) protoreflect.FieldDescriptor {
		d, err := p.resolver.FindDescriptorByName(protoreflect.FullName(full))
		if err != nil {
			return nil
		}
		if fd, ok := d.(protoreflect.FieldDescriptor); ok && fd.IsExtension() {
			return fd
		}
		return nil
	}
	if strings.HasPrefix(name, ".") {
		return find(name[1:]), name[1:]
	}
	for scope := p.scope; ; {
		full := name
		if scope != "" {
			full = scope + "." + name
		}
		if fd := find(full); fd != nil {
			return fd, full
		}
		if scope == "" {
			return nil, name
		}
		if i := strings.LastIndexByte(scope, '.'); i >= 0 {
			scope = scope[:i]
		} else {
			scope = ""
		}
	}
}
