package integration

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceRows produces n records spread over partitions and returns them
// as the rows a table must hold.
func (e *compactorEnv) produceRows(ctx context.Context, topic string, partitions int32, n int, tag string) map[rowKey]tableRow {
	e.t.Helper()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i) % partitions,
			Key: fmt.Appendf(nil, "%s-%d", tag, i), Value: fmt.Appendf(nil, "value %s %d", tag, i)})
	}
	if err := e.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		e.t.Fatalf("produce: %v", err)
	}
	rows := map[rowKey]tableRow{}
	for _, r := range recs {
		rows[rowKey{r.Partition, r.Offset}] = rowOf(r)
	}
	return rows
}

func (e *compactorEnv) setTopicConfig(ctx context.Context, topic, key, value string) {
	e.t.Helper()
	resp, err := kadm.NewClient(e.cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: &value}}, topic)
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = fmt.Errorf("%v: %s", r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		e.t.Fatalf("set %s=%s on %s: %v", key, value, topic, err)
	}
}

func merge(ms ...map[rowKey]tableRow) map[rowKey]tableRow {
	out := map[rowKey]tableRow{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// TestIcebergBackfillToggleDelete: a topic that held data before it was
// enabled is backfilled from its log start; disabled, its table stops
// following it (and keeps what it has); enabled again, it catches up
// without a gap or a duplicate; DeleteRecords does not take rows out of the
// table; a deleted topic's table stays.
func TestIcebergBackfillToggleDelete(t *testing.T) {
	e := newCompactorEnv(t)
	ctx := testContext(t, 3*time.Minute)
	if _, err := kadm.NewClient(e.cl).CreateTopic(ctx, 4, 1, nil, "backfill"); err != nil {
		t.Fatal(err)
	}
	before := e.produceRows(ctx, "backfill", 4, 200, "before")
	comp := e.startCompactor("--iceberg-interval", "200ms")
	time.Sleep(time.Second)
	if resp, err := http.Get("http://" + e.agent.HTTPAddr + "/iceberg/v1/namespaces/floe/tables/backfill"); err != nil || resp.StatusCode != 404 {
		t.Fatalf("table of a topic not enabled: %v %v", resp.Status, err)
	}

	e.setTopicConfig(ctx, "backfill", "floe.iceberg.enabled", "true")
	waitTable(t, ctx, e.agent.HTTPAddr, "backfill", before)

	e.setTopicConfig(ctx, "backfill", "floe.iceberg.enabled", "false")
	time.Sleep(300 * time.Millisecond) // the compactor reads topics each cycle
	off := e.produceRows(ctx, "backfill", 4, 50, "off")
	time.Sleep(time.Second)
	if got, n, err := restScan(t, ctx, e.agent.HTTPAddr, "backfill"); err != nil || diffRows(got, n, before) != "" {
		t.Fatalf("disabled table changed: %v %s", err, diffRows(got, n, before))
	}

	e.setTopicConfig(ctx, "backfill", "floe.iceberg.enabled", "true")
	waitTable(t, ctx, e.agent.HTTPAddr, "backfill", merge(before, off))

	// DeleteRecords below the table's end: the table keeps its rows.
	adm := kadm.NewClient(e.cl)
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: "backfill", Partition: 0, At: 30})
	if _, err := adm.DeleteRecords(ctx, del); err != nil {
		t.Fatal(err)
	}
	after := e.produceRows(ctx, "backfill", 4, 20, "after")
	all := merge(before, off, after)
	waitTable(t, ctx, e.agent.HTTPAddr, "backfill", all)

	// A deleted topic's table stays, with everything it had.
	if _, err := adm.DeleteTopics(ctx, "backfill"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if got, n, err := restScan(t, ctx, e.agent.HTTPAddr, "backfill"); err != nil || diffRows(got, n, all) != "" {
		t.Fatalf("table of a deleted topic: %v %s", err, diffRows(got, n, all))
	}
	if comp.metric(t, `floe_iceberg_cycles_total{result="failed",table="backfill"}`) != 0 {
		t.Fatalf("failed cycles:\n%s", comp.Log())
	}
}

// TestIcebergRetentionWaitsForTable: retention does not delete records of
// an enabled topic before they are in its table.
func TestIcebergRetentionWaitsForTable(t *testing.T) {
	e := newCompactorEnv(t)
	ctx := testContext(t, 2*time.Minute)
	if _, err := kadm.NewClient(e.cl).CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": ptr("1"),
		"floe.iceberg.enabled": ptr("true")}, "expiring"); err != nil {
		t.Fatal(err)
	}
	rows := map[rowKey]tableRow{}
	for i := range 10 { // ten objects, ten index rows per partition
		rows = merge(rows, e.produceRows(ctx, "expiring", 2, 10, fmt.Sprint("x", i)))
	}
	// Each cycle converts one index row per partition, and the next cycle
	// is an hour away: retention alone would delete all of it.
	comp := e.startCompactor("--iceberg-interval", "1h", "--iceberg-cycle-bytes", "1")
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, n, err := restScan(t, ctx, e.agent.HTTPAddr, "expiring")
		if err == nil && n > 0 {
			if n >= len(rows) {
				t.Fatalf("one cycle of one row per partition converted %d rows of %d", n, len(rows))
			}
			break // the first cycle committed; the next is an hour away
		}
		if time.Now().After(deadline) {
			t.Fatalf("no first cycle: %v\n%s", err, comp.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	held := comp.metric(t, `floe_compactor_retention_held_total`)
	for comp.metric(t, `floe_compactor_retention_held_total`) <= held {
		if time.Now().After(deadline) {
			t.Fatalf("retention did not wait for the table:\n%s", comp.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	comp.Stop()
	e.startCompactor("--iceberg-interval", "200ms")
	waitTable(t, ctx, e.agent.HTTPAddr, "expiring", rows)
	// Once converted, retention goes on.
	tp, err := e.store.Topic(ctx, "expiring")
	if err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		st, err := e.store.Partition(ctx, tp.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if st.LogStartOffset == st.NextOffset {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention never went on after conversion: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestIcebergConverterKilled: `floe compactor` killed with SIGKILL again
// and again while records are produced, at random points of its cycles
// (slowed by bucket latency so kills land between a Parquet write and its
// commit, and after the commit): afterwards the table holds every
// acknowledged record exactly once.
func TestIcebergConverterKilled(t *testing.T) {
	e := newCompactorEnv(t)
	ctx := testContext(t, 4*time.Minute)
	if _, err := kadm.NewClient(e.cl).CreateTopic(ctx, 4, 1, map[string]*string{"floe.iceberg.enabled": ptr("true")}, "crash"); err != nil {
		t.Fatal(err)
	}
	comp := e.startCompactor("--iceberg-interval", "50ms", "--lease-ttl", "1s", "--bucket-latency", "20ms",
		"--iceberg-maintenance-interval", "1s", "--iceberg-orphan-age", "2s")
	var mu sync.Mutex
	want := map[rowKey]tableRow{}
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
			rows := e.produceRows(ctx, "crash", 4, 40, fmt.Sprint("batch", i))
			mu.Lock()
			want = merge(want, rows)
			mu.Unlock()
		}
	}()
	kills := killRepeatedly(comp, 15*time.Second)
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d kills, %d records", kills, len(want))
	waitTable(t, ctx, e.agent.HTTPAddr, "crash", want)

	// Parquet files written by killed cycles are orphans: once older than
	// --iceberg-orphan-age, maintenance deletes them, and every file left
	// is one a snapshot references. Kills rarely land between a write and
	// its commit, so one more orphan is planted: a copy of a data file,
	// an hour old.
	referenced := referencedFiles(t, ctx, e.agent.HTTPAddr, "crash")
	var some string
	for f := range referenced {
		some = strings.TrimPrefix(f, "file://")
		break
	}
	planted := filepath.Join(filepath.Dir(some), "00000-0-planted-orphan.parquet")
	if b, err := os.ReadFile(some); err != nil || os.WriteFile(planted, b, 0o644) != nil {
		t.Fatalf("plant an orphan: %v", err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(planted, old, old)
	dataDir := filepath.Join(e.dir, "objects", "iceberg", "floe", "crash", "data")
	var orphans []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		referenced = referencedFiles(t, ctx, e.agent.HTTPAddr, "crash")
		orphans = orphans[:0]
		filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".parquet") && !referenced["file://"+path] {
				orphans = append(orphans, path)
			}
			return nil
		})
		if len(orphans) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d Parquet files no snapshot references are still there, e.g. %s", len(orphans), orphans[0])
		}
	}
	t.Logf("orphan files deleted by the last compactor: %v",
		comp.metric(t, `floe_iceberg_orphan_files_deleted_total{table="crash"}`))
	waitTable(t, ctx, e.agent.HTTPAddr, "crash", want)
}

// referencedFiles returns the data files any snapshot of a table lists.
func referencedFiles(t *testing.T, ctx context.Context, httpAddr, tbl string) map[string]bool {
	t.Helper()
	cat, err := rest.NewCatalog(ctx, "floe", "http://"+httpAddr+"/iceberg")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := cat.LoadTable(ctx, table.Identifier{"floe", tbl})
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tb.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, snap := range tb.Metadata().Snapshots() {
		mfs, err := snap.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for e, err := range mf.Entries(fsys, false) {
				if err != nil {
					t.Fatal(err)
				}
				out[e.DataFile().FilePath()] = true
			}
		}
	}
	return out
}

// killRepeatedly kill -9s p and starts it again every 100 ms to 1 s for d,
// and returns how many times.
func killRepeatedly(p *proc, d time.Duration) int {
	kills := 0
	for end := time.Now().Add(d); time.Now().Before(end); kills++ {
		time.Sleep(time.Duration(100+rand.IntN(900)) * time.Millisecond)
		p.Kill()
		p.start()
	}
	return kills
}
