package integration

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// setTypedConfigs sets topic configs with IncrementalAlterConfigs.
func setTypedConfigs(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, kv ...string) {
	t.Helper()
	var alter []kadm.AlterConfig
	for i := 0; i < len(kv); i += 2 {
		alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: kv[i], Value: ptr(kv[i+1])})
	}
	res, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, alter, topic)
	if err == nil {
		_, err = res.On(topic, nil)
	}
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		t.Fatalf("alter %s %v: %v", topic, kv, err)
	}
}

// checkTypedOrders fails unless the typed table of topic holds exactly
// the rows of want, each once, and its dead-letter table exactly the
// offsets of dead (partition 0), each once.
func checkTypedOrders(t *testing.T, ctx context.Context, cat catalog.Catalog, topic string, want map[int64]string, dead map[int64]bool) {
	t.Helper()
	tbl, err := cat.LoadTable(ctx, table.Identifier{"floe", strings.ReplaceAll(topic, ".", "_")})
	if err != nil {
		t.Fatal(err)
	}
	got := typedRows(t, ctx, tbl)
	for off, w := range want {
		if got[off] != w {
			t.Errorf("offset %d\n got %s\nwant %s", off, got[off], w)
		}
	}
	for k, n := range typedKeys(ctx, cat, topic, "_kafka.partition", "_kafka.offset") {
		if _, ok := want[k.off]; !ok || k.p != 0 || n != 1 {
			t.Errorf("%v in the table %d times, want the produced rows of partition 0 once", k, n)
		}
	}
	keys := typedKeys(ctx, cat, topic+"__dlq", "partition", "offset")
	if len(keys) != len(dead) {
		t.Errorf("dead letters %v, want offsets %v of partition 0", keys, dead)
	}
	for k, n := range keys {
		if k.p != 0 || !dead[k.off] || n != 1 {
			t.Errorf("dead letter %v %d times, want offsets %v of partition 0 once", k, n, dead)
		}
	}
}

// produceUnframed produces values unframed to partition 0 and returns their
// offsets.
func produceUnframed(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, values ...string) map[int64]bool {
	t.Helper()
	out := map[int64]bool{}
	for _, v := range values {
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}).First()
		if err != nil {
			t.Fatal(err)
		}
		out[r.Offset] = true
	}
	return out
}

// TestIcebergTypedBackfill: framed Avro records and unframed ones produced
// to a topic before floe.iceberg.enabled=true and
// floe.iceberg.value.mode=schema_id_prefix are turned on (no table until
// then) are all converted from the log start once they are: every framed
// record a row, every unframed one a dead letter, each once; records
// produced afterwards follow.
func TestIcebergTypedBackfill(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	dev := startFloe(t, "dev", "--data-dir", t.TempDir(), "--iceberg-interval", "300ms")
	const topic = "typed.bf"
	createTableTopic(t, ctx, dev.Addr, topic, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(dev.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	want := produceTypedOrders(t, ctx, cl, dev.RegistryAddr, topic, 0, 25)
	dead := produceUnframed(t, ctx, cl, topic, "unframed before")
	maps.Copy(want, produceTypedOrders(t, ctx, cl, dev.RegistryAddr, topic, 25, 5))
	time.Sleep(time.Second) // cycles run; the topic is not enabled
	if resp, err := http.Get("http://" + dev.HTTPAddr + "/iceberg/v1/namespaces/floe/tables/typed_bf"); err != nil || resp.StatusCode != 404 {
		t.Fatalf("table of a topic not enabled: %v %v", resp.Status, err)
	}

	setTypedConfigs(t, ctx, cl, topic, "floe.iceberg.enabled", "true", "floe.iceberg.value.mode", "schema_id_prefix")
	cat, err := rest.NewCatalog(ctx, "floe", "http://"+dev.HTTPAddr+"/iceberg")
	if err != nil {
		t.Fatal(err)
	}
	waitTyped(t, ctx, cat, "typed_bf", len(want), len(dead))
	checkTypedOrders(t, ctx, cat, topic, want, dead)

	maps.Copy(want, produceTypedOrders(t, ctx, cl, dev.RegistryAddr, topic, 30, 5))
	maps.Copy(dead, produceUnframed(t, ctx, cl, topic, "unframed after"))
	waitTyped(t, ctx, cat, "typed_bf", len(want), len(dead))
	checkTypedOrders(t, ctx, cat, topic, want, dead)
	if n := dev.metric(t, `floe_iceberg_cycles_total{result="failed",table="typed_bf"}`); n != 0 {
		t.Errorf("%v failed cycles", n)
	}
}

// TestIcebergTypedModeChange: changing the mode of a topic whose table
// exists, as the README says: the table is left alone (its rows, its
// layout; cycles counted foreign) while records keep coming; dropped
// through the REST catalog, the next cycle creates it in the new layout
// and backfills it from the log start, every committed record once in the
// typed table or its dead-letter table. Back to binary likewise (both
// tables dropped): every record once in the binary table.
func TestIcebergTypedModeChange(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	dataDir := t.TempDir()
	dev := startFloe(t, "dev", "--data-dir", dataDir, "--iceberg-interval", "300ms")
	const topic, name = "typed.mc", "typed_mc"
	createTableTopic(t, ctx, dev.Addr, topic, map[string]*string{"floe.iceberg.enabled": ptr("true")})
	cl, err := kgo.NewClient(kgo.SeedBrokers(dev.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cat, err := rest.NewCatalog(ctx, "floe", "http://"+dev.HTTPAddr+"/iceberg")
	if err != nil {
		t.Fatal(err)
	}
	// binaryOffsets waits until the binary table holds n rows and returns
	// how often it holds each offset of partition 0.
	binaryOffsets := func(n int) map[int64]int {
		t.Helper()
		var last string
		for ctx.Err() == nil {
			rows, count, err := restScan(t, ctx, dev.HTTPAddr, name)
			if err == nil && count == n {
				out := map[int64]int{}
				for k := range rows {
					if k.p == 0 {
						out[k.off]++
					}
				}
				return out
			}
			last = fmt.Sprint(count, " rows ", err)
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("binary table: %s, want %d rows", last, n)
		return nil
	}
	want := produceTypedOrders(t, ctx, cl, dev.RegistryAddr, topic, 0, 20)
	dead := produceUnframed(t, ctx, cl, topic, "unframed")
	if got := binaryOffsets(21); len(got) != 21 {
		t.Fatalf("binary table offsets %v", got)
	}

	// foreignAfter waits until more than n cycles found the table's
	// layout other than the topic asks: the converter then converts by
	// the topic's new configs (none in flight under the old ones).
	const foreign = `floe_iceberg_cycles_total{result="foreign",table="typed_mc"}`
	foreignAfter := func(n float64) float64 {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if m := dev.metric(t, foreign); m > n {
				return m
			}
		}
		t.Fatalf("no more than %v foreign cycles after the mode changed", n)
		return 0
	}

	// Typed mode asked for: the binary table stays as it is.
	setTypedConfigs(t, ctx, cl, topic, "floe.iceberg.value.mode", "schema_id_prefix")
	n := foreignAfter(0)
	maps.Copy(want, produceTypedOrders(t, ctx, cl, dev.RegistryAddr, topic, 20, 10))
	foreignAfter(n + 1)
	if got := binaryOffsets(21); len(got) != 21 {
		t.Fatalf("binary table offsets %v after the mode changed", got)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"floe", name})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tbl.Schema().FindFieldByName("_kafka"); ok {
		t.Fatalf("binary table became typed: %s", tbl.Schema())
	}

	// Dropped: recreated typed, from the log start.
	dropTables(t, ctx, dataDir, name)
	waitTyped(t, ctx, cat, name, len(want), len(dead))
	checkTypedOrders(t, ctx, cat, topic, want, dead)
	maps.Copy(want, produceTypedOrders(t, ctx, cl, dev.RegistryAddr, topic, 30, 5))
	waitTyped(t, ctx, cat, name, len(want), len(dead))
	checkTypedOrders(t, ctx, cat, topic, want, dead)

	// Back to binary: both tables dropped, the binary table holds every
	// record once.
	n = dev.metric(t, foreign)
	setTypedConfigs(t, ctx, cl, topic, "floe.iceberg.value.mode", "binary")
	foreignAfter(n)
	dropTables(t, ctx, dataDir, name, name+"__dlq")
	all := len(want) + len(dead)
	got := binaryOffsets(all)
	for off := range int64(all) {
		if got[off] != 1 {
			t.Errorf("offset %d %d times in the binary table", off, got[off])
		}
	}
	if n := dev.metric(t, `floe_iceberg_cycles_total{result="failed",table="typed_mc"}`); n != 0 {
		t.Errorf("%v failed cycles", n)
	}
}

// dropTables drops tables of namespace floe through iceberg-go's SQL
// catalog on floe dev's metadata database (SQLite in dataDir), as an
// operator drops a table: floe's REST catalog is read-only.
func dropTables(t *testing.T, ctx context.Context, dataDir string, names ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "meta.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat, err := sqlcat.NewCatalog("floe", db, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + filepath.Join(dataDir, "objects", "iceberg")})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := cat.DropTable(ctx, table.Identifier{"floe", n}); err != nil {
			t.Fatalf("drop %s: %v", n, err)
		}
	}
}
