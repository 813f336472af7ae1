package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestIcebergJS: iceberg-js (REST client) and icebird (a pure-JS reader of
// Iceberg metadata, Avro manifests and Parquet) read a floe dev table
// through floe's REST catalog, and agree with iceberg-go's REST scan row
// for row, every column (nulls and empties kept apart). icebergjs/scan.mjs
// says which known quirks of the two it works around, in its own process.
func TestIcebergJS(t *testing.T) {
	node, dir := npmInstall(t, "icebergjs")

	ctx := testContext(t, 2*time.Minute)
	dev := startTwoCommitTable(t, ctx, "js.v1", "js_v1")

	cmd := exec.CommandContext(ctx, node, "scan.mjs", "http://"+dev.HTTPAddr+"/iceberg", "floe", "js_v1")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node scan.mjs: %v\n%s", err, stderr.Bytes())
	}
	snapshot, got, n := parseJSScan(t, out)

	scan, scanN, err := restScan(t, ctx, dev.HTTPAddr, "js_v1")
	if err != nil {
		t.Fatal(err)
	}
	if n != scanN || len(got) != len(scan) {
		t.Fatalf("icebird read %d rows (%d distinct), iceberg-go %d (%d distinct)", n, len(got), scanN, len(scan))
	}
	if d := diffRows(got, n, scan); d != "" {
		t.Fatalf("icebird and iceberg-go disagree: %s", d)
	}

	// The snapshot id came through iceberg-js exact (int64, beyond what a
	// JSON number holds): it is one of the table's snapshots.
	tbl := loadRESTTable(t, ctx, dev.HTTPAddr, "js_v1")
	found := false
	for _, s := range tbl.Metadata().Snapshots() {
		found = found || s.SnapshotID == snapshot
	}
	if !found {
		t.Fatalf("iceberg-js read current snapshot %d, which the table does not have", snapshot)
	}
	t.Logf("icebird read %d rows of snapshot %d, as iceberg-go does", n, snapshot)
}

// jsScan is scan.mjs's output.
type jsScan struct {
	Snapshot string
	Rows     []struct {
		Partition     int32
		Offset        string
		Timestamp     string
		TimestampType int32 `json:"timestamp_type"`
		Key, Value    *string
		Headers       []struct {
			Key   string
			Value *string
		}
	}
}

// parseJSScan decodes scan.mjs's output: the snapshot it read, its rows by
// (partition, offset), and how many rows in all (duplicates counted).
func parseJSScan(t *testing.T, out []byte) (int64, map[rowKey]tableRow, int) {
	t.Helper()
	var s jsScan
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("scan.mjs output: %v\n%s", err, out)
	}
	int64Of := func(what, v string) int64 {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("scan.mjs %s %q: %v", what, v, err)
		}
		return n
	}
	binary := func(what string, v *string) []byte {
		if v == nil {
			return nil
		}
		b, err := base64.StdEncoding.DecodeString(*v)
		if err != nil {
			t.Fatalf("scan.mjs %s %q: %v", what, *v, err)
		}
		if b == nil {
			b = []byte{}
		}
		return b
	}
	rows := map[rowKey]tableRow{}
	for _, jr := range s.Rows {
		r := tableRow{Partition: jr.Partition, Offset: int64Of("offset", jr.Offset), TsMicros: int64Of("timestamp", jr.Timestamp),
			TsType: jr.TimestampType, Key: binary("key", jr.Key), Value: binary("value", jr.Value), Headers: []kgo.RecordHeader{}}
		for _, h := range jr.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: binary("header value", h.Value)})
		}
		rows[rowKey{r.Partition, r.Offset}] = r
	}
	return int64Of("snapshot", s.Snapshot), rows, len(s.Rows)
}
