package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// specOrderSchema has the columns the partition spec names, a nested
// record, a list of records and a map (field ids at every level).
const specOrderSchema = `{"type":"record","name":"SpecOrder","namespace":"shop","fields":[
	{"name":"id","type":"long"},
	{"name":"order_time","type":{"type":"long","logicalType":"timestamp-millis"}},
	{"name":"customer_id","type":"long"},
	{"name":"customer","type":{"type":"record","name":"SpecCustomer","fields":[{"name":"region","type":"string"}]}},
	{"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[{"name":"sku","type":"string"},{"name":"qty","type":"int"}]}}},
	{"name":"attrs","type":{"type":"map","values":"long"}}]}`

type specLine struct {
	SKU string `avro:"sku"`
	Qty int32  `avro:"qty"`
}

type specOrder struct {
	ID         int64     `avro:"id"`
	OrderTime  time.Time `avro:"order_time"`
	CustomerID int64     `avro:"customer_id"`
	Customer   struct {
		Region string `avro:"region"`
	} `avro:"customer"`
	Lines []specLine       `avro:"lines"`
	Attrs map[string]int64 `avro:"attrs"`
}

// TestIcebergTypedPartitionSpec: floe.iceberg.partition.spec
// "day(order_time), bucket[16](customer_id)" on an Avro topic: refused
// with INVALID_CONFIG on a binary topic (and when the typed topic would
// turn binary); the table the converter creates has the spec over the
// value columns' field ids, each data file holds the partition its rows
// transform to, and a scan filtered on order_time plans only that day's
// files.
func TestIcebergTypedPartitionSpec(t *testing.T) {
	dev := startFloe(t, "dev", "--data-dir", t.TempDir(), "--iceberg-interval", "300ms")
	typedPartitionSpec(t, dev)
}

// TestIcebergTypedPartitionSpecMinIO: the same on PostgreSQL and MinIO,
// the converter in `floe compactor`, the data files read through the
// FileIO of an agent's REST catalog that vends the bucket's credentials.
func TestIcebergTypedPartitionSpecMinIO(t *testing.T) {
	c := newCluster(t, "typed_spec_minio")
	a := c.startAgent(t, "--iceberg-vend-credentials")
	c.startCompactor(t, "--interval", "1s", "--iceberg-interval", "300ms")
	typedPartitionSpec(t, a)
}

// typedPartitionSpec is TestIcebergTypedPartitionSpec against a floe
// whose Kafka, registry and REST catalog listeners are p's.
func typedPartitionSpec(t *testing.T, p *proc) {
	ctx := testContext(t, 3*time.Minute)
	const topic, spec = "spec.orders", "day(order_time), bucket[16](customer_id)"
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// A binary topic has no order_time column.
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"floe.iceberg.partition.spec": ptr(spec)}, "spec.binary")
	if err != nil && !errors.Is(err, kerr.InvalidConfig) {
		t.Fatal(err)
	}
	wantMsg := `Invalid value ` + spec + ` for configuration floe.iceberg.partition.spec: partition spec term "day(order_time)": no column "order_time"`
	if resp.Err != kerr.InvalidConfig || !strings.HasPrefix(resp.ErrMessage, wantMsg) {
		t.Errorf("binary topic with a value-column spec: %v %q, want INVALID_CONFIG %q…", resp.Err, resp.ErrMessage, wantMsg)
	}
	resp, err = adm.CreateTopic(ctx, 1, 1, map[string]*string{"floe.iceberg.partition.spec": ptr("week(order_time)"),
		"floe.iceberg.value.mode": ptr("schema_id_prefix")}, "spec.week")
	if err != nil && !errors.Is(err, kerr.InvalidConfig) {
		t.Fatal(err)
	}
	if resp.Err != kerr.InvalidConfig || !strings.Contains(resp.ErrMessage, `invalid transform "week"`) {
		t.Errorf("unknown transform: %v %q", resp.Err, resp.ErrMessage)
	}

	rc, err := sr.NewClient(sr.URLs("http://" + p.RegistryAddr))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rc.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: specOrderSchema, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	avs := avro.MustParse(specOrderSchema)
	var serde sr.Serde
	serde.Register(ss.ID, specOrder{}, sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(avs, v) }))
	createTableTopic(t, ctx, p.Addr, topic, map[string]*string{"floe.iceberg.enabled": ptr("true"),
		"floe.iceberg.value.mode": ptr("schema_id_prefix"), "floe.iceberg.partition.spec": ptr(spec)})
	alter, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "floe.iceberg.value.mode", Value: ptr("binary")}}, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(alter) != 1 || alter[0].Err != kerr.InvalidConfig || !strings.HasPrefix(alter[0].ErrMessage, wantMsg) {
		t.Errorf("turning the typed topic binary: %+v", alter)
	}

	// Four days, eight customers a day.
	day0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	const days, perDay = 4, 8
	for d := range days {
		for c := range perDay {
			o := specOrder{ID: int64(d*perDay + c), OrderTime: day0.AddDate(0, 0, d).Add(time.Duration(c) * time.Hour),
				CustomerID: int64(c*7919 + d), Lines: []specLine{{SKU: "s", Qty: int32(c)}}, Attrs: map[string]int64{"d": int64(d)}}
			o.Customer.Region = []string{"eu", "us"}[c%2]
			v, err := serde.Encode(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: v}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}

	cat, err := rest.NewCatalog(ctx, "floe", "http://"+p.HTTPAddr+"/iceberg")
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := waitTyped(t, ctx, cat, "spec_orders", days*perDay, -1)
	checkParquetFieldIDs(t, ctx, tbl)

	sc, ps := tbl.Schema(), tbl.Spec()
	orderTime, _ := sc.FindFieldByName("order_time")
	customerID, _ := sc.FindFieldByName("customer_id")
	var got []string
	for _, f := range ps.Fields() {
		got = append(got, fmt.Sprintf("%s=%s(%d)", f.Name, f.Transform, f.SourceID()))
	}
	if want := fmt.Sprintf("order_time_day=day(%d),customer_id_bucket_16=bucket[16](%d)", orderTime.ID, customerID.ID); strings.Join(got, ",") != want {
		t.Fatalf("partition spec %s, want %s", strings.Join(got, ","), want)
	}
	dayField, bucketField := ps.Field(0).FieldID, ps.Field(1).FieldID

	// Each data file's partition values are its rows' day and bucket.
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bucket := iceberg.BucketTransform{NumBuckets: 16}.Transformer(iceberg.PrimitiveTypes.Int64)
	filesOfDay := map[string]int{}
	rows := 0
	for _, task := range all {
		df := task.File
		if df.SpecID() != int32(ps.ID()) {
			t.Errorf("%s: spec %d, want %d", df.FilePath(), df.SpecID(), ps.ID())
		}
		part := df.Partition()
		pday, pbucket := fmt.Sprint(part[dayField]), fmt.Sprint(part[bucketField])
		filesOfDay[pday]++
		times, customers := readParquetColumns(t, ctx, fsys, df.FilePath())
		for i, us := range times {
			rows++
			if d := fmt.Sprint(us / (24 * 3600 * 1e6)); d != pday {
				t.Errorf("%s: row order_time %d is day %s, the file's partition day %s", df.FilePath(), us, d, pday)
			}
			if b := fmt.Sprint(bucket(customers[i]).Val); b != pbucket {
				t.Errorf("%s: customer %d is bucket %s, the file's partition bucket %s", df.FilePath(), customers[i], b, pbucket)
			}
		}
	}
	if rows != days*perDay || len(filesOfDay) != days {
		t.Fatalf("%d rows in %d files over days %v, want %d rows over %d days", rows, len(all), filesOfDay, days*perDay, days)
	}

	// A scan of day 2 plans its files alone, and reads its rows.
	day2 := day0.AddDate(0, 0, 2)
	filter := iceberg.NewAnd(iceberg.GreaterThanEqual(iceberg.Reference("order_time"), day2.UnixMicro()),
		iceberg.LessThan(iceberg.Reference("order_time"), day2.AddDate(0, 0, 1).UnixMicro()))
	scan := tbl.Scan(table.WithRowFilter(filter))
	planned, err := scan.PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want2 := filesOfDay[fmt.Sprint(day2.Unix()/86400)]
	t.Logf("a scan of one day plans %d of %d data files", len(planned), len(all))
	if len(planned) != want2 || len(planned) >= len(all) {
		t.Errorf("a scan of day 2 plans %d of %d files, want its %d", len(planned), len(all), want2)
	}
	at, err := scan.ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != perDay {
		t.Errorf("a scan of day 2 reads %d rows, want %d", at.NumRows(), perDay)
	}
}

// openParquet opens a data file through the table's FileIO.
func openParquet(t *testing.T, fsys icebergio.IO, path string) *file.Reader {
	t.Helper()
	f, err := fsys.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		f.Close()
		t.Fatalf("%s: %v", path, err)
	}
	return rdr
}

// readParquetColumns reads a data file's order_time (µs) and customer_id
// columns with arrow-go's Parquet reader.
func readParquetColumns(t *testing.T, ctx context.Context, fsys icebergio.IO, path string) (times, customers []int64) {
	t.Helper()
	rdr := openParquet(t, fsys, path)
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	at, err := fr.ReadTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	col := func(name string) *arrow.Chunked {
		idx := at.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("%s: no column %s", path, name)
		}
		return at.Column(idx[0]).Data()
	}
	for _, c := range col("order_time").Chunks() {
		for _, v := range c.(*array.Timestamp).Values() {
			times = append(times, int64(v))
		}
	}
	for _, c := range col("customer_id").Chunks() {
		customers = append(customers, c.(*array.Int64).Int64Values()...)
	}
	if len(times) != len(customers) {
		t.Fatalf("%s: %d times, %d customers", path, len(times), len(customers))
	}
	return times, customers
}

// checkParquetFieldIDs opens every data file of tbl's current snapshot
// through the table's FileIO and checks that each Parquet field carries
// the field id of the table's column at the same path in the table's
// current schema: top-level columns, struct fields, list elements, map
// keys and values. Columns are matched by name (an Avro field renamed
// through an alias keeps filling its column, under the column's name).
func checkParquetFieldIDs(t *testing.T, ctx context.Context, tbl *table.Table) {
	t.Helper()
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) == 0 {
		t.Fatalf("table %v has no data files", tbl.Identifier())
	}
	st := tbl.Schema().AsStruct()
	for _, task := range tasks {
		rdr := openParquet(t, fsys, task.File.FilePath())
		var errs []string
		n := compareFieldIDs(rdr.MetaData().Schema.Root(), &st, "", &errs)
		rdr.Close()
		if len(errs) > 0 {
			t.Errorf("%s: field ids differ from the table schema's: %s", task.File.FilePath(), strings.Join(errs, "; "))
		}
		if n < len(st.FieldList) {
			t.Errorf("%s: %d field ids checked, fewer than the schema's %d top-level columns", task.File.FilePath(), n, len(st.FieldList))
		}
	}
}

// compareFieldIDs compares the field ids below Parquet node n with
// those of Iceberg type typ (n's type, at path), appending differences
// to errs; it returns how many ids it compared.
func compareFieldIDs(n schema.Node, typ iceberg.Type, path string, errs *[]string) int {
	g, group := n.(*schema.GroupNode)
	child := func(i int) schema.Node {
		if !group || g.NumFields() <= i {
			*errs = append(*errs, fmt.Sprintf("%s: Parquet %s has no field %d for %s", path, n.Name(), i, typ))
			return nil
		}
		return g.Field(i)
	}
	check := func(c schema.Node, id int, t iceberg.Type, p string) int {
		if c == nil {
			return 0
		}
		if int(c.FieldID()) != id {
			*errs = append(*errs, fmt.Sprintf("%s: Parquet field id %d, table %d", p, c.FieldID(), id))
		}
		return 1 + compareFieldIDs(c, t, p, errs)
	}
	switch typ := typ.(type) {
	case *iceberg.StructType:
		if !group {
			*errs = append(*errs, fmt.Sprintf("%s: Parquet %s is no group for %s", path, n.Name(), typ))
			return 0
		}
		checked := 0
		for i := range g.NumFields() {
			c := g.Field(i)
			p := strings.TrimPrefix(path+"."+c.Name(), ".")
			j := -1
			for k, f := range typ.FieldList {
				if f.Name == c.Name() {
					j = k
				}
			}
			if j < 0 {
				*errs = append(*errs, fmt.Sprintf("%s: no such column in the table", p))
				continue
			}
			checked += check(c, typ.FieldList[j].ID, typ.FieldList[j].Type, p)
		}
		return checked
	case *iceberg.ListType:
		// LIST: a repeated group holding the element.
		if rep := child(0); rep != nil {
			rg, ok := rep.(*schema.GroupNode)
			if !ok || rg.NumFields() != 1 {
				*errs = append(*errs, fmt.Sprintf("%s: Parquet list without a three-level element", path))
				return 0
			}
			return check(rg.Field(0), typ.ElementID, typ.Element, path+".element")
		}
	case *iceberg.MapType:
		// MAP: a repeated group key_value holding the key and the value.
		if rep := child(0); rep != nil {
			rg, ok := rep.(*schema.GroupNode)
			if !ok || rg.NumFields() != 2 {
				*errs = append(*errs, fmt.Sprintf("%s: Parquet map without key and value", path))
				return 0
			}
			return check(rg.Field(0), typ.KeyID, typ.KeyType, path+".key") + check(rg.Field(1), typ.ValueID, typ.ValueType, path+".value")
		}
	default:
		if group {
			*errs = append(*errs, fmt.Sprintf("%s: Parquet group for %s", path, typ))
		}
	}
	return 0
}
