package iceberg

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"floe/metadata"
	"floe/schemaregistry/protobuf"
)

// Typed conversion benchmarks: 1 KiB records of 20 fields (10 strings, 5
// longs, 3 doubles, 2 booleans) framed with a schema id, one partition,
// 1,000 records per object; one op is one cycle over 16 MiB of records.
// MB/s is the conversion throughput, cpu-s/GB the process CPU time per GB
// of records. `go test ./iceberg -run X -bench ConvertTyped -benchtime 3x`.

// BenchmarkConvertTypedAvro converts Avro records.
func BenchmarkConvertTypedAvro(b *testing.B) {
	var fields []string
	value := map[string]any{}
	for i := range 10 {
		fields = append(fields, fmt.Sprintf(`{"name":"s%d","type":"string"}`, i))
		value[fmt.Sprintf("s%d", i)] = strings.Repeat(string(rune('a'+i)), 90)
	}
	for i := range 5 {
		fields = append(fields, fmt.Sprintf(`{"name":"l%d","type":"long"}`, i))
		value[fmt.Sprintf("l%d", i)] = int64(i) << 40
	}
	for i := range 3 {
		fields = append(fields, fmt.Sprintf(`{"name":"d%d","type":"double"}`, i))
		value[fmt.Sprintf("d%d", i)] = float64(i) + 0.5
	}
	for i := range 2 {
		fields = append(fields, fmt.Sprintf(`{"name":"b%d","type":"boolean"}`, i))
		value[fmt.Sprintf("b%d", i)] = i == 0
	}
	schema := `{"type":"record","name":"Wide","fields":[` + strings.Join(fields, ",") + `]}`
	benchTyped(b, func(e *typedEnv) []byte {
		return frame(b, e.register(schema), schema, value)
	})
}

// BenchmarkConvertTypedProtobuf converts Protobuf records.
func BenchmarkConvertTypedProtobuf(b *testing.B) {
	var fields []string
	js := map[string]string{}
	n := 1
	add := func(typ, name, v string) {
		fields = append(fields, fmt.Sprintf("  %s %s = %d;", typ, name, n))
		js[name] = v
		n++
	}
	for i := range 10 {
		add("string", fmt.Sprintf("s%d", i), `"`+strings.Repeat(string(rune('a'+i)), 90)+`"`)
	}
	for i := range 5 {
		add("int64", fmt.Sprintf("l%d", i), fmt.Sprintf(`"%d"`, int64(i)<<40))
	}
	for i := range 3 {
		add("double", fmt.Sprintf("d%d", i), fmt.Sprint(float64(i)+0.5))
	}
	for i := range 2 {
		add("bool", fmt.Sprintf("b%d", i), fmt.Sprint(i == 0))
	}
	schema := "syntax = \"proto3\";\npackage bench;\nmessage Wide {\n" + strings.Join(fields, "\n") + "\n}\n"
	var parts []string
	for k, v := range js {
		parts = append(parts, fmt.Sprintf("%q:%s", k, v))
	}
	benchTyped(b, func(e *typedEnv) []byte {
		var out struct{ ID int }
		e.call("POST", "/subjects/orders-value/versions", map[string]any{"schema": schema, "schemaType": "PROTOBUF"}, &out)
		sc, err := protobuf.New().Parse(schema, nil)
		if err != nil {
			b.Fatal(err)
		}
		msg := dynamicpb.NewMessage(sc.(*protobuf.Schema).Descriptor().Messages().Get(0))
		if err := protojson.Unmarshal([]byte("{"+strings.Join(parts, ",")+"}"), msg); err != nil {
			b.Fatal(err)
		}
		payload, _ := proto.Marshal(msg)
		var h sr.ConfluentHeader
		framed, _ := h.AppendEncode(nil, out.ID, []int{0})
		return append(framed, payload...)
	})
}

// BenchmarkConvertTypedJSON converts JSON Schema records.
func BenchmarkConvertTypedJSON(b *testing.B) {
	props := map[string]string{}
	value := map[string]any{}
	for i := range 10 {
		props[fmt.Sprintf("s%d", i)] = `{"type":"string"}`
		value[fmt.Sprintf("s%d", i)] = strings.Repeat(string(rune('a'+i)), 70)
	}
	for i := range 5 {
		props[fmt.Sprintf("l%d", i)] = `{"type":"integer"}`
		value[fmt.Sprintf("l%d", i)] = int64(i) << 40
	}
	for i := range 3 {
		props[fmt.Sprintf("d%d", i)] = `{"type":"number"}`
		value[fmt.Sprintf("d%d", i)] = float64(i) + 0.5
	}
	for i := range 2 {
		props[fmt.Sprintf("b%d", i)] = `{"type":"boolean"}`
		value[fmt.Sprintf("b%d", i)] = i == 0
	}
	var parts []string
	for k, v := range props {
		parts = append(parts, fmt.Sprintf("%q:%s", k, v))
	}
	schema := `{"type":"object","properties":{` + strings.Join(parts, ",") + `}}`
	benchTyped(b, func(e *typedEnv) []byte {
		var out struct{ ID int }
		e.call("POST", "/subjects/orders-value/versions", map[string]any{"schema": schema, "schemaType": "JSON"}, &out)
		payload, err := json.Marshal(value)
		if err != nil {
			b.Fatal(err)
		}
		var h sr.ConfluentHeader
		framed, _ := h.AppendEncode(nil, out.ID, nil)
		return append(framed, payload...)
	})
}

// benchTyped runs cycles over records whose framed value record makes.
func benchTyped(b *testing.B, record func(*typedEnv) []byte) {
	const perObject, perOp = 1000, 16 << 20
	var cpuTotal float64
	var size int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := newTypedEnv(b, map[string]string{ConfigValueMode: ModeSchemaIDPrefix})
		rec := record(e)
		size = len(rec)
		values := make([][]byte, perObject)
		for j := range values {
			values[j] = rec
		}
		for written := 0; written < perOp; written += perObject * len(rec) {
			e.produce(values...)
		}
		l, err := metadata.AcquireJobLease(e.ctx, e.store, "iceberg/orders", "bench", 60e9)
		if err != nil || l == nil {
			b.Fatal(err)
		}
		before := cpuTime()
		b.StartTimer()
		if err := e.conv.cycle(e.ctx, l, e.topic); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpuTotal += (cpuTime() - before).Seconds()
		if n := testutilRows(e); n == 0 {
			b.Fatal("no rows converted")
		}
	}
	b.SetBytes(perOp)
	b.ReportMetric(cpuTotal/(float64(perOp)*float64(b.N)/1e9), "cpu-s/GB")
	b.ReportMetric(float64(size), "record-bytes")
}

// testutilRows is the rows the converter counted as written.
func testutilRows(e *typedEnv) float64 {
	return testutil.ToFloat64(e.conv.metrics.rows.WithLabelValues("orders"))
}
