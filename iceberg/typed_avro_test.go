package iceberg

import (
	"bytes"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	havro "github.com/hamba/avro/v2"
)

// decodeRows maps schema, binds it to its own table schema and decodes
// each value (encoded by hamba) into one Arrow row, returned as JSON lines.
func decodeRows(t *testing.T, schema string, values ...any) (*iceberg.Schema, string) {
	t.Helper()
	s, err := havro.Parse(schema)
	if err != nil {
		t.Fatal(err)
	}
	sc, n, err := avroValueSchema(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bindTop(n, sc); err != nil {
		t.Fatal(err)
	}
	as, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer rb.Release()
	for _, v := range values {
		payload, err := havro.Marshal(s, v)
		if err != nil {
			t.Fatalf("marshal %v: %v", v, err)
		}
		if err := decodeAvro(n, payload, rb.Field); err != nil {
			t.Fatalf("decode %v: %v", v, err)
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	if err := array.RecordToJSON(rec, &buf); err != nil {
		t.Fatal(err)
	}
	return sc, strings.TrimSpace(buf.String())
}

// fieldsOf prints a schema's columns as name: type, one per line (the
// ids are avroValueSchema's placeholders).
func fieldsOf(sc *iceberg.Schema) string {
	var lines []string
	for _, f := range sc.Fields() {
		lines = append(lines, f.Name+": "+f.Type.String())
	}
	return strings.Join(lines, "\n")
}

func TestAvroMapping(t *testing.T) {
	ts := time.Date(2026, 12, 6, 5, 40, 1, 234567000, time.UTC)
	for _, c := range []struct {
		name, schema string
		values       []any
		columns      string
		rows         string
	}{
		{
			name: "primitives",
			schema: `{"type":"record","name":"P","fields":[{"name":"b","type":"boolean"},{"name":"i","type":"int"},
				{"name":"l","type":"long"},{"name":"f","type":"float"},{"name":"d","type":"double"},
				{"name":"s","type":"string"},{"name":"y","type":"bytes"}]}`,
			values:  []any{map[string]any{"b": true, "i": -7, "l": int64(1) << 40, "f": float32(1.5), "d": 2.25, "s": "héllo", "y": []byte{0, 1, 255}}},
			columns: "b: boolean\ni: int\nl: long\nf: float\nd: double\ns: string\ny: binary",
			rows:    `{"b":true,"d":2.25,"f":1.5,"i":-7,"l":1099511627776,"s":"héllo","y":"AAH/"}`,
		},
		{
			name: "logical types",
			schema: `{"type":"record","name":"L","fields":[
				{"name":"day","type":{"type":"int","logicalType":"date"}},
				{"name":"tm","type":{"type":"int","logicalType":"time-millis"}},
				{"name":"tu","type":{"type":"long","logicalType":"time-micros"}},
				{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
				{"name":"tsu","type":{"type":"long","logicalType":"timestamp-micros"}},
				{"name":"lts","type":{"type":"long","logicalType":"local-timestamp-micros"}},
				{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
				{"name":"neg","type":{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":18,"scale":3}},
				{"name":"id","type":{"type":"string","logicalType":"uuid"}}]}`,
			values: []any{map[string]any{"day": ts, "tm": 90 * time.Second, "tu": 90*time.Second + time.Microsecond,
				"ts": ts, "tsu": ts, "lts": ts, "amount": big.NewRat(12345, 100), "neg": big.NewRat(-1, 1000),
				"id": "0b7a2c1e-9c4f-4b8e-a1d2-3e4f5a6b7c8d"}},
			columns: "day: date\ntm: time\ntu: time\nts: timestamptz\ntsu: timestamptz\nlts: timestamp\namount: decimal(10, 2)\nneg: decimal(18, 3)\nid: uuid",
			rows:    `{"amount":"123.45","day":"2026-12-06","id":"0b7a2c1e-9c4f-4b8e-a1d2-3e4f5a6b7c8d","lts":"2026-12-06T05:40:01.234567","neg":"-0.001","tm":"00:01:30","ts":"2026-12-06T05:40:01.234Z","tsu":"2026-12-06T05:40:01.234567Z","tu":"00:01:30.000001"}`,
		},
		{
			name: "nested",
			schema: `{"type":"record","name":"N","fields":[
				{"name":"customer","type":{"type":"record","name":"C","fields":[{"name":"name","type":"string"},{"name":"tier","type":{"type":"enum","name":"T","symbols":["GOLD","SILVER"]}}]}},
				{"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[{"name":"sku","type":"string"},{"name":"qty","type":"int"}]}}},
				{"name":"attrs","type":{"type":"map","values":"long"}},
				{"name":"tag","type":{"type":"fixed","name":"F","size":2}},
				{"name":"billing","type":"C"}]}`,
			values: []any{map[string]any{
				"customer": map[string]any{"name": "ada", "tier": "SILVER"},
				"lines":    []any{map[string]any{"sku": "a", "qty": 1}, map[string]any{"sku": "b", "qty": 2}},
				"attrs":    map[string]any{"x": int64(9)},
				"tag":      [2]byte{'h', 'i'},
				"billing":  map[string]any{"name": "bob", "tier": "GOLD"},
			}},
			columns: "customer: struct<1: name: optional string, 2: tier: optional string>\n" +
				"lines: list<struct<4: sku: optional string, 5: qty: optional int>>\n" +
				"attrs: map<string, long>\ntag: binary\nbilling: struct<12: name: optional string, 13: tier: optional string>",
			rows: `{"attrs":[{"key":"x","value":9}],"billing":{"name":"bob","tier":"GOLD"},"customer":{"name":"ada","tier":"SILVER"},"lines":[{"qty":1,"sku":"a"},{"qty":2,"sku":"b"}],"tag":"aGk="}`,
		},
		{
			name: "unions",
			schema: `{"type":"record","name":"U","fields":[
				{"name":"opt","type":["null","string"]},
				{"name":"rev","type":["long","null"]},
				{"name":"either","type":["null","int","string",{"type":"record","name":"R","fields":[{"name":"x","type":"int"}]}]},
				{"name":"nothing","type":"null"}]}`,
			values: []any{
				map[string]any{"opt": "a", "rev": nil, "either": map[string]any{"int": 3}, "nothing": nil},
				map[string]any{"opt": nil, "rev": int64(4), "either": map[string]any{"R": map[string]any{"x": 1}}, "nothing": nil},
				map[string]any{"opt": nil, "rev": nil, "either": nil, "nothing": nil},
			},
			columns: "opt: string\nrev: long\neither: struct<3: int: optional int, 4: string: optional string, 6: R: optional struct<5: x: optional int>>",
			rows: `{"either":{"R":null,"int":3,"string":null},"opt":"a","rev":null}` + "\n" +
				`{"either":{"R":{"x":1},"int":null,"string":null},"opt":null,"rev":4}` + "\n" +
				`{"either":null,"opt":null,"rev":null}`,
		},
		{
			name:    "not a record",
			schema:  `"string"`,
			values:  []any{"plain"},
			columns: "value: string",
			rows:    `{"value":"plain"}`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, rows := decodeRows(t, c.schema, c.values...)
			if got := fieldsOf(sc); got != c.columns {
				t.Errorf("columns\n%s\nwant\n%s", got, c.columns)
			}
			if rows != c.rows {
				t.Errorf("rows\n%s\nwant\n%s", rows, c.rows)
			}
		})
	}
}

func TestAvroUnmappable(t *testing.T) {
	for _, c := range []struct{ schema, why string }{
		{`{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}`, "Node is recursive"},
		{`{"type":"record","name":"K","fields":[{"name":"_kafka","type":"int"}]}`, "_kafka"},
		{`{"type":"record","name":"W","fields":[{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":40,"scale":2}}]}`, "1 to 38 digits"},
		{`{"type":"record","name":"E","fields":[{"name":"n","type":"null"}]}`, "no fields with values"},
		{`{"type":"array","items":"null"}`, "array of nulls"},
	} {
		s, err := havro.Parse(c.schema)
		if err != nil {
			t.Fatalf("%s: %v", c.schema, err)
		}
		_, _, err = avroValueSchema(s, nil)
		if !errors.Is(err, errUnmappable) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: error %v, want errUnmappable saying %q", c.schema, err, c.why)
		}
	}
}

func TestAvroBadPayloads(t *testing.T) {
	s := havro.MustParse(`{"type":"record","name":"B","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["A"]}},
		{"name":"u","type":["null","string"]},{"name":"xs","type":{"type":"array","items":"long"}}]}`)
	sc, n, err := avroValueSchema(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bindTop(n, sc); err != nil {
		t.Fatal(err)
	}
	as, _ := table.SchemaToArrowSchema(sc, nil, true, false)
	good, _ := havro.Marshal(s, map[string]any{"e": "A", "u": "x", "xs": []int64{1, 2}})
	for _, c := range []struct {
		name    string
		payload []byte
		why     string
	}{
		{"truncated", good[:len(good)-2], "ends inside"},
		{"trailing", append(append([]byte{}, good...), 0), "bytes after"},
		{"enum index", append([]byte{2}, good[1:]...), "enum index 1"},
		{"union branch", []byte{0, 4}, "union branch 2"},
		{"huge block", []byte{0, 0, 0xfe, 0xff, 0xff, 0xff, 0x0f}, "items in"},
		{"empty", nil, "ends inside"},
	} {
		rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
		err := decodeAvro(n, c.payload, rb.Field)
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.why)
		}
		for i := range rb.Fields() {
			if rb.Field(i).Len() != 0 {
				t.Errorf("%s: column %d has %d values after a failed decode", c.name, i, rb.Field(i).Len())
			}
		}
		rb.Release()
	}
}
