package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// tables in the MinIO variant
)

// tableRow is one row of a topic table, or the record it must equal.
type tableRow struct {
	Partition int32
	Offset    int64
	TsMicros  int64
	TsType    int32
	Key       []byte // nil: null
	Value     []byte
	Headers   []kgo.RecordHeader
}

func (r tableRow) String() string {
	return fmt.Sprintf("p%d@%d ts=%d/%d key=%q(nil=%v) value=%q(nil=%v) headers=%v",
		r.Partition, r.Offset, r.TsMicros, r.TsType, r.Key, r.Key == nil, r.Value, r.Value == nil, r.Headers)
}

func rowOf(r *kgo.Record) tableRow {
	h := slices.Clone(r.Headers)
	if h == nil {
		h = []kgo.RecordHeader{}
	}
	return tableRow{Partition: r.Partition, Offset: r.Offset, TsMicros: r.Timestamp.UnixMilli() * 1000,
		Key: r.Key, Value: r.Value, Headers: h}
}

type rowKey struct {
	p   int32
	off int64
}

// restScan reads a table through iceberg-go's REST client pointed at
// floe's /iceberg, returning its rows by (partition, offset) and how many
// rows it has in all (duplicates counted).
func restScan(t *testing.T, ctx context.Context, httpAddr, tbl string) (map[rowKey]tableRow, int, error) {
	t.Helper()
	cat, err := rest.NewCatalog(ctx, "floe", "http://"+httpAddr+"/iceberg")
	if err != nil {
		return nil, 0, err
	}
	tb, err := cat.LoadTable(ctx, table.Identifier{"floe", tbl})
	if err != nil {
		return nil, 0, err
	}
	at, err := tb.Scan().ToArrowTable(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer at.Release()
	rows := map[rowKey]tableRow{}
	n := 0
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		col := func(name string) arrow.Array {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) != 1 {
				t.Fatalf("table %s has no column %s: %s", tbl, name, rec.Schema())
			}
			return rec.Column(idx[0])
		}
		part := col("partition").(*array.Int32)
		off := col("offset").(*array.Int64)
		ts := col("timestamp").(*array.Timestamp)
		tsType := col("timestamp_type").(*array.Int32)
		key := col("key").(*array.Binary)
		val := col("value").(*array.Binary)
		hdrs := col("headers").(*array.List)
		hs := hdrs.ListValues().(*array.Struct)
		hk := hs.Field(0).(*array.String)
		hv := hs.Field(1).(*array.Binary)
		for i := 0; i < int(rec.NumRows()); i++ {
			r := tableRow{Partition: part.Value(i), Offset: off.Value(i), TsMicros: int64(ts.Value(i)), TsType: tsType.Value(i),
				Headers: []kgo.RecordHeader{}}
			if !key.IsNull(i) {
				r.Key = bytes.Clone(key.Value(i))
			}
			if !val.IsNull(i) {
				r.Value = bytes.Clone(val.Value(i))
			}
			lo, hi := hdrs.ValueOffsets(i)
			for j := int(lo); j < int(hi); j++ {
				h := kgo.RecordHeader{Key: hk.Value(j)}
				if !hv.IsNull(j) {
					h.Value = bytes.Clone(hv.Value(j))
				}
				r.Headers = append(r.Headers, h)
			}
			rows[rowKey{r.Partition, r.Offset}] = r
			n++
		}
	}
	return rows, n, tr.Err()
}

// waitTable scans the table until it holds exactly want (row for row,
// every column equal) or the deadline passes.
func waitTable(t *testing.T, ctx context.Context, httpAddr, tbl string, want map[rowKey]tableRow) {
	t.Helper()
	var last string
	for {
		got, n, err := restScan(t, ctx, httpAddr, tbl)
		if err == nil {
			last = diffRows(got, n, want)
			if last == "" {
				return
			}
		} else {
			last = err.Error()
		}
		if ctx.Err() != nil {
			t.Fatalf("table %s never matched the topic: %s", tbl, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// diffRows says how got differs from want ("" when equal).
func diffRows(got map[rowKey]tableRow, n int, want map[rowKey]tableRow) string {
	if n != len(got) {
		return fmt.Sprintf("%d rows for %d distinct (partition, offset): duplicates", n, len(got))
	}
	var diffs []string
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			diffs = append(diffs, "missing "+w.String())
			continue
		}
		if g.TsType != w.TsType || g.Partition != w.Partition || g.Offset != w.Offset || g.TsMicros != w.TsMicros ||
			!bytes.Equal(g.Key, w.Key) || (g.Key == nil) != (w.Key == nil) ||
			!bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) || !headersEqual(g.Headers, w.Headers) {
			diffs = append(diffs, "got "+g.String()+" want "+w.String())
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, "extra "+g.String())
		}
	}
	slices.Sort(diffs)
	if len(diffs) > 5 {
		diffs = append(diffs[:5], fmt.Sprintf("… %d differences in all (%d rows, want %d)", len(diffs), len(got), len(want)))
	}
	return strings.Join(diffs, "; ")
}

func headersEqual(a, b []kgo.RecordHeader) bool {
	return slices.EqualFunc(a, b, func(x, y kgo.RecordHeader) bool {
		return x.Key == y.Key && bytes.Equal(x.Value, y.Value) && (x.Value == nil) == (y.Value == nil)
	})
}

// produceForTable writes to an 8-partition topic what a table must carry
// exactly: records with null keys, null values, headers (one with a null
// value), through all four codecs, plus one committed and one aborted
// transaction. It returns the records a read_committed consumer sees.
func produceForTable(t *testing.T, ctx context.Context, addr, topic string) map[rowKey]tableRow {
	t.Helper()
	want := map[rowKey]tableRow{}
	codecs := []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	for ci, codec := range codecs {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(codec),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := range 40 {
			r := &kgo.Record{Topic: topic, Partition: int32(i % 8),
				Key: []byte(fmt.Sprintf("k%d-%d", ci, i)), Value: bytes.Repeat([]byte{byte('a' + i%26)}, 10+i)}
			switch i % 5 {
			case 1:
				r.Key = nil
			case 2:
				r.Value = nil
			case 3:
				r.Headers = []kgo.RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "h2"}, {Key: "", Value: []byte{}}}
			}
			recs = append(recs, r)
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce %v: %v", codec, err)
		}
		for _, r := range recs {
			want[rowKey{r.Partition, r.Offset}] = rowOf(r)
		}
		cl.Close()
	}
	txn, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("iceberg-"+topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	for _, commit := range []bool{false, true, false} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for p := range int32(8) {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte("txn"), Value: []byte(fmt.Sprintf("commit=%v", commit))})
		}
		if err := txn.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		if commit {
			for _, r := range recs {
				want[rowKey{r.Partition, r.Offset}] = rowOf(r)
			}
		}
	}
	return want
}

func createTableTopic(t *testing.T, ctx context.Context, addr, topic string, configs map[string]*string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 8, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

func ptr(s string) *string { return &s }

// TestIcebergTableEmbedded: floe dev (SQLite, a directory) turns a topic
// into a table that iceberg-go's REST client, pointed at floe's /iceberg,
// scans back exactly: every committed record, every column, nothing of
// the aborted transaction, no control records, no duplicates.
func TestIcebergTableEmbedded(t *testing.T) {
	dir := t.TempDir()
	dev := startFloe(t, "dev", "--data-dir", dir, "--iceberg-interval", "300ms",
		"--iceberg-maintenance-interval", "1s", "--iceberg-orphan-age", "1s", "--iceberg-snapshot-age", "1s", "--iceberg-keep-snapshots", "2")
	ctx := testContext(t, 2*time.Minute)
	createTableTopic(t, ctx, dev.Addr, "orders.v1", map[string]*string{"floe.iceberg.enabled": ptr("true")})
	want := map[rowKey]tableRow{}
	for range 3 { // cycles apart: small files for maintenance to compact
		for k, v := range produceForTable(t, ctx, dev.Addr, "orders.v1") {
			want[k] = v
		}
		time.Sleep(400 * time.Millisecond)
	}
	waitTable(t, ctx, dev.HTTPAddr, "orders_v1", want)
	// Maintenance (compaction, manifests, expiry, orphans) leaves the rows.
	for _, step := range []string{"compact", "rewrite-manifests", "expire-snapshots", "delete-orphans"} {
		series := fmt.Sprintf(`floe_iceberg_maintenance_total{result="ok",step=%q,table="orders_v1"}`, step)
		for deadline := time.Now().Add(20 * time.Second); dev.metric(t, series) == 0; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s:\n%s", series, dev.Log())
			}
		}
	}
	if m := dev.metricsText(t); strings.Contains(m, `result="failed"`) {
		t.Fatalf("failed iceberg steps:\n%s", m)
	}
	waitTable(t, ctx, dev.HTTPAddr, "orders_v1", want)
	if got := dev.metric(t, `floe_iceberg_rows_written_total{table="orders_v1"}`); int(got) != len(want) {
		t.Fatalf("floe_iceberg_rows_written_total %v, want %d", got, len(want))
	}
	files, err := filepath.Glob(filepath.Join(dir, "objects", "iceberg", "floe", "orders_v1", "data", "*", "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Parquet files under the warehouse folder: %v %v", files, err)
	}
}

// TestIcebergTableMinIO: the same on PostgreSQL and MinIO, with the
// converter in `floe compactor` and the catalog served by an agent that
// vends the bucket's credentials.
func TestIcebergTableMinIO(t *testing.T) {
	c := newCluster(t, "iceberg_minio")
	a := c.startAgent(t, "--iceberg-vend-credentials")
	comp := c.startCompactor(t, "--interval", "1s", "--iceberg-interval", "300ms")
	ctx := testContext(t, 2*time.Minute)
	createTableTopic(t, ctx, a.Addr, "events", map[string]*string{"floe.iceberg.enabled": ptr("true"),
		"floe.iceberg.partition.spec": ptr("identity(partition), hour(timestamp)")})
	want := produceForTable(t, ctx, a.Addr, "events")
	waitTable(t, ctx, a.HTTPAddr, "events", want)
	// The gauge is set just after the commit the scan saw.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got := comp.metric(t, `floe_iceberg_lag_offsets{table="events"}`)
		if got == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag %v after the table caught up", got)
		}
	}
}

// TestIcebergRESTErrors: the catalog's answers to what it does not serve
// are the spec's error bodies.
func TestIcebergRESTErrors(t *testing.T) {
	dev := startFloe(t, "dev", "--data-dir", t.TempDir())
	base := "http://" + dev.HTTPAddr + "/iceberg/v1"
	for _, c := range []struct {
		method, path string
		code         int
		typ          string
	}{
		{"GET", "/namespaces/nope", 404, "NoSuchNamespaceException"},
		{"GET", "/namespaces/floe/tables/nope", 404, "NoSuchTableException"},
		{"POST", "/namespaces", 405, "UnsupportedOperationException"},
		{"DELETE", "/namespaces/floe/tables/x", 405, "UnsupportedOperationException"},
		{"POST", "/namespaces/floe/tables/x", 405, "UnsupportedOperationException"},
		{"GET", "/namespaces?pageSize=zero", 400, "BadRequestException"},
		{"GET", "/views", 404, "NoSuchEndpointException"},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct {
				Message string
				Type    string
				Code    int
			}
		}
		if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != c.code || e.Error.Type != c.typ || e.Error.Code != c.code || e.Error.Message == "" {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.path, resp.StatusCode, body, c.code, c.typ)
		}
	}
}
