package protobuf

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile/ast"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Reserved and extension ranges are printed statement by statement as the
// text wrote them ("reserved 2, 9 to 11;" stays one statement, "5 to 5"
// stays a range), as Confluent keeps them; normalized, every value gets a
// statement of its own, sorted by number, names last.

// rangeVal is one value of a reserved or extensions statement: a number,
// a range of numbers, or a reserved name.
type rangeVal struct {
	start, end int64 // inclusive; end == start for a single number
	isRange    bool  // written "a to b"
	name       string
	isName     bool
	opts       string // an extensions statement's options, printed
}

// rangeStmt is one statement's values.
type rangeStmt []rangeVal

func (v rangeVal) text(normalize bool) string {
	if v.isName {
		return "\"" + v.name + "\""
	}
	if !v.isRange || (normalize && v.start == v.end) {
		return strconv.FormatInt(v.start, 10)
	}
	hi := strconv.FormatInt(v.end, 10)
	if v.end >= maxTag {
		hi = "max"
	}
	return strconv.FormatInt(v.start, 10) + " to " + hi
}

// rangeLines prints statements of one keyword, "reserved" or "extensions".
func (p *printer) rangeLines(keyword string, stmts []rangeStmt) []string {
	var lines []string
	if !p.normalize {
		for _, st := range stmts {
			if len(st) == 0 {
				continue
			}
			texts := make([]string, len(st))
			for i, v := range st {
				texts[i] = v.text(false)
			}
			lines = append(lines, keyword+" "+strings.Join(texts, ", ")+st[0].opts+";")
		}
		return lines
	}
	var all []rangeVal
	for _, st := range stmts {
		all = append(all, st...)
	}
	slices.SortStableFunc(all, func(a, b rangeVal) int {
		as, bs := a.start, b.start
		if a.isName {
			as = math.MaxInt64
		}
		if b.isName {
			bs = math.MaxInt64
		}
		return cmp.Or(cmp.Compare(as, bs), strings.Compare(a.text(true), b.text(true)))
	})
	for _, v := range all {
		lines = append(lines, keyword+" "+v.text(true)+v.opts+";")
	}
	return lines
}

// astRange reads one range as written; top is the value max stands for.
func astRange(r *ast.RangeNode, top int64) rangeVal {
	start, _ := r.StartVal.AsInt64()
	v := rangeVal{start: start, end: start}
	switch {
	case r.Max != nil:
		v.end, v.isRange = top, true
	case r.EndVal != nil:
		v.end, _ = r.EndVal.AsInt64()
		v.isRange = true
	}
	return v
}

func astReserved(n *ast.ReservedNode, top int64) rangeStmt {
	var st rangeStmt
	for _, r := range n.Ranges {
		st = append(st, astRange(r, top))
	}
	for _, name := range n.Names {
		st = append(st, rangeVal{name: name.AsString(), isName: true})
	}
	for _, id := range n.Identifiers {
		st = append(st, rangeVal{name: string(id.AsIdentifier()), isName: true})
	}
	return st
}

// messageRanges is a message's reserved and extensions statements: from the
// text when there is one, else one statement of each from the descriptor.
func (p *printer) messageRanges(m *descriptorpb.DescriptorProto) (reserved, extensions []rangeStmt) {
	if p.res != nil {
		var decls []ast.MessageElement
		switch n := p.res.MessageNode(m).(type) {
		case *ast.MessageNode:
			decls = n.Decls
		case *ast.SyntheticGroupMessageNode:
			decls = n.Decls
		}
		if decls != nil {
			for _, d := range decls {
				switch d := d.(type) {
				case *ast.ReservedNode:
					reserved = append(reserved, astReserved(d, maxTag))
				case *ast.ExtensionRangeNode:
					opts := ""
					if d.Options != nil {
						opts = p.compactOptions(d.Options)
					}
					var st rangeStmt
					for _, r := range d.Ranges {
						v := astRange(r, maxTag)
						v.opts = opts
						st = append(st, v)
					}
					extensions = append(extensions, st)
				}
			}
			return reserved, extensions
		}
	}
	var st rangeStmt
	for _, r := range m.ReservedRange {
		st = append(st, descRange(int64(r.GetStart()), int64(r.GetEnd())-1))
	}
	reserved = append(reserved, st, namesStmt(m.ReservedName))
	st = nil
	for _, r := range m.ExtensionRange {
		st = append(st, descRange(int64(r.GetStart()), int64(r.GetEnd())-1))
	}
	return reserved, append(extensions, st)
}

func (p *printer) enumReserved(e *descriptorpb.EnumDescriptorProto) []rangeStmt {
	if p.res != nil {
		if n, ok := p.res.Node(e).(*ast.EnumNode); ok {
			var out []rangeStmt
			for _, d := range n.Decls {
				if r, ok := d.(*ast.ReservedNode); ok {
					out = append(out, astReserved(r, math.MaxInt32))
				}
			}
			return out
		}
	}
	var st rangeStmt
	for _, r := range e.ReservedRange {
		st = append(st, descRange(int64(r.GetStart()), int64(r.GetEnd())))
	}
	return []rangeStmt{st, namesStmt(e.ReservedName)}
}

func descRange(start, end int64) rangeVal {
	return rangeVal{start: start, end: end, isRange: end != start}
}

func namesStmt(names []string) rangeStmt {
	var st rangeStmt
	for _, n := range names {
		st = append(st, rangeVal{name: n, isName: true})
	}
	return st
}

// compactOptions prints bracketed options from the text.
func (p *printer) compactOptions(n *ast.CompactOptionsNode) string {
	f := p.res.AST()
	var opts []string
	for _, o := range n.Options {
		opts = append(opts, rawText(f, o.Name)+" = "+p.literal(f, o.Val))
	}
	return bracketed(opts)
}

// bracketed is Confluent's appendOptions: one option on the line, several
// one a line.
func bracketed(opts []string) string {
	switch len(opts) {
	case 0:
		return ""
	case 1:
		return " [" + opts[0] + "]"
	}
	var b strings.Builder
	b.WriteString(" [\n")
	for i, o := range opts {
		if i < len(opts)-1 {
			o += ","
		}
		indent(&b, o)
	}
	b.WriteString("]")
	return b.String()
}
