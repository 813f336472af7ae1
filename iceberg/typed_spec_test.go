package iceberg

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"floe/topicconfig"
)

// TestPartitionSpecConfig: at CreateTopics and AlterConfigs a spec's
// syntax, transforms and Kafka columns are checked whatever the mode;
// other columns only in typed modes (value columns, bound later).
func TestPartitionSpecConfig(t *testing.T) {
	typed := map[string]string{ConfigValueMode: ModeSchemaIDPrefix}
	for _, c := range []struct {
		spec  string
		extra map[string]string
		why   string // "" accepted, else a substring of the refusal
	}{
		{"day(timestamp)", nil, ""},
		{"day(order_time), bucket[16](customer_id)", typed, ""},
		{"identity(customer.region), truncate[4](value)", typed, ""},
		{"day(order_time)", map[string]string{ConfigKeyMode: ModeJSON}, ""},
		{"day(order_time)", nil, `Invalid value day(order_time) for configuration floe.iceberg.partition.spec: partition spec term "day(order_time)": no column "order_time" (want one of partition, offset, timestamp, timestamp_type, key, value; value columns need floe.iceberg.value.mode or floe.iceberg.key.mode other than binary)`},
		{"day(order_time)", map[string]string{ConfigValueMode: ModeBinary}, `no column "order_time"`},
		{"identity(customer.region)", nil, `no column "customer.region"`},
		{"day(value)", nil, "day cannot transform binary"},
		{"week(order_time)", typed, `Invalid value week(order_time) for configuration floe.iceberg.partition.spec: partition spec term "week(order_time)": invalid transform "week"`},
		{"day(partition)", typed, "day cannot transform int"},
		{"bucket[0](customer_id)", typed, "invalid transform"},
		{"day()", typed, "a column or a dotted path"},
		{"identity(customer..region)", typed, "a column or a dotted path"},
		{"day order_time", typed, "want TRANSFORM(COLUMN)"},
		{"bucket[4](customer_id), bucket[4](customer_id)", typed, "given twice"},
		{"day(order_time), hour(order_time)", typed, `partition spec term "hour(order_time)": conflicts with "day(order_time)"`},
		{"bucket[4](customer_id), day(timestamp)", map[string]string{ConfigValueMode: ModeJSON}, ""},
		{"day(order_time)", map[string]string{ConfigValueMode: ModeJSON}, `Invalid value day(order_time) for configuration floe.iceberg.partition.spec: partition spec term "day(order_time)": with floe.iceberg.value.mode=json, columns are inferred from JSON values as boolean, long, double, string, struct or list: day takes dates and timestamps`},
		{"hour(_key.at)", map[string]string{ConfigValueMode: ModeSchemaIDPrefix, ConfigKeyMode: ModeJSON}, "with floe.iceberg.key.mode=json"},
		{"hour(_key.at), day(order_time)", map[string]string{ConfigValueMode: ModeJSON, ConfigKeyMode: ModeSchemaLatest}, `"day(order_time)": with floe.iceberg.value.mode=json`},
	} {
		configs := map[string]string{ConfigPartitionSpec: c.spec}
		for k, v := range c.extra {
			configs[k] = v
		}
		why := topicconfig.CheckAll(configs)
		if (why == "") != (c.why == "") || !strings.Contains(why, c.why) {
			t.Errorf("%q %v: %q, want %q", c.spec, c.extra, why, c.why)
		}
	}
	// Turning a typed topic binary is refused while its spec names value
	// columns (AlterConfigs checks the configs it would leave).
	if why := topicconfig.CheckSet(map[string]string{ConfigPartitionSpec: "day(order_time)", ConfigValueMode: ModeBinary}); !strings.Contains(why, "floe.iceberg.partition.spec") {
		t.Errorf("typed spec on a binary topic: %q", why)
	}
}

// TestBindSpec: a spec binds to a typed table's schema by column types.
func TestBindSpec(t *testing.T) {
	sc := iceberg.NewSchema(0, append(TypedSchema().Fields(),
		iceberg.NestedField{ID: 11, Name: "order_time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 12, Name: "customer_id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 13, Name: "customer", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 14, Name: "region", Type: iceberg.PrimitiveTypes.String}}}},
		iceberg.NestedField{ID: 15, Name: "tags", Type: &iceberg.ListType{ElementID: 16, Element: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 17, Name: "vip", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 18, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)},
		iceberg.NestedField{ID: 19, Name: "day", Type: iceberg.PrimitiveTypes.Date},
	)...)
	for _, c := range []struct{ spec, want string }{
		{"day(order_time), bucket[16](customer_id)", "order_time_day=day(11),customer_id_bucket_16=bucket[16](12)"},
		{"identity(customer.region), hour(timestamp)", "customer_region=identity(14),timestamp_hour=hour(4)"},
		{"truncate[100](amount), month(day), bucket[8](amount)", "amount_trunc_100=truncate[100](18),day_month=month(19),amount_bucket_8=bucket[8](18)"},
		{"day(customer_id)", `error: partition spec term "day(customer_id)": day cannot transform long`},
		{"bucket[4](vip)", `error: partition spec term "bucket[4](vip)": bucket[4] cannot transform boolean`},
		{"hour(day)", `error: partition spec term "hour(day)": hour cannot transform date`},
		{"identity(tags.element)", `error: partition spec term "identity(tags.element)": column "tags.element": tags is a list<string>, and a partition source may only be nested in structs`},
		{"identity(customer)", `error: partition spec term "identity(customer)": column "customer" is a struct<14: region: optional string>, not a primitive column`},
		{"day(order_tim)", `error: partition spec term "day(order_tim)": no column "order_tim"`},
	} {
		terms, err := parseSpecTerms(c.spec)
		var got string
		if err == nil {
			var ps iceberg.PartitionSpec
			if ps, err = bindSpec(c.spec, terms, sc, true); err == nil {
				var fs []string
				for _, f := range ps.Fields() {
					fs = append(fs, f.Name+"="+f.Transform.String()+"("+strconv.Itoa(f.SourceID())+")")
				}
				got = strings.Join(fs, ",")
			}
		}
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%q: %s\nwant %s", c.spec, got, c.want)
		}
	}
}

// bucketOf is Iceberg's bucket[16] of a long, as text.
func bucketOf(t *testing.T, v int64) string {
	t.Helper()
	b := iceberg.BucketTransform{NumBuckets: 16}.Transformer(iceberg.PrimitiveTypes.Int64)(v)
	if !b.Valid {
		t.Fatalf("bucket of %d", v)
	}
	return strconv.Itoa(int(b.Val))
}

// daysOf is Iceberg's day of a timestamp, as text: days since the epoch.
func daysOf(at time.Time) string { return strconv.Itoa(int(at.Unix() / 86400)) }

const (
	// orderTimed has the spec's columns; orderUntimed lacks order_time.
	orderTimed = `{"type":"record","name":"Order","fields":[{"name":"id","type":"int"},
		{"name":"order_time","type":{"type":"long","logicalType":"timestamp-micros"}},{"name":"customer_id","type":"long"},
		{"name":"customer","type":{"type":"record","name":"Customer","fields":[{"name":"region","type":"string"}]}}]}`
	orderUntimed = `{"type":"record","name":"Order","fields":[{"name":"id","type":"int"},{"name":"customer_id","type":"long"}]}`
)

// TestTypedValueColumnSpec: a spec over value columns (nested ones too)
// is left pending when the typed table is created and bound by the
// commit that first adds value columns; a schema it cannot bind to sends
// its records to the dead-letter table (partition_spec) and leaves the
// table as it was; once bound, data files carry the rows' partition
// values and a later schema without the column keeps it.
func TestTypedValueColumnSpec(t *testing.T) {
	spec := "day(order_time), bucket[16](customer_id), identity(customer.region)"
	e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeSchemaIDPrefix, ConfigPartitionSpec: spec})
	var untimed struct{ ID int }
	e.call("POST", "/subjects/other-value/versions", map[string]any{"schema": orderUntimed}, &untimed)
	e.produce(frame(t, untimed.ID, orderUntimed, map[string]any{"id": 0, "customer_id": int64(9)}))
	if err := e.cycle(); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.conv.cat.Load(e.ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if !tbl.Spec().IsUnpartitioned() || tbl.Properties()[propPendingSpec] != spec || tbl.Schema().HighestFieldID() != 10 {
		t.Fatalf("after a schema the spec cannot bind to: spec %v, pending %q, schema %v", tbl.Spec(), tbl.Properties()[propPendingSpec], tbl.Schema())
	}
	dlq, err := e.conv.cat.loadNamed(e.ctx, DLQTableName("orders"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.rows(dlq, ColOffset, ColError), ","); !strings.Contains(got, `partition_spec: schemas `) || !strings.Contains(got, `no column \"order_time\"`) {
		t.Errorf("dead letters %s", got)
	}
	if n := testutil.ToFloat64(e.conv.metrics.dlq.WithLabelValues("orders", reasonPartitionSpec)); n != 1 {
		t.Errorf("dlq metric %v", n)
	}

	timed := e.register(orderTimed)
	day1 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	day2 := day1.Add(24 * time.Hour)
	order := func(id int, at time.Time, customer int64, region string) []byte {
		return frame(t, timed, orderTimed, map[string]any{"id": id, "order_time": at, "customer_id": customer,
			"customer": map[string]any{"region": region}})
	}
	e.produce(order(1, day1, 7, "eu"), order(2, day2, 7, "eu"), order(3, day1, 8, "us"),
		frame(t, untimed.ID, orderUntimed, map[string]any{"id": 4, "customer_id": int64(9)}))
	if err := e.cycle(); err != nil {
		t.Fatal(err)
	}
	if tbl, err = e.conv.cat.Load(e.ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, ok := tbl.Properties()[propPendingSpec]; ok {
		t.Errorf("spec still pending")
	}
	var got []string
	ps := tbl.Spec()
	for _, f := range ps.Fields() {
		name, _ := tbl.Schema().FindColumnName(f.SourceID())
		got = append(got, f.Name+"="+f.Transform.String()+"("+name+")")
	}
	if want := "order_time_day=day(order_time),customer_id_bucket_16=bucket[16](customer_id),customer_region=identity(customer.region)"; strings.Join(got, ",") != want {
		t.Errorf("spec %s, want %s", strings.Join(got, ","), want)
	}
	// Each data file holds one partition: its rows' day, bucket and region.
	files := map[string]int64{}
	snap := tbl.CurrentSnapshot()
	fs, err := tbl.FS(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	mans, err := snap.Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mans {
		for en, err := range m.Entries(fs, false) {
			if err != nil {
				t.Fatal(err)
			}
			df := en.DataFile()
			if df.SpecID() != int32(ps.ID()) {
				t.Errorf("file %s of spec %d", df.FilePath(), df.SpecID())
			}
			p := df.Partition()
			key := []string{}
			for _, f := range ps.Fields() {
				key = append(key, f.Name+"="+fmt.Sprint(p[f.FieldID]))
			}
			files[strings.Join(key, " ")] += df.Count()
		}
	}
	b7, b8 := bucketOf(t, 7), bucketOf(t, 8)
	want := map[string]int64{
		"order_time_day=" + daysOf(day1) + " customer_id_bucket_16=" + b7 + " customer_region=eu": 1,
		"order_time_day=" + daysOf(day2) + " customer_id_bucket_16=" + b7 + " customer_region=eu": 1,
		"order_time_day=" + daysOf(day1) + " customer_id_bucket_16=" + b8 + " customer_region=us": 1,
		// The schema without order_time, taken in once the spec is bound:
		// its rows are null there (the table keeps the column).
		"order_time_day=<nil> customer_id_bucket_16=" + bucketOf(t, 9) + " customer_region=<nil>": 1,
	}
	if len(files) != len(want) {
		t.Errorf("partitions %v, want %v", files, want)
	}
	for k, n := range want {
		if files[k] != n {
			t.Errorf("partition %s: %d rows, want %d (all: %v)", k, files[k], n, files)
		}
	}
	if got := strings.Join(e.rows(tbl, "_kafka.offset", "id", "customer_id"), "\n"); got != strings.Join([]string{
		`{"_kafka":{"offset":1},"customer_id":7,"id":1}`, `{"_kafka":{"offset":2},"customer_id":7,"id":2}`,
		`{"_kafka":{"offset":3},"customer_id":8,"id":3}`, `{"_kafka":{"offset":4},"customer_id":9,"id":4}`}, "\n") {
		t.Errorf("rows\n%s", got)
	}
	// A scan for one day plans only its files.
	tasks, err := tbl.Scan(table.WithRowFilter(iceberg.GreaterThanEqual(iceberg.Reference("order_time"), day2.UnixMicro()))).PlanFiles(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 {
		t.Errorf("a scan of day 2 plans %d files, want 1", len(tasks))
	}
}

// TestTypedJSONValueColumnSpec: in json mode each value's inferred
// columns are checked against the pending spec: a value without the
// column is a partition_spec dead letter until one with it binds the
// spec; values without it after that are rows.
func TestTypedJSONValueColumnSpec(t *testing.T) {
	e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeJSON, ConfigPartitionSpec: "bucket[4](customer.id)"})
	e.produce([]byte(`{"amount":1}`), []byte(`{"amount":2,"customer":{"id":7}}`), []byte(`{"amount":3}`))
	if err := e.cycle(); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.conv.cat.Load(e.ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	ps := tbl.Spec()
	if ps.NumFields() != 1 || ps.Field(0).Name != "customer_id_bucket_4" {
		t.Errorf("spec %v", ps)
	}
	if got := strings.Join(e.rows(tbl, "_kafka.offset", "amount"), ","); got != `{"_kafka":{"offset":1},"amount":2},{"_kafka":{"offset":2},"amount":3}` {
		t.Errorf("rows %s", got)
	}
	dlq, err := e.conv.cat.loadNamed(e.ctx, DLQTableName("orders"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.rows(dlq, ColOffset, ColError), ","); !strings.Contains(got, `"offset":0`) || !strings.Contains(got, "partition_spec: ") || strings.Count(got, "offset") != 1 {
		t.Errorf("dead letters %s", got)
	}
}

// TestTypedSpecNameClash: a value column named as one of the spec's
// partition fields over a Kafka column (identity(timestamp) is the
// partition field timestamp) cannot take the spec: partition_spec.
func TestTypedSpecNameClash(t *testing.T) {
	e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeJSON, ConfigPartitionSpec: "identity(timestamp), bucket[4](customer_id)"})
	e.produce([]byte(`{"timestamp":1,"customer_id":5}`), []byte(`{"customer_id":6}`))
	if err := e.cycle(); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.conv.cat.Load(e.ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if ps := tbl.Spec(); ps.NumFields() != 2 {
		t.Errorf("spec %v", ps)
	}
	if got := strings.Join(e.rows(tbl, "_kafka.offset", "customer_id"), ","); got != `{"_kafka":{"offset":1},"customer_id":6}` {
		t.Errorf("rows %s", got)
	}
	dlq, err := e.conv.cat.loadNamed(e.ctx, DLQTableName("orders"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.rows(dlq, ColOffset, ColError), ","); !strings.Contains(got, `"offset":0`) || !strings.Contains(got, "partition_spec: ") || !strings.Contains(got, "partition name timestamp matches schema column") {
		t.Errorf("dead letters %s", got)
	}
}
