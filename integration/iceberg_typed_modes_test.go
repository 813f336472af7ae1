package integration

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
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
