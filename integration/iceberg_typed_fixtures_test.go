package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The typed tests' records: an order of each format with a field of every
// kind its mapping has, produced with franz-go's sr serde. Each fixture
// gives the serde (its schema registered under topic's value subject) and
// order i, with the row a typed table must hold for it in canonical form
// (canonRow's: integers int64, floats float64, decimals exact text,
// timestamps and times µs, dates YYYY-MM-DD, uuids text, binary base64,
// structs and maps map[string]any, lists []any, null nil).

// typedSerde registers schema (of type typ) under topic's value subject in
// the registry at registry and returns a serde that frames what encode
// makes of values of v's type with its id (and, for Protobuf, index).
func typedSerde(t *testing.T, ctx context.Context, registry, topic, schema string, typ sr.SchemaType, v any, encode func(any) ([]byte, error), opts ...sr.EncodingOpt) *sr.Serde {
	t.Helper()
	rc, err := sr.NewClient(sr.URLs("http://" + registry))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rc.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: schema, Type: typ})
	if err != nil {
		t.Fatal(err)
	}
	var serde sr.Serde
	serde.Register(ss.ID, v, append(opts, sr.EncodeFn(encode))...)
	return &serde
}

// produceSerde produces each value, encoded with serde, to topic's
// partition 0, one by one, and returns their offsets.
func produceSerde(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, serde *sr.Serde, values ...any) []int64 {
	t.Helper()
	offsets := make([]int64, len(values))
	for i, v := range values {
		b, err := serde.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: b}).First()
		if err != nil {
			t.Fatal(err)
		}
		offsets[i] = r.Offset
	}
	return offsets
}

// avroSerde is typedOrderSchema's serde for topic.
func avroSerde(t *testing.T, ctx context.Context, registry, topic string) *sr.Serde {
	schema := avro.MustParse(typedOrderSchema)
	return typedSerde(t, ctx, registry, topic, typedOrderSchema, sr.TypeAvro, typedOrder{},
		func(v any) ([]byte, error) { return avro.Marshal(schema, v) })
}

// avroOrder is order i of typedOrderSchema: a note every fourth, no tags
// and attrs every fifth.
func avroOrder(i int) typedOrder {
	placed := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	note := fmt.Sprintf("note %d", i)
	o := typedOrder{ID: int64(i) << 33, Item: fmt.Sprintf("item-%d", i), Qty: int32(i), Price: float64(i) + 0.25, Paid: i%2 == 0,
		Amount: big.NewRat(int64(i)*100+7, 100), Placed: placed.Add(time.Duration(i) * time.Millisecond),
		Day: placed.AddDate(0, 0, i).Truncate(24 * time.Hour), Status: []string{"NEW", "SHIPPED"}[i%2],
		Tags: []string{"a", fmt.Sprint(i)}, Attrs: map[string]string{"k": fmt.Sprint(i), "j": "x"}, Customer: typedCustomer{Name: fmt.Sprint("c", i), VIP: i%3 == 0}}
	if i%4 == 0 {
		o.Note = &note
	}
	if i%5 == 0 {
		o.Tags, o.Attrs = []string{}, map[string]string{}
	}
	return o
}

// canon is the order's row in canonical form.
func (o typedOrder) canon() map[string]any {
	var note any
	if o.Note != nil {
		note = *o.Note
	}
	tags := []any{}
	for _, s := range o.Tags {
		tags = append(tags, s)
	}
	attrs := map[string]any{}
	for k, v := range o.Attrs {
		attrs[k] = v
	}
	return map[string]any{"id": o.ID, "item": o.Item, "qty": int64(o.Qty), "price": o.Price, "paid": o.Paid,
		"amount": o.Amount.FloatString(2), "placed": o.Placed.UnixMicro(), "day": o.Day.Format(time.DateOnly),
		"status": o.Status, "tags": tags, "attrs": attrs, "note": note,
		"customer": map[string]any{"name": o.Customer.Name, "vip": o.Customer.VIP}}
}

// produceTypedOrders produces orders from to from+n-1 of typedOrderSchema,
// framed with the id the schema gets under topic's value subject, one by
// one to partition 0, and returns each order's row line by offset.
func produceTypedOrders(t *testing.T, ctx context.Context, cl *kgo.Client, registry, topic string, from, n int) map[int64]string {
	t.Helper()
	serde := avroSerde(t, ctx, registry, topic)
	orders := make([]any, n)
	for i := range orders {
		orders[i] = avroOrder(from + i)
	}
	want := map[int64]string{}
	for i, off := range produceSerde(t, ctx, cl, topic, serde, orders...) {
		want[off] = orders[i].(typedOrder).row(off)
	}
	return want
}

// protoOrderSchema has a field of every kind the Protobuf mapping has:
// scalars signed and unsigned, bytes, an enum, well-known types
// (Timestamp, Duration, a wrapper), proto3 optional, a nested message,
// repeated scalars and messages, a map and a oneof.
const protoOrderSchema = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
enum Status { NEW = 0; SHIPPED = 1; }
message Customer { string name = 1; bool vip = 2; }
message Line { string sku = 1; int32 qty = 2; }
message Order {
  int64 id = 1;
  string item = 2;
  int32 qty = 3;
  double price = 4;
  float score = 5;
  bool paid = 6;
  uint64 big = 7;
  uint32 small = 8;
  bytes blob = 9;
  google.protobuf.Timestamp placed = 10;
  google.protobuf.Duration wait = 11;
  google.protobuf.StringValue note = 12;
  optional int32 rank = 13;
  Status status = 14;
  repeated string tags = 15;
  map<string, int64> attrs = 16;
  Customer customer = 17;
  repeated Line lines = 18;
  oneof pay { string card = 19; int64 points = 20; }
}`

// protoSerde is protoOrderSchema's serde for topic: values are
// shop.Order in protojson, compiled with protocompile and marshaled
// through dynamicpb.
func protoSerde(t *testing.T, ctx context.Context, registry, topic string) *sr.Serde {
	t.Helper()
	comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"order.proto": protoOrderSchema})})}
	files, err := comp.Compile(ctx, "order.proto")
	if err != nil {
		t.Fatal(err)
	}
	md := files[0].Messages().ByName("Order")
	return typedSerde(t, ctx, registry, topic, protoOrderSchema, sr.TypeProtobuf, map[string]any{}, func(v any) ([]byte, error) {
		js, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		msg := dynamicpb.NewMessage(md)
		if err := protojson.Unmarshal(js, msg); err != nil {
			return nil, err
		}
		return proto.Marshal(msg)
	}, sr.Index(md.Index()))
}

// protoOrder is order i of protoOrderSchema in protojson and its row:
// uint64 past 2^53 (decimal(20,0)), int64 past 2^53, bytes that are not
// UTF-8, a wrapper, optional, message and oneof each absent in some
// orders, empty lists and map in others.
func protoOrder(i int) (msg, row map[string]any) {
	placed := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC).Add(time.Duration(i)*time.Hour + time.Duration(i*1001)*time.Microsecond)
	id := -(int64(i) << 50) - 1
	big := uint64(math.MaxUint64) - uint64(i)
	blob := []byte{0xff, byte(i), 0}
	if i%3 == 0 {
		blob = []byte("ok")
	}
	wait := time.Duration(i)*1500*time.Millisecond + 250*time.Microsecond
	msg = map[string]any{"id": fmt.Sprint(id), "item": fmt.Sprintf("item-%d é", i), "qty": i - 5, "price": float64(i) + 0.1,
		"score": float32(i) / 4, "paid": i%2 == 0, "big": fmt.Sprint(big), "small": uint32(math.MaxUint32 - i),
		"blob": base64.StdEncoding.EncodeToString(blob), "placed": placed.Format(time.RFC3339Nano),
		"wait": fmt.Sprintf("%.6fs", wait.Seconds()), "status": []string{"NEW", "SHIPPED"}[i%2],
		"tags": []string{"a", fmt.Sprint(i)}, "attrs": map[string]string{"k": fmt.Sprint(i), "neg": fmt.Sprint(-id)},
		"lines": []map[string]any{{"sku": "s1", "qty": i}, {"sku": "s2", "qty": 1}}}
	row = map[string]any{"id": id, "item": msg["item"], "qty": int64(i - 5), "price": float64(i) + 0.1,
		"score": float64(float32(i) / 4), "paid": i%2 == 0, "big": fmt.Sprint(big), "small": int64(math.MaxUint32 - i),
		"blob": base64.StdEncoding.EncodeToString(blob), "placed": placed.UnixMicro(), "wait": wait.Microseconds(),
		"note": nil, "rank": nil, "status": msg["status"], "tags": []any{"a", fmt.Sprint(i)},
		"attrs": map[string]any{"k": int64(i), "neg": -id}, "customer": nil,
		"lines": []any{map[string]any{"sku": "s1", "qty": int64(i)}, map[string]any{"sku": "s2", "qty": int64(1)}}, "pay": nil}
	if i%2 == 0 {
		msg["note"], row["note"] = fmt.Sprint("note ", i), fmt.Sprint("note ", i)
	}
	if i%3 == 0 {
		msg["rank"], row["rank"] = i, int64(i)
	}
	if i%4 != 3 {
		msg["customer"] = map[string]any{"name": fmt.Sprint("c", i), "vip": i%3 == 0}
		row["customer"] = map[string]any{"name": fmt.Sprint("c", i), "vip": i%3 == 0}
	}
	switch i % 3 {
	case 0:
		msg["card"], row["pay"] = fmt.Sprint("card-", i), map[string]any{"card": fmt.Sprint("card-", i), "points": nil}
	case 1:
		msg["points"], row["pay"] = fmt.Sprint(int64(i)<<40), map[string]any{"card": nil, "points": int64(i) << 40}
	}
	if i%5 == 0 { // proto3 has no null list or map: empty
		delete(msg, "tags")
		delete(msg, "attrs")
		delete(msg, "lines")
		row["tags"], row["attrs"], row["lines"] = []any{}, map[string]any{}, []any{}
	}
	return msg, row
}

// jsonOrderSchema has a property of every kind the JSON Schema mapping
// has: integer, number, boolean, string and its formats uuid, date-time,
// date and time, an optional type list with null, an array of strings,
// an object of additionalProperties only (a map), a nested object, an
// array of objects through a local $ref, a oneOf, and a free-form value.
const jsonOrderSchema = `{"type":"object","properties":{
	"id":{"type":"integer"},
	"item":{"type":"string"},
	"price":{"type":"number"},
	"paid":{"type":"boolean"},
	"ref":{"type":"string","format":"uuid"},
	"at":{"type":"string","format":"date-time"},
	"day":{"type":"string","format":"date"},
	"t":{"type":"string","format":"time"},
	"note":{"type":["string","null"]},
	"tags":{"type":"array","items":{"type":"string"}},
	"attrs":{"type":"object","additionalProperties":{"type":"integer"}},
	"customer":{"type":"object","properties":{"name":{"type":"string"},"vip":{"type":"boolean"}}},
	"lines":{"type":"array","items":{"$ref":"#/definitions/line"}},
	"pay":{"oneOf":[{"type":"string"},{"type":"integer"}]},
	"extra":{}},
	"definitions":{"line":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer"}}}}}`

// jsonSerde is jsonOrderSchema's serde for topic: values are JSON
// objects.
func jsonSerde(t *testing.T, ctx context.Context, registry, topic string) *sr.Serde {
	return typedSerde(t, ctx, registry, topic, jsonOrderSchema, sr.TypeJSON, map[string]any{}, func(v any) ([]byte, error) { return json.Marshal(v) })
}

// jsonOrder is order i of jsonOrderSchema and its row: integers past
// 2^53, timestamps with offsets other than UTC, properties null, absent
// or empty in some orders.
func jsonOrder(i int) (value, row map[string]any) {
	at := time.Date(2026, 12, 6, 5, 40, 1, 0, time.FixedZone("", 2*3600)).Add(time.Duration(i*1001) * time.Microsecond)
	id := int64(i)<<50 + 1
	day := time.Date(2026, 12, 1+i, 0, 0, 0, 0, time.UTC)
	tod := 5*time.Hour + 40*time.Minute + time.Duration(i)*time.Second + 250*time.Millisecond + time.Duration(i)*time.Microsecond
	ref := fmt.Sprintf("0b7a2c1e-9c4f-4b8e-a1d2-3e4f5a6b7c%02x", i)
	value = map[string]any{"id": id, "item": fmt.Sprintf("item-%d ✓", i), "price": float64(i) + 0.5, "paid": i%2 == 1,
		"ref": ref, "at": at.Format(time.RFC3339Nano), "day": day.Format(time.DateOnly),
		"t": time.Time{}.Add(tod).Format("15:04:05.999999"), "note": nil,
		"tags": []string{"x", fmt.Sprint(i)}, "attrs": map[string]int64{"a": int64(i), "b": -id},
		"lines": []map[string]any{{"sku": "s", "qty": i}}, "extra": map[string]any{"i": i, "l": []int{1, 2}}}
	row = map[string]any{"id": id, "item": value["item"], "price": float64(i) + 0.5, "paid": i%2 == 1, "ref": ref,
		"at": at.UnixMicro(), "day": day.Format(time.DateOnly), "t": tod.Microseconds(), "note": nil,
		"tags": []any{"x", fmt.Sprint(i)}, "attrs": map[string]any{"a": int64(i), "b": -id}, "customer": nil,
		"lines": []any{map[string]any{"sku": "s", "qty": int64(i)}}, "pay": nil, "extra": fmt.Sprintf(`{"i":%d,"l":[1,2]}`, i)}
	if i%2 == 0 {
		value["note"], row["note"] = fmt.Sprint("note ", i), fmt.Sprint("note ", i)
	}
	if i%4 != 3 {
		value["customer"] = map[string]any{"name": fmt.Sprint("c", i), "vip": i%3 == 0}
		row["customer"] = map[string]any{"name": fmt.Sprint("c", i), "vip": i%3 == 0}
	}
	switch i % 3 {
	case 0:
		value["pay"], row["pay"] = fmt.Sprint("card-", i), map[string]any{"string": fmt.Sprint("card-", i), "integer": nil}
	case 1:
		value["pay"], row["pay"] = int64(i)<<40, map[string]any{"string": nil, "integer": int64(i) << 40}
	}
	if i%5 == 0 {
		value["tags"], value["attrs"], row["tags"], row["attrs"] = []string{}, map[string]int64{}, []any{}, map[string]any{}
		delete(value, "lines")
		delete(value, "extra")
		row["lines"], row["extra"] = nil, nil
	}
	return value, row
}
