package protobuf

import (
	"slices"
	"testing"

	"floe/schemaregistry/format"
)

type diffExample struct {
	name                     string
	original, update         string
	originalRefs, updateRefs []format.Reference
	changes                  []string
	compatible               bool
}

func mustParse(t *testing.T, text string, refs []format.Reference) *Schema {
	t.Helper()
	s, err := New().Parse(text, refs)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	return s.(*Schema)
}

func checkExample(t *testing.T, ex diffExample) {
	t.Helper()
	o := mustParse(t, ex.original, ex.originalRefs)
	u := mustParse(t, ex.update, ex.updateRefs)
	var got []string
	for _, d := range Diff(o, u) {
		got = append(got, d.String())
	}
	want := slices.Clone(ex.changes)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("differences:\n got %q\nwant %q", got, want)
	}
	msgs := New().Compatible(u, o)
	if compatible := len(msgs) == 0; compatible != ex.compatible {
		t.Errorf("compatible = %v, want %v: %q", compatible, ex.compatible, msgs)
	}
}

// TestConfluentDiffExamples runs Confluent's own diff examples.
func TestConfluentDiffExamples(t *testing.T) {
	for _, ex := range confluentDiffExamples {
		t.Run(ex.name, func(t *testing.T) { checkExample(t, ex) })
	}
}

// TestCompatibilityRules has one case per difference Confluent's diff
// knows, named after its Difference type, with Confluent's verdict; then
// the scalar groups and a few changes that are no difference at all.
func TestCompatibilityRules(t *testing.T) {
	const p3 = "syntax = \"proto3\";\n"
	const p2 = "syntax = \"proto2\";\n"
	cases := []diffExample{
		{name: "PACKAGE_CHANGED", original: p3 + "package a; message M { int32 f = 1; }", update: p3 + "package b; message M { int32 f = 1; }",
			changes: []string{"PACKAGE_CHANGED #/"}},
		{name: "MESSAGE_ADDED", original: p3 + "message M { int32 f = 1; }", update: p3 + "message M { int32 f = 1; } message N {}",
			changes: []string{"MESSAGE_ADDED #/N"}, compatible: true},
		{name: "MESSAGE_REMOVED", original: p3 + "message M { int32 f = 1; } message N {}", update: p3 + "message M { int32 f = 1; }",
			changes: []string{"MESSAGE_REMOVED #/N"}},
		{name: "MESSAGE_REMOVED nested", original: p3 + "message M { message N {} }", update: p3 + "message M {}",
			changes: []string{"MESSAGE_REMOVED #/M/N"}},
		{name: "MESSAGE_MOVED", original: p3 + "message M {} message N {}", update: p3 + "message N {} message M {}",
			changes: []string{"MESSAGE_MOVED #/M", "MESSAGE_MOVED #/N"}, compatible: true},
		{name: "ENUM_ADDED", original: p3 + "message M {}", update: p3 + "message M {} enum E { A = 0; }",
			changes: []string{"ENUM_ADDED #/E"}, compatible: true},
		{name: "ENUM_REMOVED", original: p3 + "message M { enum E { A = 0; } }", update: p3 + "message M {}",
			changes: []string{"ENUM_REMOVED #/M/E"}, compatible: true},
		{name: "ENUM_CONST_ADDED", original: p3 + "enum E { A = 0; }", update: p3 + "enum E { A = 0; B = 1; }",
			changes: []string{"ENUM_CONST_ADDED #/E/1"}, compatible: true},
		{name: "ENUM_CONST_CHANGED", original: p3 + "enum E { A = 0; B = 1; }", update: p3 + "enum E { A = 0; C = 1; }",
			changes: []string{"ENUM_CONST_CHANGED #/E/1"}, compatible: true},
		{name: "ENUM_CONST_REMOVED", original: p3 + "enum E { A = 0; B = 1; }", update: p3 + "enum E { A = 0; }",
			changes: []string{"ENUM_CONST_REMOVED #/E/1"}, compatible: true},
		{name: "FIELD_ADDED", original: p3 + "message M { int32 f = 1; }", update: p3 + "message M { int32 f = 1; string g = 2; }",
			changes: []string{"FIELD_ADDED #/M/2"}, compatible: true},
		{name: "FIELD_REMOVED", original: p3 + "message M { int32 f = 1; string g = 2; }", update: p3 + "message M { int32 f = 1; }",
			changes: []string{"FIELD_REMOVED #/M/2"}, compatible: true},
		{name: "FIELD_NAME_CHANGED", original: p3 + "message M { int32 f = 1; }", update: p3 + "message M { int32 g = 1; }",
			changes: []string{"FIELD_NAME_CHANGED #/M/1"}, compatible: true},
		{name: "FIELD_KIND_CHANGED", original: p3 + "message M { int32 f = 1; } message N {}", update: p3 + "message M { N f = 1; } message N {}",
			changes: []string{"FIELD_KIND_CHANGED #/M/1"}},
		{name: "FIELD_KIND_CHANGED map", original: p3 + "message M { map<string, string> f = 1; }", update: p3 + "message M { string f = 1; }",
			changes: []string{"FIELD_KIND_CHANGED #/M/1"}},
		{name: "FIELD_SCALAR_KIND_CHANGED", original: p3 + "message M { int32 f = 1; }", update: p3 + "message M { string f = 1; }",
			changes: []string{"FIELD_SCALAR_KIND_CHANGED #/M/1"}},
		{name: "FIELD_SCALAR_KIND_CHANGED signed", original: p3 + "message M { sint32 f = 1; }", update: p3 + "message M { int32 f = 1; }",
			changes: []string{"FIELD_SCALAR_KIND_CHANGED #/M/1"}},
		{name: "FIELD_SCALAR_KIND_CHANGED map value", original: p3 + "message M { map<string, int32> f = 1; }", update: p3 + "message M { map<string, double> f = 1; }",
			changes: []string{"FIELD_SCALAR_KIND_CHANGED #/M/1"}},
		{name: "FIELD_SCALAR_KIND_CHANGED number reused", original: p3 + "message M { int32 f = 1; }", update: p3 + "message M { reserved \"f\"; bytes g = 1; }",
			changes: []string{"FIELD_NAME_CHANGED #/M/1", "FIELD_SCALAR_KIND_CHANGED #/M/1"}},
		{name: "FIELD_NAMED_TYPE_CHANGED", original: p3 + "message M { A f = 1; } message A {} message B {}", update: p3 + "message M { B f = 1; } message A {} message B {}",
			changes: []string{"FIELD_NAMED_TYPE_CHANGED #/M/1"}},
		{name: "FIELD_NUMERIC_LABEL_CHANGED", original: p3 + "message M { optional int64 f = 1; }", update: p3 + "message M { repeated int64 f = 1; }",
			changes: []string{"FIELD_NUMERIC_LABEL_CHANGED #/M/1"}},
		{name: "FIELD_NUMERIC_LABEL_CHANGED enum", original: p2 + "message M { optional E f = 1; } enum E { A = 0; }", update: p2 + "message M { repeated E f = 1; } enum E { A = 0; }",
			changes: []string{"FIELD_NUMERIC_LABEL_CHANGED #/M/1"}},
		{name: "FIELD_STRING_OR_BYTES_LABEL_CHANGED", original: p2 + "message M { optional string f = 1; }", update: p2 + "message M { repeated string f = 1; }",
			changes: []string{"FIELD_STRING_OR_BYTES_LABEL_CHANGED #/M/1"}, compatible: true},
		{name: "REQUIRED_FIELD_ADDED", original: p2 + "message M { optional int32 f = 1; }", update: p2 + "message M { optional int32 f = 1; required int32 g = 2; }",
			changes: []string{"REQUIRED_FIELD_ADDED #/M/2"}},
		{name: "REQUIRED_FIELD_REMOVED", original: p2 + "message M { optional int32 f = 1; required int32 g = 2; }", update: p2 + "message M { optional int32 f = 1; }",
			changes: []string{"REQUIRED_FIELD_REMOVED #/M/2"}},
		{name: "ONEOF_ADDED", original: p3 + "message M { int32 f = 1; }", update: p3 + "message M { oneof o { int32 f = 1; } }",
			changes: []string{"ONEOF_ADDED #/M/o"}, compatible: true},
		{name: "ONEOF_REMOVED", original: p3 + "message M { int32 f = 1; oneof o { int32 g = 2; } }", update: p3 + "message M { int32 f = 1; }",
			changes: []string{"ONEOF_REMOVED #/M/o"}, compatible: true},
		{name: "ONEOF_FIELD_ADDED", original: p3 + "message M { oneof o { int32 f = 1; } }", update: p3 + "message M { oneof o { int32 f = 1; string g = 2; } }",
			changes: []string{"ONEOF_FIELD_ADDED #/M/o/2"}, compatible: true},
		{name: "ONEOF_FIELD_REMOVED", original: p3 + "message M { oneof o { int32 f = 1; string g = 2; } }", update: p3 + "message M { oneof o { int32 f = 1; } }",
			changes: []string{"ONEOF_FIELD_REMOVED #/M/o/2"}},
		{name: "ONEOF_FIELD_MOVED_TO_TOP_LEVEL", original: p3 + "message M { oneof o { int32 f = 1; string g = 2; } }", update: p3 + "message M { int32 f = 1; oneof o { string g = 2; } }",
			changes: []string{"ONEOF_FIELD_MOVED_TO_TOP_LEVEL #/M/1"}, compatible: true},
		{name: "MULTIPLE_FIELDS_MOVED_TO_ONEOF", original: p3 + "message M { int32 f = 1; string g = 2; }", update: p3 + "message M { oneof o { int32 f = 1; string g = 2; } }",
			changes: []string{"MULTIPLE_FIELDS_MOVED_TO_ONEOF #/M/o", "ONEOF_ADDED #/M/o"}},
		{name: "FIELD_MOVED_TO_EXISTING_ONEOF", original: p3 + "message M { int32 f = 1; oneof o { string g = 2; } }", update: p3 + "message M { oneof o { int32 f = 1; string g = 2; } }",
			changes: []string{"FIELD_MOVED_TO_EXISTING_ONEOF #/M/o"}},

		// Scalars that read each other's values (Confluent's groups).
		{name: "general numbers", original: p3 + "message M { int32 a = 1; uint32 b = 2; bool c = 3; E d = 4; } enum E { Z = 0; }",
			update: p3 + "message M { uint64 a = 1; int64 b = 2; int32 c = 3; int32 d = 4; } enum E { Z = 0; }", compatible: true},
		{name: "fixed and string groups", original: p3 + "message M { fixed32 a = 1; fixed64 b = 2; string c = 3; }",
			update: p3 + "message M { sfixed32 a = 1; sfixed64 b = 2; bytes c = 3; }", compatible: true},
		{name: "float is not double", original: p3 + "message M { float a = 1; }", update: p3 + "message M { double a = 1; }",
			changes: []string{"FIELD_SCALAR_KIND_CHANGED #/M/1"}},
		{name: "proto3 optional is no label change", original: p3 + "message M { int32 a = 1; }", update: p3 + "message M { optional int32 a = 1; }", compatible: true},
		{name: "syntax change is no difference", original: p2 + "message M { optional int32 a = 1; }", update: p3 + "message M { int32 a = 1; }", compatible: true},
		{name: "proto2 groups are not looked at", original: p2 + "message M { optional group G = 1 { optional int32 a = 2; } }",
			update: p2 + "message M { optional group H = 1 { optional string b = 2; } }", compatible: true},
		{name: "recursive message", original: p3 + "message M { M next = 1; int32 v = 2; }", update: p3 + "message M { M next = 1; int64 v = 2; }", compatible: true},
		{name: "map value message changed in reference",
			original:     p3 + "import \"dep.proto\"; message M { map<string, d.V> f = 1; }",
			originalRefs: []format.Reference{{Name: "dep.proto", Subject: "dep", Version: 1, Schema: p3 + "package d; message V { int32 x = 1; }"}},
			update:       p3 + "import \"dep.proto\"; message M { map<string, d.V> f = 1; }",
			updateRefs:   []format.Reference{{Name: "dep.proto", Subject: "dep", Version: 2, Schema: p3 + "package d; message V { string x = 1; }"}},
			changes:      []string{"FIELD_SCALAR_KIND_CHANGED #/V/1", "FIELD_NAMED_TYPE_CHANGED #/M/1"}},
	}
	for _, ex := range cases {
		t.Run(ex.name, func(t *testing.T) { checkExample(t, ex) })
	}
}

// TestCompatibleMessages checks Confluent's verbose words, the schemas named
// by their roles.
func TestCompatibleMessages(t *testing.T) {
	o := mustParse(t, "syntax = \"proto3\"; message M { int32 f = 1; } message N {}", nil)
	u := mustParse(t, "syntax = \"proto3\"; message M { N f = 1; } message N {}", nil)
	got := New().Compatible(u, o)
	want := []string{`{errorType:"FIELD_KIND_CHANGED", description:"The type of a field at path '#/M/1' in the new schema does not match the old schema"}`}
	if !slices.Equal(got, want) {
		t.Errorf("backward:\n got %q\nwant %q", got, want)
	}
	got = New().(interface {
		CompatibleAs(reader, writer format.Schema, readerRole, writerRole string) []string
	}).CompatibleAs(o, u, "old", "new")
	want = []string{`{errorType:"FIELD_KIND_CHANGED", description:"The type of a field at path '#/M/1' in the old schema does not match the new schema"}`}
	if !slices.Equal(got, want) {
		t.Errorf("forward:\n got %q\nwant %q", got, want)
	}
	removed := mustParse(t, "syntax = \"proto3\"; message M { int32 f = 1; }", nil)
	got = New().Compatible(removed, o)
	want = []string{`{errorType:"MESSAGE_REMOVED", description:"The new schema is missing a MESSAGE type at path '#/N' in the old schema"}`}
	if !slices.Equal(got, want) {
		t.Errorf("removed:\n got %q\nwant %q", got, want)
	}
	if got := New().Compatible(o, otherSchema{}); !slices.Equal(got, []string{"Incompatible because of different schema type"}) {
		t.Errorf("other type: %q", got)
	}
}

type otherSchema struct{}

func (otherSchema) Canonical() string            { return "" }
func (otherSchema) Normalized() string           { return "" }
func (otherSchema) Validate([]int, []byte) error { return nil }

// FuzzCompatible compares two arbitrary schemas both ways: it must answer
// without panicking, and a schema is always compatible with itself.
func FuzzCompatible(f *testing.F) {
	for _, ex := range confluentDiffExamples {
		if len(ex.originalRefs) == 0 && len(ex.updateRefs) == 0 {
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
		_ = New().Compatible(sa, sb)
		_ = New().Compatible(sb, sa)
		if msgs := New().Compatible(sb, sb); len(msgs) != 0 {
			t.Errorf("a schema is incompatible with itself: %q", msgs)
		}
	})
}
