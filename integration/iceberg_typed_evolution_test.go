package integration

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// TestIcebergTypedEvolution: three Avro schema versions of one topic's
// values registered under the subject's default compatibility, v1 {id
// int, name}, v2 adding an optional note, v3 promoting id to long and
// renaming name to customer with "name" among its aliases, and records of
// the three interleaved, through floe dev: the table has the union (id
// long, name, note; no customer column), v1 rows read note as null, v3's
// customer fills name. A v4 registered under compatibility NONE whose id
// is a string lands, record by record, in the dead-letter table with
// reason incompatible_schema, and the table goes on.
func TestIcebergTypedEvolution(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	dev := startFloe(t, "dev", "--data-dir", t.TempDir(), "--iceberg-interval", "300ms")
	const topic, subject = "typed.evo", "typed.evo-value"
	rc, err := sr.NewClient(sr.URLs("http://" + dev.RegistryAddr))
	if err != nil {
		t.Fatal(err)
	}
	versions := []string{
		`{"type":"record","name":"O","fields":[{"name":"id","type":"int"},{"name":"name","type":"string"}]}`,
		`{"type":"record","name":"O","fields":[{"name":"id","type":"int"},{"name":"name","type":"string"},
			{"name":"note","type":["null","string"],"default":null}]}`,
		`{"type":"record","name":"O","fields":[{"name":"id","type":"long"},{"name":"customer","aliases":["name"],"type":"string"},
			{"name":"note","type":["null","string"],"default":null}]}`,
		`{"type":"record","name":"O","fields":[{"name":"id","type":"string"},{"name":"customer","aliases":["name"],"type":"string"},
			{"name":"note","type":["null","string"],"default":null}]}`,
	}
	serdes := make([]*sr.Serde, len(versions))
	for i, s := range versions {
		if i == 3 {
			if r := rc.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, subject); len(r) != 1 || r[0].Err != nil {
				t.Fatalf("compatibility NONE: %+v", r)
			}
		}
		ss, err := rc.CreateSchema(ctx, subject, sr.Schema{Schema: s, Type: sr.TypeAvro})
		if err != nil {
			t.Fatalf("register v%d: %v", i+1, err)
		}
		schema := avro.MustParse(s)
		serdes[i] = new(sr.Serde)
		serdes[i].Register(ss.ID, map[string]any{}, sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schema, v) }))
	}
	createTableTopic(t, ctx, dev.Addr, topic, map[string]*string{
		"floe.iceberg.enabled": ptr("true"), "floe.iceberg.value.mode": ptr("schema_id_prefix")})
	cl, err := kgo.NewClient(kgo.SeedBrokers(dev.Addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	var want []string
	dead := map[int64]bool{}
	for i := range 36 {
		v := i % 3
		if i == 13 || i == 29 {
			v = 3
		}
		var value map[string]any
		line := ""
		switch v {
		case 0:
			value = map[string]any{"id": i, "name": fmt.Sprint("n", i)}
			line = fmt.Sprintf(`"id":%d,"name":"n%d","note":null`, i, i)
		case 1:
			value = map[string]any{"id": i, "name": fmt.Sprint("n", i), "note": fmt.Sprint("v2 ", i)}
			if i%2 == 0 {
				value["note"] = nil
			}
			line = fmt.Sprintf(`"id":%d,"name":"n%d","note":"v2 %d"`, i, i, i)
			if i%2 == 0 {
				line = fmt.Sprintf(`"id":%d,"name":"n%d","note":null`, i, i)
			}
		case 2:
			id := int64(i) << 40
			value = map[string]any{"id": id, "customer": fmt.Sprint("c", i), "note": fmt.Sprint("v3 ", i)}
			line = fmt.Sprintf(`"id":%d,"name":"c%d","note":"v3 %d"`, id, i, i)
		case 3:
			value = map[string]any{"id": fmt.Sprint("s", i), "customer": "x"}
		}
		b, err := serdes[v].Encode(value)
		if err != nil {
			t.Fatal(err)
		}
		r, err := cl.ProduceSync(ctx, &kgo.Record{Value: b}).First()
		if err != nil {
			t.Fatal(err)
		}
		if v == 3 {
			dead[r.Offset] = true
			continue
		}
		want = append(want, fmt.Sprintf(`{"_kafka":{"offset":%d},%s}`, r.Offset, line))
	}

	cat, err := rest.NewCatalog(ctx, "floe", "http://"+dev.HTTPAddr+"/iceberg")
	if err != nil {
		t.Fatal(err)
	}
	tbl, dlq := waitTyped(t, ctx, cat, "typed_evo", len(want), len(dead))
	checkParquetFieldIDs(t, ctx, tbl)
	var cols []string
	for _, f := range tbl.Schema().Fields() {
		if f.Name != "_kafka" {
			cols = append(cols, f.Name+" "+f.Type.String())
		}
	}
	if got := strings.Join(cols, ", "); got != "id long, name string, note string" {
		t.Errorf("value columns %s, want id long, name string, note string", got)
	}
	got := strings.Split(typedJSON(t, ctx, tbl), "\n")
	sort.Slice(got, func(i, j int) bool { return jsonOffset(got[i]) < jsonOffset(got[j]) })
	if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w {
		t.Errorf("iceberg-go:\n%s\nwant\n%s", g, w)
	}
	for k, n := range typedKeys(ctx, cat, topic+"__dlq", "partition", "offset") {
		if !dead[k.off] || n != 1 {
			t.Errorf("dead letter %v %d times, want %v once", k, n, dead)
		}
	}
	for _, line := range strings.Split(typedJSON(t, ctx, dlq), "\n") {
		var r struct {
			Offset int64
			Error  string
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if !dead[r.Offset] || !strings.HasPrefix(r.Error, "incompatible_schema:") {
			t.Errorf("dead letter %s, want offsets %v with incompatible_schema", line, dead)
		}
	}
	if n := dev.metric(t, `floe_iceberg_dlq_records_total{reason="incompatible_schema",table="typed_evo"}`); n != float64(len(dead)) {
		t.Errorf("floe_iceberg_dlq_records_total incompatible_schema %v, want %d", n, len(dead))
	}
}

// jsonOffset is the _kafka.offset of a typedJSON line.
func jsonOffset(line string) int64 {
	var r struct {
		Kafka struct{ Offset int64 } `json:"_kafka"`
	}
	_ = json.Unmarshal([]byte(line), &r)
	return r.Kafka.Offset
}
