package protobuf

import (
	"slices"
	"strings"

	"github.com/bufbuild/protocompile/ast"
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
				if l, ok := m[i].val.(optList); ok {
					m[i].val = append(l, val)
				} else {
					m[i].val = optList{m[i].val, val}
				}
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
		return v
	}
	return ""
}
