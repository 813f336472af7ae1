package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// maxDepth bounds how deeply a schema text may nest, so that junk such as a
// million '[' is refused instead of exhausting the stack of every recursive
// walk that follows (compiling, building the diff model, writing it back).
const maxDepth = 512

// value is a JSON value that keeps what Confluent's Jackson tree keeps: the
// order of an object's keys (a repeated key keeps its first place and its last
// value) and each number's literal text.
type value struct {
	kind    byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' boolean, 'z' null
	members []member
	items   []*value
	str     string // a string's content or a number's literal
	boolean bool
}

type member struct {
	key string
	val *value
}

// get is the member named key, or nil.
func (v *value) get(key string) *value {
	if v == nil || v.kind != 'o' {
		return nil
	}
	for _, m := range v.members {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// parseValue reads exactly one JSON value from text.
func parseValue(text []byte) (*value, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	v, err := readValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func readValue(dec *json.Decoder, depth int) (*value, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxDepth)
	}
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, errors.New("unexpected end of JSON input")
	}
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := &value{kind: 'o'}
			seen := map[string]int{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				val, err := readValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if i, dup := seen[key]; dup {
					v.members[i].val = val
					continue
				}
				seen[key] = len(v.members)
				v.members = append(v.members, member{key, val})
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return v, nil
		case '[':
			v := &value{kind: 'a'}
			for dec.More() {
				item, err := readValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.items = append(v.items, item)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return v, nil
		}
		return nil, fmt.Errorf("unexpected %q", rune(t))
	case string:
		return &value{kind: 's', str: t}, nil
	case json.Number:
		return &value{kind: 'n', str: string(t)}, nil
	case bool:
		return &value{kind: 'b', boolean: t}, nil
	case nil:
		return &value{kind: 'z'}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// toAny is v as the generic tree the validator compiles.
func (v *value) toAny() any {
	switch v.kind {
	case 'o':
		m := make(map[string]any, len(v.members))
		for _, mb := range v.members {
			m[mb.key] = mb.val.toAny()
		}
		return m
	case 'a':
		a := make([]any, len(v.items))
		for i, it := range v.items {
			a[i] = it.toAny()
		}
		return a
	case 's':
		return v.str
	case 'n':
		return json.Number(v.str)
	case 'b':
		return v.boolean
	}
	return nil
}

// compact writes v without insignificant white space, as Jackson's
// writeValueAsString writes a tree: keys in their order, or sorted when
// sorted is set (Confluent's normalize).
func (v *value) compact(sorted bool) string {
	var sb strings.Builder
	v.write(&sb, sorted)
	return sb.String()
}

func (v *value) write(sb *strings.Builder, sorted bool) {
	switch v.kind {
	case 'o':
		members := v.members
		if sorted {
			members = append([]member(nil), members...)
			sort.Slice(members, func(i, j int) bool { return members[i].key < members[j].key })
		}
		sb.WriteByte('{')
		for i, m := range members {
			if i > 0 {
				sb.WriteByte(',')
			}
			writeString(sb, m.key)
			sb.WriteByte(':')
			m.val.write(sb, sorted)
		}
		sb.WriteByte('}')
	case 'a':
		sb.WriteByte('[')
		for i, it := range v.items {
			if i > 0 {
				sb.WriteByte(',')
			}
			it.write(sb, sorted)
		}
		sb.WriteByte(']')
	case 's':
		writeString(sb, v.str)
	case 'n':
		sb.WriteString(jacksonNumber(v.str))
	case 'b':
		sb.WriteString(strconv.FormatBool(v.boolean))
	default:
		sb.WriteString("null")
	}
}

// writeString quotes s as Jackson does: only '"', '\\' and control
// characters are escaped, short forms where JSON has them, else \u00XX with
// upper-case hex; everything else (including '/', '<' and non-ASCII) is
// written as is.
func writeString(sb *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	sb.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		case '\b':
			sb.WriteString(`\b`)
		case '\f':
			sb.WriteString(`\f`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		default:
			if c < 0x20 {
				sb.WriteString(`\u00`)
				sb.WriteByte(hex[c>>4])
				sb.WriteByte(hex[c&0xF])
			} else {
				sb.WriteByte(c)
			}
		}
	}
	sb.WriteByte('"')
}

// jacksonNumber is a number literal as Confluent's mapper writes it back:
// integers as written ("-0" becomes "0"), and numbers with a fraction or an
// exponent as Java's BigDecimal.toString of the literal (the mapper reads
// floats as exact BigDecimals), which keeps "1.50" but writes "1e2" as
// "1E+2".
func jacksonNumber(lit string) string {
	if !strings.ContainsAny(lit, ".eE") {
		if lit == "-0" {
			return "0"
		}
		return lit
	}
	neg := strings.HasPrefix(lit, "-")
	body := strings.TrimPrefix(lit, "-")
	mant, expPart, hasExp := strings.Cut(strings.ToLower(body), "e")
	exp := int64(0)
	if hasExp {
		e, err := strconv.ParseInt(expPart, 10, 32)
		if err != nil {
			return lit
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	scale := int64(len(frac)) - exp
	if digits == "" {
		digits = "0"
		neg = false // BigDecimal has no negative zero
	}
	var out string
	adjusted := -scale + int64(len(digits)-1)
	switch {
	case scale == 0:
		out = digits
	case scale > 0 && adjusted >= -6:
		if int64(len(digits)) > scale {
			p := int64(len(digits)) - scale
			out = digits[:p] + "." + digits[p:]
		} else {
			out = "0." + strings.Repeat("0", int(scale-int64(len(digits)))) + digits
		}
	default:
		out = digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		if adjusted != 0 {
			out += "E"
			if adjusted > 0 {
				out += "+"
			}
			out += strconv.FormatInt(adjusted, 10)
		}
	}
	if neg {
		out = "-" + out
	}
	return out
}
