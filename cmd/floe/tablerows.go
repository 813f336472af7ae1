package main

// The rows of floe table scan: Arrow record batches as JSON lines or an
// aligned text table, and the small --filter language turned into
// iceberg-go's expressions.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/iceberg-go"
)

// rowWriter prints rows: one JSON object a line, or a text table whose
// cells are the same values (strings and the values JSON writes as
// strings unquoted, nested values as compact JSON).
type rowWriter struct {
	out    io.Writer
	json   bool
	schema *arrow.Schema
	tw     *tabwriter.Writer // text only
	buf    []byte
}

func newRowWriter(out io.Writer, schema *arrow.Schema, asJSON bool) *rowWriter {
	w := &rowWriter{out: out, json: asJSON, schema: schema}
	if !asJSON {
		w.tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for i, f := range schema.Fields() {
			if i > 0 {
				fmt.Fprint(w.tw, "\t")
			}
			fmt.Fprint(w.tw, f.Name)
		}
		fmt.Fprintln(w.tw)
	}
	return w
}

func (w *rowWriter) write(rec arrow.RecordBatch) error {
	cols := rec.Columns()
	for i := 0; i < int(rec.NumRows()); i++ {
		b := w.buf[:0]
		if w.json {
			b = append(b, '{')
			for j, col := range cols {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendString(b, rec.ColumnName(j))
				b = append(b, ':')
				b = appendValue(b, col, i)
			}
			b = append(b, '}', '\n')
		} else {
			for j, col := range cols {
				if j > 0 {
					b = append(b, '\t')
				}
				b = appendCell(b, col, i)
			}
			b = append(b, '\n')
		}
		w.buf = b
		var err error
		if w.json {
			_, err = w.out.Write(b)
		} else {
			_, err = w.tw.Write(b)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *rowWriter) flush() error {
	if w.tw != nil {
		return w.tw.Flush()
	}
	return nil
}

// appendCell appends a text table's cell: a value JSON writes as a string
// without its quotes (unless it holds a tab, a newline or another control
// character, which would break the table), any other value as its JSON.
func appendCell(b []byte, arr arrow.Array, i int) []byte {
	v := appendValue(nil, arr, i)
	if len(v) > 0 && v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) == nil && !strings.ContainsFunc(s, unicode.IsControl) {
			return append(b, s...)
		}
	}
	return append(b, v...)
}

// appendValue appends row i of arr as JSON: structs as objects, lists as
// arrays, maps as objects keyed by the key's text, decimals as exact
// strings, dates, times and timestamps as text (RFC 3339 with
// microseconds), binary base64, uuids as text, NaN and infinities as
// strings.
func appendValue(b []byte, arr arrow.Array, i int) []byte {
	if arr.IsNull(i) {
		return append(b, "null"...)
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return strconv.AppendBool(b, a.Value(i))
	case *array.Int8:
		return strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.AppendInt(b, a.Value(i), 10)
	case *array.Uint8:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.AppendUint(b, a.Value(i), 10)
	case *array.Float32:
		return appendFloat(b, float64(a.Value(i)), 32)
	case *array.Float64:
		return appendFloat(b, a.Value(i), 64)
	case *array.String:
		return appendString(b, a.Value(i))
	case *array.LargeString:
		return appendString(b, a.Value(i))
	case *array.StringView:
		return appendString(b, a.Value(i))
	case *array.Binary:
		return appendBase64(b, a.Value(i))
	case *array.LargeBinary:
		return appendBase64(b, a.Value(i))
	case *array.BinaryView:
		return appendBase64(b, a.Value(i))
	case *extensions.UUIDArray:
		return appendString(b, a.Value(i).String())
	case *array.FixedSizeBinary:
		return appendBase64(b, a.Value(i))
	case *array.Decimal128:
		return appendString(b, a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale))
	case *array.Decimal256:
		return appendString(b, a.Value(i).ToString(a.DataType().(*arrow.Decimal256Type).Scale))
	case *array.Date32:
		return appendString(b, a.Value(i).ToTime().Format(time.DateOnly))
	case *array.Date64:
		return appendString(b, a.Value(i).ToTime().Format(time.DateOnly))
	case *array.Time32:
		return appendString(b, a.Value(i).ToTime(a.DataType().(*arrow.Time32Type).Unit).Format("15:04:05.000000"))
	case *array.Time64:
		return appendString(b, a.Value(i).ToTime(a.DataType().(*arrow.Time64Type).Unit).Format("15:04:05.000000"))
	case *array.Timestamp:
		typ := a.DataType().(*arrow.TimestampType)
		t := a.Value(i).ToTime(typ.Unit)
		if typ.TimeZone == "" {
			return appendString(b, t.Format("2006-01-02T15:04:05.000000"))
		}
		return appendString(b, t.UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		b = append(b, '{')
		for j := 0; j < a.NumField(); j++ {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendString(b, st.Field(j).Name)
			b = append(b, ':')
			b = appendValue(b, a.Field(j), i)
		}
		return append(b, '}')
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		b = append(b, '{')
		for j := start; j < end; j++ {
			if j > start {
				b = append(b, ',')
			}
			k := appendValue(nil, keys, int(j))
			if len(k) == 0 || k[0] != '"' {
				k = appendString(nil, string(k))
			}
			b = append(b, k...)
			b = append(b, ':')
			b = appendValue(b, items, int(j))
		}
		return append(b, '}')
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		b = append(b, '[')
		for j := start; j < end; j++ {
			if j > start {
				b = append(b, ',')
			}
			b = appendValue(b, vals, int(j))
		}
		return append(b, ']')
	case array.ExtensionArray:
		return appendValue(b, a.Storage(), i)
	}
	// A type no Iceberg table holds: Arrow's own rendering, as a string.
	return appendString(b, arr.ValueStr(i))
}

func appendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

func appendBase64(b []byte, v []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}

// parseFilter reads --filter: comparisons COLUMN OP VALUE (OP = != < <= >
// >=), COLUMN is [not] null, joined by and / or, and binding first. VALUE
// is a number, true, false or a 'quoted string' (” inside for a quote);
// iceberg-go converts it to the column's type when it binds the
// expression to the schema.
func parseFilter(s string) (iceberg.BooleanExpression, error) {
	toks, err := filterTokens(s)
	if err != nil {
		return nil, err
	}
	p := &filterParser{toks: toks}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if !p.done() {
		return nil, fmt.Errorf("unexpected %q", p.peek().text)
	}
	return e, nil
}

type filterToken struct {
	text   string
	quoted bool // a 'string'
}

func filterTokens(s string) ([]filterToken, error) {
	var toks []filterToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '\'':
			var sb strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, errors.New("unterminated 'string'")
				}
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						sb.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				sb.WriteByte(s[j])
				j++
			}
			toks = append(toks, filterToken{text: sb.String(), quoted: true})
			i = j + 1
		case strings.ContainsRune("=!<>", rune(c)):
			j := i + 1
			if j < len(s) && (s[j] == '=' || c == '<' && s[j] == '>') {
				j++
			}
			toks = append(toks, filterToken{text: s[i:j]})
			i = j
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n'=!<>", rune(s[j])) {
				j++
			}
			toks = append(toks, filterToken{text: s[i:j]})
			i = j
		}
	}
	return toks, nil
}

type filterParser struct {
	toks []filterToken
	pos  int
}

func (p *filterParser) done() bool { return p.pos >= len(p.toks) }

func (p *filterParser) peek() filterToken {
	if p.done() {
		return filterToken{}
	}
	return p.toks[p.pos]
}

func (p *filterParser) next() (filterToken, error) {
	if p.done() {
		return filterToken{}, errors.New("unexpected end of the expression")
	}
	p.pos++
	return p.toks[p.pos-1], nil
}

// keyword reports whether the next token is the keyword kw, and takes it.
func (p *filterParser) keyword(kw string) bool {
	if t := p.peek(); !t.quoted && strings.EqualFold(t.text, kw) {
		p.pos++
		return true
	}
	return false
}

func (p *filterParser) or() (iceberg.BooleanExpression, error) {
	e, err := p.and()
	for err == nil && p.keyword("or") {
		var r iceberg.BooleanExpression
		if r, err = p.and(); err == nil {
			e = iceberg.NewOr(e, r)
		}
	}
	return e, err
}

func (p *filterParser) and() (iceberg.BooleanExpression, error) {
	e, err := p.predicate()
	for err == nil && p.keyword("and") {
		var r iceberg.BooleanExpression
		if r, err = p.predicate(); err == nil {
			e = iceberg.NewAnd(e, r)
		}
	}
	return e, err
}

var filterOps = map[string]iceberg.Operation{
	"=": iceberg.OpEQ, "==": iceberg.OpEQ, "!=": iceberg.OpNEQ, "<>": iceberg.OpNEQ,
	"<": iceberg.OpLT, "<=": iceberg.OpLTEQ, ">": iceberg.OpGT, ">=": iceberg.OpGTEQ,
}

func (p *filterParser) predicate() (iceberg.BooleanExpression, error) {
	col, err := p.next()
	if err != nil {
		return nil, err
	}
	if _, isOp := filterOps[col.text]; col.quoted || isOp || col.text == "" {
		return nil, fmt.Errorf("want a column name, not %q", col.text)
	}
	ref := iceberg.Reference(col.text)
	if p.keyword("is") {
		not := p.keyword("not")
		if !p.keyword("null") {
			return nil, fmt.Errorf("%s is: want null or not null", col.text)
		}
		if not {
			return iceberg.NotNull(ref), nil
		}
		return iceberg.IsNull(ref), nil
	}
	opTok, err := p.next()
	if err != nil {
		return nil, err
	}
	op, ok := filterOps[opTok.text]
	if !ok || opTok.quoted {
		return nil, fmt.Errorf("after %s: want = != < <= > >= or is, not %q", col.text, opTok.text)
	}
	v, err := p.next()
	if err != nil {
		return nil, err
	}
	lit, err := filterLiteral(v)
	if err != nil {
		return nil, err
	}
	return iceberg.LiteralPredicate(op, ref, lit), nil
}

// filterLiteral is a VALUE: a quoted string, true, false, an integer or
// another number.
func filterLiteral(t filterToken) (iceberg.Literal, error) {
	if t.quoted {
		return iceberg.NewLiteral(t.text), nil
	}
	switch strings.ToLower(t.text) {
	case "true":
		return iceberg.NewLiteral(true), nil
	case "false":
		return iceberg.NewLiteral(false), nil
	}
	if n, err := strconv.ParseInt(t.text, 10, 64); err == nil {
		return iceberg.NewLiteral(n), nil
	}
	if f, err := strconv.ParseFloat(t.text, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return iceberg.NewLiteral(f), nil
	}
	return nil, fmt.Errorf("value %q: want a number, true, false or a 'quoted string'", t.text)
}
