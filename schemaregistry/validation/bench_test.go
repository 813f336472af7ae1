package validation_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	havro "github.com/hamba/avro/v2"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"floe/metadata/sqlite"
	"floe/schemaregistry"
	"floe/schemaregistry/avro"
	"floe/schemaregistry/format"
	"floe/schemaregistry/jsonschema"
	"floe/schemaregistry/protobuf"
	"floe/schemaregistry/validation"
)

// The speed of broker-side validation (issue 27's "Speed"): each format's
// Validate alone on one 1 KiB record of twenty fields, and the registry
// look-ups Check makes per record, from one agent's registry. The agent's
// produce benchmarks (agent/validation_bench_test.go) validate the same
// records, read from testdata/bench: regenerate them with
//
//	go test ./schemaregistry/validation -run TestBenchRecords -update

var update = flag.Bool("update", false, "rewrite testdata/bench from benchValue")

// benchFormat is one format's schema and record in testdata/bench.
type benchFormat struct {
	name       string // avro, json, protobuf
	schemaType string // the registry's schemaType
	schemaFile string
	recordFile string
	f          format.Format
}

var benchFormats = []benchFormat{
	{"avro", "AVRO", "order.avsc", "order.avro", avro.New()},
	{"json", "JSON", "order.schema.json", "order.json", jsonschema.New()},
	{"protobuf", "PROTOBUF", "order.proto", "order.pb", protobuf.New()},
}

// benchRecordSize is the size of each format's record: the notes field
// pads it.
const benchRecordSize = 1024

// benchValue is the record, twenty fields, notes padded to n bytes.
func benchValue(n int) map[string]any {
	return map[string]any{
		"id": int64(1234567890123), "customer_id": int64(987654321), "customer": "Ada Lovelace",
		"email": "ada.lovelace@example.com", "phone": "+44 20 7946 0958", "street": "12 St James's Square",
		"city": "London", "zip": "SW1Y 4JH", "country": "GB", "currency": "GBP",
		"amount": 1234.56, "tax": 246.91, "quantity": int32(3), "sku": "ANL-ENG-0001-BLUE",
		"status": "PAID", "gift": true, "created_at": int64(1733480000000), "updated_at": int64(1733480123456),
		"tags":  []any{"priority", "gift-wrap", "fragile", "eu-shipping"},
		"notes": strings.Repeat("n", n),
	}
}

// encodeBench encodes v in format name.
func encodeBench(name string, s format.Schema, v map[string]any) ([]byte, error) {
	switch name {
	case "avro":
		return havro.Marshal(s.(*avro.Schema).Avro(), v)
	case "json":
		return json.Marshal(v)
	}
	md, err := s.(*protobuf.Schema).Message(nil)
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	msg := dynamicpb.NewMessage(md)
	if err := protojson.Unmarshal(js, msg); err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(msg)
}

// benchRecord builds format bf's record of benchRecordSize bytes.
func benchRecord(t testing.TB, bf benchFormat, s format.Schema) []byte {
	t.Helper()
	for n := 0; n < benchRecordSize; n++ {
		b, err := encodeBench(bf.name, s, benchValue(n))
		if err != nil {
			t.Fatalf("%s: %v", bf.name, err)
		}
		if len(b) >= benchRecordSize {
			return b
		}
	}
	t.Fatalf("%s: no padding makes a %d-byte record", bf.name, benchRecordSize)
	return nil
}

func readBench(t testing.TB, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "bench", file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBenchRecords checks the benchmarks' records: each is its format's
// encoding of benchValue, benchRecordSize bytes, and validates.
func TestBenchRecords(t *testing.T) {
	for _, bf := range benchFormats {
		s, err := bf.f.Parse(string(readBench(t, bf.schemaFile)), nil)
		if err != nil {
			t.Fatalf("%s: %v", bf.schemaFile, err)
		}
		want := benchRecord(t, bf, s)
		if *update {
			if err := os.WriteFile(filepath.Join("testdata", "bench", bf.recordFile), want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got := readBench(t, bf.recordFile)
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not benchValue's encoding (run with -update)", bf.recordFile)
		}
		if len(got) != benchRecordSize {
			t.Errorf("%s: %d bytes, want %d", bf.recordFile, len(got), benchRecordSize)
		}
		if err := s.Validate(nil, got); err != nil {
			t.Errorf("%s does not validate: %v", bf.recordFile, err)
		}
	}
}

// BenchmarkValidate is each format's decoder alone on the 1 KiB record:
// what full mode adds to a record's check, at most.
func BenchmarkValidate(b *testing.B) {
	for _, bf := range benchFormats {
		b.Run(bf.name, func(b *testing.B) {
			s, err := bf.f.Parse(string(readBench(b, bf.schemaFile)), nil)
			if err != nil {
				b.Fatal(err)
			}
			rec := readBench(b, bf.recordFile)
			b.SetBytes(int64(len(rec)))
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Validate(nil, rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchRegistry is a registry on SQLite holding the Avro order schema
// under subject orders-value.
func benchRegistry(b *testing.B) (*schemaregistry.Server, int) {
	b.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "meta.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	reg := schemaregistry.New(schemaregistry.Config{Store: store})
	body, _ := json.Marshal(map[string]string{"schema": string(readBench(b, "order.avsc"))})
	w := httptest.NewRecorder()
	reg.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/subjects/orders-value/versions", bytes.NewReader(body)))
	var created struct{ ID int }
	if err := json.Unmarshal(w.Body.Bytes(), &created); err != nil || w.Code != http.StatusOK {
		b.Fatalf("register: %d %s", w.Code, w.Body)
	}
	return reg, created.ID
}

// BenchmarkLookups are the registry look-ups from one agent: SchemaByID
// and SubjectHasID warm (what Check asks per record), the whole of Check
// in id mode, and a client's GET /schemas/ids/{id} served by the handler
// (no network). ns/op is the inverse of look-ups per second on one core.
func BenchmarkLookups(b *testing.B) {
	reg, id := benchRegistry(b)
	ctx := context.Background()
	rec := frame(id, nil, readBench(b, "order.avro"))
	b.Run("SchemaByID", func(b *testing.B) {
		if _, err := reg.SchemaByID(ctx, id); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reg.SchemaByID(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SubjectHasID", func(b *testing.B) {
		if ok, err := reg.SubjectHasID(ctx, "orders-value", id); !ok || err != nil {
			b.Fatal(ok, err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if ok, err := reg.SubjectHasID(ctx, "orders-value", id); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("CheckID", func(b *testing.B) {
		rule := validation.Rule{Mode: validation.ID}
		b.ReportAllocs()
		for b.Loop() {
			if err := validation.Check(ctx, reg, "orders", false, rule, rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("HTTP", func(b *testing.B) {
		path := "/schemas/ids/" + strconv.Itoa(id)
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			reg.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
			if w.Code != http.StatusOK {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
}
