package iceberg

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"floe/schemaregistry/protobuf"
)

const protoOrder = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/duration.proto";
enum Status { NEW = 0; SHIPPED = 1; }
message Customer { string name = 1; bool vip = 2; }
message Order {
  int64 id = 1;
  string item = 2;
  uint64 big = 3;
  Status status = 4;
  repeated string tags = 5;
  map<string, int32> attrs = 6;
  optional string note = 7;
  Customer customer = 8;
  google.protobuf.Timestamp placed = 9;
  google.protobuf.StringValue coupon = 10;
  oneof pay { string card = 11; int64 points = 12; }
  google.protobuf.Struct extra = 13;
  google.protobuf.Duration ttl = 14;
  repeated Customer others = 15;
  uint32 small = 16;
  bytes blob = 17;
}
message Node { Node next = 1; }
`

func protoMessageOf(t *testing.T, name string) protoreflect.MessageDescriptor {
	t.Helper()
	sc, err := protobuf.New().Parse(protoOrder, nil)
	if err != nil {
		t.Fatal(err)
	}
	md := sc.(*protobuf.Schema).Descriptor().Messages().ByName(protoreflect.Name(name))
	if md == nil {
		t.Fatalf("no message %s", name)
	}
	return md
}

func TestProtoMapping(t *testing.T) {
	md := protoMessageOf(t, "Order")
	sc, _, err := protoValueSchema(md, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantCols := "id: long\nitem: string\nbig: decimal(20, 0)\nstatus: string\ntags: list<string>\nattrs: map<string, int>\n" +
		"note: string\ncustomer: struct<11: name: optional string (protobuf field 1), 12: vip: optional boolean (protobuf field 2)>\nplaced: timestamptz\ncoupon: string\n" +
		"pay: struct<16: card: optional string (protobuf field 11), 18: points: optional long (protobuf field 12)>\nextra: string\nttl: long\n" +
		"others: list<struct<21: name: optional string (protobuf field 1), 22: vip: optional boolean (protobuf field 2)>>\nsmall: long\nblob: binary"
	if got := fieldsOf(sc); got != wantCols {
		t.Errorf("columns\n%s\nwant\n%s", got, wantCols)
	}
	msg := dynamicpb.NewMessage(md)
	if err := protojson.Unmarshal([]byte(`{"id":"7","item":"tea","big":"18446744073709551615","status":"SHIPPED","tags":["a","b"],
		"attrs":{"k":3},"customer":{"name":"ada","vip":true},"placed":"2026-12-06T05:40:01.234567Z","coupon":"X1",
		"points":"40","extra":{"a":[1,"x"]},"ttl":"1.5s","others":[{"name":"bob"}],"small":4294967295,"blob":"AAE="}`), msg); err != nil {
		t.Fatal(err)
	}
	full, _ := proto.Marshal(msg)
	empty, _ := proto.Marshal(dynamicpb.NewMessage(md))
	as, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer rb.Release()
	for _, p := range [][]byte{full, empty} {
		if err := decodeProto(md, p, as, rb.Field, -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := decodeProto(md, []byte{0x0a, 0xff}, as, rb.Field, -1); err == nil {
		t.Error("a truncated payload decoded")
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	if err := array.RecordToJSON(rec, &buf); err != nil {
		t.Fatal(err)
	}
	want := `{"attrs":[{"key":"k","value":3}],"big":"18446744073709551615","blob":"AAE=","coupon":"X1","customer":{"name":"ada","vip":true},"extra":"{\"a\":[1,\"x\"]}","id":7,"item":"tea","note":null,"others":[{"name":"bob","vip":false}],"pay":{"card":null,"points":40},"placed":"2026-12-06T05:40:01.234567Z","small":4294967295,"status":"SHIPPED","tags":["a","b"],"ttl":1500000}` + "\n" +
		`{"attrs":[],"big":"0","blob":"","coupon":null,"customer":null,"extra":null,"id":0,"item":"","note":null,"others":[],"pay":null,"placed":null,"small":0,"status":"NEW","tags":[],"ttl":null}`
	if got := strings.TrimSpace(buf.String()); got != want {
		t.Errorf("rows\n%s\nwant\n%s", got, want)
	}
	if _, _, err := protoValueSchema(protoMessageOf(t, "Node"), nil); err == nil || !strings.Contains(err.Error(), "recursive") {
		t.Errorf("recursive message: %v", err)
	}
}

// TestTypedProtobufTable: Protobuf values framed with a schema id and
// message indexes become typed rows; a message index naming no message
// and a payload that does not decode go to the dead-letter table.
func TestTypedProtobufTable(t *testing.T) {
	e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeSchemaIDPrefix})
	var out struct{ ID int }
	e.call("POST", "/subjects/orders-value/versions", map[string]any{"schema": protoOrder, "schemaType": "PROTOBUF"}, &out)
	md := protoMessageOf(t, "Order")
	enc := func(index []int, js string) []byte {
		msg := dynamicpb.NewMessage(md)
		if err := protojson.Unmarshal([]byte(js), msg); err != nil {
			t.Fatal(err)
		}
		payload, _ := proto.Marshal(msg)
		var h sr.ConfluentHeader
		b, err := h.AppendEncode(nil, out.ID, index)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, payload...)
	}
	good := enc([]int{1}, `{"id":"1","item":"tea","points":"5"}`)
	e.produce(good, enc([]int{7}, `{"id":"2"}`), append(good[:len(good)-1:len(good)-1], 0xff, 0xff),
		enc([]int{1}, `{"id":"3","note":"n","customer":{"name":"c"}}`))
	if err := e.cycle(); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.conv.cat.Load(e.ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(e.rows(tbl, "_kafka.offset", "id", "item", "note", "customer", "pay"), "\n")
	want := `{"_kafka":{"offset":0},"customer":null,"id":1,"item":"tea","note":null,"pay":{"card":null,"points":5}}` + "\n" +
		`{"_kafka":{"offset":3},"customer":{"name":"c","vip":false},"id":3,"item":"","note":"n","pay":null}`
	if got != want {
		t.Errorf("rows\n%s\nwant\n%s", got, want)
	}
	dlq, err := e.conv.cat.loadNamed(e.ctx, DLQTableName("orders"))
	if err != nil {
		t.Fatal(err)
	}
	got = strings.Join(e.rows(dlq, ColOffset), ",")
	if want := `{"offset":1},{"offset":2}`; got != want {
		t.Errorf("dead letters %s, want %s", got, want)
	}
}

// TestTypedSchemaLatest: floe.iceberg.value.mode=schema_latest decodes
// unframed values with the subject's latest schema: Avro, and Protobuf's
// message named by floe.iceberg.value.protobuf.message.
func TestTypedSchemaLatest(t *testing.T) {
	t.Run("avro", func(t *testing.T) {
		e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeSchemaLatest})
		e.register(orderV1)
		e.produce(frame(t, 0, orderV1, map[string]any{"id": 1, "item": "tea"})[5:], []byte{0xff})
		if err := e.cycle(); err != nil {
			t.Fatal(err)
		}
		tbl, err := e.conv.cat.Load(e.ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(e.rows(tbl, "_kafka.offset", "id", "item"), "\n"); got != `{"_kafka":{"offset":0},"id":1,"item":"tea"}` {
			t.Errorf("rows %s", got)
		}
		dlq, err := e.conv.cat.loadNamed(e.ctx, DLQTableName("orders"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(e.rows(dlq, ColOffset), ","); got != `{"offset":1}` {
			t.Errorf("dead letters %s", got)
		}
	})
	t.Run("protobuf", func(t *testing.T) {
		e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeSchemaLatest, ConfigValueProtobufMessage: "shop.Order",
			ConfigValueSubject: "shop"})
		e.call("POST", "/subjects/shop/versions", map[string]any{"schema": protoOrder, "schemaType": "PROTOBUF"}, nil)
		msg := dynamicpb.NewMessage(protoMessageOf(t, "Order"))
		if err := protojson.Unmarshal([]byte(`{"id":"9","item":"jam"}`), msg); err != nil {
			t.Fatal(err)
		}
		payload, _ := proto.Marshal(msg)
		e.produce(payload)
		if err := e.cycle(); err != nil {
			t.Fatal(err)
		}
		tbl, err := e.conv.cat.Load(e.ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(e.rows(tbl, "_kafka.offset", "id", "item"), "\n"); got != `{"_kafka":{"offset":0},"id":9,"item":"jam"}` {
			t.Errorf("rows %s", got)
		}
	})
	t.Run("no subject", func(t *testing.T) {
		e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeSchemaLatest})
		e.produce([]byte("x"))
		if err := e.cycle(); err != nil {
			t.Fatal(err)
		}
		dlq, err := e.conv.cat.loadNamed(e.ctx, DLQTableName("orders"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(e.rows(dlq, ColOffset, ColError), ","); !strings.Contains(got, "unknown_schema: the value subject orders-value has no live schema") {
			t.Errorf("dead letters %s", got)
		}
	})
}

// TestTypedProtobufRename: a Protobuf field renamed in a later schema
// (same number) keeps filling its column, nested messages too.
func TestTypedProtobufRename(t *testing.T) {
	e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeSchemaIDPrefix})
	s1 := "syntax = \"proto3\";\npackage r;\nmessage O { int64 id = 1; string name = 2; S ship = 3; }\nmessage S { string city = 1; }\n"
	s2 := "syntax = \"proto3\";\npackage r;\nmessage O { int64 id = 1; string customer = 2; S ship = 3; string extra = 4; }\nmessage S { string town = 1; }\n"
	e.call("PUT", "/config/orders-value", map[string]any{"compatibility": "NONE"}, nil)
	enc := func(schema, js string) []byte {
		var out struct{ ID int }
		e.call("POST", "/subjects/orders-value/versions", map[string]any{"schema": schema, "schemaType": "PROTOBUF"}, &out)
		sc, err := protobuf.New().Parse(schema, nil)
		if err != nil {
			t.Fatal(err)
		}
		msg := dynamicpb.NewMessage(sc.(*protobuf.Schema).Descriptor().Messages().ByName("O"))
		if err := protojson.Unmarshal([]byte(js), msg); err != nil {
			t.Fatal(err)
		}
		payload, _ := proto.Marshal(msg)
		var h sr.ConfluentHeader
		b, _ := h.AppendEncode(nil, out.ID, []int{0})
		return append(b, payload...)
	}
	e.produce(enc(s1, `{"id":"1","name":"ada","ship":{"city":"Oslo"}}`), enc(s2, `{"id":"2","customer":"bob","ship":{"town":"Rome"},"extra":"x"}`))
	if err := e.cycle(); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.conv.cat.Load(e.ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if cols := fieldsOf(tbl.Schema()); strings.Contains(cols, "customer") || strings.Contains(cols, "town") || !strings.Contains(cols, "extra") {
		t.Errorf("columns\n%s", cols)
	}
	got := strings.Join(e.rows(tbl, "_kafka.offset", "id", "name", "ship", "extra"), "\n")
	want := `{"_kafka":{"offset":0},"extra":null,"id":1,"name":"ada","ship":{"city":"Oslo"}}` + "\n" +
		`{"_kafka":{"offset":1},"extra":"x","id":2,"name":"bob","ship":{"city":"Rome"}}`
	if got != want {
		t.Errorf("rows\n%s\nwant\n%s", got, want)
	}
}
