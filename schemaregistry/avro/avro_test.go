package avro

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	havro "github.com/hamba/avro/v2"

	"floe/schemaregistry/format"
)

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ in, canonical, normalized string }{
		{`"string"`, `"string"`, `"string"`},
		{`{"type":"string"}`, `"string"`, `"string"`},
		{` { "type" : "int", "logicalType": "date" } `, `{"type":"int","logicalType":"date"}`, `{"type":"int","logicalType":"date"}`},
		{`["null", {"type":"string"}]`, `["null","string"]`, `["null","string"]`},
		{
			`{"namespace":"com.ex","type":"record","name":"User","doc":"a user","fields":[
				{"name":"id","type":"long","doc":"the id"},
				{"name":"name","type":["null","string"],"default":null},
				{"name":"addr","type":{"type":"record","name":"Addr","fields":[{"name":"city","type":"string"}]}},
				{"name":"prev","type":["null","Addr"],"default":null,"order":"descending"},
				{"name":"kind","type":{"type":"enum","name":"Kind","namespace":"other","symbols":["A","B"],"default":"A"}},
				{"name":"k2","type":"other.Kind","x-prop":{"b":1,"a":[1.50,"é\u0001"]}},
				{"name":"f","type":{"type":"fixed","name":"F","size":4}}
			],"aliases":["Person","x.People"]}`,
			`{"type":"record","name":"User","namespace":"com.ex","doc":"a user","fields":[` +
				`{"name":"id","type":"long","doc":"the id"},` +
				`{"name":"name","type":["null","string"],"default":null},` +
				`{"name":"addr","type":{"type":"record","name":"Addr","fields":[{"name":"city","type":"string"}]}},` +
				`{"name":"prev","type":["null","Addr"],"default":null,"order":"descending"},` +
				`{"name":"kind","type":{"type":"enum","name":"Kind","namespace":"other","symbols":["A","B"],"default":"A"}},` +
				`{"name":"k2","type":"other.Kind","x-prop":{"b":1,"a":[1.5,"é\u0001"]}},` +
				`{"name":"f","type":{"type":"fixed","name":"F","size":4}}` +
				`],"aliases":["Person","x.People"]}`,
			`{"name":"com.ex.User","type":"record","fields":[` +
				`{"name":"id","type":"long","order":"ASCENDING","doc":"the id"},` +
				`{"name":"name","type":["null","string"],"order":"ASCENDING","default":null},` +
				`{"name":"addr","type":{"name":"com.ex.Addr","type":"record","fields":[{"name":"city","type":"string","order":"ASCENDING"}]},"order":"ASCENDING"},` +
				`{"name":"prev","type":["null","com.ex.Addr"],"order":"DESCENDING","default":null},` +
				`{"name":"kind","type":{"name":"other.Kind","type":"enum","symbols":["A","B"],"default":"A"},"order":"ASCENDING"},` +
				`{"name":"k2","type":"other.Kind","order":"ASCENDING","x-prop":{"b":1,"a":[1.5,"é\u0001"]}},` +
				`{"name":"f","type":{"name":"com.ex.F","type":"fixed","size":4},"order":"ASCENDING"}` +
				`],"doc":"a user","aliases":["com.ex.Person","x.People"]}`,
		},
	} {
		s, err := Format{}.Parse(tc.in, nil)
		if err != nil {
			t.Fatalf("Parse(%s): %v", tc.in, err)
		}
		if got := s.Canonical(); got != tc.canonical {
			t.Errorf("Canonical(%s)\n got %s\nwant %s", tc.in, got, tc.canonical)
		}
		if got := s.Normalized(); got != tc.normalized {
			t.Errorf("Normalized(%s)\n got %s\nwant %s", tc.in, got, tc.normalized)
		}
		// Both forms parse again to themselves.
		for _, form := range []string{s.Canonical(), s.Normalized()} {
			again, err := Format{}.Parse(form, nil)
			if err != nil || again.Canonical() != Must(Format{}.Parse(form, nil)).Canonical() {
				t.Fatalf("Parse(%s): %v", form, err)
			}
		}
	}
}

func TestJavaNumber(t *testing.T) {
	for in, want := range map[string]string{
		"0": "0", "-12": "-12", "123456789012345678901": "123456789012345678901",
		"1.50": "1.5", "0.0": "0.0", "-0.0": "-0.0", "1e3": "1000.0", "1E3": "1000.0", "2.5e-1": "0.25",
		"1e7": "1.0E7", "12345678.9": "1.23456789E7", "0.001": "0.001", "0.0001": "1.0E-4", "1.5e300": "1.5E300",
	} {
		if got := javaNumber(in); got != want {
			t.Errorf("javaNumber(%s) = %s, want %s", in, got, want)
		}
	}
}

func Must(s format.Schema, err error) format.Schema {
	if err != nil {
		panic(err)
	}
	return s
}

func TestReferences(t *testing.T) {
	addr := format.Reference{Name: "com.ex.Addr", Subject: "addr", Version: 1,
		Schema: `{"type":"record","name":"Addr","namespace":"com.ex","fields":[{"name":"city","type":"string"}]}`}
	s, err := Format{}.Parse(`{"type":"record","name":"User","namespace":"com.ex","fields":[{"name":"a","type":"Addr"},{"name":"b","type":"com.ex.Addr"}]}`, []format.Reference{addr})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Canonical(), `{"type":"record","name":"User","namespace":"com.ex","fields":[{"name":"a","type":"Addr"},{"name":"b","type":"Addr"}]}`; got != want {
		t.Fatalf("Canonical\n got %s\nwant %s", got, want)
	}
	if got, want := s.Normalized(), `{"name":"com.ex.User","type":"record","fields":[{"name":"a","type":"com.ex.Addr","order":"ASCENDING"},{"name":"b","type":"com.ex.Addr","order":"ASCENDING"}]}`; got != want {
		t.Fatalf("Normalized\n got %s\nwant %s", got, want)
	}
	resolved := `{"type":"record","name":"User","namespace":"com.ex","fields":[{"name":"a","type":{"type":"record","name":"Addr","fields":[{"name":"city","type":"string"}]}},{"name":"b","type":"Addr"}]}`
	if got := s.(*Schema).Formatted("resolved"); got != resolved {
		t.Fatalf("Formatted(resolved)\n got %s\nwant %s", got, resolved)
	}
	if got := s.(*Schema).Formatted("default"); got != s.Canonical() {
		t.Fatalf("Formatted(default) = %s", got)
	}
	// The resolved form parses alone, to the same schema.
	if again, err := (Format{}).Parse(resolved, nil); err != nil || again.Canonical() != resolved {
		t.Fatalf("Parse(resolved): %v", err)
	}
	if _, err := (Format{}).Parse(`{"type":"record","name":"User","fields":[{"name":"a","type":"com.ex.Addr"}]}`, nil); err == nil {
		t.Fatal("a schema naming an unknown type parsed")
	}
}

func TestInvalid(t *testing.T) {
	for _, in := range []string{``, `string`, `{`, `"strin"`, `{"type":"record","name":"X"}`, `{"type":"record","name":"X","fields":[{"name":"a"}]}`,
		`{"type":"enum","name":"E","symbols":["A","A"]}`, `[1]`, `"x" "y"`, strings.Repeat("[", 10000)} {
		_, err := Format{}.Parse(in, nil)
		if err == nil {
			t.Errorf("Parse(%.40s) succeeded", in)
			continue
		}
		if !strings.HasPrefix(err.Error(), "Invalid schema of type AVRO, details: ") {
			t.Errorf("Parse(%.40s): %v", in, err)
		}
	}
}

func TestCompatible(t *testing.T) {
	parse := func(s string) format.Schema { return Must(Format{}.Parse(s, nil)) }
	for _, tc := range []struct {
		name, reader, writer string
		want                 []string
	}{
		{"field added with a default",
			`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string","default":""}]}`,
			`{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`, nil},
		{"field removed",
			`{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`,
			`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string"}]}`, nil},
		{"field added without a default",
			`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string"}]}`,
			`{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`,
			[]string{"{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'b' at path '/fields/1' in the new schema has no default value and is missing in the old schema', additionalInfo:'b'}"}},
		{"promotion int to long", `"long"`, `"int"`, nil},
		{"narrowing long to int", `"int"`, `"long"`,
			[]string{"{errorType:'TYPE_MISMATCH', description:'The type (path '/') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: INT not compatible with writer type: LONG'}"}},
		{"nested type change",
			`{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":"string"}}]}`,
			`{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":"int"}}]}`,
			[]string{"{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/0/type/items') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: STRING not compatible with writer type: INT'}"}},
		{"renamed record",
			`{"type":"record","name":"S","fields":[]}`, `{"type":"record","name":"R","fields":[]}`,
			[]string{"{errorType:'NAME_MISMATCH', description:'The name of the schema has changed (path '/name')', additionalInfo:'expected: R'}"}},
		{"renamed with an alias", `{"type":"record","name":"S","aliases":["R"],"fields":[]}`, `{"type":"record","name":"R","fields":[]}`, nil},
		{"enum symbols removed",
			`{"type":"enum","name":"E","symbols":["A"]}`, `{"type":"enum","name":"E","symbols":["C","A","B"]}`,
			[]string{"{errorType:'MISSING_ENUM_SYMBOLS', description:'The new schema is missing enum symbols '[B, C]' at path '/symbols' in the old schema', additionalInfo:'[B, C]'}"}},
		{"enum symbols removed, reader default", `{"type":"enum","name":"E","symbols":["A"],"default":"A"}`, `{"type":"enum","name":"E","symbols":["A","B"]}`, nil},
		{"fixed size",
			`{"type":"fixed","name":"F","size":4}`, `{"type":"fixed","name":"F","size":8}`,
			[]string{"{errorType:'FIXED_SIZE_MISMATCH', description:'The size of FIXED type field at path '/size' in the new schema does not match with the old schema', additionalInfo:'expected: 8, found: 4'}"}},
		{"union branch dropped",
			`{"type":"record","name":"R","fields":[{"name":"a","type":["null","int"]}]}`,
			`{"type":"record","name":"R","fields":[{"name":"a","type":["null","int","string"]}]}`,
			[]string{"{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type inside a union field at path '/fields/0/type/2' in the old schema', additionalInfo:'reader union lacking writer type: STRING'}"}},
		{"writer union into a non-union",
			`"string"`, `["null","string"]`,
			[]string{"{errorType:'TYPE_MISMATCH', description:'The type (path '/0') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: STRING not compatible with writer type: NULL'}"}},
		{"reader union lacks the writer's type",
			`["null","string"]`, `"int"`,
			[]string{"{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type inside a union field at path '/' in the old schema', additionalInfo:'reader union lacking writer type: INT'}"}},
		{"recursive types",
			`{"type":"record","name":"N","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","N"]}]}`,
			`{"type":"record","name":"N","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","N"]}]}`, nil},
		{"two findings",
			`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string"}]}`,
			`{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`,
			[]string{
				"{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/0/type') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: INT not compatible with writer type: STRING'}",
				"{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'b' at path '/fields/1' in the new schema has no default value and is missing in the old schema', additionalInfo:'b'}",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Format{}.Compatible(parse(tc.reader), parse(tc.writer))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Compatible\n got %q\nwant %q", got, tc.want)
			}
			// hamba's checker reaches the same verdict.
			hamba := havro.NewSchemaCompatibility().Compatible(parse(tc.reader).(*Schema).Avro(), parse(tc.writer).(*Schema).Avro())
			if (hamba == nil) != (got == nil) {
				t.Fatalf("hamba: %v, ours: %q", hamba, got)
			}
		})
	}
	got := Format{}.CompatibleAs(parse(`"int"`), parse(`"long"`), "old", "new")
	if want := "{errorType:'TYPE_MISMATCH', description:'The type (path '/') of a field in the old schema does not match with the new schema', additionalInfo:'reader type: INT not compatible with writer type: LONG'}"; len(got) != 1 || got[0] != want {
		t.Fatalf("CompatibleAs(old, new): %q", got)
	}
}

func TestValidate(t *testing.T) {
	s := Must(Format{}.Parse(`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string"}]}`, nil))
	good, err := havro.Marshal(s.(*Schema).Avro(), map[string]any{"a": 5, "b": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(nil, good); err != nil {
		t.Fatalf("Validate(good): %v", err)
	}
	for name, bad := range map[string][]byte{
		"truncated": good[:len(good)-1],
		"trailing":  append(append([]byte{}, good...), 0),
		"empty":     nil,
		"huge len":  {0x0a, 0xfe, 0xff, 0xff, 0xff, 0x0f},
	} {
		if err := s.Validate(nil, bad); err == nil {
			t.Errorf("Validate(%s) passed", name)
		}
	}
}

func TestValidateRefuses(t *testing.T) {
	recursive := Must(Format{}.Parse(`{"type":"record","name":"N","fields":[{"name":"next","type":["null","N"]}]}`, nil))
	deep := append(bytes.Repeat([]byte{2}, 1<<20), 0)
	start := time.Now()
	if err := recursive.Validate(nil, deep); err == nil || time.Since(start) > time.Second {
		t.Fatalf("1 MiB of nesting: %v after %v", err, time.Since(start))
	}
	if err := recursive.Validate(nil, []byte{2, 2, 0}); err != nil {
		t.Fatalf("three levels: %v", err)
	}
	for _, tc := range []struct {
		schema  string
		payload []byte
	}{
		{`{"type":"enum","name":"E","symbols":["A","B"]}`, []byte{4}},
		{`["null","int"]`, []byte{4}},
		{`"boolean"`, []byte{2}},
		{`"int"`, []byte{0xff, 0xff, 0xff, 0xff, 0x1f}},
		{`{"type":"array","items":"null"}`, []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{`{"type":"map","values":"int"}`, []byte{2, 10, 'a'}},
		{`{"type":"fixed","name":"F","size":4}`, []byte{1, 2, 3}},
		{`"string"`, []byte{1}},
	} {
		s := Must(Format{}.Parse(tc.schema, nil))
		if err := s.Validate(nil, tc.payload); err == nil {
			t.Errorf("Validate(%s, % x) passed", tc.schema, tc.payload)
		}
	}
}

// FuzzValidate: what the walk accepts, hamba's decoder decodes. (The
// other way round hamba's generic decoder is no oracle: it allocates what
// a block count claims, and runs out of memory.)
func FuzzValidate(f *testing.F) {
	schemas := []string{
		`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":["null","string",{"type":"array","items":"long"}]},` +
			`{"name":"c","type":{"type":"map","values":{"type":"enum","name":"E","symbols":["X","Y"]}}},{"name":"d","type":"boolean"},` +
			`{"name":"e","type":{"type":"fixed","name":"F","size":2}},{"name":"f","type":"double"},{"name":"g","type":"bytes"}]}`,
		`{"type":"record","name":"N","fields":[{"name":"v","type":"float"},{"name":"next","type":["null","N"]}]}`,
	}
	f.Add(0, []byte{2, 0, 0, 0, 1, 'a', 'b', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(1, []byte{0, 0, 0, 0, 2, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, which int, payload []byte) {
		s := Must(Format{}.Parse(schemas[uint(which)%uint(len(schemas))], nil)).(*Schema)
		if s.Validate(nil, payload) != nil {
			return
		}
		r := havro.NewReader(nil, 0)
		r.Reset(payload)
		var v any
		r.ReadVal(s.Avro(), &v)
		theirs := r.Error
		if theirs == nil {
			if r.Peek(); r.Error == nil {
				theirs = errors.New("trailing bytes")
			}
		}
		if theirs != nil {
			t.Fatalf("% x: the walk accepts it, hamba: %v", payload, theirs)
		}
	})
}

const benchSchema = `{"type":"record","name":"R","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},` +
	`{"name":"tags","type":{"type":"array","items":"string"}},{"name":"score","type":"double"},{"name":"note","type":["null","string"]}]}`

type benchRec struct {
	ID    int64    `avro:"id"`
	Name  string   `avro:"name"`
	Tags  []string `avro:"tags"`
	Score float64  `avro:"score"`
	Note  *string  `avro:"note"`
}

func benchPayload(b *testing.B) (*Schema, []byte) {
	s := Must(Format{}.Parse(benchSchema, nil)).(*Schema)
	note := strings.Repeat("n", 600)
	p, err := havro.Marshal(s.Avro(), benchRec{ID: 7, Name: strings.Repeat("x", 200), Tags: []string{"a", "b", "c", strings.Repeat("t", 100)}, Score: 1.5, Note: &note})
	if err != nil {
		b.Fatal(err)
	}
	return s, p
}

// BenchmarkValidate is broker-side "full" validation of a ~1 KiB record.
func BenchmarkValidate(b *testing.B) {
	s, p := benchPayload(b)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if err := s.Validate(nil, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode is hamba decoding the same record into its struct: the
// cost a consumer pays, what Validate is measured against.
func BenchmarkDecode(b *testing.B) {
	s, p := benchPayload(b)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		var r benchRec
		if err := havro.Unmarshal(s.Avro(), p, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzParse: any text is refused with an error or parsed into a schema
// whose canonical and normalized forms parse again to the same forms, and
// which is compatible with itself both ways; never a panic or a hang.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`"string"`, `{"type":"fixed","name":"F","size":16,"logicalType":"uuid"}`,
		`{"type":"record","name":"R","namespace":"a.b","doc":"d","fields":[{"name":"x","type":["null",{"type":"array","items":{"type":"map","values":"bytes"}}],"default":null,"aliases":["y"]}]}`,
		`{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}`,
		`{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]},{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}}]}`,
		`[`, `{"type":"record"}`, `{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":1e999}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Format{}.Parse(text, nil)
		if err != nil {
			return
		}
		for _, form := range []string{s.Canonical(), s.Normalized()} {
			again, err := Format{}.Parse(form, nil)
			if err != nil {
				t.Fatalf("%q parses, its form %q does not: %v", text, form, err)
			}
			if again.Canonical() != s.Canonical() && form == s.Canonical() {
				t.Fatalf("canonical form not stable: %q -> %q", s.Canonical(), again.Canonical())
			}
		}
		if msgs := (Format{}).Compatible(s, s); len(msgs) != 0 {
			t.Fatalf("%q is not compatible with itself: %v", text, msgs)
		}
	})
}
