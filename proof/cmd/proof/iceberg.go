package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // the tables live in MinIO
	"github.com/apache/iceberg-go/table"

	"floe/iceberg"
	"floe/proof/history"
	"floe/proof/workload"
)

// icebergResult compares the topics' Iceberg tables, read through an
// agent's REST catalog, with the history: every record a poll saw (and so
// committed, read_committed) must be in its table exactly once at its
// (partition, offset) with its value; no row may hold a value a failed
// (aborted) op sent, nor one no op sent, nor sit at an offset below the
// highest a poll saw of its partition that no poll saw.
type icebergResult struct {
	Tables   int `json:"tables"`
	Rows     int `json:"rows"`
	Expected int `json:"expected"` // distinct (key, offset) polled
	// Missing: polled records absent from the table.
	Missing int `json:"missing"`
	// Duplicate: rows beyond the first at one (partition, offset).
	Duplicate int `json:"duplicate"`
	// WrongValue: a row whose value differs from the one polled there.
	WrongValue int `json:"wrong_value"`
	// Aborted: a row holding a value only failed ops sent.
	Aborted int `json:"aborted"`
	// NoWriter: a row holding a value no op sent.
	NoWriter int `json:"no_writer"`
	// Skipped: a row no poll saw, below the highest polled offset of its
	// partition (a reader of the log would have had to see it).
	Skipped int `json:"skipped"`
	// Unpolled: rows above every polled offset (sends of info ops that
	// committed after the final reads looked): allowed.
	Unpolled int      `json:"unpolled"`
	Examples []string `json:"examples,omitempty"`
	Err      string   `json:"error,omitempty"`
	Waited   string   `json:"waited,omitempty"`
	// At is when a checkpoint's scan ran (since the workload started);
	// Checkpoints are the scans during the run, judged against the final
	// history as prefixes: Missing counts only polled records below the
	// highest offset the scan found in their partition.
	At          string          `json:"at,omitempty"`
	Checkpoints []icebergResult `json:"checkpoints,omitempty"`
}

// Bad counts the rows and records that break the table's promise.
func (r icebergResult) Bad() int {
	n := r.Missing + r.Duplicate + r.WrongValue + r.Aborted + r.NoWriter + r.Skipped
	for _, c := range r.Checkpoints {
		n += c.Bad()
	}
	return n
}

// scan is the rows of one read of the tables.
type scan struct {
	at   time.Duration
	rows []row
	err  error
}

// checkpoints scans the tables every interval until ctx ends; the scans are
// judged after the run, once the history is known.
func checkpoints(ctx context.Context, c *cluster, keys workload.Keys, every time.Duration, start time.Time) []scan {
	var scans []scan
	for {
		select {
		case <-ctx.Done():
			return scans
		case <-time.After(every):
		}
		rows, err := scanTables(ctx, c, keys)
		if ctx.Err() != nil {
			return scans
		}
		scans = append(scans, scan{at: time.Since(start), rows: rows, err: err})
	}
}

type row struct {
	key history.Key
	off int64
	val string
}

// checkIceberg scans the tables until they hold every polled record (or
// two minutes pass), then compares.
func checkIceberg(ctx context.Context, c *cluster, cfg config, h history.History, during []scan) icebergResult {
	keys := workload.Keys{Prefix: "floe-proof-", Topics: cfg.Topics, Partitions: cfg.Partitions}
	polled := map[history.Key]map[int64]int64{}
	maxPolled := map[history.Key]int64{}
	sentBy := map[int64]history.Type{} // value → best outcome of its senders
	for _, o := range h {
		for _, m := range o.Mops {
			switch m.F {
			case history.MopSend:
				if t, ok := sentBy[m.Value]; !ok || t == history.Fail {
					sentBy[m.Value] = o.Type
				}
			case history.MopPoll:
				for k, ps := range m.Polls {
					if polled[k] == nil {
						polled[k] = map[int64]int64{}
					}
					for _, p := range ps {
						polled[k][p.Offset] = p.Value
						maxPolled[k] = max(maxPolled[k], p.Offset)
					}
				}
			}
		}
	}
	start := time.Now()
	var r icebergResult
	for {
		rows, err := scanTables(ctx, c, keys)
		r = compare(rows, polled, maxPolled, sentBy, false)
		if err != nil {
			r.Err = err.Error()
		}
		if (err == nil && r.Missing == 0) || time.Since(start) > 2*time.Minute || ctx.Err() != nil {
			break
		}
		time.Sleep(3 * time.Second)
	}
	r.Waited = time.Since(start).Round(time.Second).String()
	for _, sc := range during {
		cr := compare(sc.rows, polled, maxPolled, sentBy, true)
		cr.At = sc.at.Round(time.Second).String()
		if sc.err != nil {
			cr.Err = sc.err.Error()
		}
		r.Checkpoints = append(r.Checkpoints, cr)
	}
	return r
}

func compare(rows []row, polled map[history.Key]map[int64]int64, maxPolled map[history.Key]int64, sentBy map[int64]history.Type, prefix bool) icebergResult {
	r := icebergResult{Rows: len(rows)}
	high := map[history.Key]int64{}
	for _, rw := range rows {
		high[rw.key] = max(high[rw.key], rw.off)
	}
	example := func(format string, args ...any) {
		if len(r.Examples) < 20 {
			r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
		}
	}
	seen := map[history.Key]map[int64]bool{}
	for _, rw := range rows {
		if seen[rw.key] == nil {
			seen[rw.key] = map[int64]bool{}
		}
		if seen[rw.key][rw.off] {
			r.Duplicate++
			example("duplicate: key %d offset %d", rw.key, rw.off)
			continue
		}
		seen[rw.key][rw.off] = true
		v, err := strconv.ParseInt(rw.val, 10, 64)
		t, sent := sentBy[v]
		switch {
		case err != nil || !sent:
			r.NoWriter++
			example("no writer: key %d offset %d value %q", rw.key, rw.off, rw.val)
			continue
		case t == history.Fail:
			r.Aborted++
			example("aborted: key %d offset %d value %d (sent only by failed ops)", rw.key, rw.off, v)
		}
		pv, ok := polled[rw.key][rw.off]
		switch {
		case ok && pv != v:
			r.WrongValue++
			example("wrong value: key %d offset %d: table %d, polled %d", rw.key, rw.off, v, pv)
		case !ok && rw.off <= maxPolled[rw.key]:
			r.Skipped++
			example("skipped by readers: key %d offset %d value %d", rw.key, rw.off, v)
		case !ok:
			r.Unpolled++
		}
	}
	for k, offs := range polled {
		for off, v := range offs {
			if prefix {
				if h, ok := high[k]; !ok || off > h {
					continue
				}
			}
			r.Expected++
			if !seen[k][off] {
				r.Missing++
				example("missing: key %d offset %d value %d", k, off, v)
			}
		}
	}
	return r
}

// scanTables reads every topic's table through the first agent whose
// catalog answers.
func scanTables(ctx context.Context, c *cluster, keys workload.Keys) ([]row, error) {
	var lastErr error
	for _, addr := range c.httpAddrs {
		var rows []row
		var err error
		for _, topic := range keys.TopicNames() {
			var rs []row
			rs, err = scanTable(ctx, addr, topic, keys)
			if err != nil {
				break
			}
			rows = append(rows, rs...)
		}
		if err == nil {
			return rows, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func scanTable(ctx context.Context, httpAddr, topic string, keys workload.Keys) ([]row, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cat, err := rest.NewCatalog(ctx, "floe", "http://"+httpAddr+"/iceberg")
	if err != nil {
		return nil, err
	}
	tb, err := cat.LoadTable(ctx, table.Identifier{"floe", iceberg.TableName(topic)})
	if err != nil {
		return nil, fmt.Errorf("load table %s: %w", topic, err)
	}
	at, err := tb.Scan().ToArrowTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("scan table %s: %w", topic, err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	var rows []row
	for tr.Next() {
		rec := tr.RecordBatch()
		idx := func(name string) int {
			is := rec.Schema().FieldIndices(name)
			if len(is) != 1 {
				return -1
			}
			return is[0]
		}
		pi, oi, vi := idx("partition"), idx("offset"), idx("value")
		if pi < 0 || oi < 0 || vi < 0 {
			return nil, fmt.Errorf("table %s lacks partition, offset or value: %s", topic, rec.Schema())
		}
		part, _ := rec.Column(pi).(*array.Int32)
		off, _ := rec.Column(oi).(*array.Int64)
		val, _ := rec.Column(vi).(*array.Binary)
		if part == nil || off == nil || val == nil {
			return nil, fmt.Errorf("table %s: unexpected column types: %s", topic, rec.Schema())
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			k, ok := keys.Key(topic, part.Value(i))
			if !ok {
				return nil, fmt.Errorf("table %s: partition %d is not the workload's", topic, part.Value(i))
			}
			v := ""
			if !val.IsNull(i) {
				v = string(val.Value(i))
			}
			rows = append(rows, row{key: k, off: off.Value(i), val: v})
		}
	}
	return rows, tr.Err()
}
