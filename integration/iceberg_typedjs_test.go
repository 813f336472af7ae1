package integration

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/twmb/franz-go/pkg/sr"
)

// TestIcebergTypedJS: typed tables of Avro, Protobuf and JSON Schema
// values (iceberg_typed_fixtures_test.go: nested records, lists, maps,
// optional, union and oneof fields, logical types, nulls) read by the npm
// readers, iceberg-js through floe's REST catalog and icebird over the
// manifests and Parquet files (typed.mjs), by iceberg-go's REST scan, by
// DuckDB over the snapshot's Parquet files and by floe's own `floe table
// scan --output json`: each reader gives every row as produced, every field
// compared.
//
// What icebird cannot read exactly is compared as far as it can be, not
// skipped: decimals. hyparquet (icebird's Parquet reader) makes every
// decimal a JS number (parseDecimal: Number(unscaled) × 10^-scale) and
// offers no parser to override, so values of more than 15-16 significant
// digits lose their low digits: Protobuf's uint64 column, decimal(20,0),
// reads 18446744073709551615 as 18446744073709551616. icebird's decimals
// are compared with the produced value as the nearest double (rounded to
// the scale); the other readers' exactly. Everything else icebird reads
// exactly: binary columns (hyparquet decodes every BYTE_ARRAY column as
// UTF-8, which icebird gives no way to turn off; typed.mjs keeps bytes
// that are not UTF-8 as bytes), uuids (bytes) and times (µs) as hyparquet
// leaves them, dates as days, maps as objects.
func TestIcebergTypedJS(t *testing.T) {
	node, dir := npmInstall(t, "icebergjs")
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
	const n = 30
	for _, f := range []struct {
		name string
		// produce produces orders 0 to n-1 to topic and returns their rows
		// by offset.
		produce func(t *testing.T, topic string) map[int64]map[string]any
	}{
		{"avro", func(t *testing.T, topic string) map[int64]map[string]any {
			orders := make([]any, n)
			for i := range orders {
				orders[i] = avroOrder(i)
			}
			want := map[int64]map[string]any{}
			for i, off := range produceSerde(t, ctx, cl, topic, avroSerde(t, ctx, dev.RegistryAddr, topic), orders...) {
				want[off] = orders[i].(typedOrder).canon()
			}
			return want
		}},
		{"protobuf", func(t *testing.T, topic string) map[int64]map[string]any {
			return produceRows(t, ctx, cl, topic, protoSerde(t, ctx, dev.RegistryAddr, topic), n, protoOrder)
		}},
		{"json_schema", func(t *testing.T, topic string) map[int64]map[string]any {
			return produceRows(t, ctx, cl, topic, jsonSerde(t, ctx, dev.RegistryAddr, topic), n, jsonOrder)
		}},
	} {
		t.Run(f.name, func(t *testing.T) {
			topic, name := "typed.js."+f.name, "typed_js_"+f.name
			createTableTopic(t, ctx, dev.Addr, topic, map[string]*string{
				"floe.iceberg.enabled": ptr("true"), "floe.iceberg.value.mode": ptr("schema_id_prefix")})
			want := f.produce(t, topic)
			tbl, _ := waitTyped(t, ctx, cat, name, n, -1)
			cols := valueColumns(tbl.Schema())

			cmd := exec.CommandContext(ctx, node, "typed.mjs", "http://"+dev.HTTPAddr+"/iceberg", "floe", name)
			cmd.Dir = dir
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node typed.mjs: %v\n%s", err, stderr.Bytes())
			}
			js, snapshot := icebirdRows(t, cols, out)
			if snapshot != tbl.CurrentSnapshot().SnapshotID {
				t.Errorf("iceberg-js read snapshot %d, iceberg-go %d", snapshot, tbl.CurrentSnapshot().SnapshotID)
			}
			for _, r := range []struct {
				reader string
				rows   map[int64]string
			}{
				{"iceberg-go", icebergGoRows(t, ctx, cols, tbl)},
				{"DuckDB", duckdbTypedRows(t, ctx, db, cols, tbl)},
				{"icebird", js},
				{"floe table scan", floeTableRows(t, ctx, dev.HTTPAddr, cols, name, tbl.CurrentSnapshot().SnapshotID)},
			} {
				if len(r.rows) != n {
					t.Errorf("%s read %d rows, want %d", r.reader, len(r.rows), n)
				}
				for off, w := range want {
					if r.reader == "icebird" {
						w = asDoubles(cols, w).(map[string]any)
					}
					if line := canonLine(t, w); r.rows[off] != line {
						t.Errorf("%s offset %d\n got %s\nwant %s", r.reader, off, r.rows[off], line)
					}
				}
			}
			if t.Failed() {
				t.Logf("typed.mjs printed %.4000s", out)
			}
		})
	}

	// floe table list names the tables with their snapshots' row counts;
	// an unknown table exits 1 saying so.
	catURL := "http://" + dev.HTTPAddr + "/iceberg"
	out, err := exec.CommandContext(ctx, floeBin, "table", "list", "--catalog", catURL, "--output", "json").Output()
	if err != nil {
		t.Fatalf("floe table list: %v", err)
	}
	var list []struct {
		Name string
		Rows *int64
	}
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("floe table list: %v\n%s", err, out)
	}
	rows := map[string]int64{}
	for _, l := range list {
		if l.Rows != nil {
			rows[l.Name] = *l.Rows
		}
	}
	for _, name := range []string{"typed_js_avro", "typed_js_protobuf", "typed_js_json_schema"} {
		if rows[name] != n {
			t.Errorf("floe table list: %s has %d rows, want %d\n%s", name, rows[name], n, out)
		}
	}
	cmd := exec.CommandContext(ctx, floeBin, "table", "scan", "typed_js_absent", "--catalog", catURL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	want := `floe: no table "typed_js_absent" in namespace "floe" of ` + catURL + " (floe table list names them)\n"
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || stderr.String() != want {
		t.Errorf("floe table scan of an unknown table: %v, stderr %q, want exit 1 and %q", err, stderr.String(), want)
	}
}

// produceRows produces orders 0 to n-1 that order makes (the value and
// its row) to topic with serde, and returns their rows by offset.
func produceRows(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, serde *sr.Serde, n int, order func(int) (map[string]any, map[string]any)) map[int64]map[string]any {
	t.Helper()
	values, rows := make([]any, n), make([]map[string]any, n)
	for i := range n {
		values[i], rows[i] = order(i)
	}
	want := map[int64]map[string]any{}
	for i, off := range produceSerde(t, ctx, cl, topic, serde, values...) {
		want[off] = rows[i]
	}
	return want
}

// valueColumns is the table's value columns as one struct (every column
// but _kafka), the type canonRow reads rows by.
func valueColumns(s *iceberg.Schema) *iceberg.StructType {
	st := &iceberg.StructType{}
	for _, f := range s.Fields() {
		if f.Name != "_kafka" {
			st.FieldList = append(st.FieldList, f)
		}
	}
	return st
}

// canonLine is a canonical row as one line of JSON (keys sorted).
func canonLine(t *testing.T, row map[string]any) string {
	t.Helper()
	b, err := json.Marshal(row)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// icebergGoRows is the table read by iceberg-go's scan, canonical rows by
// offset (Arrow's JSON: decimals, dates, times and timestamps as text,
// binary base64, maps lists of key and value).
func icebergGoRows(t *testing.T, ctx context.Context, cols *iceberg.StructType, tbl *table.Table) map[int64]string {
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
		var buf bytes.Buffer
		if err := array.RecordToJSON(tr.RecordBatch(), &buf); err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(&buf)
		dec.UseNumber()
		for dec.More() {
			var row map[string]any
			if err := dec.Decode(&row); err != nil {
				t.Fatal(err)
			}
			off := canonInt(t, row["_kafka"].(map[string]any)["offset"])
			out[off] = canonLine(t, canonValue(t, "go", cols, row).(map[string]any))
		}
	}
	return out
}

// floeTableRows is the table read by floe's own reader, `floe table scan
// NAME --output json` of the built binary at snapshot, canonical rows by
// offset (a row twice: fatal).
func floeTableRows(t *testing.T, ctx context.Context, httpAddr string, cols *iceberg.StructType, name string, snapshot int64) map[int64]string {
	t.Helper()
	cmd := exec.CommandContext(ctx, floeBin, "table", "scan", name, "--catalog", "http://"+httpAddr+"/iceberg",
		"--snapshot", strconv.FormatInt(snapshot, 10), "--output", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("floe table scan %s: %v\n%s", name, err, stderr.Bytes())
	}
	rows := map[int64]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	for dec.More() {
		var row map[string]any
		if err := dec.Decode(&row); err != nil {
			t.Fatalf("floe table scan output: %v\n%.4000s", err, out)
		}
		off := canonInt(t, row["_kafka"].(map[string]any)["offset"])
		if _, dup := rows[off]; dup {
			t.Fatalf("floe table scan printed offset %d twice", off)
		}
		rows[off] = canonLine(t, canonValue(t, "floe", cols, row).(map[string]any))
	}
	return rows
}

// duckdbTypedRows is the table's current Parquet files read by DuckDB,
// canonical rows by offset (the Go values duckdb-go scans).
func duckdbTypedRows(t *testing.T, ctx context.Context, db *sql.DB, cols *iceberg.StructType, tbl *table.Table) map[int64]string {
	t.Helper()
	rows, err := db.QueryContext(ctx, `SELECT * FROM `+readParquet(duckdbPathList(tableDataFiles(t, ctx, tbl))))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	for rows.Next() {
		vals := make([]any, len(names))
		ptrs := make([]any, len(names))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := map[string]any{}
		for i, name := range names {
			row[name] = vals[i]
		}
		off := canonInt(t, row["_kafka"].(map[string]any)["offset"])
		out[off] = canonLine(t, canonValue(t, "duckdb", cols, row).(map[string]any))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// icebirdRows turns typed.mjs's output into canonical rows by offset (a
// row twice: fatal), and the snapshot it read.
func icebirdRows(t *testing.T, cols *iceberg.StructType, out []byte) (map[int64]string, int64) {
	t.Helper()
	var s struct {
		Snapshot string
		Rows     []map[string]any
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("typed.mjs output: %v\n%.4000s", err, out)
	}
	rows := map[int64]string{}
	for _, r := range s.Rows {
		off := canonInt(t, r["_kafka"].(map[string]any)["offset"])
		if _, dup := rows[off]; dup {
			t.Fatalf("icebird read offset %d twice", off)
		}
		rows[off] = canonLine(t, canonValue(t, "js", cols, r).(map[string]any))
	}
	snap, err := strconv.ParseInt(s.Snapshot, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return rows, snap
}

// canonValue is v, a value of type typ as reader src ("go": iceberg-go's
// Arrow JSON, decoded with UseNumber; "duckdb": duckdb-go's Go values;
// "js": typed.mjs's JSON, decoded with UseNumber; "floe": floe table
// scan's JSON lines, decoded with UseNumber) gave it, in canonical form. A
// value in a form the reader does not give is fatal.
func canonValue(t *testing.T, src string, typ iceberg.Type, v any) any {
	t.Helper()
	if v == nil {
		return nil
	}
	bad := func() any {
		t.Fatalf("%s: %s value %T %v", src, typ, v, v)
		return nil
	}
	switch typ := typ.(type) {
	case iceberg.BooleanType:
		if b, ok := v.(bool); ok {
			return b
		}
		return bad()
	case iceberg.Int32Type, iceberg.Int64Type:
		return canonInt(t, v)
	case iceberg.Float32Type:
		return float64(float32(canonFloat(t, v)))
	case iceberg.Float64Type:
		return canonFloat(t, v)
	case iceberg.StringType:
		if s, ok := v.(string); ok {
			return s
		}
		return bad()
	case iceberg.DecimalType:
		switch v := v.(type) {
		case string: // iceberg-go
			r, ok := new(big.Rat).SetString(v)
			if !ok {
				return bad()
			}
			return r.FloatString(typ.Scale())
		case duckdb.Decimal:
			return new(big.Rat).SetFrac(v.Value, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(v.Scale)), nil)).FloatString(typ.Scale())
		case json.Number: // icebird: a double
			return big.NewFloat(canonFloat(t, v)).Text('f', typ.Scale())
		}
		return bad()
	case iceberg.DateType:
		switch v := v.(type) {
		case string: // iceberg-go
			return v
		case time.Time: // DuckDB
			return v.UTC().Format(time.DateOnly)
		case json.Number: // icebird: days since the epoch
			return time.Unix(canonInt(t, v)*86400, 0).UTC().Format(time.DateOnly)
		}
		return bad()
	case iceberg.TimeType:
		switch v := v.(type) {
		case string:
			if src == "js" { // µs, hyparquet's int64
				return canonInt(t, v)
			}
			layout := "15:04:05.999999999"
			if src == "floe" {
				layout = "15:04:05.000000"
			}
			tm, err := time.Parse(layout, v)
			if err != nil {
				return bad()
			}
			return tm.Sub(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)).Microseconds()
		case time.Time: // DuckDB: on 0001-01-01
			return v.Sub(time.Date(v.Year(), v.Month(), v.Day(), 0, 0, 0, 0, v.Location())).Microseconds()
		}
		return bad()
	case iceberg.TimestampType, iceberg.TimestampTzType:
		switch v := v.(type) {
		case string:
			if src == "js" { // µs, typed.mjs's parser
				return canonInt(t, v)
			}
			if src == "floe" { // RFC 3339, µs; Z only with a zone
				layout := "2006-01-02T15:04:05.000000"
				if _, tz := typ.(iceberg.TimestampTzType); tz {
					layout += "Z"
				}
				tm, err := time.Parse(layout, v)
				if err != nil {
					return bad()
				}
				return tm.UnixMicro()
			}
			tm, err := time.Parse("2006-01-02 15:04:05.999999999Z07:00", strings.Replace(v, "T", " ", 1))
			if err != nil {
				return bad()
			}
			return tm.UnixMicro()
		case time.Time:
			return v.UnixMicro()
		}
		return bad()
	case iceberg.UUIDType:
		switch v := v.(type) {
		case string: // iceberg-go
			return v
		case []byte: // DuckDB
			u, err := uuid.FromBytes(v)
			if err != nil {
				return bad()
			}
			return u.String()
		case map[string]any: // icebird: 16 bytes
			u, err := uuid.FromBytes(jsBytes(t, v))
			if err != nil {
				return bad()
			}
			return u.String()
		}
		return bad()
	case iceberg.BinaryType, iceberg.FixedType:
		switch v := v.(type) {
		case string:
			if src == "js" { // UTF-8 bytes, decoded by hyparquet
				return base64.StdEncoding.EncodeToString([]byte(v))
			}
			return v // iceberg-go: base64
		case []byte: // DuckDB
			return base64.StdEncoding.EncodeToString(v)
		case map[string]any: // icebird: bytes not UTF-8
			return base64.StdEncoding.EncodeToString(jsBytes(t, v))
		}
		return bad()
	case *iceberg.ListType:
		l, ok := v.([]any)
		if !ok {
			return bad()
		}
		out := []any{}
		for _, e := range l {
			out = append(out, canonValue(t, src, typ.Element, e))
		}
		return out
	case *iceberg.MapType:
		out := map[string]any{}
		add := func(k, v any) {
			out[fmt.Sprint(canonValue(t, src, typ.KeyType, k))] = canonValue(t, src, typ.ValueType, v)
		}
		switch v := v.(type) {
		case []any: // iceberg-go: key/value structs
			for _, e := range v {
				kv, ok := e.(map[string]any)
				if !ok {
					return bad()
				}
				add(kv["key"], kv["value"])
			}
		case duckdb.OrderedMap:
			for i, k := range v.Keys() {
				add(k, v.Values()[i])
			}
		case map[string]any: // icebird, floe: an object
			for k, e := range v {
				add(k, e)
			}
		default:
			return bad()
		}
		return out
	case *iceberg.StructType:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := map[string]any{}
		for _, f := range typ.FieldList {
			out[f.Name] = canonValue(t, src, f.Type, m[f.Name])
		}
		return out
	}
	return bad()
}

// canonInt is an integer as a reader gave it: a JSON number, a decimal
// string (icebird's int64s), or a Go integer (DuckDB).
func canonInt(t *testing.T, v any) int64 {
	t.Helper()
	var n int64
	var err error
	switch v := v.(type) {
	case json.Number:
		n, err = v.Int64()
	case string:
		n, err = strconv.ParseInt(v, 10, 64)
	case int8:
		n = int64(v)
	case int16:
		n = int64(v)
	case int32:
		n = int64(v)
	case int64:
		n = v
	case uint32:
		n = int64(v)
	default:
		err = fmt.Errorf("not an integer")
	}
	if err != nil {
		t.Fatalf("integer %T %v: %v", v, v, err)
	}
	return n
}

// canonFloat is a float as a reader gave it.
func canonFloat(t *testing.T, v any) float64 {
	t.Helper()
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			t.Fatalf("float %v: %v", v, err)
		}
		return f
	case float32:
		return float64(v)
	case float64:
		return v
	}
	t.Fatalf("float %T %v", v, v)
	return 0
}

// jsBytes is typed.mjs's rendering of bytes: {"bytes": base64}.
func jsBytes(t *testing.T, v map[string]any) []byte {
	t.Helper()
	s, _ := v["bytes"].(string)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(v) != 1 {
		t.Fatalf("icebird bytes %v: %v", v, err)
	}
	return b
}

// asDoubles is a canonical value of type typ with its decimals as icebird
// reads them: the nearest double, rounded to the scale.
func asDoubles(typ iceberg.Type, v any) any {
	if v == nil {
		return nil
	}
	switch typ := typ.(type) {
	case iceberg.DecimalType:
		r, _ := new(big.Rat).SetString(v.(string))
		f, _ := r.Float64()
		return big.NewFloat(f).Text('f', typ.Scale())
	case *iceberg.ListType:
		out := []any{}
		for _, e := range v.([]any) {
			out = append(out, asDoubles(typ.Element, e))
		}
		return out
	case *iceberg.MapType:
		out := map[string]any{}
		for k, e := range v.(map[string]any) {
			out[k] = asDoubles(typ.ValueType, e)
		}
		return out
	case *iceberg.StructType:
		out := map[string]any{}
		for _, f := range typ.FieldList {
			out[f.Name] = asDoubles(f.Type, v.(map[string]any)[f.Name])
		}
		return out
	}
	return v
}

// TestFloeTableAuth: where the Kafka listeners ask for SASL the catalog
// asks for credentials too, and floe table passes a SCRAM user's as HTTP
// Basic (--user, --password or their variables); without them it is
// refused, exit status 1, with the catalog's 401 (NotAuthorizedException).
func TestFloeTableAuth(t *testing.T) {
	data := t.TempDir()
	floeUserAdd(t, "sqlite://"+filepath.Join(data, "meta.db"), "admin", "admin-secret")
	sasl := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startFloe(t, "dev", "--data-dir", data, "--listeners", "SASL_PLAINTEXT://"+sasl,
		"--sasl-mechanisms", "SCRAM-SHA-256", "--iceberg-interval", "300ms")
	ctx := testContext(t, 2*time.Minute)
	cl := newKgo(t, kgo.SeedBrokers(sasl), kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha256Mechanism()),
		kgo.DefaultProduceTopic("audited"))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"floe.iceberg.enabled": ptr("true")}, "audited"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	catURL := "http://" + p.HTTPAddr + "/iceberg"
	out, err := exec.CommandContext(ctx, floeBin, "table", "list", "--catalog", catURL).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "NotAuthorizedException: authentication required") {
		t.Fatalf("floe table list without credentials: %v\n%s", err, out)
	}
	waitFor(t, time.Minute, "floe table scan with credentials to read 3 rows", func() bool {
		cmd := exec.CommandContext(ctx, floeBin, "table", "scan", "audited", "--catalog", catURL, "--user", "admin", "--columns", "value", "-o", "json")
		cmd.Env = append(os.Environ(), "FLOE_ICEBERG_PASSWORD=admin-secret")
		out, err := cmd.Output()
		return err == nil && strings.Count(string(out), "\n") == 3
	})
}
