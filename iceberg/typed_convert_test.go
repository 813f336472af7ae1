package iceberg

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
	havro "github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
	"floe/metadata/sqlite"
	"floe/schemaregistry"
	"floe/storage"
	"floe/storage/file"
)

// typedEnv is a converter over SQLite and a directory bucket, with the
// registry on the same store.
type typedEnv struct {
	t      testing.TB
	ctx    context.Context
	store  metadata.Store
	bucket storage.Bucket
	conv   *Converter
	reg    *schemaregistry.Server
	topic  metadata.Topic
}

func newTypedEnv(t testing.TB, configs map[string]string) *typedEnv {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	bucket, err := file.New(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.OpenDB(filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := OpenCatalog(ctx, CatalogConfig{DB: db, Dialect: "sqlite", Namespace: "floe",
		Warehouse: "file://" + filepath.Join(dir, "objects", "iceberg")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConverterConfig("test")
	cfg.Maintenance.Every = 0
	conv := NewConverter(cfg, store, bucket, cat, slog.New(slog.NewTextHandler(io.Discard, nil)))
	configs[ConfigEnabled] = "true"
	tp, err := store.CreateTopic(ctx, "orders", 1, configs)
	if err != nil {
		t.Fatal(err)
	}
	return &typedEnv{t: t, ctx: ctx, store: store, bucket: bucket, conv: conv,
		reg: schemaregistry.New(schemaregistry.Config{Store: store}), topic: tp}
}

// call sends one request to the registry and decodes its answer into out.
func (e *typedEnv) call(method, path string, body, out any) {
	e.t.Helper()
	b, _ := json.Marshal(body)
	req := httptest.NewRequest(method, path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	rec := httptest.NewRecorder()
	e.reg.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		e.t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			e.t.Fatal(err)
		}
	}
}

// register registers an Avro schema under orders-value and returns its id.
func (e *typedEnv) register(schema string) int {
	var out struct{ ID int }
	e.call("POST", "/subjects/orders-value/versions", map[string]any{"schema": schema}, &out)
	return out.ID
}

// frame is Confluent's wire format of v under schema id.
func frame(t testing.TB, id int, schema string, v any) []byte {
	t.Helper()
	payload, err := havro.Marshal(havro.MustParse(schema), v)
	if err != nil {
		t.Fatal(err)
	}
	out := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, payload...)
}

// produce commits one object holding one batch of the values (nil: a
// tombstone) to partition 0, keyed k0, k1, ….
func (e *typedEnv) produce(values ...[]byte) {
	e.t.Helper()
	kvs := make([][2][]byte, len(values))
	for i, v := range values {
		kvs[i] = [2][]byte{[]byte(fmt.Sprintf("k%d", i)), v}
	}
	e.produceKeyed(kvs)
}

// produceKeyed is produce with the keys given (nil: a null key).
func (e *typedEnv) produceKeyed(kvs [][2][]byte) {
	e.t.Helper()
	var recs []byte
	values := kvs
	for i, kv := range kvs {
		r := kmsg.Record{OffsetDelta: int32(i), Key: kv[0], Value: kv[1],
			Headers: []kmsg.Header{{Key: "h", Value: []byte("v")}}}
		body := r.AppendTo(nil)[1:]
		r.Length = int32(len(body))
		recs = r.AppendTo(recs)
	}
	now := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{Magic: 2, PartitionLeaderEpoch: -1, LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(values)), Records: recs}
	batch := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(batch[8:], uint32(len(batch)-12))
	binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)))
	w := storage.NewObjectWriter()
	w.Add(storage.TopicID(e.topic.ID), 0, batch, int64(len(values)), now, now)
	obj, runs := w.Finish()
	key := storage.NewObjectKey()
	if err := e.bucket.Put(e.ctx, key, obj); err != nil {
		e.t.Fatal(err)
	}
	commit := metadata.ObjectCommit{Key: key, Size: int64(len(obj)), AgentID: "test"}
	for _, r := range runs {
		commit.Runs = append(commit.Runs, metadata.RunCommit{TopicID: metadata.TopicID(r.TopicID), Partition: r.Partition,
			ByteOffset: r.Offset, ByteLength: r.Length, Batches: r.Batches, Records: r.Records,
			MinTimestamp: r.MinTimestamp, MaxTimestamp: r.MaxTimestamp})
	}
	if _, err := e.store.CommitObject(e.ctx, commit); err != nil {
		e.t.Fatal(err)
	}
}

// rows scans a table into JSON lines sorted by offset, with the given
// columns only.
func (e *typedEnv) rows(tbl *table.Table, cols ...string) []string {
	e.t.Helper()
	at, err := tbl.Scan(table.WithSelectedFields(cols...)).ToArrowTable(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer at.Release()
	var lines []string
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		var buf bytes.Buffer
		if err := array.RecordToJSON(tr.RecordBatch(), &buf); err != nil {
			e.t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
	}
	sort.Strings(lines)
	return lines
}

func (e *typedEnv) cycle() error {
	e.t.Helper()
	l, err := metadata.AcquireJobLease(e.ctx, e.store, "iceberg/orders", "test", time.Minute)
	if err != nil || l == nil {
		e.t.Fatal(err)
	}
	defer l.Release(e.ctx)
	tp, err := e.store.Topic(e.ctx, "orders")
	if err != nil {
		e.t.Fatal(err)
	}
	return e.conv.cycle(e.ctx, l, tp)
}

const (
	orderV1 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"int"},{"name":"item","type":"string"}]}`
	// v2: id promoted to long, an optional field added.
	orderV2 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"item","type":"string"},
		{"name":"note","type":["null","string"],"default":null}]}`
	// v3: item is an int: no Iceberg evolution takes it.
	orderV3 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"item","type":"int"}]}`
)

// TestTypedAvroTable: framed Avro records of three schema versions, and
// records that cannot be rows, land each in exactly one of the typed
// table and its dead-letter table; the table evolves (a column added, a
// type promoted) and old rows read null in the new column.
func TestTypedAvroTable(t *testing.T) {
	e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeSchemaIDPrefix})
	v1 := e.register(orderV1)
	v2 := e.register(orderV2)
	e.call("PUT", "/config/orders-value", map[string]any{"compatibility": "NONE"}, nil)
	v3 := e.register(orderV3)
	good := frame(t, v1, orderV1, map[string]any{"id": 1, "item": "tea"})
	e.produce(
		good, // 0
		frame(t, v2, orderV2, map[string]any{"id": int64(1) << 40, "item": "cake", "note": "gift"}), // 1
		[]byte("plain text"), // 2: unframed
		frame(t, 9999, orderV1, map[string]any{"id": 5, "item": "x"}), // 3: unknown id
		good[:len(good)-2], // 4: truncated
		frame(t, v3, orderV3, map[string]any{"id": int64(3), "item": 7}), // 5: incompatible
		nil, // 6: tombstone
		frame(t, v1, orderV1, map[string]any{"id": 2, "item": "jam"}), // 7
	)
	if err := e.cycle(); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.conv.cat.Load(e.ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldsOf(tbl.Schema()); !strings.Contains(got, "id: long\nitem: string\nnote: string") {
		t.Errorf("table columns\n%s", got)
	}
	got := e.rows(tbl, "_kafka.offset", "id", "item", "note")
	want := []string{
		`{"_kafka":{"offset":0},"id":1,"item":"tea","note":null}`,
		`{"_kafka":{"offset":1},"id":1099511627776,"item":"cake","note":"gift"}`,
		`{"_kafka":{"offset":6},"id":null,"item":null,"note":null}`,
		`{"_kafka":{"offset":7},"id":2,"item":"jam","note":null}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("table rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	dlq, err := e.conv.cat.loadNamed(e.ctx, DLQTableName("orders"))
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, l := range e.rows(dlq, ColOffset, ColError) {
		var r struct {
			Offset int64
			Error  string
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		reasons = append(reasons, fmt.Sprintf("%d %s", r.Offset, strings.SplitN(r.Error, ":", 2)[0]))
	}
	sort.Strings(reasons)
	wantDLQ := []string{"2 unframed", "3 unknown_schema", "4 does_not_decode", "5 incompatible_schema"}
	if strings.Join(reasons, ",") != strings.Join(wantDLQ, ",") {
		t.Errorf("dead letters %v, want %v", reasons, wantDLQ)
	}
	if n := testutil.ToFloat64(e.conv.metrics.dlq.WithLabelValues("orders", reasonUnframed)); n != 1 {
		t.Errorf("floe_iceberg_dlq_records_total{reason=unframed} = %v", n)
	}
	// Another cycle, nothing new: nothing written twice.
	if err := e.cycle(); err != nil {
		t.Fatal(err)
	}
	tbl, _ = e.conv.cat.Load(e.ctx, "orders")
	dlq, _ = e.conv.cat.loadNamed(e.ctx, DLQTableName("orders"))
	if n, m := len(e.rows(tbl, "_kafka.offset")), len(e.rows(dlq, ColOffset)); n != 4 || m != 4 {
		t.Errorf("after an idle cycle: %d rows, %d dead letters", n, m)
	}
	// Maintenance keeps both tables, and their rows.
	l, err := metadata.AcquireJobLease(e.ctx, e.store, "iceberg/orders", "test", time.Minute)
	if err != nil || l == nil {
		t.Fatal(err)
	}
	defer l.Release(e.ctx)
	if err := e.conv.Maintain(e.ctx, l, e.topic); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"orders", "orders__dlq"} {
		if n := testutil.ToFloat64(e.conv.metrics.maint.WithLabelValues(name, "expire-snapshots", "ok")); n != 1 {
			t.Errorf("%s: maintenance_total{step=expire-snapshots,result=ok} = %v", name, n)
		}
	}
	tbl, _ = e.conv.cat.Load(e.ctx, "orders")
	if got := e.rows(tbl, "_kafka.offset", "id", "item", "note"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("after maintenance\n%s", strings.Join(got, "\n"))
	}
}

// TestTypedCrashBetweenCommits: a cycle that committed the dead-letter
// table and not the typed table (a crash between the two) is redone
// without writing its dead letters twice.
func TestTypedCrashBetweenCommits(t *testing.T) {
	e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeSchemaIDPrefix})
	v1 := e.register(orderV1)
	e.produce(frame(t, v1, orderV1, map[string]any{"id": 1, "item": "tea"}), []byte("x"),
		frame(t, v1, orderV1, map[string]any{"id": 2, "item": "jam"}), []byte("y"))
	crash := errors.New("crash")
	e.conv.afterDLQCommit = func() error { return crash }
	if err := e.cycle(); !errors.Is(err, crash) {
		t.Fatalf("cycle: %v, want the crash", err)
	}
	e.conv.afterDLQCommit = nil
	e.produce([]byte("z"), frame(t, v1, orderV1, map[string]any{"id": 3, "item": "egg"}))
	if err := e.cycle(); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.conv.cat.Load(e.ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	dlq, err := e.conv.cat.loadNamed(e.ctx, DLQTableName("orders"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(e.rows(tbl, "_kafka.offset"), ",")
	if want := `{"_kafka":{"offset":0}},{"_kafka":{"offset":2}},{"_kafka":{"offset":5}}`; got != want {
		t.Errorf("table offsets %s, want %s", got, want)
	}
	got = strings.Join(e.rows(dlq, ColOffset), ",")
	if want := `{"offset":1},{"offset":3},{"offset":4}`; got != want {
		t.Errorf("dead-letter offsets %s, want %s", got, want)
	}
}

// TestTypedLayoutChange: a binary table is not written as typed (nor the
// other way round): the topic is left unconverted until the table is
// dropped.
func TestTypedLayoutChange(t *testing.T) {
	e := newTypedEnv(t, map[string]string{})
	e.produce([]byte("a"))
	if err := e.cycle(); err != nil {
		t.Fatal(err)
	}
	if err := e.store.SetTopicConfigs(e.ctx, "orders", map[string]string{ConfigEnabled: "true", ConfigValueMode: ModeSchemaIDPrefix}); err != nil {
		t.Fatal(err)
	}
	if err := e.cycle(); err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(e.conv.metrics.cycles.WithLabelValues("orders", "foreign")); n != 1 {
		t.Errorf("cycles{result=foreign} = %v, want 1", n)
	}
}

// TestTypedAvroAlias: a field renamed in a later schema, with the old
// name as its alias, keeps filling the old column (nested records too);
// no column of the new name appears.
func TestTypedAvroAlias(t *testing.T) {
	e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeSchemaIDPrefix})
	s1 := `{"type":"record","name":"O","fields":[{"name":"id","type":"int"},{"name":"name","type":"string"},
		{"name":"ship","type":{"type":"record","name":"S","fields":[{"name":"city","type":"string"}]}}]}`
	s2 := `{"type":"record","name":"O","fields":[{"name":"id","type":"int"},{"name":"customer","aliases":["name"],"type":"string"},
		{"name":"ship","type":{"type":"record","name":"S","fields":[{"name":"town","aliases":["city"],"type":"string"}]}}]}`
	v1, v2 := e.register(s1), e.register(s2)
	e.produce(frame(t, v1, s1, map[string]any{"id": 1, "name": "ada", "ship": map[string]any{"city": "Oslo"}}),
		frame(t, v2, s2, map[string]any{"id": 2, "customer": "bob", "ship": map[string]any{"town": "Rome"}}))
	if err := e.cycle(); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.conv.cat.Load(e.ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if cols := fieldsOf(tbl.Schema()); strings.Contains(cols, "customer") || strings.Contains(cols, "town") {
		t.Errorf("columns of the new names:\n%s", cols)
	}
	got := strings.Join(e.rows(tbl, "_kafka.offset", "id", "name", "ship"), "\n")
	want := `{"_kafka":{"offset":0},"id":1,"name":"ada","ship":{"city":"Oslo"}}` + "\n" + `{"_kafka":{"offset":1},"id":2,"name":"bob","ship":{"city":"Rome"}}`
	if got != want {
		t.Errorf("rows\n%s\nwant\n%s", got, want)
	}
}

// TestTypedCompaction: maintenance compacts a typed table's small files,
// written under three schemas (a column added, a type promoted), into
// files of the current schema, every row kept.
func TestTypedCompaction(t *testing.T) {
	e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeSchemaIDPrefix, ConfigPartitionSpec: ""})
	e.conv.cfg.Maintenance = DefaultMaintenanceConfig()
	e.conv.cfg.Maintenance.CompactMinFiles = 2
	v1 := e.register(orderV1)
	v2 := e.register(orderV2)
	var want []string
	for i := range 6 {
		if i < 3 {
			e.produce(frame(t, v1, orderV1, map[string]any{"id": i, "item": fmt.Sprint("i", i)}))
			want = append(want, fmt.Sprintf(`{"_kafka":{"offset":%d},"id":%d,"item":"i%d","note":null}`, i, i, i))
		} else {
			e.produce(frame(t, v2, orderV2, map[string]any{"id": int64(i), "item": fmt.Sprint("i", i), "note": "n"}))
			want = append(want, fmt.Sprintf(`{"_kafka":{"offset":%d},"id":%d,"item":"i%d","note":"n"}`, i, i, i))
		}
		if err := e.cycle(); err != nil {
			t.Fatal(err)
		}
	}
	tbl, _ := e.conv.cat.Load(e.ctx, "orders")
	before, err := tbl.Scan().PlanFiles(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	l, err := metadata.AcquireJobLease(e.ctx, e.store, "iceberg/orders", "test", time.Minute)
	if err != nil || l == nil {
		t.Fatal(err)
	}
	defer l.Release(e.ctx)
	if err := e.conv.Maintain(e.ctx, l, e.topic); err != nil {
		t.Fatal(err)
	}
	tbl, _ = e.conv.cat.Load(e.ctx, "orders")
	after, err := tbl.Scan().PlanFiles(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) >= len(before) {
		t.Errorf("%d data files before compaction, %d after", len(before), len(after))
	}
	if got := e.rows(tbl, "_kafka.offset", "id", "item", "note"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("after compaction\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTypedPartitionSpec: a typed table's partition spec names the Kafka
// columns as the binary table's does; they are the _kafka struct's.
func TestTypedPartitionSpec(t *testing.T) {
	e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeSchemaIDPrefix, ConfigPartitionSpec: "identity(partition), hour(timestamp), bucket[4](key)"})
	v1 := e.register(orderV1)
	e.produce(frame(t, v1, orderV1, map[string]any{"id": 1, "item": "tea"}))
	if err := e.cycle(); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.conv.cat.Load(e.ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	spec := tbl.Spec()
	for _, f := range spec.Fields() {
		name, _ := tbl.Schema().FindColumnName(f.SourceIDs[0])
		got = append(got, f.Name+"="+f.Transform.String()+"("+name+")")
	}
	if want := "partition=identity(_kafka.partition),timestamp_hour=hour(_kafka.timestamp),key_bucket_4=bucket[4](_kafka.key)"; strings.Join(got, ",") != want {
		t.Errorf("spec %s, want %s", strings.Join(got, ","), want)
	}
	if n := len(e.rows(tbl, "_kafka.offset")); n != 1 {
		t.Errorf("%d rows", n)
	}
}

// TestTypedKeys: floe.iceberg.key.mode decodes keys into the _key struct
// as values are decoded into the top-level columns; a null key is a null
// _key, a key that cannot be decoded sends its record to the dead-letter
// table.
func TestTypedKeys(t *testing.T) {
	t.Run("schema_id_prefix", func(t *testing.T) {
		e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeSchemaIDPrefix, ConfigKeyMode: ModeSchemaIDPrefix})
		v1 := e.register(orderV1)
		keySchema := `{"type":"record","name":"K","fields":[{"name":"customer","type":"long"}]}`
		var out struct{ ID int }
		e.call("POST", "/subjects/orders-key/versions", map[string]any{"schema": keySchema}, &out)
		val := frame(t, v1, orderV1, map[string]any{"id": 1, "item": "tea"})
		e.produceKeyed([][2][]byte{
			{nil, val}, // before any key: no _key column yet
			{frame(t, out.ID, keySchema, map[string]any{"customer": int64(42)}), val},
			{[]byte("raw key"), val},
			{frame(t, out.ID, keySchema, map[string]any{"customer": int64(7)}), nil},
		})
		if err := e.cycle(); err != nil {
			t.Fatal(err)
		}
		tbl, err := e.conv.cat.Load(e.ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(e.rows(tbl, "_kafka.offset", "_key", "id"), "\n")
		want := `{"_kafka":{"offset":0},"_key":null,"id":1}` + "\n" +
			`{"_kafka":{"offset":1},"_key":{"customer":42},"id":1}` + "\n" +
			`{"_kafka":{"offset":3},"_key":{"customer":7},"id":null}`
		if got != want {
			t.Errorf("rows\n%s\nwant\n%s", got, want)
		}
		dlq, err := e.conv.cat.loadNamed(e.ctx, DLQTableName("orders"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(e.rows(dlq, ColOffset, ColError), ","); !strings.Contains(got, `unframed: the key does not start`) || !strings.Contains(got, `"offset":2`) {
			t.Errorf("dead letters %s", got)
		}
	})
	t.Run("json", func(t *testing.T) {
		e := newTypedEnv(t, map[string]string{ConfigValueMode: ModeJSON, ConfigKeyMode: ModeJSON})
		e.produceKeyed([][2][]byte{
			{[]byte(`{"region":"eu","n":1}`), []byte(`{"amount":5}`)},
			{[]byte(`{"region":"us","shard":2}`), []byte(`{"amount":6}`)},
		})
		if err := e.cycle(); err != nil {
			t.Fatal(err)
		}
		tbl, err := e.conv.cat.Load(e.ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(e.rows(tbl, "_kafka.offset", "_key", "amount"), "\n")
		want := `{"_kafka":{"offset":0},"_key":{"n":1,"region":"eu","shard":null},"amount":5}` + "\n" +
			`{"_kafka":{"offset":1},"_key":{"n":null,"region":"us","shard":2},"amount":6}`
		if got != want {
			t.Errorf("rows\n%s\nwant\n%s", got, want)
		}
	})
}
