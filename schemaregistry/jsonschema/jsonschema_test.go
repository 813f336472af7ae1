package jsonschema

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"floe/schemaregistry/format"
)

func TestType(t *testing.T) {
	if got := New().Type(); got != "JSON" {
		t.Fatalf("Type() = %q, want JSON", got)
	}
}

// TestParseDrafts: each draft parses and validates by its own rules.
func TestParseDrafts(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		valid, bad   string
	}{
		// Without $schema, draft-07: exclusiveMaximum is a number.
		{"default draft-07", `{"type":"number","exclusiveMaximum":10}`, `9`, `10`},
		{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"number","maximum":10,"exclusiveMaximum":true}`, `9`, `10`},
		{"draft-06", `{"$schema":"http://json-schema.org/draft-06/schema#","const":"a"}`, `"a"`, `"b"`},
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","if":{"type":"string"},"then":{"minLength":2}}`, `"ab"`, `"a"`},
		{"draft 2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","properties":{"a":{}},"unevaluatedProperties":false}`, `{"a":1}`, `{"b":1}`},
		{"draft 2020-12", `{"$schema":"https://json-schema.org/draft/2020-12/schema","prefixItems":[{"type":"string"}],"items":false}`, `["a"]`, `["a",1]`},
		// Draft-07 asserts formats, as everit does.
		{"draft-07 format", `{"type":"string","format":"date-time"}`, `"2026-12-06T05:00:00Z"`, `"yesterday"`},
		{"boolean true", `true`, `{"anything":1}`, ``},
		{"boolean false", `false`, ``, `1`},
		// Go's regexps have no lookahead; the schema still registers, and
		// the pattern goes unchecked.
		{"a lookahead pattern", `{"type":"string","pattern":"^(?=.*[0-9]).+$","maxLength":3}`, `"abc"`, `"abcd"`},
		{"an unknown $schema reads as draft-07", `{"$schema":"https://example.com/my-meta","type":"number","exclusiveMaximum":10}`, `9`, `10`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New().Parse(tc.schema, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.valid != "" {
				if err := s.Validate(nil, []byte(tc.valid)); err != nil {
					t.Errorf("Validate(%s): %v", tc.valid, err)
				}
			}
			if tc.bad != "" {
				if err := s.Validate(nil, []byte(tc.bad)); err == nil {
					t.Errorf("Validate(%s) passed", tc.bad)
				}
			}
		})
	}
}

// TestParseReferences: a $ref naming a reference resolves to its text,
// references of references too, relative names against the base URI or
// the root's $id.
func TestParseReferences(t *testing.T) {
	address := format.Reference{Name: "address.json", Subject: "address", Version: 1,
		Schema: `{"type":"object","properties":{"zip":{"$ref":"zip.json"}},"required":["zip"]}`,
		References: []format.Reference{{Name: "zip.json", Subject: "zip", Version: 1,
			Schema: `{"type":"string","pattern":"^[0-9]{5}$"}`}}}
	for _, tc := range []struct{ name, schema string }{
		{"relative", `{"type":"object","properties":{"home":{"$ref":"address.json"}}}`},
		{"relative to $id", `{"$id":"https://example.com/schemas/person.json","type":"object","properties":{"home":{"$ref":"address.json"}}}`},
		{"with a fragment", `{"type":"object","properties":{"home":{"$ref":"address.json#"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New().Parse(tc.schema, []format.Reference{address})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(nil, []byte(`{"home":{"zip":"12345"}}`)); err != nil {
				t.Errorf("valid payload: %v", err)
			}
			err = s.Validate(nil, []byte(`{"home":{"zip":"1234x"}}`))
			if err == nil || !strings.Contains(err.Error(), "/home/zip") {
				t.Errorf("bad zip: %v, want an error at /home/zip", err)
			}
		})
	}
	t.Run("absolute name", func(t *testing.T) {
		ref := format.Reference{Name: "https://example.com/other.json", Schema: `{"type":"integer"}`}
		s, err := New().Parse(`{"$ref":"https://example.com/other.json"}`, []format.Reference{ref})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(nil, []byte(`"x"`)); err == nil {
			t.Error("a string passed an integer reference")
		}
	})
	t.Run("references referring to each other", func(t *testing.T) {
		a := format.Reference{Name: "a.json", Schema: `{"type":"object","properties":{"b":{"$ref":"b.json"}}}`}
		b := format.Reference{Name: "b.json", Schema: `{"type":"object","properties":{"a":{"$ref":"a.json"}}}`}
		a.References = []format.Reference{b}
		s, err := New().Parse(`{"$ref":"a.json"}`, []format.Reference{a, b})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(nil, []byte(`{"b":{"a":{"b":{"a":1}}}}`)); err == nil {
			t.Error("a number passed as an object four levels down")
		}
		if msgs := New().Compatible(s, s); len(msgs) != 0 {
			t.Errorf("a schema is incompatible with itself: %q", msgs)
		}
	})
}

// TestParseInvalid: every refusal reads as Confluent's 42201 message and
// matches ErrInvalid; nothing is fetched.
func TestParseInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		refs         []format.Reference
		want         string
	}{
		{"not JSON", `{"type":`, nil, "Invalid JSON"},
		{"trailing junk", `{"type":"string"} x`, nil, "Invalid JSON"},
		{"a string at the root", `"string"`, nil, "expected an object or boolean at the root"},
		{"an array at the root", `[]`, nil, "expected an object or boolean at the root"},
		{"unknown type", `{"type":"strin"}`, nil, "/type"},
		{"minLength not a number", `{"type":"string","minLength":"3"}`, nil, "/minLength"},
		{"bad pattern", `{"type":"string","pattern":"("}`, nil, "missing closing )"},
		{"unknown reference", `{"$ref":"missing.json"}`, nil, "not among the schema's references"},
		{"network reference", `{"$ref":"https://example.com/x.json"}`, nil, "never fetches"},
		{"file reference", `{"$ref":"file:///etc/passwd"}`, nil, "never fetches"},
		{"dangling pointer", `{"$ref":"#/definitions/nope"}`, nil, "definitions/nope"},
		{"bad reference text", `{"$ref":"a.json"}`, []format.Reference{{Name: "a.json", Schema: `{`}}, "Invalid JSON in reference"},
		{"too deep", strings.Repeat(`{"not":`, 1000) + `{}` + strings.Repeat(`}`, 1000), nil, "nested deeper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New().Parse(tc.schema, tc.refs)
			if err == nil {
				t.Fatal("parsed")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
			if !strings.HasPrefix(err.Error(), "Invalid schema of type JSON, details: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want the 42201 prefix and %q", err, tc.want)
			}
		})
	}
}

// TestCanonicalNormalized: Canonical is the text as Confluent's Jackson
// writes it back (minified, key order, numbers and escapes its way);
// Normalized sorts keys at every level.
func TestCanonicalNormalized(t *testing.T) {
	for _, tc := range []struct{ name, in, canonical, normalized string }{
		{"white space", "{ \"type\" : \"object\",\n \"properties\": { \"b\": {\"type\":\"string\"}, \"a\": {} } }",
			`{"type":"object","properties":{"b":{"type":"string"},"a":{}}}`,
			`{"properties":{"a":{},"b":{"type":"string"}},"type":"object"}`},
		{"arrays keep their order", `{"enum":[ "b", "a" ]}`, `{"enum":["b","a"]}`, `{"enum":["b","a"]}`},
		{"a repeated key keeps its place and last value", `{"type":"string","title":"x","type":"number"}`,
			`{"type":"number","title":"x"}`, `{"title":"x","type":"number"}`},
		{"numbers", `{"minimum":1.50,"maximum":1e2,"multipleOf":0.000001,"default":-0,"x":1.5E-7,"y":12}`,
			`{"minimum":1.50,"maximum":1E+2,"multipleOf":0.000001,"default":0,"x":1.5E-7,"y":12}`,
			`{"default":0,"maximum":1E+2,"minimum":1.50,"multipleOf":0.000001,"x":1.5E-7,"y":12}`},
		{"escapes", `{"description":"a\/b <c> \u00e9 \u0001 \t \"q\" \\"}`,
			`{"description":"a/b <c> é \u0001 \t \"q\" \\"}`,
			`{"description":"a/b <c> é \u0001 \t \"q\" \\"}`},
		{"boolean schema", ` true `, `true`, `true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New().Parse(tc.in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Canonical(); got != tc.canonical {
				t.Errorf("Canonical() = %s, want %s", got, tc.canonical)
			}
			if got := s.Normalized(); got != tc.normalized {
				t.Errorf("Normalized() = %s, want %s", got, tc.normalized)
			}
		})
	}
}

// TestValidate: the error names the first failing location and why.
func TestValidate(t *testing.T) {
	s := mustParse(t, `{"type":"object","properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["id"]}`)
	for _, tc := range []struct{ payload, want string }{
		{`{"id":1,"tags":["a"]}`, ""},
		{`{"id":"1"}`, "at '/id': got string, want integer"},
		{`{"id":1,"tags":["a",2]}`, "at '/tags/1': got number, want string"},
		{`{}`, "missing property 'id'"},
		{`[1]`, "got array, want object"},
		{`{"id":1`, "payload is not JSON"},
		{`{"id":1} {}`, "payload is not JSON"},
		{``, "payload is not JSON"},
	} {
		err := s.Validate(nil, []byte(tc.payload))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Validate(%s): %v", tc.payload, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Validate(%s) = %v, want %q", tc.payload, err, tc.want)
		}
	}
}

// TestCompatibleMessages: the messages are Confluent's verbose answer's,
// byte for byte, and the names follow the direction asked.
func TestCompatibleMessages(t *testing.T) {
	old := mustParse(t, `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`)
	nu := mustParse(t, `{"type":"object","properties":{},"additionalProperties":false}`)
	got := New().Compatible(nu, old)
	want := []string{`{errorType:"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", description:"The new has a closed content model and is missing a property or item present at path '#/properties/a' in the old schema'}`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("BACKWARD messages\n got %q\nwant %q", got, want)
	}
	// FORWARD: can the old schema read what the new one writes? It can.
	if got := New().(*Format).CompatibleNamed(old, nu, "old", "new"); len(got) != 0 {
		t.Errorf("FORWARD: %q", got)
	}
	got = New().(*Format).CompatibleNamed(mustParse(t, `{"type":"string","maxLength":3}`), mustParse(t, `{"type":"string"}`), "old", "new")
	want = []string{`{errorType:"MAX_LENGTH_ADDED", description:"The keyword at path '#/maxLength' in the old schema is not present in the new schema'}`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("FORWARD messages\n got %q\nwant %q", got, want)
	}
}

// TestCompatibleAcrossReferences: a change inside a referenced schema is a
// change of the schema referring to it.
func TestCompatibleAcrossReferences(t *testing.T) {
	root := `{"type":"object","properties":{"home":{"$ref":"address.json"}}}`
	v1 := mustParse(t, root, format.Reference{Name: "address.json", Version: 1, Schema: `{"type":"object","properties":{"zip":{"type":"string"}}}`})
	v2 := mustParse(t, root, format.Reference{Name: "address.json", Version: 2, Schema: `{"type":"object","properties":{"zip":{"type":"integer"}}}`})
	got := New().Compatible(v2, v1)
	if len(got) != 1 || !strings.Contains(got[0], `TYPE_CHANGED`) || !strings.Contains(got[0], `#/properties/home/properties/zip`) {
		t.Errorf("messages %q, want one TYPE_CHANGED at #/properties/home/properties/zip", got)
	}

	// A pointer into a reference, from a root with an $id.
	root = `{"$id":"https://example.com/s/person.json","type":"object","properties":{"zip":{"$ref":"defs.json#/definitions/zip"}}}`
	v1 = mustParse(t, root, format.Reference{Name: "defs.json", Schema: `{"definitions":{"zip":{"type":"string","maxLength":5}}}`})
	v2 = mustParse(t, root, format.Reference{Name: "defs.json", Schema: `{"definitions":{"zip":{"type":"string","maxLength":4}}}`})
	if got := changesOf(v1, v2); fmt.Sprint(got) != "[MAX_LENGTH_DECREASED #/properties/zip/maxLength]" {
		t.Errorf("changes %q, want MAX_LENGTH_DECREASED at #/properties/zip/maxLength", got)
	}
}

// circularSchema restates the generator of Confluent's
// CircularRefSchemaDiffTest: branches object types, each holding props
// references back to a oneOf of all of them.
func circularSchema(branches, props int, tagType string) string {
	var sb strings.Builder
	sb.WriteString(`{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{`)
	sb.WriteString(`"SimpleId":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},`)
	sb.WriteString(`"Base":{"type":"object","properties":{"name":{"type":"string"}}},`)
	sb.WriteString(`"ProductOrId":{"oneOf":[{"$ref":"#/$defs/SimpleId"},{"$ref":"#/$defs/Product"}]},`)
	for i := 0; i < branches; i++ {
		fmt.Fprintf(&sb, `"Type%d":{"$ref":"#/$defs/Base","type":"object","properties":{`, i)
		for p := 0; p < props; p++ {
			fmt.Fprintf(&sb, `"ref%d":{"$ref":"#/$defs/ProductOrId"},`, p)
		}
		fmt.Fprintf(&sb, `"tag":{"type":%q,"const":"type%d"}},"required":["ref0","tag"]},`, tagType, i)
	}
	sb.WriteString(`"Product":{"oneOf":[`)
	for i := 0; i < branches; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"$ref":"#/$defs/Type%d"}`, i)
	}
	sb.WriteString(`]}},"$ref":"#/$defs/Product"}`)
	return sb.String()
}

// TestCircularReferences: circular $refs are legal, comparisons of them end
// (quickly), and a change deep inside the cycle is still found.
func TestCircularReferences(t *testing.T) {
	for _, tc := range []struct {
		name             string
		original, update string
		wantIncompatible bool
	}{
		{"2 branches x 1 prop", circularSchema(2, 1, "string"), circularSchema(2, 1, "string"), false},
		{"12 branches x 5 props", circularSchema(12, 5, "string"), circularSchema(12, 5, "string"), false},
		{"a change inside the cycle", circularSchema(3, 2, "string"), circularSchema(3, 2, "integer"), true},
		{"a self-referencing list", `{"definitions":{"node":{"type":"object","properties":{"v":{"type":"string"},"next":{"$ref":"#/definitions/node"}}}},"$ref":"#/definitions/node"}`,
			`{"definitions":{"node":{"type":"object","properties":{"v":{"type":"number"},"next":{"$ref":"#/definitions/node"}}}},"$ref":"#/definitions/node"}`, true},
		{"a reference to itself", `{"$ref":"#"}`, `{"$ref":"#"}`, false},
		// References only to each other match anything, as {} does: a
		// reader of strings cannot read all of it.
		{"references to each other", `{"definitions":{"a":{"$ref":"#/definitions/b"},"b":{"$ref":"#/definitions/a"}},"$ref":"#/definitions/a"}`, `{"type":"string"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, u := mustParse(t, tc.original), mustParse(t, tc.update)
			start := time.Now()
			msgs := New().Compatible(u, o)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			if (len(msgs) > 0) != tc.wantIncompatible {
				t.Errorf("messages %q, want incompatible %v", msgs, tc.wantIncompatible)
			}
		})
	}
}

// TestLongReferenceChain: a chain of $refs deeper than the walks' bounds
// still parses and compares.
func TestLongReferenceChain(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(`{"definitions":{`)
	const n = 3000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, `"d%d":{"type":"object","properties":{"x":{"$ref":"#/definitions/d%d"}}},`, i, i+1)
	}
	fmt.Fprintf(&sb, `"d%d":{"type":"string"}},"$ref":"#/definitions/d0"}`, n)
	s := mustParse(t, sb.String())
	if msgs := New().Compatible(s, s); len(msgs) != 0 {
		t.Errorf("incompatible with itself: %q", msgs)
	}
	// Past the bounds a check answers that it cannot tell, never "compatible".
	if testing.Short() {
		return // compiling the deep schema takes the validator seconds
	}
	sb.Reset()
	sb.WriteString(`{"definitions":{`)
	const deep = maxBuildDepth + 10
	for i := 0; i < deep; i++ {
		fmt.Fprintf(&sb, `"d%d":{"not":{"$ref":"#/definitions/d%d"}},`, i, i+1)
	}
	fmt.Fprintf(&sb, `"d%d":{"type":"string"}},"$ref":"#/definitions/d0"}`, deep)
	s = mustParse(t, sb.String())
	if msgs := New().Compatible(s, s); fmt.Sprint(msgs) != "["+tooComplex+"]" {
		t.Errorf("messages %q, want %q", msgs, tooComplex)
	}
}

// FuzzParse: no text and no payload may panic or hang the format.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{}`, `true`, `{"type":"string"}`, `{"$ref":"#"}`, `{"$ref":"a.json"}`,
		`{"type":["string","null"],"enum":["a",null]}`,
		`{"allOf":[{"$ref":"#/allOf/0"}]}`,
		`{"definitions":{"n":{"properties":{"next":{"$ref":"#/definitions/n"}}}},"$ref":"#/definitions/n"}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","prefixItems":[{}],"items":false,"unevaluatedProperties":{"type":"number"}}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","id":"#x","maximum":1,"exclusiveMaximum":true}`,
		`{"properties":{"a":{"$ref":"#/properties/a"}},"patternProperties":{"^a":{}}}`,
		`{"minimum":1e400,"multipleOf":0}`,
	} {
		f.Add(s)
	}
	ref := []format.Reference{{Name: "a.json", Schema: `{"type":"object","properties":{"b":{"$ref":"a.json"}}}`}}
	base := mustParse(f, `{"type":"object","properties":{"a":{"type":"string"}}}`)
	f.Fuzz(func(t *testing.T, text string) {
		s, err := New().Parse(text, ref)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		_ = s.Canonical()
		_ = s.Normalized()
		_ = s.Validate(nil, []byte(text))
		New().Compatible(s, s)
		New().Compatible(s, base)
		New().Compatible(base, s)
		if _, err := New().Parse(s.Canonical(), ref); err != nil {
			t.Fatalf("Canonical %s does not parse: %v", s.Canonical(), err)
		}
	})
}

// TestHugeNumbers: numbers beyond float64 or with huge exponents neither
// panic nor stall, and an out-of-range bound still counts as a bound.
func TestHugeNumbers(t *testing.T) {
	if _, err := New().Parse(`{"multipleOf":1e9999999}`, nil); err == nil || !errors.Is(err, ErrInvalid) {
		t.Errorf("multipleOf 1e9999999: %v, want ErrInvalid", err)
	}
	s := mustParse(t, `{"type":"number","maximum":1e400}`)
	if err := s.Validate(nil, []byte(`1e300`)); err != nil {
		t.Errorf("1e300 under 1e400: %v", err)
	}
	got := changesOf(mustParse(t, `{"type":"number"}`), s)
	if fmt.Sprint(got) != "[MAXIMUM_ADDED #/maximum]" {
		t.Errorf("changes %q, want MAXIMUM_ADDED", got)
	}
}

// FuzzCompatible: comparing any two schemas that parse ends, in either
// direction, without a panic; a schema is compatible with itself.
func FuzzCompatible(f *testing.F) {
	for i, ex := range confluentExamples {
		if i%3 == 0 {
			f.Add(ex.original, ex.update)
		}
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		sa, err := New().Parse(a, nil)
		if err != nil {
			return
		}
		sb, err := New().Parse(b, nil)
		if err != nil {
			return
		}
		New().Compatible(sa, sb)
		New().Compatible(sb, sa)
		if msgs := New().Compatible(sa, sa); len(msgs) != 0 {
			t.Fatalf("%s is incompatible with itself: %q", a, msgs)
		}
	})
}
