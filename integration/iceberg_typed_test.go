package integration

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// typedOrderSchema has a field of every kind the typed table maps.
const typedOrderSchema = `{"type":"record","name":"TypedOrder","namespace":"shop","fields":[
	{"name":"id","type":"long"},
	{"name":"item","type":"string"},
	{"name":"qty","type":"int"},
	{"name":"price","type":"double"},
	{"name":"paid","type":"boolean"},
	{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}},
	{"name":"placed","type":{"type":"long","logicalType":"timestamp-millis"}},
	{"name":"day","type":{"type":"int","logicalType":"date"}},
	{"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","SHIPPED"]}},
	{"name":"tags","type":{"type":"array","items":"string"}},
	{"name":"attrs","type":{"type":"map","values":"string"}},
	{"name":"note","type":["null","string"],"default":null},
	{"name":"customer","type":{"type":"record","name":"Customer","fields":[{"name":"name","type":"string"},{"name":"vip","type":"boolean"}]}}]}`

type typedCustomer struct {
	Name string `avro:"name" json:"name"`
	VIP  bool   `avro:"vip" json:"vip"`
}

type typedOrder struct {
	ID       int64             `avro:"id"`
	Item     string            `avro:"item"`
	Qty      int32             `avro:"qty"`
	Price    float64           `avro:"price"`
	Paid     bool              `avro:"paid"`
	Amount   *big.Rat          `avro:"amount"`
	Placed   time.Time         `avro:"placed"`
	Day      time.Time         `avro:"day"`
	Status   string            `avro:"status"`
	Tags     []string          `avro:"tags"`
	Attrs    map[string]string `avro:"attrs"`
	Note     *string           `avro:"note"`
	Customer typedCustomer     `avro:"customer"`
}

// row is the order as the table's row is compared: one line of text.
func (o typedOrder) row(offset int64) string {
	note := "null"
	if o.Note != nil {
		note = *o.Note
	}
	keys := make([]string, 0, len(o.Attrs))
	for k := range o.Attrs {
		keys = append(keys, k+"="+o.Attrs[k])
	}
	sort.Strings(keys)
	return fmt.Sprintf("%d id=%d item=%s qty=%d price=%g paid=%v amount=%s placed=%d day=%s status=%s tags=%v attrs=%v note=%s customer=%s/%v",
		offset, o.ID, o.Item, o.Qty, o.Price, o.Paid, o.Amount.FloatString(2), o.Placed.UnixMicro(), o.Day.Format(time.DateOnly),
		o.Status, o.Tags, keys, note, o.Customer.Name, o.Customer.VIP)
}

// TestIcebergTypedAvro: a topic with floe.iceberg.value.mode=schema_id_prefix
// whose values are produced with franz-go's sr serde against floe dev's
// registry becomes a table with a typed column per Avro field: iceberg-go
// through the REST catalog and DuckDB over the snapshot's Parquet files
// read every field as produced; an unframed record and one with an
// unregistered id land in the dead-letter table, and nothing else does:
// an aborted transaction's records are in neither.
func TestIcebergTypedAvro(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	dev := startFloe(t, "dev", "--data-dir", t.TempDir(), "--iceberg-interval", "300ms")
	const topic = "typed.orders"
	serde := avroSerde(t, ctx, dev.RegistryAddr, topic)
	createTableTopic(t, ctx, dev.Addr, topic, map[string]*string{
		"floe.iceberg.enabled": ptr("true"), "floe.iceberg.value.mode": ptr("schema_id_prefix")})

	cl, err := kgo.NewClient(kgo.SeedBrokers(dev.Addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	placed := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	want := map[int64]string{}
	const n = 40
	for i := range n {
		note := fmt.Sprintf("note %d", i)
		o := typedOrder{ID: int64(i) << 33, Item: fmt.Sprintf("item-%d", i), Qty: int32(i), Price: float64(i) + 0.25, Paid: i%2 == 0,
			Amount: big.NewRat(int64(i)*100+7, 100), Placed: placed.Add(time.Duration(i) * time.Millisecond),
			Day: placed.AddDate(0, 0, i).Truncate(24 * time.Hour), Status: []string{"NEW", "SHIPPED"}[i%2],
			Tags: []string{"a", fmt.Sprint(i)}, Attrs: map[string]string{"k": fmt.Sprint(i)}, Customer: typedCustomer{Name: "c", VIP: i%3 == 0}}
		if i%4 == 0 {
			o.Note = &note
		}
		v, err := serde.Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		r, err := cl.ProduceSync(ctx, &kgo.Record{Value: v}).First()
		if err != nil {
			t.Fatal(err)
		}
		want[r.Offset] = o.row(r.Offset)
	}
	// An aborted transaction's records, framed or not, are in neither table.
	txn, err := kgo.NewClient(kgo.SeedBrokers(dev.Addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID("typed-abort"))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	aborted, err := serde.Encode(typedOrder{ID: -1, Item: "aborted", Amount: big.NewRat(1, 1), Placed: placed, Day: placed.Truncate(24 * time.Hour),
		Status: "NEW", Customer: typedCustomer{Name: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Value: aborted}, &kgo.Record{Value: []byte("aborted, not framed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	bad := map[int64]string{}
	wantReasons := map[int64]string{}
	for i, v := range [][]byte{[]byte("not framed"), {0, 0, 1, 0x86, 0xa0, 2}} {
		r, err := cl.ProduceSync(ctx, &kgo.Record{Value: v}).First()
		if err != nil {
			t.Fatal(err)
		}
		bad[r.Offset] = string(v)
		wantReasons[r.Offset] = []string{"unframed", "unknown_schema"}[i]
	}

	cat, err := rest.NewCatalog(ctx, "floe", "http://"+dev.HTTPAddr+"/iceberg")
	if err != nil {
		t.Fatal(err)
	}
	tbl, dlq := waitTyped(t, ctx, cat, "typed_orders", n, len(bad))
	checkParquetFieldIDs(t, ctx, tbl)
	checkParquetFieldIDs(t, ctx, dlq)

	got := typedRows(t, ctx, tbl)
	for off, w := range want {
		if got[off] != w {
			t.Errorf("offset %d\n got %s\nwant %s", off, got[off], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("table has %d rows, want %d", len(got), len(want))
	}
	at, err := dlq.Scan(table.WithSelectedFields("offset", "error")).ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	reasons := map[int64]string{}
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		offs := rec.Column(rec.Schema().FieldIndices("offset")[0]).(*array.Int64)
		errs := rec.Column(rec.Schema().FieldIndices("error")[0]).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			reasons[offs.Value(i)] = strings.SplitN(errs.Value(i), ":", 2)[0]
		}
	}
	if fmt.Sprint(reasons) != fmt.Sprint(wantReasons) {
		t.Errorf("dead letters %v, want %v", reasons, wantReasons)
	}

	// DuckDB, over the same snapshot's Parquet files.
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files := tableDataFiles(t, ctx, tbl)
	rows, err := db.QueryContext(ctx, `SELECT _kafka.offset, id, item, qty, price, paid, CAST(amount AS VARCHAR), epoch_us(placed),
		CAST(day AS VARCHAR), status, CAST(to_json(tags) AS VARCHAR), CAST(to_json(map_entries(attrs)) AS VARCHAR), note, customer.name, customer.vip FROM `+readParquet(duckdbPathList(files)))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var off, id, placedUs int64
		var qty int32
		var price float64
		var paid, vip bool
		var item, amount, day, status, tags, attrs, name string
		var note sql.NullString
		if err := rows.Scan(&off, &id, &item, &qty, &price, &paid, &amount, &placedUs, &day, &status, &tags, &attrs, &note, &name, &vip); err != nil {
			t.Fatal(err)
		}
		var tagList []string
		_ = json.Unmarshal([]byte(tags), &tagList)
		var entries []struct{ Key, Value string }
		_ = json.Unmarshal([]byte(attrs), &entries)
		var kv []string
		for _, e := range entries {
			kv = append(kv, e.Key+"="+e.Value)
		}
		noteS := "null"
		if note.Valid {
			noteS = note.String
		}
		line := fmt.Sprintf("%d id=%d item=%s qty=%d price=%g paid=%v amount=%s placed=%d day=%s status=%s tags=%v attrs=%v note=%s customer=%s/%v",
			off, id, item, qty, price, paid, amount, placedUs, day, status, tagList, kv, noteS, name, vip)
		if line != want[off] {
			t.Errorf("DuckDB offset %d\n got %s\nwant %s", off, line, want[off])
		}
		seen++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen != n {
		t.Errorf("DuckDB read %d rows, want %d", seen, n)
	}
}

// waitTyped waits until the typed table and its dead-letter table hold
// rows and dead records (dead < 0: any, the dead-letter table perhaps
// absent), and returns them.
func waitTyped(t *testing.T, ctx context.Context, cat catalog.Catalog, name string, rows, dead int) (*table.Table, *table.Table) {
	t.Helper()
	count := func(tb *table.Table) int {
		at, err := tb.Scan().ToArrowTable(ctx)
		if err != nil {
			return -1
		}
		defer at.Release()
		return int(at.NumRows())
	}
	var last string
	for ctx.Err() == nil {
		tbl, err1 := cat.LoadTable(ctx, table.Identifier{"floe", name})
		dlq, err2 := cat.LoadTable(ctx, table.Identifier{"floe", name + "__dlq"})
		if dead < 0 && err1 == nil { // no dead letters expected: no such table needed
			if count(tbl) == rows {
				return tbl, nil
			}
		}
		if err1 == nil && err2 == nil {
			n, m := count(tbl), count(dlq)
			if n == rows && (m == dead || dead < 0) {
				return tbl, dlq
			}
			last = fmt.Sprintf("%d rows, %d dead", n, m)
		} else {
			last = fmt.Sprint(err1, err2)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("table %s: %s, want %d rows and %d dead", name, last, rows, dead)
	return nil, nil
}

// typedRows reads the typed order table through iceberg-go into the
// lines typedOrder.row makes, by offset.
func typedRows(t *testing.T, ctx context.Context, tbl *table.Table) map[int64]string {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	out := map[int64]string{}
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		var buf strings.Builder
		if err := array.RecordToJSON(rec, &buf); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var r struct {
				Kafka    struct{ Offset int64 } `json:"_kafka"`
				ID       int64
				Item     string
				Qty      int32
				Price    float64
				Paid     bool
				Amount   string
				Placed   string
				Day      string
				Status   string
				Tags     []string
				Attrs    []struct{ Key, Value string }
				Note     *string
				Customer typedCustomer
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			placed, err := time.Parse("2006-01-02T15:04:05.999999999Z07:00", r.Placed)
			if err != nil {
				t.Fatalf("placed %q: %v", r.Placed, err)
			}
			day, err := time.Parse(time.DateOnly, r.Day)
			if err != nil {
				t.Fatal(err)
			}
			amount, ok := new(big.Rat).SetString(r.Amount)
			if !ok {
				t.Fatalf("amount %q", r.Amount)
			}
			attrs := map[string]string{}
			for _, e := range r.Attrs {
				attrs[e.Key] = e.Value
			}
			o := typedOrder{ID: r.ID, Item: r.Item, Qty: r.Qty, Price: r.Price, Paid: r.Paid, Amount: amount, Placed: placed, Day: day,
				Status: r.Status, Tags: r.Tags, Attrs: attrs, Note: r.Note, Customer: r.Customer}
			out[r.Kafka.Offset] = o.row(r.Kafka.Offset)
		}
	}
	return out
}

// TestIcebergTypedConverterKilled: `floe compactor` killed with SIGKILL
// again and again while framed Avro records of two schema versions (the
// second adds a column and promotes one) and unframed ones are produced:
// afterwards every acknowledged record is exactly once in the typed table
// or, if unframed, in its dead-letter table, and in no other.
func TestIcebergTypedConverterKilled(t *testing.T) {
	e := newCompactorEnv(t)
	ctx := testContext(t, 4*time.Minute)
	const topic = "tcrash"
	rc, err := sr.NewClient(sr.URLs("http://" + e.agent.RegistryAddr))
	if err != nil {
		t.Fatal(err)
	}
	v1 := `{"type":"record","name":"O","fields":[{"name":"id","type":"int"},{"name":"item","type":"string"}]}`
	v2 := `{"type":"record","name":"O","fields":[{"name":"id","type":"long"},{"name":"item","type":"string"},{"name":"note","type":["null","string"],"default":null}]}`
	var serdes []*sr.Serde
	for _, s := range []string{v1, v2} {
		ss, err := rc.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: s, Type: sr.TypeAvro})
		if err != nil {
			t.Fatal(err)
		}
		schema := avro.MustParse(s)
		var serde sr.Serde
		serde.Register(ss.ID, map[string]any{}, sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schema, v) }))
		serdes = append(serdes, &serde)
	}
	createTableTopic(t, ctx, e.agent.Addr, topic, map[string]*string{
		"floe.iceberg.enabled": ptr("true"), "floe.iceberg.value.mode": ptr("schema_id_prefix")})
	comp := e.startCompactor("--iceberg-interval", "50ms", "--lease-ttl", "1s", "--bucket-latency", "20ms")

	var mu sync.Mutex
	want := map[rowKey]bool{} // dead?
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var recs []*kgo.Record
			var dead []bool
			for j := range 40 {
				n := i*40 + j
				var v []byte
				var err error
				switch {
				case n%9 == 0:
					v = fmt.Appendf(nil, "unframed %d", n)
				case n%2 == 0:
					v, err = serdes[0].Encode(map[string]any{"id": n, "item": fmt.Sprint("i", n)})
				default:
					v, err = serdes[1].Encode(map[string]any{"id": int64(n), "item": fmt.Sprint("i", n), "note": fmt.Sprint("n", n)})
				}
				if err != nil {
					t.Error(err)
					return
				}
				recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(j % 8), Value: v})
				dead = append(dead, n%9 == 0)
			}
			if err := e.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			mu.Lock()
			for k, r := range recs {
				want[rowKey{r.Partition, r.Offset}] = dead[k]
			}
			mu.Unlock()
		}
	}()
	kills := killRepeatedly(comp, 12*time.Second)
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d kills, %d records", kills, len(want))

	cat, err := rest.NewCatalog(ctx, "floe", "http://"+e.agent.HTTPAddr+"/iceberg")
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for ctx.Err() == nil {
		rows, dead := typedKeys(ctx, cat, topic, "_kafka.partition", "_kafka.offset"), typedKeys(ctx, cat, topic+"__dlq", "partition", "offset")
		var bad []string
		for k, isDead := range want {
			in, other := rows[k], dead[k]
			if isDead {
				in, other = dead[k], rows[k]
			}
			if in != 1 || other != 0 {
				bad = append(bad, fmt.Sprintf("%v (dead letter %v) in its table %d times, in the other %d", k, isDead, in, other))
			}
		}
		for k := range rows {
			if _, ok := want[k]; !ok {
				bad = append(bad, fmt.Sprintf("%v in the table, never acknowledged", k))
			}
		}
		for k := range dead {
			if _, ok := want[k]; !ok {
				bad = append(bad, fmt.Sprintf("%v in the dead-letter table, never acknowledged", k))
			}
		}
		if len(bad) == 0 {
			t.Logf("table and dead-letter table hold all %d records once (%d rows, %d dead letters)", len(want), len(rows), len(dead))
			return
		}
		sort.Strings(bad)
		last = fmt.Sprintf("%d wrong, e.g. %s", len(bad), bad[0])
		for _, b := range bad {
			if strings.Contains(b, "times") && !strings.Contains(b, "its table 0 times, in the other 0") {
				last = fmt.Sprintf("%d wrong, e.g. %s", len(bad), b) // a duplicate or a misrouted record
				break
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("after the kills: %s", last)
}

// typedKeys counts the rows of a table by (partition, offset), read from
// the named columns; a missing table counts nothing.
func typedKeys(ctx context.Context, cat catalog.Catalog, name, partCol, offCol string) map[rowKey]int {
	out := map[rowKey]int{}
	tb, err := cat.LoadTable(ctx, table.Identifier{"floe", strings.ReplaceAll(name, ".", "_")})
	if err != nil {
		return out
	}
	at, err := tb.Scan(table.WithSelectedFields(partCol, offCol)).ToArrowTable(ctx)
	if err != nil {
		return out
	}
	defer at.Release()
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	for tr.Next() {
		var buf strings.Builder
		if err := array.RecordToJSON(tr.RecordBatch(), &buf); err != nil {
			return out
		}
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var r struct {
				Kafka struct {
					Partition int32
					Offset    int64
				} `json:"_kafka"`
				Partition int32
				Offset    int64
			}
			if json.Unmarshal([]byte(line), &r) != nil {
				continue
			}
			if strings.HasPrefix(partCol, "_kafka") {
				r.Partition, r.Offset = r.Kafka.Partition, r.Kafka.Offset
			}
			out[rowKey{r.Partition, r.Offset}]++
		}
	}
	return out
}

// TestIcebergTypedProtobufAndJSON: a Protobuf topic and a JSON Schema
// topic, produced with franz-go's sr serde against floe dev, become typed
// tables that iceberg-go and DuckDB read alike, the types Avro's test does
// not reach included: uint64 as decimal(20,0), google.protobuf.Timestamp,
// enums, oneofs; JSON Schema's uuid, date-time and time formats.
func TestIcebergTypedProtobufAndJSON(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	dev := startFloe(t, "dev", "--data-dir", t.TempDir(), "--iceberg-interval", "300ms")
	cl, err := kgo.NewClient(kgo.SeedBrokers(dev.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cat, err := rest.NewCatalog(ctx, "floe", "http://"+dev.HTTPAddr+"/iceberg")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	produce := func(topic string, serde *sr.Serde, values ...any) { produceSerde(t, ctx, cl, topic, serde, values...) }
	// duck runs query over the table's current Parquet files, one line a row.
	duck := func(tbl *table.Table, query string) string {
		rows, err := db.QueryContext(ctx, strings.ReplaceAll(query, "FILES", readParquet(duckdbPathList(tableDataFiles(t, ctx, tbl)))))
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n")
	}

	t.Run("protobuf", func(t *testing.T) {
		const topic = "typed.proto"
		schema := `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
enum Status { NEW = 0; SHIPPED = 1; }
message Order {
  uint64 big = 1;
  google.protobuf.Timestamp placed = 2;
  Status status = 3;
  oneof pay { string card = 4; int64 points = 5; }
  repeated int32 qty = 6;
}`
		serde := typedSerde(t, ctx, dev.RegistryAddr, topic, schema, sr.TypeProtobuf, "",
			func(v any) ([]byte, error) { return []byte(v.(string)), nil }, sr.Index(0))
		createTableTopic(t, ctx, dev.Addr, topic, map[string]*string{
			"floe.iceberg.enabled": ptr("true"), "floe.iceberg.value.mode": ptr("schema_id_prefix")})
		// Protobuf wire format by hand: big=2^64-1, placed={1765000000,
		// 5000}, status=SHIPPED, points=7, qty=[1,2] (packed).
		msg := []byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
			0x12, 0x09, 0x08, 0xc0, 0x86, 0xcf, 0xc9, 0x06, 0x10, 0x88, 0x27,
			0x18, 0x01, 0x28, 0x07, 0x32, 0x02, 0x01, 0x02}
		produce(topic, serde, string(msg))
		tbl, _ := waitTyped(t, ctx, cat, "typed_proto", 1, -1)
		checkParquetFieldIDs(t, ctx, tbl)
		want := "18446744073709551615 1765000000000005 SHIPPED null 7 [1, 2]"
		got := duck(tbl, `SELECT concat_ws(' ', CAST(big AS VARCHAR), CAST(epoch_us(placed) AS VARCHAR), status,
			coalesce(pay.card, 'null'), CAST(pay.points AS VARCHAR), CAST(qty AS VARCHAR)) FROM FILES`)
		if got != want {
			t.Errorf("DuckDB: %s\nwant     %s", got, want)
		}
		rows := typedJSON(t, ctx, tbl)
		if want := `{"_kafka":{"offset":0},"big":"18446744073709551615","pay":{"card":null,"points":7},"placed":"2025-12-06T05:46:40.000005Z","qty":[1,2],"status":"SHIPPED"}`; rows != want {
			t.Errorf("iceberg-go: %s\nwant        %s", rows, want)
		}
	})

	t.Run("json", func(t *testing.T) {
		const topic = "typed.json"
		schema := `{"type":"object","properties":{"ref":{"type":"string","format":"uuid"},
			"at":{"type":"string","format":"date-time"},"t":{"type":"string","format":"time"},
			"n":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}}}`
		serde := typedSerde(t, ctx, dev.RegistryAddr, topic, schema, sr.TypeJSON, map[string]any{}, json.Marshal)
		createTableTopic(t, ctx, dev.Addr, topic, map[string]*string{
			"floe.iceberg.enabled": ptr("true"), "floe.iceberg.value.mode": ptr("schema_id_prefix")})
		produce(topic, serde, map[string]any{"ref": "0b7a2c1e-9c4f-4b8e-a1d2-3e4f5a6b7c8d", "at": "2026-12-06T05:40:01.234567Z",
			"t": "05:40:01.25", "n": 1 << 40, "tags": []string{"a", "b"}}, map[string]any{"n": -1, "at": "oops"})
		tbl, dlq := waitTyped(t, ctx, cat, "typed_json", 1, 1)
		checkParquetFieldIDs(t, ctx, tbl)
		want := "0b7a2c1e-9c4f-4b8e-a1d2-3e4f5a6b7c8d 1796535601234567 05:40:01.25 1099511627776 [a, b]"
		got := duck(tbl, `SELECT concat_ws(' ', CAST("ref" AS VARCHAR), CAST(epoch_us("at") AS VARCHAR), CAST("t" AS VARCHAR),
			CAST(n AS VARCHAR), CAST(tags AS VARCHAR)) FROM FILES`)
		if got != want {
			t.Errorf("DuckDB: %s\nwant     %s", got, want)
		}
		rows := typedJSON(t, ctx, tbl)
		for _, want := range []string{`"ref":"0b7a2c1e-9c4f-4b8e-a1d2-3e4f5a6b7c8d"`, `"at":"2026-12-06T05:40:01.234567Z"`, `"t":"05:40:01.25`, `"n":1099511627776`, `"tags":["a","b"]`} {
			if !strings.Contains(rows, want) {
				t.Errorf("iceberg-go: %s lacks %s", rows, want)
			}
		}
		if rows, want := typedJSON(t, ctx, dlq), `"offset":1`; !strings.Contains(rows, want) {
			t.Errorf("dead letters %s", rows)
		}
	})
}

// TestIcebergTypedJSONKeys: floe.iceberg.value.mode=json and
// floe.iceberg.key.mode=json against floe dev: no registry, columns
// inferred from the values and a _key struct from the keys, the table
// evolving as new fields come; iceberg-go and DuckDB read the same rows
// (DuckDB over the data files, which differ in columns as the table
// evolved: union_by_name, where an engine reading the table would use its
// schema).
func TestIcebergTypedJSONKeys(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	dev := startFloe(t, "dev", "--data-dir", t.TempDir(), "--iceberg-interval", "300ms")
	const topic = "typed.plain"
	createTableTopic(t, ctx, dev.Addr, topic, map[string]*string{"floe.iceberg.enabled": ptr("true"),
		"floe.iceberg.value.mode": ptr("json"), "floe.iceberg.key.mode": ptr("json")})
	cl, err := kgo.NewClient(kgo.SeedBrokers(dev.Addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, kv := range [][2]string{
		{`{"region":"eu"}`, `{"amount":1.5,"sku":"a"}`},
		{`{"region":"us","shard":3}`, `{"amount":2,"tags":["x","y"]}`},
		{``, `{"amount":3.25,"sku":"c"}`},
		{`{"region":"eu"}`, `[1,2]`},
	} {
		r := &kgo.Record{Value: []byte(kv[1])}
		if kv[0] != "" {
			r.Key = []byte(kv[0])
		}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := rest.NewCatalog(ctx, "floe", "http://"+dev.HTTPAddr+"/iceberg")
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := waitTyped(t, ctx, cat, "typed_plain", 3, 1)
	checkParquetFieldIDs(t, ctx, tbl)
	want := `{"_kafka":{"offset":0},"_key":{"region":"eu","shard":null},"amount":1.5,"sku":"a","tags":null}` + "\n" +
		`{"_kafka":{"offset":1},"_key":{"region":"us","shard":3},"amount":2,"sku":null,"tags":["x","y"]}` + "\n" +
		`{"_kafka":{"offset":2},"_key":null,"amount":3.25,"sku":"c","tags":null}`
	got := strings.Split(typedJSON(t, ctx, tbl), "\n")
	sort.Strings(got)
	if strings.Join(got, "\n") != want {
		t.Errorf("iceberg-go:\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files := tableDataFiles(t, ctx, tbl)
	rows, err := db.QueryContext(ctx, `SELECT concat_ws(' ', _kafka.offset, coalesce(_key.region, 'null'), coalesce(CAST(_key.shard AS VARCHAR), 'null'),
		amount, coalesce(sku, 'null'), coalesce(CAST(tags AS VARCHAR), 'null'))
		FROM read_parquet(`+duckdbPathList(files)+`, hive_partitioning = false, union_by_name = true) ORDER BY _kafka.offset`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if got, want := strings.Join(lines, "\n"), "0 eu null 1.5 a null\n1 us 3 2.0 null [x, y]\n2 null null 3.25 c null"; got != want {
		t.Errorf("DuckDB:\n%s\nwant\n%s", got, want)
	}
}

// typedJSON is a table's rows as Arrow's JSON lines, but for _kafka's
// offset only of the Kafka columns.
func typedJSON(t *testing.T, ctx context.Context, tbl *table.Table) string {
	t.Helper()
	var cols []string
	for _, f := range tbl.Schema().Fields() {
		if f.Name == "_kafka" {
			cols = append(cols, "_kafka.offset")
		} else if f.Name != "partition" && f.Name != "timestamp" && f.Name != "headers" && f.Name != "key" && f.Name != "value" && f.Name != "timestamp_type" {
			cols = append(cols, f.Name)
		}
	}
	at, err := tbl.Scan(table.WithSelectedFields(cols...)).ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var out []string
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		var buf strings.Builder
		if err := array.RecordToJSON(tr.RecordBatch(), &buf); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.TrimSpace(buf.String()))
	}
	return strings.Join(out, "\n")
}
