package protobuf

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"floe/schemaregistry/format"
)

func TestType(t *testing.T) {
	if got := New().Type(); got != format.Protobuf {
		t.Errorf("Type() = %q", got)
	}
}

func TestParseReferences(t *testing.T) {
	// order.proto imports customer.proto, which imports address.proto: the
	// registry hands the references in as a tree.
	address := format.Reference{Name: "shop/address.proto", Subject: "address", Version: 1,
		Schema: `syntax = "proto3"; package shop; message Address { string city = 1; }`}
	customer := format.Reference{Name: "shop/customer.proto", Subject: "customer", Version: 3,
		Schema:     `syntax = "proto3"; package shop; import "shop/address.proto"; message Customer { string name = 1; Address home = 2; }`,
		References: []format.Reference{address}}
	s := mustParse(t, `syntax = "proto3";
package shop;
import "shop/customer.proto";
message Order { Customer customer = 1; repeated string items = 2; }`, []format.Reference{customer})
	md, err := s.Message(nil)
	if err != nil {
		t.Fatal(err)
	}
	home := md.Fields().ByName("customer").Message().Fields().ByName("home").Message()
	if home.FullName() != "shop.Address" {
		t.Errorf("customer.home is %s", home.FullName())
	}
}

func TestParseBuiltins(t *testing.T) {
	s := mustParse(t, `syntax = "proto3";
package events;
import "google/protobuf/timestamp.proto";
import "google/protobuf/any.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/duration.proto";
import "google/type/date.proto";
import "google/type/money.proto";
import "google/type/datetime.proto";
import "confluent/meta.proto";
import "confluent/type/decimal.proto";

option (confluent.file_meta).doc = "events";

message Event {
  option (confluent.message_meta) = { doc: "an event", tags: ["PII"] };
  google.protobuf.Timestamp at = 1;
  google.protobuf.Any body = 2;
  google.protobuf.Struct attrs = 3;
  google.protobuf.StringValue note = 4;
  google.type.Date day = 5;
  google.type.Money price = 6;
  confluent.type.Decimal amount = 7 [(confluent.field_meta).params = { key: "precision" value: "9" }];
  google.type.DateTime when = 8;
}`, nil)
	md, _ := s.Message(nil)
	amount := md.Fields().ByName("amount").Message()
	for num, name := range map[protoreflect.FieldNumber]protoreflect.Name{1: "value", 2: "precision", 3: "scale"} {
		if f := amount.Fields().ByNumber(num); f == nil || f.Name() != name {
			t.Errorf("confluent.type.Decimal field %d is %v, want %s", num, f, name)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	cases := map[string]struct {
		text string
		refs []format.Reference
		want string
	}{
		"syntax error":     {text: "message {", want: "syntax error"},
		"unknown type":     {text: `syntax = "proto3"; message M { Nope f = 1; }`, want: "Nope"},
		"missing import":   {text: `syntax = "proto3"; import "other.proto"; message M {}`, want: "other.proto"},
		"duplicate number": {text: `syntax = "proto3"; message M { int32 a = 1; int32 b = 1; }`, want: "1"},
		"empty":            {text: "", want: ""},
		"import cycle": {text: `syntax = "proto3"; import "a.proto"; message M {}`,
			refs: []format.Reference{{Name: "a.proto", Schema: `syntax = "proto3"; import "b.proto";`,
				References: []format.Reference{{Name: "b.proto", Schema: `syntax = "proto3"; import "a.proto";`}}}},
			want: "cycle"},
		"bad reference": {text: `syntax = "proto3"; import "a.proto"; message M {}`,
			refs: []format.Reference{{Name: "a.proto", Schema: `message {`}}, want: "a.proto"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := New().Parse(c.text, c.refs)
			if name == "empty" {
				// An empty file is a valid proto2 file with no message, as
				// for Confluent; there is just nothing to validate against.
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Validate(nil, nil); !errors.Is(err, format.ErrUnknownIndex) {
					t.Errorf("Validate on a file with no message: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("parsed")
			}
			if !strings.HasPrefix(err.Error(), "Invalid schema of type PROTOBUF, details: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want Confluent's prefix and %q", err, c.want)
			}
		})
	}
}

func TestParseSerialized(t *testing.T) {
	s := mustParse(t, `syntax = "proto3"; package p; import "google/protobuf/timestamp.proto";
message M { int32 a = 1; google.protobuf.Timestamp at = 2; message N { string s = 1; } }`, nil)
	raw, err := proto.Marshal(protodesc.ToFileDescriptorProto(s.Descriptor()))
	if err != nil {
		t.Fatal(err)
	}
	s2 := mustParse(t, base64.StdEncoding.EncodeToString(raw), nil)
	md, err := s2.Message([]int{0, 0})
	if err != nil || md.FullName() != "p.M.N" {
		t.Fatalf("message [0 0] of the serialized schema: %v, %v", md, err)
	}
	if s.Normalized() != s2.Normalized() {
		t.Errorf("serialized schema normalizes differently:\n%s\n---\n%s", s.Normalized(), s2.Normalized())
	}
}

const sample = `syntax = "proto3";
package acme.v1;
import "google/protobuf/timestamp.proto";
option java_package = "com.acme.v1";
option go_package = "acme/v1";

// A customer's order.
message Order {
  reserved 4, 8 to 10;
  string id = 1;
  google.protobuf.Timestamp placed = 2;
  map<string, Item> items = 3;
  oneof payment {
    string card = 5;
    string iban = 6;
  }
  Status status = 7 [deprecated = true];
  message Item { int64 qty = 1; }
  enum Status { UNKNOWN = 0; OPEN = 1; }
}
`

func TestCanonical(t *testing.T) {
	s := mustParse(t, sample, nil)
	want := `syntax = "proto3";
package acme.v1;

import "google/protobuf/timestamp.proto";

option java_package = "com.acme.v1";
option go_package = "acme/v1";

message Order {
  reserved 4, 8 to 10;

  string id = 1;
  google.protobuf.Timestamp placed = 2;
  map<string, Item> items = 3;
  Status status = 7 [deprecated = true];

  oneof payment {
    string card = 5;
    string iban = 6;
  }

  message Item {
    int64 qty = 1;
  }
  enum Status {
    UNKNOWN = 0;
    OPEN = 1;
  }
}
`
	if got := s.Canonical(); got != want {
		t.Errorf("Canonical:\n%s\nwant:\n%s", got, want)
	}
	// White space and comments are not the schema.
	squeezed := mustParse(t, strings.Join(strings.Fields(strings.ReplaceAll(sample, "// A customer's order.", "/* x */")), " "), nil)
	if squeezed.Canonical() != s.Canonical() {
		t.Errorf("same schema, other spacing:\n%s", squeezed.Canonical())
	}
	// A round trip is a fixed point.
	if again := mustParse(t, s.Canonical(), nil); again.Canonical() != s.Canonical() {
		t.Errorf("Canonical of Canonical differs:\n%s", again.Canonical())
	}
}

func TestNormalized(t *testing.T) {
	s := mustParse(t, sample, nil)
	want := `syntax = "proto3";
package acme.v1;

import "google/protobuf/timestamp.proto";

option go_package = "acme/v1";
option java_package = "com.acme.v1";

message Order {
  reserved 4;
  reserved 8 to 10;

  string id = 1;
  .google.protobuf.Timestamp placed = 2;
  map<string, .acme.v1.Order.Item> items = 3;
  .acme.v1.Order.Status status = 7 [deprecated = true];

  oneof payment {
    string card = 5;
    string iban = 6;
  }

  message Item {
    int64 qty = 1;
  }
  enum Status {
    UNKNOWN = 0;
    OPEN = 1;
  }
}
`
	if got := s.Normalized(); got != want {
		t.Errorf("Normalized:\n%s\nwant:\n%s", got, want)
	}
	// Order of fields, options and imports and how names are qualified do
	// not matter once normalized; they do before.
	shuffled := mustParse(t, `syntax = "proto3";
package acme.v1;
option go_package = "acme/v1";
option java_package = "com.acme.v1";
import "google/protobuf/timestamp.proto";
message Order {
  .acme.v1.Order.Status status = 7 [deprecated = true];
  map<string, .acme.v1.Order.Item> items = 3;
  oneof payment { string iban = 6; string card = 5; }
  .google.protobuf.Timestamp placed = 2;
  string id = 1;
  reserved 8 to 10, 4;
  message Item { int64 qty = 1; }
  enum Status { UNKNOWN = 0; OPEN = 1; }
}`, nil)
	if shuffled.Normalized() != s.Normalized() {
		t.Errorf("shuffled schema normalizes to:\n%s", shuffled.Normalized())
	}
	if shuffled.Canonical() == s.Canonical() {
		t.Error("shuffled schema has the same Canonical")
	}
	if again := mustParse(t, s.Normalized(), nil); again.Normalized() != s.Normalized() {
		t.Errorf("Normalized of Normalized differs:\n%s", again.Normalized())
	}
}

const nested = `syntax = "proto3";
package v;
message A {
  map<string, int32> counts = 1;
  message A1 { string s = 1; }
  message A2 { int32 n = 1; message A2x { bool b = 1; } }
}
message B { int64 id = 1; }
enum E { Z = 0; }
message C { string c = 1; }
`

func TestMessageIndex(t *testing.T) {
	s := mustParse(t, nested, nil)
	cases := []struct {
		index []int
		want  protoreflect.FullName
	}{
		{nil, "v.A"}, {[]int{0}, "v.A"}, {[]int{1}, "v.B"}, {[]int{2}, "v.C"},
		// The map entry A.CountsEntry is no message of the text.
		{[]int{0, 0}, "v.A.A1"}, {[]int{0, 1}, "v.A.A2"}, {[]int{0, 1, 0}, "v.A.A2.A2x"},
	}
	for _, c := range cases {
		md, err := s.Message(c.index)
		if err != nil || md.FullName() != c.want {
			t.Errorf("Message(%v) = %v, %v; want %s", c.index, md, err, c.want)
		}
	}
	for _, bad := range [][]int{{3}, {-1}, {1, 0}, {0, 2}, {0, 1, 0, 0}} {
		if _, err := s.Message(bad); !errors.Is(err, format.ErrUnknownIndex) {
			t.Errorf("Message(%v): %v, want ErrUnknownIndex", bad, err)
		}
		if err := s.Validate(bad, nil); !errors.Is(err, format.ErrUnknownIndex) {
			t.Errorf("Validate(%v): %v, want ErrUnknownIndex", bad, err)
		}
	}
}

func TestValidate(t *testing.T) {
	s := mustParse(t, nested, nil)
	a, _ := s.Message(nil)
	msg := dynamicpb.NewMessage(a)
	counts := msg.Mutable(a.Fields().ByName("counts")).Map()
	counts.Set(protoreflect.ValueOfString("x").MapKey(), protoreflect.ValueOfInt32(3))
	good, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	a2x, _ := s.Message([]int{0, 1, 0})
	boolMsg := dynamicpb.NewMessage(a2x)
	boolMsg.Set(a2x.Fields().ByName("b"), protoreflect.ValueOfBool(true))
	goodNested, _ := proto.Marshal(boolMsg)

	p2 := mustParse(t, `syntax = "proto2"; message R { required int32 must = 1; }`, nil)
	for _, c := range []struct {
		name    string
		s       *Schema
		index   []int
		payload []byte
		ok      bool
	}{
		{"first message", s, nil, good, true},
		{"empty payload", s, []int{1}, nil, true},
		{"nested message", s, []int{0, 1, 0}, goodNested, true},
		{"truncated", s, nil, good[:len(good)-1], false},
		{"bad tag", s, nil, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, false},
		{"field number zero", s, nil, protowire.AppendTag(nil, 0, protowire.VarintType), false},
		{"invalid utf-8 string", s, []int{2}, protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "\xff\xfe"), false},
		{"proto2 required missing", p2, nil, nil, false},
		{"proto2 required present", p2, nil, protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 7), true},
	} {
		err := c.s.Validate(c.index, c.payload)
		if (err == nil) != c.ok {
			t.Errorf("%s: Validate = %v, want ok %v", c.name, err, c.ok)
		}
		if err != nil && errors.Is(err, format.ErrUnknownIndex) {
			t.Errorf("%s: a bad payload is not an unknown index: %v", c.name, err)
		}
	}
}

// FuzzParse feeds the parser arbitrary text: it must answer (a schema or an
// error) without panicking or hanging, and a schema it accepts must print,
// validate and compare with itself.
func FuzzParse(f *testing.F) {
	f.Add(sample, []byte{0x0a, 0x01, 'x'})
	f.Add(nested, []byte{})
	f.Add(`syntax = "proto2"; message R { required int32 must = 1; optional group G = 2 { optional int32 x = 3; } extensions 100 to max; }`, []byte{8, 1})
	f.Add(`syntax = "proto3"; import "confluent/meta.proto"; message M { option (confluent.message_meta).doc = "x"; }`, []byte{})
	f.Add(`edition = "2023"; message M { int32 a = 1; }`, []byte{8, 1})
	f.Add("CgZ4LnByb3RvEgFw", []byte{})
	f.Add("message {", []byte{})
	for _, ex := range confluentPrintExamples {
		f.Add(ex.schema, []byte{})
		if s, err := New().Parse(ex.schema, nil); err == nil {
			f.Add(s.(*Schema).Formatted("serialized"), []byte{})
		}
	}
	for _, ex := range confluentDiffExamples[:10] {
		f.Add(ex.update, []byte{8, 1})
	}
	f.Fuzz(func(t *testing.T, text string, payload []byte) {
		s, err := New().Parse(text, nil)
		if err != nil {
			return
		}
		for _, form := range []string{s.Canonical(), s.Normalized()} {
			again, err := New().Parse(form, nil)
			if err != nil {
				t.Fatalf("printed form does not parse: %v\n%s", err, form)
			}
			if again.Normalized() != s.Normalized() {
				t.Fatalf("printed form normalizes differently:\n%s\n---\n%s", s.Normalized(), again.Normalized())
			}
		}
		_ = s.Validate(nil, payload)
		if msgs := New().Compatible(s, s); len(msgs) != 0 {
			t.Errorf("a schema is incompatible with itself: %q", msgs)
		}
	})
}

// TestParseDeepNesting: a schema nested a hundred thousand levels deep is
// refused quickly, before the compiler recurses into it.
func TestParseDeepNesting(t *testing.T) {
	for name, text := range map[string]string{
		"messages":  strings.Repeat("message A {", 100_000) + strings.Repeat("}", 100_000),
		"aggregate": "option (x) = " + strings.Repeat("{a:", 100_000) + strings.Repeat("}", 100_000) + ";",
	} {
		_, err := New().Parse(text, nil)
		if err == nil || !strings.Contains(err.Error(), "nest deeper") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Braces in strings and comments do not count.
	braces := strings.Repeat("{", 1000)
	mustParse(t, `syntax = "proto3"; // `+braces+`
/* `+braces+` */ option java_package = "`+braces+`"; message M {}`, nil)
}

func TestFormatted(t *testing.T) {
	s := mustParse(t, `syntax = "proto2";
import "google/protobuf/descriptor.proto";
import "confluent/meta.proto";
extend google.protobuf.FieldOptions { optional string label = 50000; }
message M {
  option (confluent.message_meta).doc = "kept";
  optional int32 a = 1 [(label) = "dropped", deprecated = true];
  extensions 100 to 200;
}`, nil)
	want := `syntax = "proto2";

import "google/protobuf/descriptor.proto";
import "confluent/meta.proto";

message M {
  option (confluent.message_meta).doc = "kept";

  optional int32 a = 1 [deprecated = true];
}
`
	if got := s.Formatted("ignore_extensions"); got != want {
		t.Errorf("ignore_extensions:\n%s\nwant:\n%s", got, want)
	}
	if s.Formatted("") != s.Canonical() || s.Formatted("nonsense") != s.Canonical() {
		t.Error("default format is not the canonical form")
	}
	again := mustParse(t, s.Formatted("serialized"), nil)
	if again.Descriptor().Messages().Get(0).Fields().Len() != 1 {
		t.Errorf("serialized form does not round trip:\n%s", again.Canonical())
	}
	plain := mustParse(t, `syntax = "proto3"; message M { int32 a = 1; }`, nil)
	if plain.Formatted("ignore_extensions") != plain.Canonical() {
		t.Error("ignore_extensions differs for a schema without extensions")
	}
}

// TestSerializedOptions: a serialized schema's options, interpreted by
// whoever compiled it, print back, custom ones by their full names.
func TestSerializedOptions(t *testing.T) {
	s := mustParse(t, `syntax = "proto3"; package p;
import "confluent/meta.proto";
option java_package = "com.p";
message M {
  option (confluent.message_meta).doc = "m";
  int32 a = 1 [deprecated = true, json_name = "A"];
  repeated int32 b = 2 [packed = false];
}
enum E { option allow_alias = true; Z = 0; Y = 0 [deprecated = true]; }`, nil)
	raw, err := proto.Marshal(protodesc.ToFileDescriptorProto(s.Descriptor()))
	if err != nil {
		t.Fatal(err)
	}
	got := mustParse(t, base64.StdEncoding.EncodeToString(raw), nil).Canonical()
	want := `syntax = "proto3";
package p;

import "confluent/meta.proto";

option java_package = "com.p";

message M {
  option (confluent.message_meta) = {
    doc: "m"
  };

  int32 a = 1 [
    deprecated = true,
    json_name = "A"
  ];
  repeated int32 b = 2 [packed = false];
}
enum E {
  option allow_alias = true;
  Z = 0;
  Y = 0 [deprecated = true];
}
`
	if got != want {
		t.Errorf("serialized Canonical:\n%s\nwant:\n%s", got, want)
	}
}

func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		if _, err := New().Parse(sample, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	s, err := New().Parse(sample, nil)
	if err != nil {
		b.Fatal(err)
	}
	md, _ := s.(*Schema).Message(nil)
	msg := dynamicpb.NewMessage(md)
	msg.Set(md.Fields().ByName("id"), protoreflect.ValueOfString("order-1"))
	payload, _ := proto.Marshal(msg)
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if err := s.Validate(nil, payload); err != nil {
			b.Fatal(err)
		}
	}
}

// optionLiterals is the part of Confluent's testComplexCustomOptions3 that
// protobuf itself accepts (Confluent's parser takes option fields that do not
// exist and 10f-style numbers; protocompile refuses both), with an option
// type of its own.
const optionLiterals = `syntax = "proto3";
package com.example.mynamespace;
import "google/protobuf/descriptor.proto";
message Sub { string foo = 1; }
message Opts {
  double value1 = 1; int32 value4 = 4; int32 value5 = 5; int32 value6 = 6; int32 value7 = 7; int32 value8 = 8;
  float value10 = 10; float value11 = 11; double value12 = 12; float value13 = 13;
  string value14 = 14; string value15 = 15; string value16 = 16; Sub value17 = 17; Sub value21 = 21;
  repeated Sub value22 = 22; repeated int32 value25 = 25; map<string, int32> value26 = 26;
}
extend google.protobuf.FieldOptions { Opts opts = 50000; }
message SampleRecord {
  int32 my_field1 = 2 [(opts) = {
    value1: -2.0,
    value4: 10 value5: 20,
    value6: 10,value7: 20,
    value8: 10,
    value10: 10,
    value11: 1.0,
    value12: 1.23,
    value13: 1.23,
    value14: 
      "When we got into office, the thing that surprised me most was to find "
      "that things were just as bad as we'd been saying they were.\n\n"
      "  -- John F. Kennedy",
    value15: "first part" 'second part'
      "third part",
    value16: "first""second"'third''fourth',
    value17: { foo: "bar" },
    value21 { foo: "bar" },
    value22: [{ foo: "bar" }],
    value25: 1,
    value25: 2,
    value25: [3, 4, 5],
    value25: 6,
    value25: [7, 8, 9],
    value26: { key: "entry1", value: 1 },
    value26: { key: "entry2", value: 2 },
    value26: [      { key: "entry3", value: 3 },
      { key: "entry4", value: 4 }
    ]  }];
}`

// TestOptionLiterals: message literals in options print as Confluent
// prints them: one key a line, adjacent strings joined, repeated keys
// gathered into one flat list; normalized, keys sorted, numbers as
// DecimalFormat prints them and one-element lists unwrapped.
func TestOptionLiterals(t *testing.T) {
	s := mustParse(t, optionLiterals, nil)
	canonical := `message SampleRecord {
  int32 my_field1 = 2 [(opts) = {
    value1: -2.0,
    value4: 10,
    value5: 20,
    value6: 10,
    value7: 20,
    value8: 10,
    value10: 10,
    value11: 1.0,
    value12: 1.23,
    value13: 1.23,
    value14: "When we got into office, the thing that surprised me most was to find that things were just as bad as we\'d been saying they were.\n\n  -- John F. Kennedy",
    value15: "first partsecond partthird part",
    value16: "firstsecondthirdfourth",
    value17: {
      foo: "bar"
    },
    value21: {
      foo: "bar"
    },
    value22: [
      {
        foo: "bar"
      }
    ],
    value25: [
      1,
      2,
      3,
      4,
      5,
      6,
      7,
      8,
      9
    ],
    value26: [
      {
        key: "entry1",
        value: 1
      },
      {
        key: "entry2",
        value: 2
      },
      {
        key: "entry3",
        value: 3
      },
      {
        key: "entry4",
        value: 4
      }
    ]
  }];
}
`
	normalized := `message SampleRecord {
  int32 my_field1 = 2 [(com.example.mynamespace.opts) = {
    value1: -2,
    value10: 10,
    value11: 1,
    value12: 1.23,
    value13: 1.23,
    value14: "When we got into office, the thing that surprised me most was to find that things were just as bad as we\'d been saying they were.\n\n  -- John F. Kennedy",
    value15: "first partsecond partthird part",
    value16: "firstsecondthirdfourth",
    value17: {
      foo: "bar"
    },
    value21: {
      foo: "bar"
    },
    value22: {
      foo: "bar"
    },
    value25: [
      1,
      2,
      3,
      4,
      5,
      6,
      7,
      8,
      9
    ],
    value26: [
      {
        key: "entry1",
        value: 1
      },
      {
        key: "entry2",
        value: 2
      },
      {
        key: "entry3",
        value: 3
      },
      {
        key: "entry4",
        value: 4
      }
    ],
    value4: 10,
    value5: 20,
    value6: 10,
    value7: 20,
    value8: 10
  }];
}
`
	if !strings.Contains(s.Canonical(), canonical) {
		t.Errorf("Canonical:\n%s\nwant it to hold:\n%s", s.Canonical(), canonical)
	}
	if !strings.Contains(s.Normalized(), normalized) {
		t.Errorf("Normalized:\n%s\nwant it to hold:\n%s", s.Normalized(), normalized)
	}
}

func TestNormalNumber(t *testing.T) {
	for in, want := range map[string]string{
		"10": "10", "-2.0": "-2", "1.0": "1", "1.23": "1.23", "1.2345": "1.234", "1e3": "1000",
		"0x10": "16", "1.5f": "1.5", "inf": "inf", "-inf": "-inf", "nan": "nan", "FOO": "FOO", "-0.0": "0",
	} {
		if got := normalNumber(in); got != want {
			t.Errorf("normalNumber(%q) = %q, want %q", in, got, want)
		}
	}
}
