package bench

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is one invocation's results, with what is needed to reproduce
// them: the machine and the command.
type Report struct {
	Title     string    `json:"title"`
	Generated time.Time `json:"generated"`
	Machine   Machine   `json:"machine"`
	Command   string    `json:"command"`
	Results   []*Result `json:"results"`
}

// Machine describes where a report was measured.
type Machine struct {
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	CPUs   int    `json:"cpus"`
	CPU    string `json:"cpu,omitempty"`
	Go     string `json:"go"`
	Memory string `json:"memory,omitempty"`
}

// ThisMachine describes the machine the process runs on.
func ThisMachine() Machine {
	m := Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				m.Memory = strings.Join(strings.Fields(strings.TrimPrefix(l, "MemTotal:")), " ")
				break
			}
		}
	}
	return m
}

// WriteJSON writes the report, indented.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteText writes a table of the main figures, one row per result.
func (rep *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tmode\trec/s\tMB/s\tproduce p50 ms\tp99 ms\tp99.9 ms\tmax ms\te2e p50 ms\tp99 ms\tconsumed\tPUT/s\tB/PUT\terrors\t")
	for _, r := range rep.Results {
		lat := func(l *Latency) (string, string, string, string) {
			if l == nil || l.Count == 0 {
				return "-", "-", "-", "-"
			}
			return f3(l.P50), f3(l.P99), f3(l.P999), f3(l.Max)
		}
		p50, p99, p999, pmax := lat(r.ProduceLatency)
		e50, e99, _, _ := lat(r.E2ELatency)
		tp := r.Produced
		if r.Mode == ModeConsume && r.Consumed != nil {
			tp = *r.Consumed
		}
		consumed, puts, bpp := "-", "-", "-"
		if r.Consumed != nil {
			consumed = fmt.Sprint(r.Consumed.Records)
		}
		if r.Storage != nil {
			puts, bpp = fmt.Sprintf("%.1f", r.Storage.PutsPerS), fmt.Sprintf("%.0f", r.Storage.BytesPerPut)
		}
		if r.RawPut != nil {
			puts, bpp = fmt.Sprintf("%.1f", r.RawPut.PutsPerS), fmt.Sprint(r.RawPut.ObjectSize)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", r.Label, r.Mode,
			tp.RecordsPerS, tp.MBPerS, p50, p99, p999, pmax, e50, e99, consumed, puts, bpp, r.Errors)
	}
	return tw.Flush()
}

// num widens the template's ints and floats for arithmetic.
func num(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

func f3(v float64) string { return fmt.Sprintf("%.3g", v) }

// chart geometry
const (
	chartW, chartH = 860, 420
	padL, padR     = 70, 20
	padT, padB     = 20, 50
)

// series is one line of the latency chart.
type series struct {
	Name   string
	Color  string
	Points string // SVG polyline points
	Dash   string
}

type tick struct {
	Pos   float64
	Label string
}

type chartData struct {
	Title              string
	Report             *Report
	W, H               int
	PlotL, PlotR       float64
	PlotT, PlotB       float64
	Series             []series
	XTicks, YTicks     []tick
	Rows               []*Result
	GeneratedFormatted string
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

// x maps a percentile to the chart's log "nines" axis: 0 at 0%, 1 at 90%,
// 2 at 99%, … so the tail gets the width.
func nines(p float64) float64 {
	if p >= 100 {
		return 5
	}
	return math.Min(-math.Log10(1-p/100), 5)
}

// WriteHTML writes a self-contained page: a percentile-spectrum chart of
// every latency in the report (inline SVG, log axes, no scripts or
// external assets) and a table of the figures.
func (rep *Report) WriteHTML(w io.Writer) error {
	d := chartData{Title: rep.Title, Report: rep, W: chartW, H: chartH,
		PlotL: padL, PlotR: chartW - padR, PlotT: padT, PlotB: chartH - padB, Rows: rep.Results,
		GeneratedFormatted: rep.Generated.UTC().Format(time.RFC3339)}
	type line struct {
		name string
		lat  *Latency
		dash string
	}
	var lines []line
	for _, r := range rep.Results {
		if r.ProduceLatency != nil && len(r.ProduceLatency.Spectrum) > 0 {
			name := r.Label + " produce"
			if r.Kind == "raw-put" {
				name = r.Label
			}
			lines = append(lines, line{name, r.ProduceLatency, ""})
		}
		if r.E2ELatency != nil && len(r.E2ELatency.Spectrum) > 0 {
			lines = append(lines, line{r.Label + " end-to-end", r.E2ELatency, "6 3"})
		}
	}
	// y: log10 ms over the decades the data covers.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range lines {
		for _, p := range l.lat.Spectrum {
			v := math.Max(p[1], 0.001)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if len(lines) == 0 {
		lo, hi = 0.1, 1000
	}
	ylo, yhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if yhi <= ylo {
		yhi = ylo + 1
	}
	px := func(p float64) float64 { return d.PlotL + nines(p)/5*(d.PlotR-d.PlotL) }
	py := func(v float64) float64 {
		return d.PlotB - (math.Log10(math.Max(v, 0.001))-ylo)/(yhi-ylo)*(d.PlotB-d.PlotT)
	}
	for i, l := range lines {
		var pts []string
		for _, p := range l.lat.Spectrum {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
		}
		d.Series = append(d.Series, series{Name: l.name, Color: palette[i%len(palette)], Points: strings.Join(pts, " "), Dash: l.dash})
	}
	for i, lab := range []string{"0%", "90%", "99%", "99.9%", "99.99%", "max"} {
		d.XTicks = append(d.XTicks, tick{d.PlotL + float64(i)/5*(d.PlotR-d.PlotL), lab})
	}
	for e := ylo; e <= yhi; e++ {
		v := math.Pow(10, e)
		d.YTicks = append(d.YTicks, tick{py(v), fmt.Sprintf("%g ms", v)})
	}
	return htmlPage.Execute(w, d)
}

var htmlPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"add": func(a, b any) float64 { return num(a) + num(b) },
	"sub": func(a, b any) float64 { return num(a) - num(b) },
	"mid": func(a, b float64) float64 { return (a + b) / 2 },
	"lat": func(l *Latency) string {
		if l == nil || l.Count == 0 {
			return "–"
		}
		return fmt.Sprintf("%.3g / %.3g / %.3g / %.3g", l.P50, l.P99, l.P999, l.Max)
	},
	"legendY": func(i int) int { return 30 + 16*i },
	"tp": func(r *Result) string {
		t := r.Produced
		if r.Mode == ModeConsume && r.Consumed != nil {
			t = *r.Consumed
		}
		return fmt.Sprintf("%.0f rec/s, %.2f MB/s", t.RecordsPerS, t.MBPerS)
	},
	"puts": func(r *Result) string {
		switch {
		case r.Storage != nil:
			return fmt.Sprintf("%.1f PUT/s, %.0f B/PUT, %.0f commits", r.Storage.PutsPerS, r.Storage.BytesPerPut, r.Storage.Commits)
		case r.RawPut != nil:
			return fmt.Sprintf("%.1f PUT/s × %d B, %d workers", r.RawPut.PutsPerS, r.RawPut.ObjectSize, r.RawPut.Concurrency)
		}
		return "–"
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin-top:1em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td:first-child{text-align:left}
svg text{font:12px system-ui,sans-serif}
</style></head><body>
<h1>{{.Title}}</h1>
<p>{{.GeneratedFormatted}} · {{.Report.Machine.CPUs}} CPUs {{.Report.Machine.CPU}} · {{.Report.Machine.Memory}} · {{.Report.Machine.Go}} {{.Report.Machine.OS}}/{{.Report.Machine.Arch}}</p>
{{with .Report.Command}}<p><code>{{.}}</code></p>{{end}}
<svg xmlns="http://www.w3.org/2000/svg" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="latency by percentile">
<rect x="{{.PlotL}}" y="{{.PlotT}}" width="{{printf "%.1f" (sub .PlotR .PlotL)}}" height="{{printf "%.1f" (sub .PlotB .PlotT)}}" fill="#fff" stroke="#999"/>
{{range .XTicks}}<line x1="{{.Pos}}" y1="{{$.PlotT}}" x2="{{.Pos}}" y2="{{$.PlotB}}" stroke="#eee"/><text x="{{.Pos}}" y="{{add $.PlotB 16}}" text-anchor="middle">{{.Label}}</text>
{{end}}{{range .YTicks}}<line x1="{{$.PlotL}}" y1="{{printf "%.1f" .Pos}}" x2="{{$.PlotR}}" y2="{{printf "%.1f" .Pos}}" stroke="#eee"/><text x="{{sub $.PlotL 6}}" y="{{printf "%.1f" .Pos}}" text-anchor="end" dominant-baseline="middle">{{.Label}}</text>
{{end}}<text x="{{printf "%.0f" (mid .PlotL .PlotR)}}" y="{{sub .H 8}}" text-anchor="middle">percentile (log scale of nines); latency counted from each record's scheduled send time</text>
{{range .Series}}<polyline fill="none" stroke="{{.Color}}" stroke-width="2"{{with .Dash}} stroke-dasharray="{{.}}"{{end}} points="{{.Points}}"/>
{{end}}{{range $i, $s := .Series}}<line x1="{{add $.PlotL 12}}" x2="{{add $.PlotL 36}}" y1="{{legendY $i}}" y2="{{legendY $i}}" stroke="{{$s.Color}}" stroke-width="2"{{with $s.Dash}} stroke-dasharray="{{.}}"{{end}}/><text x="{{add $.PlotL 42}}" y="{{legendY $i}}" dominant-baseline="middle">{{$s.Name}}</text>
{{end}}</svg>
<table><tr><th>run</th><th>mode</th><th>throughput</th><th>produce p50 / p99 / p99.9 / max ms</th><th>end-to-end p50 / p99 / p99.9 / max ms</th><th>object store</th><th>errors</th></tr>
{{range .Rows}}<tr><td>{{.Label}}</td><td>{{.Mode}}</td><td>{{tp .}}</td><td>{{lat .ProduceLatency}}</td><td>{{lat .E2ELatency}}</td><td>{{puts .}}</td><td>{{.Errors}}</td></tr>
{{end}}</table>
</body></html>
`))
