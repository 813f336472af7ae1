package integration

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"

	_ "github.com/duckdb/duckdb-go/v2" // database/sql driver "duckdb": DuckDB's own Parquet reader, linked in
)

// TestIcebergDuckDB: DuckDB, a reader that shares no code with iceberg-go,
// reads the Parquet files of a floe dev table and agrees with iceberg-go's
// REST scan row for row, every column (nulls and empties kept apart). The
// files carry the table schema's field ids on the right columns, the
// column types engines expect, and zstd pages.
//
// DuckDB's iceberg extension cannot be installed offline (it is downloaded
// at LOAD), so DuckDB gets the list of data files from the table's current
// snapshot as iceberg-go plans it, loaded through floe's REST catalog, and
// reads them with read_parquet.
func TestIcebergDuckDB(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	dev := startTwoCommitTable(t, ctx, "duck.v1", "duck_v1")

	schema, files := snapshotDataFiles(t, ctx, dev.HTTPAddr, "duck_v1")
	if len(files) < 2 {
		t.Fatalf("table lists %d data files after two commits", len(files))
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	list := duckdbPathList(files)

	checkDuckDBTypes(t, ctx, db, list)
	checkDuckDBFieldIDs(t, ctx, db, files, schema)
	checkDuckDBZstd(t, ctx, db, list)

	got, n := duckdbRows(t, ctx, db, list)
	scan, scanN, err := restScan(t, ctx, dev.HTTPAddr, "duck_v1")
	if err != nil {
		t.Fatal(err)
	}
	if n != scanN || len(got) != len(scan) {
		t.Fatalf("DuckDB read %d rows (%d distinct), iceberg-go %d (%d distinct)", n, len(got), scanN, len(scan))
	}
	if d := diffRows(got, n, scan); d != "" {
		t.Fatalf("DuckDB and iceberg-go disagree: %s", d)
	}
	t.Logf("DuckDB read %d rows from %d data files, as iceberg-go does", n, len(files))
}

// startTwoCommitTable starts floe dev with topic as an Iceberg table
// (named tableName) and fills it with two rounds of produceForTable, the second
// once the first is in the table, so that the table's current snapshot
// lists data files (and manifests) of two commits. It returns when
// iceberg-go's REST scan returns exactly what was produced.
func startTwoCommitTable(t *testing.T, ctx context.Context, topic, tableName string) *proc {
	t.Helper()
	dev := startFloe(t, "dev", "--data-dir", t.TempDir(), "--iceberg-interval", "300ms")
	createTableTopic(t, ctx, dev.Addr, topic, map[string]*string{"floe.iceberg.enabled": ptr("true")})
	want := produceForTable(t, ctx, dev.Addr, topic)
	waitTable(t, ctx, dev.HTTPAddr, tableName, want)
	for k, r := range produceForTable(t, ctx, dev.Addr, topic) {
		want[k] = r
	}
	waitTable(t, ctx, dev.HTTPAddr, tableName, want)
	return dev
}

// loadRESTTable loads table floe.name through floe's REST catalog with
// iceberg-go's REST client.
func loadRESTTable(t *testing.T, ctx context.Context, httpAddr, name string) *table.Table {
	t.Helper()
	cat, err := rest.NewCatalog(ctx, "floe", "http://"+httpAddr+"/iceberg")
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"floe", name})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// snapshotDataFiles loads the table through floe's REST catalog and returns
// its schema and the local paths of the data files its current snapshot
// lists. A table floe writes has no delete files (read_parquet would not
// apply them): that is checked too.
func snapshotDataFiles(t *testing.T, ctx context.Context, httpAddr, name string) (*iceberg.Schema, []string) {
	t.Helper()
	tbl := loadRESTTable(t, ctx, httpAddr, name)
	return tbl.Schema(), tableDataFiles(t, ctx, tbl)
}

// tableDataFiles is the local paths of the data files tbl's current
// snapshot lists (a table on floe dev's file:// warehouse), none of them
// with delete files.
func tableDataFiles(t *testing.T, ctx context.Context, tbl *table.Table) []string {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, task := range tasks {
		if n := len(task.DeleteFiles) + len(task.EqualityDeleteFiles) + len(task.DeletionVectorFiles); n != 0 {
			t.Fatalf("%s has %d delete files", task.File.FilePath(), n)
		}
		// DuckDB opens plain paths, not file:// URLs.
		u, err := url.Parse(task.File.FilePath())
		if err != nil || u.Scheme != "file" {
			t.Fatalf("data file %q is not a file:// URL (%v)", task.File.FilePath(), err)
		}
		files = append(files, u.Path)
	}
	if len(files) == 0 {
		t.Fatalf("table %s lists no data files", tbl.Identifier())
	}
	return files
}

// duckdbPathList is files as a DuckDB list literal, for read_parquet.
func duckdbPathList(files []string) string {
	q := make([]string, len(files))
	for i, f := range files {
		q[i] = "'" + strings.ReplaceAll(f, "'", "''") + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// readParquet is read_parquet over list with only the files' own columns:
// DuckDB would otherwise add a column per key=value folder of the paths
// (the table's partition folders, timestamp_day=…).
func readParquet(list string) string {
	return "read_parquet(" + list + ", hive_partitioning = false)"
}

// checkDuckDBTypes: DuckDB maps the files' columns onto the types an engine
// should see for the table's Iceberg types.
func checkDuckDBTypes(t *testing.T, ctx context.Context, db *sql.DB, list string) {
	t.Helper()
	rows, err := db.QueryContext(ctx, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "+readParquet(list)+")")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		got = append(got, name+" "+typ)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"partition INTEGER", "offset BIGINT", "timestamp TIMESTAMP WITH TIME ZONE", "timestamp_type INTEGER",
		"key BLOB", "value BLOB", `headers STRUCT("key" VARCHAR, "value" BLOB)[]`}
	if !slices.Equal(got, want) {
		t.Fatalf("DuckDB column types\n got %q\nwant %q", got, want)
	}
}

// parquetField is one node of a Parquet schema: its name and field id (0:
// none).
type parquetField struct {
	name string
	id   int
}

// parquetFieldsOf is the Parquet schema an Iceberg schema is written as,
// depth first, below the root: every field with its Iceberg id; a list is
// Parquet's three levels, whose middle "list" group has no id.
func parquetFieldsOf(t *testing.T, fields []iceberg.NestedField) []parquetField {
	t.Helper()
	var out []parquetField
	var walk func(name string, id int, typ iceberg.Type)
	walk = func(name string, id int, typ iceberg.Type) {
		out = append(out, parquetField{name, id})
		switch typ := typ.(type) {
		case *iceberg.StructType:
			for _, f := range typ.FieldList {
				walk(f.Name, f.ID, f.Type)
			}
		case *iceberg.ListType:
			out = append(out, parquetField{"list", 0})
			walk("element", typ.ElementID, typ.Element)
		case *iceberg.MapType:
			t.Fatalf("map column %s: not in floe's schema", name)
		}
	}
	for _, f := range fields {
		walk(f.Name, f.ID, f.Type)
	}
	return out
}

// checkDuckDBFieldIDs: every data file's Parquet schema, as DuckDB's
// parquet_schema reads it, carries the table schema's field ids on the
// right columns.
func checkDuckDBFieldIDs(t *testing.T, ctx context.Context, db *sql.DB, files []string, schema *iceberg.Schema) {
	t.Helper()
	want := parquetFieldsOf(t, schema.Fields())
	for _, f := range files {
		rows, err := db.QueryContext(ctx, "SELECT name, field_id FROM parquet_schema("+duckdbPathList([]string{f})+")")
		if err != nil {
			t.Fatal(err)
		}
		var got []parquetField
		for rows.Next() {
			var name string
			var id sql.NullInt64
			if err := rows.Scan(&name, &id); err != nil {
				t.Fatal(err)
			}
			got = append(got, parquetField{name, int(id.Int64)})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		// The first node is the schema's root, which has no id.
		if len(got) == 0 || got[0].id != 0 || !slices.Equal(got[1:], want) {
			t.Fatalf("%s: Parquet fields (name, id)\n got %v\nwant root, %v", f, got, want)
		}
	}
}

// checkDuckDBZstd: every column chunk of every data file is zstd-compressed.
func checkDuckDBZstd(t *testing.T, ctx context.Context, db *sql.DB, list string) {
	t.Helper()
	rows, err := db.QueryContext(ctx, "SELECT compression, count(*) FROM parquet_metadata("+list+") GROUP BY compression ORDER BY compression")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var codec string
		var n int
		if err := rows.Scan(&codec, &n); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s×%d", codec, n))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "ZSTD×") {
		t.Fatalf("column chunks by codec: %v, want ZSTD only", got)
	}
}

// duckdbRows reads every row of the files with DuckDB, by (partition,
// offset), and how many rows there are in all (duplicates counted). Key,
// value and headers are scanned as DuckDB hands them over (nil for null,
// []byte otherwise), so a null is never mistaken for an empty value.
func duckdbRows(t *testing.T, ctx context.Context, db *sql.DB, list string) (map[rowKey]tableRow, int) {
	t.Helper()
	rows, err := db.QueryContext(ctx, `SELECT "partition", "offset", epoch_us("timestamp"), timestamp_type, "key", "value", headers
		FROM `+readParquet(list))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[rowKey]tableRow{}
	n := 0
	for rows.Next() {
		var r tableRow
		var key, value, headers any
		if err := rows.Scan(&r.Partition, &r.Offset, &r.TsMicros, &r.TsType, &key, &value, &headers); err != nil {
			t.Fatal(err)
		}
		r.Key = duckdbBlob(t, "key", key)
		r.Value = duckdbBlob(t, "value", value)
		hs, ok := headers.([]any)
		if !ok {
			t.Fatalf("p%d@%d: headers %T %v, want a list", r.Partition, r.Offset, headers, headers)
		}
		r.Headers = []kgo.RecordHeader{}
		for _, h := range hs {
			m, ok := h.(map[string]any)
			if !ok || len(m) != 2 {
				t.Fatalf("p%d@%d: header %T %v, want a struct of key and value", r.Partition, r.Offset, h, h)
			}
			hk, ok := m["key"].(string)
			if !ok {
				t.Fatalf("p%d@%d: header key %T %v, want a string", r.Partition, r.Offset, m["key"], m["key"])
			}
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: hk, Value: duckdbBlob(t, "header value", m["value"])})
		}
		got[rowKey{r.Partition, r.Offset}] = r
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got, n
}

// duckdbBlob is a BLOB as DuckDB returned it: nil for null, else []byte
// (empty, not nil, for an empty value).
func duckdbBlob(t *testing.T, what string, v any) []byte {
	t.Helper()
	switch v := v.(type) {
	case nil:
		return nil
	case []byte:
		if v == nil {
			return []byte{}
		}
		return v
	}
	t.Fatalf("%s: %T %v, want a BLOB", what, v, v)
	return nil
}
