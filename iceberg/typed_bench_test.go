package iceberg

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/sr"

	"floe/metadata"
)

// benchRecords holds the 1 KiB records of twenty fields (longs, strings,
// doubles, an int, an enum, a boolean, two timestamps, a list of strings)
// and their schemas that package validation's and the agent's produce
// benchmarks use: the typed conversion benchmarks convert the same
// records the agent's ingest benchmark (BenchmarkProduceValidation/*/off)
// takes in.
const benchRecords = "../schemaregistry/validation/testdata/bench"

// BenchmarkConvertTyped converts the 1 KiB records into a typed table, one
// partition, 1,000 records per object; one op is one cycle over 64 MiB of
// records into files of benchFileSize, as BenchmarkConvert's binary one. Each format framed with a
// schema id (schema_id_prefix; Protobuf with message index [0]), and the
// JSON record unframed in json mode (columns inferred). MB/s is the wall
// rate; cpu-s/GB the process CPU time (user + system, all cores) per GB of
// records; MB/cpu-s the rate on one core (1000 / cpu-s/GB); peak-MiB and
// live-MiB the most heap (all of it, and what a GC found live) the cycle
// held above what was live before it (cycleMeter), beside budget-MiB, the
// converter's ConverterConfig.MemoryBytes:
// `go test ./iceberg -run '^$' -bench ConvertTyped -benchtime 3x`.
func BenchmarkConvertTyped(b *testing.B) {
	for _, f := range []struct {
		name, mode, schemaType, schema, record string
		index                                  []int // Protobuf: message indexes
	}{
		{"avro", ModeSchemaIDPrefix, "AVRO", "order.avsc", "order.avro", nil},
		{"protobuf", ModeSchemaIDPrefix, "PROTOBUF", "order.proto", "order.pb", []int{0}},
		{"json_schema", ModeSchemaIDPrefix, "JSON", "order.schema.json", "order.json", nil},
		{"json", ModeJSON, "", "", "order.json", nil},
	} {
		b.Run(f.name, func(b *testing.B) {
			payload := readBenchFile(b, f.record)
			benchTyped(b, f.mode, func(e *typedEnv) []byte {
				if f.schema == "" {
					return payload
				}
				var out struct{ ID int }
				e.call("POST", "/subjects/orders-value/versions",
					map[string]any{"schema": string(readBenchFile(b, f.schema)), "schemaType": f.schemaType}, &out)
				var h sr.ConfluentHeader
				framed, err := h.AppendEncode(nil, out.ID, f.index)
				if err != nil {
					b.Fatal(err)
				}
				return append(framed, payload...)
			})
		})
	}
}

func readBenchFile(b testing.TB, name string) []byte {
	data, err := os.ReadFile(filepath.Join(benchRecords, name))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// benchTyped runs cycles, each of its own typed env (topic configs
// value mode mode), over records whose value record makes.
func benchTyped(b *testing.B, mode string, record func(*typedEnv) []byte) {
	const perObject, perOp = 1000, 64 << 20
	var m cycleMeter
	var size int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := newTypedEnv(b, map[string]string{ConfigValueMode: mode})
		e.conv.cfg.TargetFileSize = *benchFileSize
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
		m.measure(b, func() error { return e.conv.cycle(e.ctx, l, e.topic) })
		if rows := testutil.ToFloat64(e.conv.metrics.rows.WithLabelValues("orders")); rows < perOp/float64(len(rec)) {
			b.Fatalf("%v rows converted, want %d MiB of records", rows, perOp>>20)
		}
		if n := testutil.CollectAndCount(e.conv.metrics.dlq); n != 0 {
			b.Fatalf("records went to the dead-letter table (%d reasons)", n)
		}
		m.budget = e.conv.cfg.MemoryBytes()
	}
	b.SetBytes(perOp)
	m.report(b, perOp)
	b.ReportMetric(float64(size), "record-bytes")
}
