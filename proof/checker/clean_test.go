package checker

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"floe/proof/history"
)

func TestCleanHistories(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    history.History
	}{{
		// Info sends that never landed, an aborted transaction whose record
		// takes an offset no one sees, a crash and a fresh process that
		// rewinds and reads everything again, and a failed poll.
		name: "assign with info, fail and crash",
		h: hist(
			ctl(0, history.OK, history.Assign, 0, 1, x, y),
			ok(1, 0, 2, send(x, 0, 1)),
			op(2, history.Info, 0, 50, history.SendMop(x, 2)),
			op(3, history.Fail, 1, 3, send(y, 0, 3)),
			ok(4, 4, 6, send(y, 2, 4), send(x, 1, 5)),
			ok(0, 7, 8, poll(r(x, 0, 1, 1, 5), r(y, 2, 4))),
			ctl(5, history.Info, history.Crash, 9, 9),
			history.Op{Process: 6, Type: history.OK, F: history.Assign, Invoke: 10, Complete: 11, Keys: []history.Key{x, y}, SeekToBeginning: true},
			ok(6, 12, 13, poll(r(x, 0, 1, 1, 5), r(y, 2, 4))),
			op(7, history.Fail, 12, 14, history.PollMop(nil)),
			ok(0, 15, 16, poll(r(x), r(y))),
		),
	}, {
		// Two members of a group share x and y; after a rebalance, p1
		// takes x over from the group's committed offset.
		name: "subscribe with concurrent pollers",
		h: hist(
			ctl(0, history.OK, history.Subscribe, 0, 1, x, y),
			ctl(1, history.OK, history.Subscribe, 0, 1, x, y),
			ok(2, 0, 3, send(x, 0, 1), send(x, 1, 2), send(y, 0, 3)),
			ok(3, 2, 5, send(y, 1, 4)),
			ok(0, 4, 6, poll(r(x, 0, 1))),
			ok(1, 4, 7, poll(r(y, 0, 3, 1, 4))),
			history.Op{Process: 1, Type: history.OK, F: history.Poll, Invoke: 8, Complete: 9, Rebalanced: []history.Key{x},
				Mops: []history.Mop{poll(r(x, 1, 2))}},
		),
	}, {
		// Read-process-write: a transaction polls x and sends y.
		name: "transactional read-process-write",
		h: hist(
			ok(0, 0, 1, send(x, 0, 1)),
			ctl(1, history.OK, history.Assign, 0, 1, x),
			ok(1, 2, 5, poll(r(x, 0, 1)), send(y, 0, 10)),
			ok(2, 6, 7, poll(r(y, 0, 10))),
		),
	}, {
		// Keys polled empty, and sends of unknown offset, have no order.
		name: "empty polls",
		h: hist(
			ok(0, 0, 1, poll(r(x), r(y))),
			op(1, history.Info, 0, 2, history.SendMop(y, 1)),
			ok(0, 2, 3, poll(r(x))),
			op(2, history.OK, 0, 2, history.SendMop(x, 2)),
			ok(0, 4, 5, poll(r(x, 0, 2))),
		),
	}, {
		name: "generated",
		h:    generate(2000, 4, 6, 1),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustCheck(t, tc.h, Options{})
			if len(res.Found) != 0 || !res.Valid {
				t.Fatalf("found %v\n%s", res.Found, dump(res))
			}
			res = mustCheck(t, tc.h, Options{WWDeps: true})
			if len(res.Found) != 0 || !res.Valid {
				t.Fatalf("with ww deps: found %v\n%s", res.Found, dump(res))
			}
		})
	}
}

// With subscribe, a consumer moved by a rebalance may skip or repeat: found,
// and allowed.
func TestSubscribeAllowsPollSkip(t *testing.T) {
	h := hist(
		ok(0, 0, 1, send(x, 0, 1), send(x, 1, 2), send(x, 2, 3)),
		ctl(1, history.OK, history.Subscribe, 0, 1, x),
		ok(1, 2, 3, poll(r(x, 0, 1))),
		ok(1, 4, 5, poll(r(x, 2, 3))),
		ok(2, 4, 5, poll(r(x, 1, 2))),
	)
	res := mustCheck(t, h, Options{})
	if !reflect.DeepEqual(res.Found, []Class{PollSkip}) || !res.Valid {
		t.Fatalf("found %v bad %v", res.Found, res.Bad)
	}
	res = mustCheck(t, h, Options{Allow: []Class{"custom"}})
	if want := []Class{PollSkip, NonmonotonicPoll, IntSendSkip, G0, G0Process, G0Realtime, "custom"}; !reflect.DeepEqual(res.Allowed, want) {
		t.Fatalf("allowed %v, want %v", res.Allowed, want)
	}
}

func TestInvalidHistory(t *testing.T) {
	h := hist(ok(0, 5, 1, send(x, 0, 1)))
	if _, err := Check(h, Options{}); err == nil {
		t.Fatal("checked a history completing before its invocation")
	}
}

// generate returns a clean history of about n ops by procs processes over
// keys keys, as a correct broker would produce it: sends (some in
// transactions, some aborted, some with unknown outcome), polls that read
// each key's log in order from their process's position, crashes that
// replace a process, and a final poll that reads every log.
func generate(n, procs, keys int, seed uint64) history.History {
	rng := rand.New(rand.NewPCG(seed, seed))
	type entry struct{ off, v int64 }
	logs := make([][]entry, keys)
	next := make([]int64, keys) // next offset per key
	pid := make([]int, procs)   // current process of each worker
	pos := make([]map[history.Key]int, procs)
	nextPid := procs
	for w := range pid {
		pid[w] = w
		pos[w] = map[history.Key]int{}
	}
	value := int64(0)
	var h history.History
	step := int64(10 * procs)
	for i := 0; len(h) < n; i++ {
		w := i % procs
		inv := int64(i) * 10
		comp := inv + 1 + rng.Int64N(step-2)
		o := history.Op{Process: pid[w], Type: history.OK, Invoke: inv, Complete: comp}
		switch c := rng.IntN(100); {
		case c < 2: // crash: a fresh client, from the beginning
			o.Type, o.F, o.Complete = history.Info, history.Crash, inv
			pid[w], nextPid = nextPid, nextPid+1
			pos[w] = map[history.Key]int{}
		case c < 50: // poll every key from this process's position
			o.F = history.Poll
			m := map[history.Key][]history.Pair{}
			for k := range keys {
				key := history.Key(k)
				p := pos[w][key]
				end := min(p+1+rng.IntN(4), len(logs[k]))
				ps := []history.Pair{}
				for _, e := range logs[k][p:end] {
					ps = append(ps, history.Pair{Offset: e.off, Value: e.v})
				}
				m[key] = ps
				pos[w][key] = end
			}
			o.Mops = []history.Mop{history.PollMop(m)}
		default: // send 1 to 3 values, some in an aborted or uncertain transaction
			o.F = history.Send
			outcome := rng.IntN(100)
			txn := rng.IntN(3) == 0
			for range 1 + rng.IntN(3) {
				k := rng.IntN(keys)
				value++
				off := next[k]
				next[k]++
				switch {
				case outcome < 3: // aborted: takes an offset, never visible
					o.Type = history.Fail
					o.Mops = append(o.Mops, history.SendAt(history.Key(k), off, value))
				case outcome < 6: // unknown outcome; it did land
					o.Type = history.Info
					o.Mops = append(o.Mops, history.SendMop(history.Key(k), value))
					logs[k] = append(logs[k], entry{off, value})
				default:
					o.Mops = append(o.Mops, history.SendAt(history.Key(k), off, value))
					logs[k] = append(logs[k], entry{off, value})
				}
			}
			if txn || o.Type == history.Fail { // the commit or abort marker
				for k := range keys {
					next[k]++
				}
			}
			if o.Type == history.Info {
				o.Complete = inv + step - 1 // gave up; the worker moves on with a new process
				pid[w], nextPid = nextPid, nextPid+1
				pos[w] = map[history.Key]int{}
			}
		}
		h = append(h, o)
	}
	// The final poll by a fresh process reads every log.
	end := int64(len(h)+procs) * 10
	all := make([]history.Key, keys)
	m := map[history.Key][]history.Pair{}
	for k := range keys {
		all[k] = history.Key(k)
		ps := []history.Pair{}
		for _, e := range logs[k] {
			ps = append(ps, history.Pair{Offset: e.off, Value: e.v})
		}
		m[history.Key(k)] = ps
	}
	h = append(h,
		history.Op{Process: nextPid, Type: history.OK, F: history.Assign, Invoke: end, Complete: end + 1, Keys: all, SeekToBeginning: true},
		history.Op{Process: nextPid, Type: history.OK, F: history.Poll, Invoke: end + 2, Complete: end + 3, Mops: []history.Mop{history.PollMop(m)}})
	h.Reindex()
	return h
}

func BenchmarkCheck(b *testing.B) {
	h := generate(100_000, 10, 20, 7)
	b.ResetTimer()
	for b.Loop() {
		res, err := Check(h, Options{CycleSearchTimeout: time.Second})
		if err != nil || !res.Valid || len(res.Found) != 0 {
			b.Fatalf("err %v found %v", err, res.Found)
		}
	}
}

// A ring of 2000 transactions, each sending before the next on one key and
// after it on another, is one large G0 cycle; with no time to search, the
// check says so instead of reporting nothing.
func TestCycleSearchTimeout(t *testing.T) {
	const n = 2000
	var h history.History
	for i := range n {
		h = append(h, ok(i, 0, 1, send(history.Key(i), 1, int64(2*i)), send(history.Key((i+1)%n), 0, int64(2*i+1))))
	}
	h.Reindex()
	res := mustCheck(t, h, Options{CycleSearchTimeout: time.Nanosecond})
	if res.Counts[CycleSearchTimeout] != 1 || res.Counts[G0] != 0 || res.Valid {
		t.Fatalf("counts %v valid %v", res.Counts, res.Valid)
	}
	if a := res.Anomalies[CycleSearchTimeout][0]; a.Count != n || len(a.Ops) != 10 {
		t.Fatalf("timeout %+v", a)
	}
	res = mustCheck(t, h, Options{})
	if res.Counts[G0] != 1 || len(res.Anomalies[G0][0].Ops) != n || res.Counts[CycleSearchTimeout] != 0 {
		t.Fatalf("counts %v", res.Counts)
	}
}

// Faults planted in a generated clean history are found: a value no poll
// returns any more is lost (some later value was read) and unseen, and a
// send that reports another value's offset makes that offset inconsistent.
func TestGeneratedMutations(t *testing.T) {
	h := generate(3000, 4, 6, 3)
	// The first ok send's first value, and another value of the same key.
	var sendOp int
	var victim history.Mop
	for i := range h {
		if h[i].Type == history.OK && h[i].F == history.Send {
			sendOp, victim = i, h[i].Mops[0]
			break
		}
	}
	lost := append(history.History(nil), h...)
	for i := range lost {
		if lost[i].F != history.Poll {
			continue
		}
		m := lost[i].Mops[0].Polls
		kept := map[history.Key][]history.Pair{}
		for k, ps := range m {
			for _, p := range ps {
				if k != victim.Key || p.Value != victim.Value {
					kept[k] = append(kept[k], p)
				}
			}
		}
		lost[i].Mops = []history.Mop{history.PollMop(kept)}
	}
	res := mustCheck(t, lost, Options{})
	for _, c := range []Class{LostWrite, Unseen} {
		if res.Counts[c] != 1 || res.Anomalies[c][0].Ops[0] != sendOp || res.Anomalies[c][0].Values[0] != victim.Value {
			t.Errorf("%s: %d %+v", c, res.Counts[c], res.Anomalies[c])
		}
	}
	if res.Valid {
		t.Error("valid with a lost write")
	}

	bad := append(history.History(nil), h...)
	mops := append([]history.Mop(nil), bad[sendOp].Mops...)
	mops[0].Offset++ // now it claims the next record's offset
	bad[sendOp].Mops = mops
	res = mustCheck(t, bad, Options{})
	if res.Counts[InconsistentOffsets] == 0 || res.Valid {
		t.Errorf("found %v", res.Found)
	}
}

// A key with observations but no offset (an ok send whose offset the client
// never learnt, and no poll) has no order; the check must not trip on it.
func TestKeyWithoutOffsets(t *testing.T) {
	h := hist(op(0, history.OK, 0, 1, history.SendMop(x, 1)), ok(1, 0, 1, poll(r(y))))
	res := mustCheck(t, h, Options{})
	if !reflect.DeepEqual(res.Found, []Class{Unseen}) || len(res.Stats.MaxOffset) != 0 {
		t.Fatalf("found %v, max offsets %v", res.Found, res.Stats.MaxOffset)
	}
}
