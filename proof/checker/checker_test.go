package checker

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"floe/proof/history"
)

// Keys and a tiny language for hand-written histories.
const (
	x history.Key = 0
	y history.Key = 1
)

type kr struct {
	k  history.Key
	ps []history.Pair
}

// r is the read of key k: offset, value, offset, value…
func r(k history.Key, ovs ...int64) kr {
	out := kr{k: k, ps: []history.Pair{}}
	for i := 0; i+1 < len(ovs); i += 2 {
		out.ps = append(out.ps, history.Pair{Offset: ovs[i], Value: ovs[i+1]})
	}
	return out
}

func poll(rs ...kr) history.Mop {
	m := map[history.Key][]history.Pair{}
	for _, x := range rs {
		m[x.k] = append(m[x.k], x.ps...)
	}
	return history.PollMop(m)
}

func send(k history.Key, off, v int64) history.Mop { return history.SendAt(k, off, v) }

// op is a txn, send or poll op (its kind from its micro-ops) of process p
// running from inv to comp.
func op(p int, t history.Type, inv, comp int64, mops ...history.Mop) history.Op {
	sends, polls := false, false
	for _, m := range mops {
		sends = sends || m.F == history.MopSend
		polls = polls || m.F == history.MopPoll
	}
	f := history.Txn
	switch {
	case sends && !polls:
		f = history.Send
	case polls && !sends:
		f = history.Poll
	}
	return history.Op{Process: p, Type: t, F: f, Invoke: inv, Complete: comp, Mops: mops}
}

func ok(p int, inv, comp int64, mops ...history.Mop) history.Op {
	return op(p, history.OK, inv, comp, mops...)
}

func ctl(p int, t history.Type, f history.F, inv, comp int64, keys ...history.Key) history.Op {
	return history.Op{Process: p, Type: t, F: f, Invoke: inv, Complete: comp, Keys: keys}
}

func hist(ops ...history.Op) history.History {
	h := history.History(ops)
	h.Reindex()
	return h
}

func mustCheck(t *testing.T, h history.History, opts Options) Result {
	t.Helper()
	res, err := Check(h, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The result always survives JSON and a Markdown report.
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&bytes.Buffer{}, res); err != nil {
		t.Fatal(err)
	}
	return res
}

func opsOf(as []Anomaly) [][]int {
	out := [][]int{}
	for _, a := range as {
		out = append(out, a.Ops)
	}
	return out
}

// TestEachClass feeds one hand-written history per class and checks that
// exactly the expected classes are found, with the expected offending ops.
// Some classes cannot come alone: a process's send landing before its
// previous send is also a G0-process cycle, and a transaction's sends with
// another producer's value between them are also a G0 cycle; both companions
// are allowed, so the bad set is still that one class.
func TestEachClass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  Options
		h     history.History
		found []Class
		bad   []Class
		ops   map[Class][][]int
		check func(t *testing.T, res Result)
	}{{
		// The record written twice, as a retried produce without
		// idempotence would.
		name: "duplicate",
		h: hist(
			ok(0, 0, 1, send(x, 0, 1)),
			ok(1, 2, 3, poll(r(x, 0, 1))),
			ok(2, 2, 3, poll(r(x, 1, 1))),
		),
		found: []Class{Duplicate},
		ops:   map[Class][][]int{Duplicate: {{0, 1, 2}}},
		check: func(t *testing.T, res Result) {
			a := res.Anomalies[Duplicate][0]
			if *a.Key != x || !reflect.DeepEqual(a.Offsets, []int64{0, 1}) || !reflect.DeepEqual(a.Values, []int64{1}) {
				t.Errorf("duplicate %+v", a)
			}
		},
	}, {
		name: "inconsistent-offsets",
		h: hist(
			ok(0, 0, 1, send(x, 0, 1)),
			ok(1, 0, 1, send(x, 0, 2)),
			ok(2, 2, 3, poll(r(x, 0, 1))),
			ok(3, 2, 3, poll(r(x, 0, 2))),
		),
		found: []Class{InconsistentOffsets},
		ops:   map[Class][][]int{InconsistentOffsets: {{0, 1, 2, 3}}},
		check: func(t *testing.T, res Result) {
			a := res.Anomalies[InconsistentOffsets][0]
			if !reflect.DeepEqual(a.Offsets, []int64{0}) || !reflect.DeepEqual(a.Values, []int64{1, 2}) {
				t.Errorf("inconsistent %+v", a)
			}
		},
	}, {
		// An info send whose other value an ok poll read must have
		// committed; a failed poll places its value 1 at offset 0, below the
		// value 2 an ok poll read, yet no ok poll read 1.
		name: "lost-write",
		h: hist(
			op(0, history.Info, 0, 10, history.SendMop(x, 1), history.SendMop(y, 3)),
			ok(1, 0, 1, send(x, 1, 2)),
			op(2, history.Fail, 2, 3, poll(r(x, 0, 1))),
			ok(3, 4, 5, poll(r(x, 1, 2), r(y, 0, 3))),
		),
		found: []Class{LostWrite},
		ops:   map[Class][][]int{LostWrite: {{0, 3}}},
		check: func(t *testing.T, res Result) {
			a := res.Anomalies[LostWrite][0]
			if *a.Key != x || !reflect.DeepEqual(a.Values, []int64{1}) || !reflect.DeepEqual(a.Offsets, []int64{0}) {
				t.Errorf("lost %+v", a)
			}
		},
	}, {
		name: "G1a",
		h: hist(
			op(0, history.Fail, 0, 1, send(x, 0, 1)),
			ok(1, 2, 3, poll(r(x, 0, 1))),
		),
		found: []Class{G1a},
		ops:   map[Class][][]int{G1a: {{0, 1}}},
	}, {
		name: "precommitted-read",
		h: hist(
			ok(0, 0, 1, send(x, 0, 1), poll(r(x, 0, 1))),
		),
		found: []Class{PrecommittedRead},
		ops:   map[Class][][]int{PrecommittedRead: {{0}}},
	}, {
		// Value 2 was never sent: made up by the broker, or left over from
		// another run.
		name: "no-writer-of-value",
		h: hist(
			ok(0, 0, 1, send(x, 0, 1)),
			ok(1, 2, 3, poll(r(x, 0, 1, 1, 2))),
			ok(2, 2, 3, poll(r(x, 1, 2))),
		),
		found: []Class{NoWriterOfValue},
		ops:   map[Class][][]int{NoWriterOfValue: {{1, 2}}},
		check: func(t *testing.T, res Result) {
			if a := res.Anomalies[NoWriterOfValue][0]; *a.Key != x || !reflect.DeepEqual(a.Offsets, []int64{1}) || a.Count != 2 {
				t.Errorf("no writer %+v", a)
			}
		},
	}, {
		name: "poll-skip",
		h: hist(
			ok(0, 0, 1, send(x, 0, 1), send(x, 1, 2), send(x, 2, 3)),
			ctl(1, history.OK, history.Assign, 0, 1, x),
			ok(1, 2, 3, poll(r(x, 0, 1))),
			ok(1, 4, 5, poll(r(x, 2, 3))),
			ok(2, 4, 5, poll(r(x, 1, 2))),
		),
		found: []Class{PollSkip},
		ops:   map[Class][][]int{PollSkip: {{2, 3}}},
		check: func(t *testing.T, res Result) {
			if a := res.Anomalies[PollSkip][0]; !reflect.DeepEqual(a.Skipped, []int64{2}) || a.Delta != 2 {
				t.Errorf("skip %+v", a)
			}
		},
	}, {
		name: "nonmonotonic-poll",
		h: hist(
			ok(0, 0, 1, send(x, 0, 1), send(x, 1, 2), send(x, 2, 3)),
			ctl(1, history.OK, history.Assign, 0, 1, x),
			ok(1, 2, 3, poll(r(x, 0, 1, 1, 2))),
			ok(1, 4, 5, poll(r(x, 1, 2, 2, 3))),
		),
		found: []Class{NonmonotonicPoll},
		ops:   map[Class][][]int{NonmonotonicPoll: {{2, 3}}},
	}, {
		name: "nonmonotonic-send",
		h: hist(
			ok(0, 0, 1, send(x, 1, 1)),
			ok(0, 2, 3, send(x, 0, 2)),
			ok(1, 4, 5, poll(r(x, 0, 2, 1, 1))),
		),
		found: []Class{NonmonotonicSend, G0Process},
		bad:   []Class{NonmonotonicSend},
		ops:   map[Class][][]int{NonmonotonicSend: {{0, 1}}, G0Process: {{0, 1}}},
	}, {
		// The same inversion alone: an info op is no process predecessor,
		// so no cycle comes with it.
		name: "nonmonotonic-send after an info send",
		h: hist(
			op(0, history.Info, 0, 1, send(x, 1, 1)),
			ok(0, 2, 3, send(x, 0, 2)),
			ok(1, 4, 5, poll(r(x, 0, 2, 1, 1))),
		),
		found: []Class{NonmonotonicSend},
		ops:   map[Class][][]int{NonmonotonicSend: {{0, 1}}},
	}, {
		name: "int-poll-skip",
		h: hist(
			ok(0, 0, 1, send(x, 0, 1), send(x, 1, 2), send(x, 2, 3)),
			ok(1, 2, 3, poll(r(x, 0, 1, 2, 3))),
			ok(2, 2, 3, poll(r(x, 1, 2))),
		),
		found: []Class{IntPollSkip},
		ops:   map[Class][][]int{IntPollSkip: {{1}}},
	}, {
		name: "int-nonmonotonic-poll",
		h: hist(
			ok(0, 0, 1, send(x, 0, 1), send(x, 1, 2), send(x, 2, 3)),
			ok(1, 2, 3, poll(r(x, 1, 2, 0, 1))),
			ok(2, 2, 3, poll(r(x, 2, 3))),
		),
		found: []Class{IntNonmonotonicPoll},
		ops:   map[Class][][]int{IntNonmonotonicPoll: {{1}}},
	}, {
		name: "int-send-skip",
		h: hist(
			ok(0, 0, 3, send(x, 0, 1), send(x, 2, 3)),
			ok(1, 1, 2, send(x, 1, 2)),
			ok(2, 4, 5, poll(r(x, 0, 1, 1, 2, 2, 3))),
		),
		found: []Class{IntSendSkip, G0},
		bad:   []Class{},
		ops:   map[Class][][]int{IntSendSkip: {{0}}, G0: {{0, 1}}},
	}, {
		name: "int-nonmonotonic-send",
		h: hist(
			ok(0, 0, 1, send(x, 1, 1), send(x, 0, 2)),
			ok(1, 2, 3, poll(r(x, 0, 2, 1, 1))),
		),
		found: []Class{IntNonmonotonicSend},
		ops:   map[Class][][]int{IntNonmonotonicSend: {{0}}},
	}, {
		name:  "unseen",
		h:     hist(ok(0, 0, 1, send(x, 0, 1))),
		found: []Class{Unseen},
		ops:   map[Class][][]int{Unseen: {{0}}},
		check: func(t *testing.T, res Result) {
			if !reflect.DeepEqual(res.Stats.Unseen, map[history.Key]int{x: 1}) {
				t.Errorf("unseen stats %v", res.Stats.Unseen)
			}
		},
	}, {
		// Two concurrent transactions write x and y in opposite orders.
		name: "G0",
		h: hist(
			ok(0, 0, 3, send(x, 0, 1), send(y, 1, 4)),
			ok(1, 1, 2, send(x, 1, 2), send(y, 0, 3)),
			ok(2, 4, 5, poll(r(x, 0, 1, 1, 2), r(y, 0, 3, 1, 4))),
		),
		found: []Class{G0},
		bad:   []Class{},
		ops:   map[Class][][]int{G0: {{0, 1}}},
		check: func(t *testing.T, res Result) {
			want := []Step{{From: 0, To: 1, Rel: "ww", Key: x, Value: 1, Value2: 2}, {From: 1, To: 0, Rel: "ww", Key: y, Value: 3, Value2: 4}}
			if got := res.Anomalies[G0][0].Steps; !reflect.DeepEqual(got, want) {
				t.Errorf("steps %+v", got)
			}
		},
	}, {
		// op 1 follows op 0 in process 0; op 2 (concurrent with both) sends
		// after op 1 on y and before op 0 on x.
		name: "G0-process",
		h: hist(
			ok(0, 0, 1, send(x, 1, 1)),
			ok(0, 2, 3, send(y, 0, 3)),
			ok(1, 0, 4, send(y, 1, 4), send(x, 0, 2)),
			ok(2, 5, 6, poll(r(x, 0, 2, 1, 1), r(y, 0, 3, 1, 4))),
		),
		found: []Class{G0Process},
		bad:   []Class{},
		ops:   map[Class][][]int{G0Process: {{0, 1, 2}}},
	}, {
		name: "G0-realtime",
		h: hist(
			ok(0, 0, 1, send(x, 1, 1)),
			ok(3, 2, 3, send(y, 0, 3)),
			ok(1, 0, 4, send(y, 1, 4), send(x, 0, 2)),
			ok(2, 5, 6, poll(r(x, 0, 2, 1, 1), r(y, 0, 3, 1, 4))),
		),
		found: []Class{G0Realtime},
		bad:   []Class{},
		ops:   map[Class][][]int{G0Realtime: {{0, 1, 2}}},
	}, {
		// Each of two concurrent transactions reads what the other sent:
		// circular information flow.
		name: "G1c",
		h: hist(
			ok(0, 0, 3, send(x, 0, 1), poll(r(y, 0, 2))),
			ok(1, 1, 2, send(y, 0, 2), poll(r(x, 0, 1))),
		),
		found: []Class{G1c},
		ops:   map[Class][][]int{G1c: {{0, 1}}},
	}, {
		// op 0 reads what op 2 sent, op 2 read what op 1 sent, and op 1
		// comes after op 0 in process 0.
		name: "G1c-process",
		h: hist(
			ok(0, 0, 1, poll(r(y, 0, 2))),
			ok(0, 2, 3, send(x, 0, 1)),
			ok(1, 0, 4, poll(r(x, 0, 1)), send(y, 0, 2)),
		),
		found: []Class{G1cProcess},
		ops:   map[Class][][]int{G1cProcess: {{0, 1, 2}}},
	}, {
		name: "G1c-realtime",
		h: hist(
			ok(0, 0, 1, poll(r(y, 0, 2))),
			ok(3, 2, 3, send(x, 0, 1)),
			ok(1, 0, 4, poll(r(x, 0, 1)), send(y, 0, 2)),
		),
		found: []Class{G1cRealtime},
		ops:   map[Class][][]int{G1cRealtime: {{0, 1, 2}}},
	}, {
		// t0 <ww t1 <wr t0: normal in Kafka; only a cycle with WWDeps,
		// where it is allowed.
		name: "G1c with ww deps",
		opts: Options{WWDeps: true},
		h: hist(
			ok(0, 0, 3, send(x, 0, 1), poll(r(y, 0, 3))),
			ok(1, 1, 2, send(x, 1, 2), send(y, 0, 3)),
			ok(2, 4, 5, poll(r(x, 0, 1, 1, 2))),
		),
		found: []Class{G1c},
		bad:   []Class{},
		ops:   map[Class][][]int{G1c: {{0, 1}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustCheck(t, tc.h, tc.opts)
			if !reflect.DeepEqual(res.Found, tc.found) {
				t.Fatalf("found %v, want %v\n%s", res.Found, tc.found, dump(res))
			}
			bad := tc.bad
			if bad == nil {
				bad = tc.found
			}
			if !reflect.DeepEqual(res.Bad, bad) || res.Valid != (len(bad) == 0) {
				t.Fatalf("bad %v valid %v, want %v", res.Bad, res.Valid, bad)
			}
			for c, want := range tc.ops {
				if got := opsOf(res.Anomalies[c]); !reflect.DeepEqual(got, want) {
					t.Errorf("%s ops %v, want %v\n%s", c, got, want, dump(res))
				}
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

// A Result read back from its JSON is the Result written.
func TestResultJSONRoundTrip(t *testing.T) {
	h := hist(
		op(0, history.Fail, 0, 1, send(x, 0, 1)),
		ok(1, 2, 3, poll(r(x, 0, 1))),
		ok(2, 0, 3, send(y, 0, 5), poll(r(y, 1, 6))),
		ok(3, 1, 2, send(y, 1, 6), poll(r(y, 0, 5))),
	)
	res := mustCheck(t, h, Options{})
	if !reflect.DeepEqual(res.Found, []Class{G1a, G1c}) {
		t.Fatalf("found %v", res.Found)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, res) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, res)
	}
	md := dump(res)
	for _, want := range []string{"INVALID: G1a, G1c", "| `G1a` | 1 | yes |", "op 2 sent 5 to key 1, polled by op 3"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

func dump(res Result) string {
	var b strings.Builder
	_ = WriteMarkdown(&b, res)
	return b.String()
}
