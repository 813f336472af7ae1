package iceberg

import (
	"fmt"
	"strings"
	"testing"

	"floe/metadata"
)

// BenchmarkConvertTypedAvro is BenchmarkConvert for a typed table: 1 KiB
// Avro records of 20 fields (10 strings, 5 longs, 3 doubles, 2 booleans)
// framed with a schema id, one partition, 1,000 records per object; one op
// is one cycle over 16 MiB of records. `go test ./iceberg -run X -bench
// ConvertTyped -benchtime 3x`.
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
	const perObject, perOp = 1000, 16 << 20
	var cpuTotal float64
	var size int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := newTypedEnv(b, map[string]string{ConfigValueMode: ModeSchemaIDPrefix})
		id := e.register(schema)
		rec := frame(b, id, schema, value)
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
	}
	b.SetBytes(perOp)
	b.ReportMetric(cpuTotal/(float64(perOp)*float64(b.N)/1e9), "cpu-s/GB")
	b.ReportMetric(float64(size), "record-bytes")
}
