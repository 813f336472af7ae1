package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Sample is one scrape of a Prometheus text endpoint: each series, named
// exactly as exposed (`floe_storage_requests_total{op="put"}`), to its value.
type Sample map[string]float64

// Scrape reads url (an agent's /metrics).
func Scrape(ctx context.Context, url string) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	// Uncompressed: gzip was half of what a scrape cost the agent, which a
	// benchmark measures; on loopback it saves nothing.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	return ParseSample(resp.Body)
}

// ParseSample parses the Prometheus text exposition format. Comment lines
// and lines without a parsable value are skipped, never fatal: a scrape
// only feeds a report.
func ParseSample(r io.Reader) (Sample, error) {
	s := Sample{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		// The value follows the last space outside the label braces; a
		// timestamp may follow it.
		series, rest := line, ""
		if i := strings.LastIndexByte(line, '}'); i >= 0 {
			series, rest = line[:i+1], strings.TrimSpace(line[i+1:])
		} else if j := strings.IndexByte(line, ' '); j >= 0 {
			series, rest = line[:j], strings.TrimSpace(line[j+1:])
		}
		if f := strings.Fields(rest); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				s[series] = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return s, nil
}

// Sum adds up every series of the metric name, whatever its labels.
func (s Sample) Sum(name string) float64 {
	var n float64
	for k, v := range s {
		if k == name || strings.HasPrefix(k, name+"{") {
			n += v
		}
	}
	return n
}

// Sub returns s - before, series by series (a series missing before
// counts from 0).
func (s Sample) Sub(before Sample) Sample {
	d := make(Sample, len(s))
	for k, v := range s {
		d[k] = v - before[k]
	}
	return d
}

// labels parses `name{a="x",b="y"}` into name and label map.
func labels(series string) (string, map[string]string) {
	i := strings.IndexByte(series, '{')
	if i < 0 || !strings.HasSuffix(series, "}") {
		return series, nil
	}
	m := map[string]string{}
	body := series[i+1 : len(series)-1]
	for body != "" {
		k, rest, ok := strings.Cut(body, "=\"")
		if !ok {
			break
		}
		// Values escape only \\, \" and \n; find the closing quote.
		var v strings.Builder
		j := 0
		for ; j < len(rest); j++ {
			if rest[j] == '\\' && j+1 < len(rest) {
				j++
				v.WriteByte(rest[j])
				continue
			}
			if rest[j] == '"' {
				break
			}
			v.WriteByte(rest[j])
		}
		m[strings.TrimSpace(k)] = v.String()
		if j >= len(rest) {
			break
		}
		body = strings.TrimPrefix(rest[j+1:], ",")
	}
	return series[:i], m
}

// HistQuantile returns the q-quantile of a Prometheus histogram's counts in
// s (typically a delta of two scrapes), restricted to series whose labels
// include match: the upper bound of the bucket holding the rank, so it
// overstates by at most the bucket's width. NaN when no observations.
func (s Sample) HistQuantile(name string, match map[string]string, q float64) float64 {
	type bucket struct{ le, n float64 }
	var bs []bucket
	for series, v := range s {
		n, ls := labels(series)
		if n != name+"_bucket" {
			continue
		}
		ok := true
		for k, want := range match {
			if ls[k] != want {
				ok = false
			}
		}
		if !ok {
			continue
		}
		le, err := strconv.ParseFloat(ls["le"], 64)
		if err != nil {
			continue
		}
		bs = append(bs, bucket{le, v})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	if len(bs) == 0 || bs[len(bs)-1].n <= 0 {
		return math.NaN()
	}
	rank := q * bs[len(bs)-1].n
	for _, b := range bs {
		if b.n >= rank {
			return b.le
		}
	}
	return math.Inf(1)
}

// Storage is what the agent's metrics say about a run: object-store
// requests and metadata commits, as deltas over the run.
type Storage struct {
	Puts        float64 `json:"puts"`
	Gets        float64 `json:"gets"`
	PutBytes    float64 `json:"put_bytes"`
	GetBytes    float64 `json:"get_bytes"`
	BytesPerPut float64 `json:"bytes_per_put"`
	// PutsPerS is over the sending span (first send to last ack), GetsPerS
	// over the reading span, so a long drain does not dilute them.
	PutsPerS float64 `json:"puts_per_s"`
	GetsPerS float64 `json:"gets_per_s"`
	Flushes  float64 `json:"flushes"`
	Commits  float64 `json:"metadata_commits"`
	// PutP99Ms and CommitP99Ms are upper bounds read off the agent's
	// histogram buckets (powers of two from 0.5 ms), hence coarse.
	PutP99Ms    float64 `json:"put_p99_ms_upper_bound,omitempty"`
	CommitP99Ms float64 `json:"commit_p99_ms_upper_bound,omitempty"`
	// Mallocs and AllocBytes are the agent process's heap allocations
	// over the run (go_memstats_*), to divide by records produced.
	Mallocs    float64 `json:"mallocs"`
	AllocBytes float64 `json:"alloc_bytes"`
	// BackpressureWaits counts produces that waited for buffer room.
	BackpressureWaits float64 `json:"backpressure_waits"`
	// PeakRSSBytes and PeakBufferedBytes are the largest values seen while
	// sampling during the run.
	PeakRSSBytes      float64 `json:"peak_rss_bytes"`
	PeakBufferedBytes float64 `json:"peak_buffered_bytes"`
}

// storageOf turns the delta of two scrapes into Storage: PUT rates over
// putSeconds (the sending span: flushes follow produces), GET rates over
// getSeconds (the reading span).
func storageOf(d Sample, putSeconds, getSeconds float64) *Storage {
	st := &Storage{
		Puts:              d[`floe_storage_requests_total{op="put"}`],
		Gets:              d[`floe_storage_requests_total{op="get"}`],
		PutBytes:          d[`floe_storage_bytes_total{op="put"}`],
		GetBytes:          d[`floe_storage_bytes_total{op="get"}`],
		Flushes:           d[`floe_agent_flushes_total`],
		Commits:           d[`floe_agent_metadata_commit_duration_seconds_count`],
		BackpressureWaits: d[`floe_agent_backpressure_waits_total`],
		Mallocs:           d[`go_memstats_mallocs_total`],
		AllocBytes:        d[`go_memstats_alloc_bytes_total`],
	}
	if st.Puts > 0 {
		st.BytesPerPut = math.Round(st.PutBytes / st.Puts)
	}
	if putSeconds > 0 {
		st.PutsPerS = round2(st.Puts / putSeconds)
	}
	if getSeconds > 0 {
		st.GetsPerS = round2(st.Gets / getSeconds)
	}
	if v := d.HistQuantile("floe_storage_request_duration_seconds", map[string]string{"op": "put"}, 0.99); !math.IsNaN(v) && !math.IsInf(v, 0) {
		st.PutP99Ms = v * 1e3
	}
	if v := d.HistQuantile("floe_agent_metadata_commit_duration_seconds", nil, 0.99); !math.IsNaN(v) && !math.IsInf(v, 0) {
		st.CommitP99Ms = v * 1e3
	}
	return st
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }
