package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"floe/bench"
)

// TestBenchCommandE2E runs `floe bench e2e` for a few seconds against
// `floe dev` at a fixed rate and checks the report adds up: every record
// sent was acknowledged and consumed once, each with a latency, and the
// agent's metrics show the PUTs and commits that carried them.
func TestBenchCommandE2E(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "bench.json"), filepath.Join(dir, "bench.html")
	cmd := exec.Command(floeBin, "bench", "e2e", "--brokers", p.Addr,
		"--metrics-url", "http://"+p.HTTPAddr+"/metrics", "--duration", "3s", "--rate", "2000",
		"--partitions", "4", "--record-size", "512", "--label", "floe dev", "--quiet",
		"--raw-put-bucket", "file://"+filepath.Join(dir, "raw"), "--raw-put-duration", "1s",
		"--json", jsonPath, "--html", htmlPath)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("floe bench: %v\n%s\nagent log:\n%s", err, out, p.Log())
	}
	if !strings.Contains(string(out), "floe dev") {
		t.Errorf("no summary table on stdout:\n%s", out)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d results, want floe dev and raw PUT:\n%s", len(rep.Results), b)
	}
	r := rep.Results[0]
	if r.Label != "floe dev" || r.Mode != "e2e" || r.Errors != 0 {
		t.Fatalf("result %q %q errors %d (%s)", r.Label, r.Mode, r.Errors, r.FirstError)
	}
	// 3 s at 2000/s: the schedule has exactly 6000 records.
	if r.Sent != 6000 || r.Produced.Records != r.Sent || r.Consumed == nil || r.Consumed.Records != r.Sent {
		t.Fatalf("sent %d, produced %d, consumed %+v", r.Sent, r.Produced.Records, r.Consumed)
	}
	if r.Produced.Bytes != 6000*512 || r.Consumed.Bytes != r.Produced.Bytes {
		t.Errorf("bytes produced %d consumed %d", r.Produced.Bytes, r.Consumed.Bytes)
	}
	pl, el := r.ProduceLatency, r.E2ELatency
	if pl == nil || el == nil || pl.Count != r.Sent || el.Count != r.Sent {
		t.Fatalf("latency counts %+v %+v", pl, el)
	}
	if !(0 < pl.P50 && pl.P50 <= pl.P90 && pl.P90 <= pl.P99 && pl.P99 <= pl.P999 && pl.P999 <= pl.Max) {
		t.Errorf("produce percentiles out of order: %+v", pl)
	}
	if !(0 < el.P50 && el.P50 <= el.P99 && el.P99 <= el.Max) {
		t.Errorf("end-to-end percentiles out of order: %+v", el)
	}
	st := r.Storage
	if st == nil || st.Puts <= 0 || st.Puts < st.Flushes || st.Commits != st.Flushes || st.PutBytes < float64(r.Produced.Bytes) ||
		st.BytesPerPut != float64(int64(st.PutBytes/st.Puts+0.5)) || st.PeakRSSBytes <= 0 {
		t.Errorf("storage %+v", st)
	}
	raw := rep.Results[1]
	if raw.RawPut == nil || raw.RawPut.Puts <= 0 || raw.RawPut.ObjectSize != int(st.BytesPerPut) || raw.Errors != 0 {
		t.Errorf("raw PUT %+v", raw.RawPut)
	}
	html, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "<svg") || !strings.Contains(string(html), "floe dev end-to-end") {
		t.Errorf("HTML chart missing its lines")
	}
}
