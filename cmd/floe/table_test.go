package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	iceberggo "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"

	"floe/iceberg"
	"floe/metadata/storeurl"
)

// TestTableArgs: NAME before or after the flags, a topic's name for its
// table, and what each verb refuses before it asks the catalog.
func TestTableArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		name string
		err  string
	}{
		{args: []string{"scan", "orders", "--limit", "3"}, name: "orders"},
		{args: []string{"scan", "--columns", "a,b", "shop.orders", "-o", "json"}, name: "shop_orders"},
		{args: []string{"describe", "--", "-odd"}, name: "-odd"},
		{args: []string{"list"}},
		{args: []string{"list", "orders"}, err: "unexpected arguments: orders"},
		{args: []string{"scan"}, err: "name a table"},
		{args: []string{"describe", "a", "b"}, err: "unexpected arguments: b"},
		{args: []string{"scan", "a", "--limit", "-2"}, err: "--limit -2"},
		{args: []string{"scan", "a", "--snapshot", "-1"}, err: "--snapshot -1"},
		{args: []string{"scan", "a", "--output", "csv"}, err: "text or json"},
		{args: []string{"scan", "a", "--filter", "amount >"}, err: "unexpected end"},
		{args: []string{"scan", "a", "--filter", "amount ~ 3"}, err: `want = != < <= > >= or is, not "~"`},
		{args: []string{"scan", "a", "--filter", "name = 'x"}, err: "unterminated"},
		{args: []string{"scan", "a", "--filter", "a = 1 b = 2"}, err: `unexpected "b"`},
		{args: []string{"scan", "a", "--filter", "a is maybe"}, err: "want null or not null"},
		{args: []string{"scan", "a", "--filter", "a = x1"}, err: `value "x1"`},
		{args: []string{"describe", "a", "--limit", "1"}, err: "not defined"},
		{args: []string{"drop", "a"}, err: "unknown verb"},
	} {
		c := &tableCmd{verb: tc.args[0]}
		fs, err := c.flags(&bytes.Buffer{})
		if err == nil {
			err = c.parse(fs, tc.args[1:])
		}
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one saying %q", tc.args, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case c.name != tc.name:
			t.Errorf("%q: name %q, want %q", tc.args, c.name, tc.name)
		}
	}
}

// TestTableFilter: the filter language as iceberg-go's expressions.
func TestTableFilter(t *testing.T) {
	for in, want := range map[string]string{
		"id = 3":                                  "Equal(term=Reference(name='id'), literal=3)",
		"name != 'it''s'":                         "NotEqual(term=Reference(name='name'), literal=it's)",
		"amount>=1.5 and customer.vip = true":     "And(left=GreaterThanEqual(term=Reference(name='amount'), literal=1.5), right=Equal(term=Reference(name='customer.vip'), literal=true))",
		"a < 1 or b is null and c is not null":    "Or(left=LessThan(term=Reference(name='a'), literal=1), right=And(left=IsNull(term=Reference(name='b')), right=NotNull(term=Reference(name='c'))))",
		"at > '2026-11-28T00:00:00Z' AND id <> 2": "And(left=GreaterThan(term=Reference(name='at'), literal=2026-11-28T00:00:00Z), right=NotEqual(term=Reference(name='id'), literal=2))",
	} {
		e, err := parseFilter(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
		} else if e.String() != want {
			t.Errorf("%s:\n got %s\nwant %s", in, e, want)
		}
	}
}

// TestTableCommand: a table of every kind of column, written with
// iceberg-go into floe's catalog (SQLite and a directory) and served by
// floe's REST handler, listed, described and scanned by the command.
func TestTableCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, dialect, err := storeurl.OpenSQL("sqlite://" + filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	warehouse := "file://" + filepath.Join(dir, "iceberg")
	cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogConfig{DB: db, Dialect: dialect, Namespace: "floe", Warehouse: warehouse})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	srv := httptest.NewServer(iceberg.RESTHandler("/iceberg", cat, slog.New(slog.DiscardHandler)))
	defer srv.Close()

	// The converter's own catalog, to write the table as it would.
	w, err := sqlcat.NewCatalog("floe", db, sqlcat.SupportedDialect(dialect), iceberggo.Properties{"warehouse": warehouse})
	if err != nil {
		t.Fatal(err)
	}
	sc := iceberggo.NewSchema(0,
		iceberggo.NestedField{ID: 1, Name: "id", Type: iceberggo.PrimitiveTypes.Int64, Required: true},
		iceberggo.NestedField{ID: 2, Name: "name", Type: iceberggo.PrimitiveTypes.String},
		iceberggo.NestedField{ID: 3, Name: "amount", Type: iceberggo.DecimalTypeOf(20, 2)},
		iceberggo.NestedField{ID: 4, Name: "at", Type: iceberggo.PrimitiveTypes.TimestampTz},
		iceberggo.NestedField{ID: 5, Name: "local", Type: iceberggo.PrimitiveTypes.Timestamp},
		iceberggo.NestedField{ID: 6, Name: "day", Type: iceberggo.PrimitiveTypes.Date},
		iceberggo.NestedField{ID: 7, Name: "tod", Type: iceberggo.PrimitiveTypes.Time},
		iceberggo.NestedField{ID: 8, Name: "tags", Type: &iceberggo.ListType{ElementID: 20, Element: iceberggo.PrimitiveTypes.String, ElementRequired: false}},
		iceberggo.NestedField{ID: 9, Name: "attrs", Type: &iceberggo.MapType{KeyID: 21, KeyType: iceberggo.PrimitiveTypes.String, ValueID: 22, ValueType: iceberggo.PrimitiveTypes.Int32}},
		iceberggo.NestedField{ID: 10, Name: "customer", Type: &iceberggo.StructType{FieldList: []iceberggo.NestedField{
			{ID: 23, Name: "vip", Type: iceberggo.PrimitiveTypes.Bool}, {ID: 24, Name: "region", Type: iceberggo.PrimitiveTypes.String}}}},
		iceberggo.NestedField{ID: 11, Name: "raw", Type: iceberggo.PrimitiveTypes.Binary},
		iceberggo.NestedField{ID: 12, Name: "u", Type: iceberggo.PrimitiveTypes.UUID},
		iceberggo.NestedField{ID: 13, Name: "ratio", Type: iceberggo.PrimitiveTypes.Float64},
	)
	spec := iceberggo.NewPartitionSpec(iceberggo.PartitionField{SourceIDs: []int{4}, FieldID: 1000, Name: "at_day", Transform: iceberggo.DayTransform{}})
	tbl, err := w.CreateTable(ctx, table.Identifier{"floe", "shop_orders"}, sc,
		catalog.WithProperties(iceberggo.Properties{"floe.topic": "shop.orders"}), catalog.WithPartitionSpec(&spec))
	if err != nil {
		t.Fatal(err)
	}
	asc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, asc, strings.NewReader(`[
{"id":1,"name":"tab\there","amount":"12345678901234567.89","at":"2026-11-28T10:11:12.123456Z","local":"2026-11-28T10:11:12.5","day":"2026-11-28","tod":"10:11:12.000001",
 "tags":["a","b"],"attrs":[{"key":"x","value":1},{"key":"y","value":null}],"customer":{"vip":true,"region":"eu"},"raw":"AP8=","u":"5b8d0c6e-3f7a-4c2b-9a55-0e4c1e7d2f10","ratio":0.25},
{"id":2,"name":null,"amount":"-0.05","at":null,"local":null,"day":null,"tod":null,"tags":[],"attrs":null,"customer":null,"raw":null,"u":null,"ratio":null},
{"id":3,"name":"c","amount":"1.00","at":"1970-01-01T00:00:00Z","local":null,"day":null,"tod":null,"tags":null,"attrs":[],"customer":{"vip":false,"region":null},"raw":"","u":null,"ratio":1e300}
]`))
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := array.NewRecordReader(asc, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err = tbl.Append(ctx, rdr, nil)
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	first := tbl.CurrentSnapshot().SnapshotID
	if _, err := w.CreateTable(ctx, table.Identifier{"floe", "empty"}, iceberggo.NewSchema(0, iceberggo.NestedField{ID: 1, Name: "id", Type: iceberggo.PrimitiveTypes.Int64})); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) (string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		err := runTableTo(append(args, "--catalog", srv.URL+"/iceberg"), &out, &errOut)
		return out.String(), err
	}
	// must runs args and compares what they print with want, lines in any
	// order: a partitioned table's files come in the order iceberg-go
	// plans them.
	must := func(want string, args ...string) {
		t.Helper()
		got, err := run(args...)
		if err != nil || !slices.Equal(sortedLines(got), sortedLines(want)) {
			t.Fatalf("%q: %v\n%s\nwant\n%s", args, err, got, want)
		}
	}
	row1 := `{"id":1,"name":"tab\there","amount":"12345678901234567.89","at":"2026-11-28T10:11:12.123456Z","local":"2026-11-28T10:11:12.500000","day":"2026-11-28","tod":"10:11:12.000001",` +
		`"tags":["a","b"],"attrs":{"x":1,"y":null},"customer":{"vip":true,"region":"eu"},"raw":"AP8=","u":"5b8d0c6e-3f7a-4c2b-9a55-0e4c1e7d2f10","ratio":0.25}` + "\n"
	row2 := `{"id":2,"name":null,"amount":"-0.05","at":null,"local":null,"day":null,"tod":null,"tags":[],"attrs":null,"customer":null,"raw":null,"u":null,"ratio":null}` + "\n"
	row3 := `{"id":3,"name":"c","amount":"1.00","at":"1970-01-01T00:00:00.000000Z","local":null,"day":null,"tod":null,"tags":null,"attrs":{},"customer":{"vip":false,"region":null},"raw":"","u":null,"ratio":1e+300}` + "\n"
	must(row1+row2+row3, "scan", "shop_orders", "--output", "json")
	got, err := run("scan", "shop.orders", "-o", "json", "--limit", "2")
	if l := strings.SplitAfter(got, "\n"); err != nil || len(l) != 3 || l[0] == l[1] || !strings.Contains(row1+row2+row3, l[0]) || !strings.Contains(row1+row2+row3, l[1]) {
		t.Fatalf("--limit 2: %v\n%s", err, got)
	}
	must(row1+row3, "scan", "shop_orders", "-o", "json", "--filter", "name is not null and amount >= '1.00'")
	must(row2+row3, "scan", "shop_orders", "-o", "json", "--filter", "at < '2000-01-01T00:00:00Z' or at is null")
	must(row1, "scan", "shop_orders", "-o", "json", "--filter", "customer.vip = true")
	must(`{"id":2,"customer":null}`+"\n"+`{"id":3,"customer":{"region":null}}`+"\n",
		"scan", "shop_orders", "-o", "json", "--columns", "id,customer.region", "--filter", "id > 1")
	must(`id  name         amount                ratio
1   "tab\there"  12345678901234567.89  0.25
2   null         -0.05                 null
3   c            1.00                  1e+300
`, "scan", "shop_orders", "--columns", "id,name,amount,ratio")
	must("", "scan", "shop_orders", "--limit", "0")

	// A second snapshot; --snapshot reads the first.
	rec2, _, err := array.RecordFromJSON(memory.DefaultAllocator, asc, strings.NewReader(`[{"id":4}]`))
	if err != nil {
		t.Fatal(err)
	}
	rdr2, _ := array.NewRecordReader(asc, []arrow.RecordBatch{rec2})
	tbl, err = tbl.Append(ctx, rdr2, nil)
	rec2.Release()
	if err != nil {
		t.Fatal(err)
	}
	second := tbl.CurrentSnapshot().SnapshotID
	must(row1+row2+row3, "scan", "shop_orders", "-o", "json", "--snapshot", strconv.FormatInt(first, 10))
	must("{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n{\"id\":4}\n", "scan", "shop_orders", "-o", "json", "--columns", "id")

	id := strconv.FormatInt(second, 10)
	must(fmt.Sprintf("TABLE        %-*s  ROWS  SCHEMA\nempty        %-*s  -     0\nshop_orders  %s  4     0\n", len(id), "SNAPSHOT", len(id), "-", id), "list")
	must(`[{"name":"empty","snapshot_id":null,"rows":null,"schema_id":0},{"name":"shop_orders","snapshot_id":`+strconv.FormatInt(second, 10)+`,"rows":4,"schema_id":0}]`+"\n", "list", "-o", "json")

	got, err = run("describe", "shop_orders")
	if err != nil {
		t.Fatal(err)
	}
	// Compared with the columns' padding collapsed: ids as iceberg-go
	// assigned them when it created the table.
	lines := map[string]bool{}
	for _, l := range strings.Split(got, "\n") {
		lines[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, want := range []string{
		"table floe.shop_orders",
		"current snapshot " + id,
		"ID FIELD TYPE REQUIRED",
		"1 id long true",
		"3 amount decimal(20, 2) false",
		"4 at timestamptz false",
		"8 tags list false",
		"9 tags.element string false",
		"10 attrs map false",
		"11 attrs.key string true",
		"12 attrs.value int false",
		"14 customer.vip boolean false",
		"17 u uuid false",
		"1000 at_day day(at)",
		"floe.topic shop.orders",
		fmt.Sprintf("%d - %s append 3 3 0", first, time.UnixMilli(snapshotMs(t, tbl, first)).UTC().Format("2006-01-02T15:04:05.000Z")),
		fmt.Sprintf("%d %d %s append 1 4 0", second, first, time.UnixMilli(snapshotMs(t, tbl, second)).UTC().Format("2006-01-02T15:04:05.000Z")),
	} {
		if !lines[want] {
			t.Errorf("describe lacks %q:\n%s", want, got)
		}
	}
	got, err = run("describe", "shop_orders", "-o", "json")
	var md struct {
		Version  int   `json:"format-version"`
		Current  int64 `json:"current-snapshot-id"`
		LastCol  int   `json:"last-column-id"`
		Snapshot []any `json:"snapshots"`
	}
	if err != nil || json.Unmarshal([]byte(got), &md) != nil || md.Version != 2 || md.Current != second || md.LastCol != 18 || len(md.Snapshot) != 2 {
		t.Fatalf("describe -o json: %v %+v\n%.300s", err, md, got)
	}

	for _, args := range [][]string{{"scan", "absent"}, {"describe", "absent"}} {
		if _, err := run(args...); err == nil || err.Error() != `no table "absent" in namespace "floe" of `+srv.URL+`/iceberg (floe table list names them)` {
			t.Errorf("%q: %v", args, err)
		}
	}
	if _, err := run("scan", "shop_orders", "--snapshot", "42"); err == nil || !strings.Contains(err.Error(), "has no snapshot 42") {
		t.Errorf("unknown snapshot: %v", err)
	}
	if _, err := run("scan", "shop_orders", "--filter", "nope = 1"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown filter column: %v", err)
	}
	if _, err := run("list", "--namespace", "other"); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("unknown namespace: %v", err)
	}
	var out bytes.Buffer
	if err := runTableTo([]string{"list", "--catalog", "http://127.0.0.1:1/iceberg", "--timeout", "5s"}, &out, &out); err == nil ||
		!strings.HasPrefix(err.Error(), "catalog http://127.0.0.1:1/iceberg: ") {
		t.Errorf("no catalog: %v", err)
	}
}

// snapshotMs is when snapshot id of tbl was committed.
func snapshotMs(t *testing.T, tbl *table.Table, id int64) int64 {
	t.Helper()
	s := tbl.SnapshotByID(id)
	if s == nil {
		t.Fatalf("no snapshot %d", id)
	}
	return s.TimestampMs
}

func sortedLines(s string) []string { return slices.Sorted(slices.Values(strings.Split(s, "\n"))) }
