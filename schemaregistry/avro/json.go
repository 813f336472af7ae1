package avro

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// node is a JSON value that keeps what Avro's Java printer keeps and
// encoding/json's maps lose: the order of an object's keys, and numbers as
// written.
type node struct {
	kind byte // 's' string, 'n' number, 'b' bool, 'z' null, 'a' array, 'o' object
	str  string
	arr  []node
	obj  []member
}

type member struct {
	key string
	val node
}

// get returns the value of key in an object.
func (n node) get(key string) (node, bool) {
	for _, m := range n.obj {
		if m.key == key {
			return m.val, true
		}
	}
	return node{}, false
}

// getString returns the string value of key, if it is a string.
func (n node) getString(key string) (string, bool) {
	v, ok := n.get(key)
	if !ok || v.kind != 's' {
		return "", false
	}
	return v.str, true
}

// maxDepth bounds nesting: a schema nested deeper is refused, not a
// stack overflow.
const maxDepth = 256

var errDepth = errors.New("schema nested too deeply")

// parseJSON parses one JSON value, which must be all of text.
func parseJSON(text string) (node, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	n, err := decodeNode(dec, 0)
	if err != nil {
		return node{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return node{}, errors.New("unexpected content after the schema's JSON")
	}
	return n, nil
}

func decodeNode(dec *json.Decoder, depth int) (node, error) {
	if depth > maxDepth {
		return node{}, errDepth
	}
	tok, err := dec.Token()
	if err != nil {
		return node{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			n := node{kind: 'a'}
			for dec.More() {
				v, err := decodeNode(dec, depth+1)
				if err != nil {
					return node{}, err
				}
				n.arr = append(n.arr, v)
			}
			_, err := dec.Token()
			return n, err
		case '{':
			n := node{kind: 'o'}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return node{}, err
				}
				key, _ := kt.(string)
				v, err := decodeNode(dec, depth+1)
				if err != nil {
					return node{}, err
				}
				// Jackson keeps the last of duplicate keys, in the
				// place of the first.
				replaced := false
				for i := range n.obj {
					if n.obj[i].key == key {
						n.obj[i].val, replaced = v, true
					}
				}
				if !replaced {
					n.obj = append(n.obj, member{key, v})
				}
			}
			_, err := dec.Token()
			return n, err
		}
		return node{}, fmt.Errorf("unexpected %v", t)
	case string:
		return node{kind: 's', str: t}, nil
	case json.Number:
		return node{kind: 'n', str: javaNumber(string(t))}, nil
	case bool:
		if t {
			return node{kind: 'b', str: "true"}, nil
		}
		return node{kind: 'b', str: "false"}, nil
	case nil:
		return node{kind: 'z', str: "null"}, nil
	}
	return node{}, fmt.Errorf("unexpected token %v", tok)
}

// write appends n as compact JSON, keys in their order, as Jackson writes it.
func (n node) write(b *bytes.Buffer) {
	switch n.kind {
	case 's':
		writeString(b, n.str)
	case 'a':
		b.WriteByte('[')
		for i, v := range n.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			v.write(b)
		}
		b.WriteByte(']')
	case 'o':
		b.WriteByte('{')
		for i, m := range n.obj {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, m.key)
			b.WriteByte(':')
			m.val.write(b)
		}
		b.WriteByte('}')
	default:
		b.WriteString(n.str)
	}
}

// writeString writes s quoted as Jackson does: only the quote, the
// backslash and control characters are escaped; everything else, non-ASCII
// included, is written as it is.
func writeString(b *bytes.Buffer, s string) {
	const hex = "0123456789ABCDEF"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			if c < utf8.RuneSelf {
				b.WriteByte(c)
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			b.WriteRune(r)
			i += size
			continue
		}
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
		}
		i++
	}
	b.WriteByte('"')
}

// javaNumber writes a JSON number as Jackson writes the node it parsed it
// into: an integer as it is, any other as a double in Java's
// Double.toString (1.50 is 1.5, 1e3 is 1000.0, 1e7 is 1.0E7).
func javaNumber(lit string) string {
	if !strings.ContainsAny(lit, ".eE") {
		return lit
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		return lit
	}
	if a := math.Abs(f); a == 0 || (a >= 1e-3 && a < 1e7) {
		out := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(out, ".") {
			out += ".0"
		}
		return out
	}
	// Scientific: d.ddd, E, the exponent without a plus or leading zeros.
	out := strconv.FormatFloat(f, 'E', -1, 64)
	mant, exp, _ := strings.Cut(out, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}
