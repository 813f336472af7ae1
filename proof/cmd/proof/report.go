package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"floe/proof/checker"
	"floe/proof/history"
	"floe/proof/nemesis"
)

// defaultAgentTTL is the agents' --agent-ttl in a run: short, so that
// pauses outlast leases and coordinators move within the run.
const defaultAgentTTL = 3 * time.Second

// maxHistoryGz is the largest compressed history the report keeps.
const maxHistoryGz = 8 << 20

// report is everything a run writes under its out directory.
type report struct {
	cfg         config
	out         outcome
	h           history.History
	timeline    []nemesis.Event
	started     time.Time
	workloadErr error
}

// resultJSON is docs/proof/result.json.
type resultJSON struct {
	Started     time.Time            `json:"started"`
	Config      config               `json:"config"`
	Valid       bool                 `json:"valid"`
	Check       checker.Result       `json:"check"`
	Iceberg     *icebergResult       `json:"iceberg,omitempty"`
	Faults      map[nemesis.Kind]int `json:"faults"`
	Timeline    []nemesis.Event      `json:"timeline"`
	WorkloadErr string               `json:"workload_error,omitempty"`
}

// rerender writes the report of the run kept in dir (its result.json and
// history.jsonl.gz) again, with this version's report code: a report
// improved after a run needs no new run.
func rerender(dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return err
	}
	var res resultJSON
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("result.json: %w", err)
	}
	f, err := os.Open(filepath.Join(dir, "history.jsonl.gz"))
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	h, err := history.ReadJSON(zr)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	res.Config.agentTTL = defaultAgentTTL // not in result.json: every run so far used the default
	r := report{cfg: res.Config, h: h, timeline: res.Timeline, started: res.Started,
		out: outcome{Valid: res.Valid, Check: res.Check, Iceberg: res.Iceberg, Injected: res.Faults}}
	if res.WorkloadErr != "" {
		r.workloadErr = errors.New(res.WorkloadErr)
	}
	return r.write(dir)
}

func (r report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	res := resultJSON{Started: r.started.UTC(), Config: r.cfg, Valid: r.out.Valid, Check: r.out.Check,
		Iceberg: r.out.Iceberg, Faults: r.out.Injected, Timeline: r.timeline}
	if r.workloadErr != nil {
		res.WorkloadErr = r.workloadErr.Error()
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "result.json"), b, 0o644); err != nil {
		return err
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if err := history.WriteJSON(zw, r.h); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	histNote := "history.jsonl.gz"
	if gz.Len() <= maxHistoryGz {
		if err := os.WriteFile(filepath.Join(dir, "history.jsonl.gz"), gz.Bytes(), 0o644); err != nil {
			return err
		}
	} else {
		histNote = ""
		os.Remove(filepath.Join(dir, "history.jsonl.gz"))
	}
	if err := os.WriteFile(filepath.Join(dir, "latency.svg"), r.svg(), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "lag.svg"), r.lagSVG(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "README.md"), r.markdown(histNote), 0o644)
}

func (r report) markdown(histNote string) []byte {
	var b bytes.Buffer
	verdict := "valid"
	if !r.out.Valid {
		verdict = "INVALID"
	}
	fmt.Fprintf(&b, "# floe's Kafka proof: %s\n\n", verdict)
	fmt.Fprintf(&b, "A Jepsen-style run (proof/workload, proof/checker) of %v against %d `floe agent`s and a `floe compactor` on a real PostgreSQL and a real MinIO, under the faults of proof/nemesis. Started %s. Reproduce with `go run ./proof/cmd/proof -duration %v -seed %d` (as root); the seed replays the workload's and the nemesis's choices, not the machine's timing.\n\n",
		r.cfg.Duration, r.cfg.Agents, r.started.UTC().Format(time.RFC3339), r.cfg.Duration, r.cfg.Seed)
	fmt.Fprintf(&b, "## Parameters\n\n| | |\n|---|---|\n")
	kinds := make([]string, len(r.cfg.Kinds))
	for i, k := range r.cfg.Kinds {
		kinds[i] = string(k)
	}
	for _, kv := range [][2]string{
		{"seed", fmt.Sprint(r.cfg.Seed)}, {"duration", r.cfg.Duration.String()}, {"agents", fmt.Sprint(r.cfg.Agents)},
		{"workers (of them sarama)", fmt.Sprintf("%d (%d)", r.cfg.Workers, r.cfg.Sarama)}, {"topics × partitions", fmt.Sprintf("%d × %d", r.cfg.Topics, r.cfg.Partitions)},
		{"fault kinds", strings.Join(kinds, ", ")}, {"fault gap / hold (longest)", fmt.Sprintf("%v / %v", r.cfg.Gap, r.cfg.Hold)},
		{"fault schedules at once", fmt.Sprint(max(r.cfg.Concurrent, 1))},
		{"quiet end before the final reads", r.cfg.Settle.String()}, {"agent TTL (leases, coordinators)", r.cfg.agentTTL.String()},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", kv[0], kv[1])
	}
	fmt.Fprintf(&b, "\n## Faults injected\n\n| kind | count |\n|---|---:|\n")
	total := 0
	for _, k := range nemesis.AllKinds {
		if n, ok := r.out.Injected[k]; ok {
			fmt.Fprintf(&b, "| `%s` | %d |\n", k, n)
			total += n
		}
	}
	fmt.Fprintf(&b, "| all | %d |\n\n", total)
	if r.workloadErr != nil {
		fmt.Fprintf(&b, "The workload ended with an error (what it recorded was checked): `%v`\n\n", r.workloadErr)
	}
	checker.WriteMarkdown(&b, r.out.Check)
	var worst *checker.Lag
	for _, l := range checker.RealtimeLags(r.h) {
		if time.Duration(l.Time) < r.cfg.Duration && (worst == nil || l.Lag > worst.Lag) {
			worst = &l
		}
	}
	if worst != nil {
		fmt.Fprintf(&b, "\nWorst realtime lag during the run, the final reads left out: %v (op %d, process %d, key %d, at %v).\n",
			time.Duration(worst.Lag).Round(time.Millisecond), worst.Op, worst.Process, worst.Key, time.Duration(worst.Time).Round(time.Second))
	}
	b.WriteString("\n## The Iceberg tables as one more reader\n\n")
	if ic := r.out.Iceberg; ic == nil {
		b.WriteString("Not checked (-iceberg=false).\n")
	} else {
		fmt.Fprintf(&b, "The compactor converts every topic (`--iceberg-default`, every 2 s). After the run the tables were read through an agent's REST catalog (iceberg-go) until they held every polled record (waited %s).\n\n", ic.Waited)
		fmt.Fprintf(&b, "| | |\n|---|---:|\n| rows | %d |\n| records polled (expected) | %d |\n| missing | %d |\n| duplicate | %d |\n| wrong value | %d |\n| aborted value | %d |\n| value no op sent | %d |\n| skipped by every reader | %d |\n| above every polled offset (allowed) | %d |\n\n",
			ic.Rows, ic.Expected, ic.Missing, ic.Duplicate, ic.WrongValue, ic.Aborted, ic.NoWriter, ic.Skipped, ic.Unpolled)
		if ic.Err != "" {
			fmt.Fprintf(&b, "Error: `%s`\n\n", ic.Err)
		}
		for _, e := range ic.Examples {
			fmt.Fprintf(&b, "- %s\n", e)
		}
		if len(ic.Checkpoints) > 0 {
			fmt.Fprintf(&b, "\nDuring the run, under the faults, the tables were read every %v and each read judged against the final history as a prefix: every polled record below the highest offset the read found in its partition must be there once, with its value; nothing aborted, unsent, or skipped by every reader.\n\n", r.cfg.Checkpoint)
			b.WriteString("| at | rows | records expected | missing | duplicate | wrong value | aborted | no writer | skipped | error |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
			for _, c := range ic.Checkpoints {
				fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %s |\n", c.At, c.Rows, c.Expected, c.Missing, c.Duplicate, c.WrongValue, c.Aborted, c.NoWriter, c.Skipped, c.Err)
			}
			for _, c := range ic.Checkpoints {
				for _, e := range c.Examples {
					fmt.Fprintf(&b, "- at %s: %s\n", c.At, e)
				}
			}
		}
	}
	b.WriteString("\n## Latency over time\n\n![latency of every op over time, faults shaded](latency.svg)\n\n")
	b.WriteString("Each dot is an op at its invocation (x, seconds) with its latency (y, log scale): green ok, orange info (unknown outcome), red fail. Shaded bands are faults, labelled by kind. The workload's clock starts just after its topics are created, within a second of the nemesis's.\n\n")
	b.WriteString(r.latencyTable(15 * time.Second))
	b.WriteString("\n## Lag over time\n\n![realtime lag of every poll over time, faults shaded](lag.svg)\n\n")
	b.WriteString("Each dot is a poll at its invocation (x, seconds) with its realtime lag (y, log scale; 0.1 ms when caught up), as Jepsen measures it: how long the log had already held a record past the last one the poll returned. Processes that start from offset 0 (after a crash or a reassign, and the final reads) lag by the run's length so far.\n")
	b.WriteString("\n## Fault timeline\n\n| at | action | kind | target | detail | error |\n|---:|---|---|---|---|---|\n")
	for _, e := range r.timeline {
		fmt.Fprintf(&b, "| %.1fs | %s | `%s` | %s | %s | %s |\n", e.At.Seconds(), e.Action, e.Kind, e.Target, e.Detail, e.Err)
	}
	b.WriteString(scopeAndLimits)
	b.WriteString("\n## Files\n\n- `result.json`: the parameters, the checker's full result, the Iceberg comparison and the timeline.\n")
	if histNote != "" {
		b.WriteString("- `history.jsonl.gz`: the history; `gunzip -c docs/proof/history.jsonl.gz | go run ./proof/cmd/checkhistory` checks it again.\n")
	} else {
		b.WriteString("- The history was too large to keep here.\n")
	}
	return b.Bytes()
}

// dot is one point of a plot: at x seconds, y milliseconds, in color.
type dot struct {
	x, y  float64
	color string
}

// svg plots every op's latency over time, with the faults shaded.
func (r report) svg() []byte {
	colors := map[history.Type]string{history.OK: "#2a2", history.Info: "#e80", history.Fail: "#d22"}
	stride := max(1, len(r.h)/15000) // bound the file: every info and fail op, ok ops sampled
	var dots []dot
	for i, o := range r.h {
		if o.F == history.Crash || (o.Type == history.OK && i%stride != 0) {
			continue
		}
		dots = append(dots, dot{float64(o.Invoke) / 1e9, float64(o.Complete-o.Invoke) / 1e6, colors[o.Type]})
	}
	return r.plot(dots)
}

// lagSVG plots the realtime lag of every poll over time (checker.RealtimeLags),
// with the faults shaded.
func (r report) lagSVG() []byte {
	lags := checker.RealtimeLags(r.h)
	stride := max(1, len(lags)/4000) // a lag per poll and key: many more dots than ops
	var dots []dot
	for i, l := range lags {
		if i%stride == 0 {
			dots = append(dots, dot{float64(l.Time) / 1e9, float64(l.Lag) / 1e6, "#36c"})
		}
	}
	return r.plot(dots)
}

// plot draws dots over the run's time (x, seconds) against milliseconds on
// a log scale (y, 0.1 ms to 100 s), with the faults shaded and labelled.
func (r report) plot(dots []dot) []byte {
	const w, hgt, left, bottom, top = 1000.0, 360.0, 60.0, 30.0, 20.0
	end := r.cfg.Duration.Seconds() + 5
	for _, o := range r.h {
		end = max(end, float64(o.Complete)/1e9)
	}
	x := func(s float64) float64 { return left + (w-left-10)*s/end }
	y := func(ms float64) float64 {
		l := math.Log10(max(ms, 0.1))
		return top + (hgt-top-bottom)*(1-(l+1)/6)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="10">`+"\n", w, hgt)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	starts := map[string]nemesis.Event{}
	row := 0
	for _, e := range r.timeline {
		id := string(e.Kind) + "/" + e.Target
		if e.Action == "start" && e.Err == "" {
			starts[id] = e
			continue
		}
		s, ok := starts[id]
		if !ok {
			continue
		}
		delete(starts, id)
		x0, x1 := x(s.At.Seconds()), x(e.At.Seconds())
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="#8888ff" fill-opacity="0.15"/>`+"\n", x0, top, max(x1-x0, 1), hgt-top-bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" fill="#333366" font-size="8">%s %s</text>`+"\n", x0+1, top+8+float64(row%4)*9, e.Kind, e.Target)
		row++
	}
	for _, ms := range []float64{1, 10, 100, 1000, 10000} {
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="5" y="%.1f">%s</text>`+"\n",
			left, w-10, y(ms), y(ms), y(ms)+3, time.Duration(ms*float64(time.Millisecond)))
	}
	for s := 0.0; s <= end; s += 30 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f">%.0fs</text>`+"\n", x(s)-8, hgt-10, s)
	}
	for _, d := range dots {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="1.3" fill="%s"/>`+"\n", x(d.x), y(d.y), d.color)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// latencyTable is the plot in numbers: per window of invocation time, the
// ops by outcome, their latency quantiles, and the faults that were on.
func (r report) latencyTable(window time.Duration) string {
	type bucket struct {
		ok, info, fail int
		lat            []time.Duration
	}
	var bs []bucket
	for _, o := range r.h {
		if o.F == history.Crash {
			continue
		}
		i := int(time.Duration(o.Invoke) / window)
		for len(bs) <= i {
			bs = append(bs, bucket{})
		}
		switch o.Type {
		case history.OK:
			bs[i].ok++
		case history.Info:
			bs[i].info++
		default:
			bs[i].fail++
		}
		bs[i].lat = append(bs[i].lat, time.Duration(o.Complete-o.Invoke))
	}
	var b strings.Builder
	b.WriteString("| from | ok | info | fail | p50 | p99 | max | faults on |\n|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for i, bk := range bs {
		slices.Sort(bk.lat)
		q := func(f float64) time.Duration {
			if len(bk.lat) == 0 {
				return 0
			}
			return bk.lat[min(len(bk.lat)-1, int(f*float64(len(bk.lat))))].Round(time.Millisecond)
		}
		from, to := time.Duration(i)*window, time.Duration(i+1)*window
		on := map[string]bool{}
		var names []string
		starts := map[string]time.Duration{}
		for _, e := range r.timeline {
			id := string(e.Kind) + " " + e.Target
			if e.Action == "start" && e.Err == "" {
				starts[id] = e.At
				continue
			}
			if s, ok := starts[id]; ok && s < to && e.At > from && !on[id] {
				on[id] = true
				names = append(names, id)
			}
			delete(starts, id)
		}
		fmt.Fprintf(&b, "| %v | %d | %d | %d | %v | %v | %v | %s |\n", from, bk.ok, bk.info, bk.fail, q(0.5), q(0.99), q(1), strings.Join(names, ", "))
	}
	return b.String()
}

// scopeAndLimits is what a run does not show, in every report.
const scopeAndLimits = `
## Scope and known limits

- **Found and fixed.** No run found an anomaly of a class that counts as a failure. The runs
  with PostgreSQL unreachable found a liveness fault: an agent closed the connection of a
  Metadata request it could not read the topics for, and franz-go's transactional producers
  then failed InitProducerId for good (thousands of unknown outcomes in one 6-minute run).
  Metadata is now answered from the agent's last view of the topics, as Kafka answers from its
  cached metadata (agent/03_metadata.go; TestMetadataWhileStoreDown). While an agent cannot
  reach a store it holds produce acknowledgements until the commit can be made: acks then take
  the outage's length (p99 5-14 s under faults), by design.
- **Overlaps.** Each fault schedule injects one fault at a time, held, then healed, with a quiet
  gap before the next; a partition may cut off several agents at once. Faults of different kinds
  overlap only with -fault-schedules above 1 (and never act on one target twice).
- **Latency faults.** ` + "`delay`" + ` (tc netem) is left out where the kernel has no netem
  (this machine's has none); ` + "`loss`" + ` drops packets with iptables' statistic match instead.
- **What is partitioned.** Agents only, each in its own network namespace. PostgreSQL, MinIO, the
  compactor and the clients share the root namespace: they are killed, paused and restarted, not
  partitioned from one another.
- **Clocks are not skewed.** Leases, heartbeats and their expiry come from PostgreSQL's now(),
  and an agent trusts a lease for a span measured on Go's monotonic clock, so neither depends on
  an agent's wall clock. Two decisions do compare wall clocks of different machines:
  transaction timeouts (a transaction's start is written from its coordinator's clock and read
  against another agent's after a coordinator moves, agent/txn_coordinator.go: an agent ahead
  aborts a live transaction early and fences its producer, one behind keeps a hung one open
  longer; liveness, not safety; and completing a stuck Prepare state compares an agent's clock
  with PostgreSQL's updated_at, which changes when it happens, under the lease, not whether), and
  the compactor's orphan collection (compactor/gc.go deletes unreferenced objects whose MinIO
  LastModified is older than the compactor's now minus --grace, 1h: a compactor clock more than
  the grace ahead of MinIO's could delete an object an agent has written but not yet committed,
  losing acknowledged records). libfaketime cannot skew a Go binary (Go reads the clock through
  the vDSO, not libc) and Linux time namespaces do not offset the wall clock, so these are
  documented, not tested.
- **The tables.** Topics are converted by the compactor's --iceberg-default; rows are compared
  by partition, offset and value (the workload's records carry nothing else).
- **Realtime lag.** Jepsen's realtime lag counts from the oldest record a process has not yet
  read, so a process that assigns itself keys from offset 0 (assign workers after a crash or a
  reassign, and the final reader) lags by as long as the run so far: the worst lags are those,
  not a stale consumer. The latency table and plot show stalls better.
- **Replays.** A seed replays the workload's and the nemesis's choices, not the machine's timing;
  the run shares two cores with other work.
`
