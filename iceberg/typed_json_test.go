package iceberg

import (
	"bytes"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
)

const jsonOrder = `{"$schema":"http://json-schema.org/draft-07/schema#","title":"Order","type":"object",
  "properties":{
    "id":{"type":"integer"},
    "item":{"type":"string"},
    "price":{"type":"number"},
    "paid":{"type":"boolean"},
    "day":{"type":"string","format":"date"},
    "placed":{"type":"string","format":"date-time"},
    "ref":{"type":"string","format":"uuid"},
    "tags":{"type":"array","items":{"type":"string"}},
    "attrs":{"type":"object","additionalProperties":{"type":"integer"}},
    "note":{"type":["string","null"]},
    "customer":{"$ref":"#/definitions/Customer"},
    "either":{"oneOf":[{"type":"integer"},{"type":"string"}]},
    "extra":{}
  },
  "definitions":{"Customer":{"type":"object","properties":{"name":{"type":"string"},"vip":{"type":"boolean"}}}}}`

func TestJSONMapping(t *testing.T) {
	sc, n, err := jsonValueSchema(jsonOrder)
	if err != nil {
		t.Fatal(err)
	}
	wantCols := "id: long\nitem: string\nprice: double\npaid: boolean\nday: date\nplaced: timestamptz\nref: uuid\ntags: list<string>\n" +
		"attrs: map<string, long>\nnote: string\ncustomer: struct<14: name: optional string, 15: vip: optional boolean>\n" +
		"either: struct<17: integer: optional long, 18: string: optional string>\nextra: string"
	if got := fieldsOf(sc); got != wantCols {
		t.Errorf("columns\n%s\nwant\n%s", got, wantCols)
	}
	as, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer rb.Release()
	for _, v := range []string{
		`{"id":7,"item":"tea","price":1.5,"paid":true,"day":"2026-12-06","placed":"2026-12-06T05:40:01.234567Z",
		  "ref":"0b7a2c1e-9c4f-4b8e-a1d2-3e4f5a6b7c8d","tags":["a"],"attrs":{"b":2,"a":1},"note":null,
		  "customer":{"name":"ada","vip":true,"more":1},"either":"x","extra":{"k":[1,2]},"unknown":5}`,
		`{"either":3}`,
	} {
		if err := decodeJSON(n, []byte(v), as, rb.Field, -1); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{`{"id":1.5}`, `{"id":"1"}`, `[1]`, `{"day":"6/12/2026"}`, `{"either":true}`, `{"tags":[1]}`, `{} {}`} {
		if err := decodeJSON(n, []byte(bad), as, rb.Field, -1); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	if err := array.RecordToJSON(rec, &buf); err != nil {
		t.Fatal(err)
	}
	want := `{"attrs":[{"key":"a","value":1},{"key":"b","value":2}],"customer":{"name":"ada","vip":true},"day":"2026-12-06","either":{"integer":null,"string":"x"},"extra":"{\"k\":[1,2]}","id":7,"item":"tea","note":null,"paid":true,"placed":"2026-12-06T05:40:01.234567Z","price":1.5,"ref":"0b7a2c1e-9c4f-4b8e-a1d2-3e4f5a6b7c8d","tags":["a"]}` + "\n" +
		`{"attrs":null,"customer":null,"day":null,"either":{"integer":3,"string":null},"extra":null,"id":null,"item":null,"note":null,"paid":null,"placed":null,"price":null,"ref":null,"tags":null}`
	if got := strings.TrimSpace(buf.String()); got != want {
		t.Errorf("rows\n%s\nwant\n%s", got, want)
	}
	for _, c := range []struct{ schema, why string }{
		{`{"definitions":{"N":{"type":"object","properties":{"next":{"$ref":"#/definitions/N"}}}},"$ref":"#/definitions/N"}`, "recursive"},
		{`{"type":"object","properties":{"_kafka":{"type":"string"}}}`, "_kafka"},
		{`{"type":"object","properties":{"a":{"$ref":"other.json"}}}`, "only local"},
		{`{"allOf":[{"type":"string"},{"type":"integer"}]}`, "allOf"},
	} {
		if _, _, err := jsonValueSchema(c.schema); !errors.Is(err, errUnmappable) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: error %v, want errUnmappable saying %q", c.schema, err, c.why)
		}
	}
}

// TestTypedJSONSchemaTable: JSON Schema values framed with a schema id
// become typed rows; a value that breaks the schema goes to the
// dead-letter table.
func TestTypedJSONSchemaTable(t *testing.T) {
	e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeSchemaIDPrefix})
	var out struct{ ID int }
	e.call("POST", "/subjects/orders-value/versions", map[string]any{"schema": jsonOrder, "schemaType": "JSON"}, &out)
	frameJSON := func(v string) []byte {
		return append([]byte{0, byte(out.ID >> 24), byte(out.ID >> 16), byte(out.ID >> 8), byte(out.ID)}, v...)
	}
	e.produce(frameJSON(`{"id":1,"item":"tea","customer":{"name":"c"}}`), frameJSON(`{"id":"one"}`), frameJSON(`{"id":2,"tags":["x"]}`))
	if err := e.cycle(); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.conv.cat.Load(e.ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(e.rows(tbl, "_kafka.offset", "id", "item", "customer", "tags"), "\n")
	want := `{"_kafka":{"offset":0},"customer":{"name":"c","vip":null},"id":1,"item":"tea","tags":null}` + "\n" +
		`{"_kafka":{"offset":2},"customer":null,"id":2,"item":null,"tags":["x"]}`
	if got != want {
		t.Errorf("rows\n%s\nwant\n%s", got, want)
	}
	dlq, err := e.conv.cat.loadNamed(e.ctx, DLQTableName("orders"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.rows(dlq, ColOffset), ","); got != `{"offset":1}` {
		t.Errorf("dead letters %s", got)
	}
}

// TestTypedJSONInferred: floe.iceberg.value.mode=json infers columns from
// the values, widens an integer into a double column, and sends what no
// Iceberg evolution takes (a fraction into a long column, a string where a
// number was, an array of mixed types) and non-objects to the
// dead-letter table.
func TestTypedJSONInferred(t *testing.T) {
	e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeJSON})
	e.produce([]byte(`{"id":1,"name":"a","tags":["x"],"nested":{"k":true}}`), []byte(`{"id":2,"price":1.5}`),
		[]byte(`{"id":3,"price":2}`), []byte(`{"id":1.5}`), []byte(`"str"`), []byte(`{"id":"x"}`),
		[]byte(`{"mixed":[1,"a"]}`), []byte(`{}`), []byte(`{"id":4,"nested":{"k":false,"j":"new"}}`))
	if err := e.cycle(); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.conv.cat.Load(e.ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fieldsOf(tbl.Schema()), "_kafka"; !strings.HasPrefix(got, want) ||
		!strings.Contains(got, "id: long\nname: string\nnested: struct<") || !strings.Contains(got, "price: double") {
		t.Errorf("columns\n%s", got)
	}
	got := strings.Join(e.rows(tbl, "_kafka.offset", "id", "name", "tags", "nested", "price"), "\n")
	want := `{"_kafka":{"offset":0},"id":1,"name":"a","nested":{"j":null,"k":true},"price":null,"tags":["x"]}` + "\n" +
		`{"_kafka":{"offset":1},"id":2,"name":null,"nested":null,"price":1.5,"tags":null}` + "\n" +
		`{"_kafka":{"offset":2},"id":3,"name":null,"nested":null,"price":2,"tags":null}` + "\n" +
		`{"_kafka":{"offset":7},"id":null,"name":null,"nested":null,"price":null,"tags":null}` + "\n" +
		`{"_kafka":{"offset":8},"id":4,"name":null,"nested":{"j":"new","k":false},"price":null,"tags":null}`
	if got != want {
		t.Errorf("rows\n%s\nwant\n%s", got, want)
	}
	dlq, err := e.conv.cat.loadNamed(e.ctx, DLQTableName("orders"))
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, l := range e.rows(dlq, ColOffset, ColError) {
		reasons = append(reasons, l[strings.Index(l, `"offset"`):]+" "+strings.SplitN(l[strings.Index(l, `"error":"`)+9:], ":", 2)[0])
	}
	sort.Strings(reasons)
	if got, want := strings.Join(reasons, ","), `"offset":3} incompatible_schema,"offset":4} does_not_decode,"offset":5} incompatible_schema,"offset":6} incompatible_schema`; got != want {
		t.Errorf("dead letters %s\nwant %s", got, want)
	}
}
