package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

const scrapeBefore = `# HELP floe_storage_requests_total Object store requests, by operation.
# TYPE floe_storage_requests_total counter
floe_storage_requests_total{op="get"} 3
floe_storage_requests_total{op="put"} 10
floe_storage_bytes_total{op="put"} 1e+06
floe_agent_flushes_total 10
floe_agent_metadata_commit_duration_seconds_count 10
floe_storage_request_duration_seconds_bucket{op="put",le="0.001"} 5
floe_storage_request_duration_seconds_bucket{op="put",le="0.002"} 10
floe_storage_request_duration_seconds_bucket{op="put",le="+Inf"} 10
`

const scrapeAfter = `floe_storage_requests_total{op="get"} 3
floe_storage_requests_total{op="put"} 110
floe_storage_bytes_total{op="put"} 5.1e+07
floe_agent_flushes_total 110
floe_agent_metadata_commit_duration_seconds_count 110
floe_storage_request_duration_seconds_bucket{op="put",le="0.001"} 5
floe_storage_request_duration_seconds_bucket{op="put",le="0.002"} 95
floe_storage_request_duration_seconds_bucket{op="put",le="0.004"} 108
floe_storage_request_duration_seconds_bucket{op="put",le="+Inf"} 110
floe_storage_request_duration_seconds_bucket{op="get",le="0.004"} 3
weird{a="x\"y",b="z"} 7 1700000000
not a metric line
process_resident_memory_bytes 1.5e+08
`

func TestStorageFromScrapes(t *testing.T) {
	before, err := ParseSample(strings.NewReader(scrapeBefore))
	if err != nil {
		t.Fatal(err)
	}
	after, err := ParseSample(strings.NewReader(scrapeAfter))
	if err != nil {
		t.Fatal(err)
	}
	if after[`weird{a="x\"y",b="z"}`] != 7 {
		t.Errorf("escaped label series not parsed: %v", after)
	}
	st := storageOf(after.Sub(before), 10, 20)
	want := Storage{Puts: 100, Gets: 0, PutBytes: 5e7, BytesPerPut: 5e5, PutsPerS: 10, Flushes: 100, Commits: 100,
		PutP99Ms: 4}
	if *st != want {
		t.Errorf("storage = %+v\nwant      %+v", *st, want)
	}
	// 90 of the 100 new PUTs took at most 2 ms; 0.5 is 1 ms..2 ms's bucket.
	if q := after.Sub(before).HistQuantile("floe_storage_request_duration_seconds", map[string]string{"op": "put"}, 0.5); q != 0.002 {
		t.Errorf("p50 = %v", q)
	}
	if q := after.HistQuantile("nothing", nil, 0.5); !math.IsNaN(q) {
		t.Errorf("quantile of a missing histogram = %v", q)
	}
}

func TestLabels(t *testing.T) {
	name, ls := labels(`m{op="put",le="0.5",x="a\\b"}`)
	if name != "m" || ls["op"] != "put" || ls["le"] != "0.5" || ls["x"] != `a\b` || len(ls) != 3 {
		t.Errorf("labels = %q %v", name, ls)
	}
	for _, bad := range []string{`m{`, `m{op=`, `m{op="unterminated}`, `{}`, `m{=""}`} {
		labels(bad) // must not panic
	}
}

func TestProgressLine(t *testing.T) {
	l := progressLine(0.5, 2*time.Second, 1000, 4e6, 900, 2e6, 1234567*time.Nanosecond)
	for _, want := range []string{"[============>           ]", " 50%", "2.0s", "produced 1000 (2.0 MB/s)", "consumed 900 (1.0 MB/s)", "p99 1.23ms"} {
		if !strings.Contains(l, want) {
			t.Errorf("progress line %q lacks %q", l, want)
		}
	}
	if l := progressLine(1, 0, 0, 0, 0, 0, 0); !strings.Contains(l, "[========================] 100%") {
		t.Errorf("full bar %q", l)
	}
}

func TestReportOutputs(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * 10 * time.Microsecond)
	}
	lat := h.Summary()
	rep := &Report{Title: "t <&>", Generated: time.Unix(0, 0), Machine: ThisMachine(), Command: "floe bench e2e",
		Results: []*Result{
			{Label: "floe dev", Kind: "kafka", Mode: ModeE2E, Produced: NewThroughput(1000, 1e6, time.Second),
				Consumed: &Throughput{Records: 1000}, ProduceLatency: &lat, E2ELatency: &lat, Storage: &Storage{Puts: 3, BytesPerPut: 333}},
			{Label: "raw PUT", Kind: "raw-put", Mode: "put", RawPut: &RawPutResult{ObjectSize: 9, Concurrency: 2, Latency: lat}, ProduceLatency: &lat},
		}}
	var html bytes.Buffer
	if err := rep.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	s := html.String()
	for _, want := range []string{"<svg", "<polyline", "floe dev end-to-end", "raw PUT", "t &lt;&amp;&gt;", "333 B/PUT"} {
		if !strings.Contains(s, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "src=", "href=", "NaN", "Inf"} {
		if strings.Contains(s, bad) {
			t.Errorf("HTML contains %q: not self-contained or broken", bad)
		}
	}
	if n := strings.Count(s, "<polyline"); n != 3 {
		t.Errorf("%d lines, want 3 (produce, e2e, raw PUT)", n)
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Results) != 2 || back.Results[0].E2ELatency.P99 != lat.P99 || back.Results[1].RawPut.ObjectSize != 9 {
		t.Errorf("JSON round trip: %s", js.String())
	}
	var txt bytes.Buffer
	if err := rep.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "floe dev") || strings.Count(txt.String(), "\n") != 3 {
		t.Errorf("text table:\n%s", txt.String())
	}
}

func TestSampleSum(t *testing.T) {
	s, err := ParseSample(strings.NewReader(`floe_agent_memory_budget_bytes{budget="request"} 100
floe_agent_memory_budget_bytes{budget="read cache"} 20
floe_agent_memory_budget_bytes_other 7
floe_agent_memory_budget 5
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Sum("floe_agent_memory_budget_bytes"); got != 120 {
		t.Errorf("sum %v, want 120", got)
	}
	if got := s.Sum("absent"); got != 0 {
		t.Errorf("sum of an absent metric %v", got)
	}
}
