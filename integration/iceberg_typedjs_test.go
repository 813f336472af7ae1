package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// produceTypedOrders produces n orders of typedOrderSchema, framed with
// the id the schema gets under topic's value subject, one by one to
// partition 0, and returns each order's row line by offset.
func produceTypedOrders(t *testing.T, ctx context.Context, cl *kgo.Client, registry, topic string, from, n int) map[int64]string {
	t.Helper()
	rc, err := sr.NewClient(sr.URLs("http://" + registry))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rc.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: typedOrderSchema, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	schema := avro.MustParse(typedOrderSchema)
	var serde sr.Serde
	serde.Register(ss.ID, typedOrder{}, sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schema, v) }))
	placed := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	want := map[int64]string{}
	for i := from; i < from+n; i++ {
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
		v, err := serde.Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: v}).First()
		if err != nil {
			t.Fatal(err)
		}
		want[r.Offset] = o.row(r.Offset)
	}
	return want
}

// TestIcebergTypedJS: a typed Avro table (nested record, list, map,
// optional and logical-type fields) read by the npm readers, iceberg-js
// through floe's REST catalog and icebird over the manifests and Parquet
// files, gives every row as iceberg-go's REST scan does and as produced.
func TestIcebergTypedJS(t *testing.T) {
	node, dir := npmInstall(t, "icebergjs")
	ctx := testContext(t, 2*time.Minute)
	dev := startFloe(t, "dev", "--data-dir", t.TempDir(), "--iceberg-interval", "300ms")
	const topic = "typed.js"
	createTableTopic(t, ctx, dev.Addr, topic, map[string]*string{
		"floe.iceberg.enabled": ptr("true"), "floe.iceberg.value.mode": ptr("schema_id_prefix")})
	cl, err := kgo.NewClient(kgo.SeedBrokers(dev.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 30
	want := produceTypedOrders(t, ctx, cl, dev.RegistryAddr, topic, 0, n)
	cat, err := rest.NewCatalog(ctx, "floe", "http://"+dev.HTTPAddr+"/iceberg")
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := waitTyped(t, ctx, cat, "typed_js", n, -1)
	goRows := typedRows(t, ctx, tbl)

	cmd := exec.CommandContext(ctx, node, "typed.mjs", "http://"+dev.HTTPAddr+"/iceberg", "floe", "typed_js")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node typed.mjs: %v\n%s", err, stderr.Bytes())
	}
	defer func() {
		if t.Failed() {
			t.Logf("typed.mjs printed %.4000s", out)
		}
	}()
	jsRows, snapshot := typedJSRows(t, out)
	if snapshot != tbl.CurrentSnapshot().SnapshotID {
		t.Errorf("iceberg-js read snapshot %d, iceberg-go %d", snapshot, tbl.CurrentSnapshot().SnapshotID)
	}
	if len(jsRows) != n || len(goRows) != n {
		t.Fatalf("icebird read %d rows, iceberg-go %d, want %d", len(jsRows), len(goRows), n)
	}
	for off, w := range want {
		if goRows[off] != w {
			t.Errorf("iceberg-go offset %d\n got %s\nwant %s", off, goRows[off], w)
		}
		if jsRows[off] != w {
			t.Errorf("icebird offset %d\n got %s\nwant %s", off, jsRows[off], w)
		}
	}
}

// typedJSRows turns typed.mjs's output for a table of typedOrderSchema
// into typedOrder.row lines by offset (a row twice: fatal), and the
// snapshot it read. How icebird renders what Go compares otherwise:
// decimals are doubles (value × 10^-scale; rounded back to the scale here,
// exact for precision 12), timestamps µs as strings (typed.mjs's parser),
// dates days since the epoch, structs objects, maps objects.
func typedJSRows(t *testing.T, out []byte) (map[int64]string, int64) {
	t.Helper()
	var s struct {
		Snapshot string
		Rows     []json.RawMessage
	}
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("typed.mjs output: %v\n%s", err, out)
	}
	rows := map[int64]string{}
	for _, raw := range s.Rows {
		var r struct {
			Kafka struct {
				Offset string
			} `json:"_kafka"`
			ID       string
			Item     string
			Qty      int32
			Price    float64
			Paid     bool
			Amount   float64
			Placed   string
			Day      int
			Status   string
			Tags     []string
			Attrs    map[string]string
			Note     *string
			Customer typedCustomer
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("typed.mjs row %s: %v", raw, err)
		}
		off, err1 := strconv.ParseInt(r.Kafka.Offset, 10, 64)
		id, err2 := strconv.ParseInt(r.ID, 10, 64)
		placed, err3 := strconv.ParseInt(r.Placed, 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("typed.mjs row %s: %v %v %v", raw, err1, err2, err3)
		}
		amount, _ := new(big.Rat).SetString(strconv.FormatFloat(math.Round(r.Amount*100)/100, 'f', 2, 64))
		o := typedOrder{ID: id, Item: r.Item, Qty: r.Qty, Price: r.Price, Paid: r.Paid, Amount: amount,
			Placed: time.UnixMicro(placed).UTC(), Day: time.Unix(int64(r.Day)*86400, 0).UTC(), Status: r.Status,
			Tags: r.Tags, Attrs: r.Attrs, Note: r.Note, Customer: r.Customer}
		if _, dup := rows[off]; dup {
			t.Fatalf("icebird read offset %d twice", off)
		}
		rows[off] = o.row(off)
	}
	snap, err := strconv.ParseInt(s.Snapshot, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return rows, snap
}
