package checker

import (
	"slices"

	"floe/proof/history"
)

// g1a: an ok op polled a value whose send failed.
func (a *analysis) g1a() {
	for i := range a.h {
		if a.h[i].Type != history.OK {
			continue
		}
		for _, k := range history.SortedKeys(a.reads[i]) {
			seen := map[int64]bool{}
			for _, p := range a.reads[i][k] {
				if !a.failedWrites[k][p.Value] || seen[p.Value] {
					continue
				}
				seen[p.Value] = true
				a.report(G1a, Anomaly{
					Ops: []int{a.writerOf[k][p.Value], i}, Key: keyPtr(k),
					Values: []int64{p.Value}, Offsets: []int64{p.Offset},
				})
			}
		}
	}
}

// noWriter: a value polled that no op sent, one anomaly per key and value,
// with its first ten readers.
func (a *analysis) noWriter() {
	for _, k := range a.keys {
		readers := a.readersOf[k]
		var vs []int64
		for v := range readers {
			if _, ok := a.writerOf[k][v]; !ok {
				vs = append(vs, v)
			}
		}
		slices.Sort(vs)
		for _, v := range vs {
			ops := readers[v][:min(10, len(readers[v]))]
			ord := a.orders[k]
			a.report(NoWriterOfValue, Anomaly{
				Ops: append([]int(nil), ops...), Key: keyPtr(k), Values: []int64{v},
				Offsets: []int64{ord.offsets[ord.firstIndex[v]]}, Count: len(readers[v]),
			})
		}
	}
}

// precommittedRead: an op polled a value it sent itself. Kafka never shows a
// transaction's records to any poller, its own included, before it commits.
// One anomaly per op, for the first such key and value.
func (a *analysis) precommittedRead() {
	for i := range a.h {
		if a.writes[i] == nil || a.reads[i] == nil {
			continue
		}
	keys:
		for _, k := range history.SortedKeys(a.writes[i]) {
			for _, w := range a.writes[i][k] {
				for _, r := range a.reads[i][k] {
					if r.Value == w.Value {
						a.report(PrecommittedRead, Anomaly{
							Ops: []int{i}, Key: keyPtr(k), Values: []int64{w.Value}, Offsets: []int64{r.Offset},
						})
						break keys
					}
				}
			}
		}
	}
}

// lostWrite: for each key, the highest dense index any ok op read bounds
// what must have been read; every value whose last appearance in the order is
// at or below it, and whose writer must have committed, was read by some ok op
// or was lost.
func (a *analysis) lostWrite() {
	for _, k := range a.keys {
		vs := a.okReads[k]
		ord := a.orders[k]
		if len(vs) == 0 {
			continue
		}
		bound := -1
		for v := range vs {
			if idx, ok := ord.firstIndex[v]; ok && idx > bound {
				bound = idx
			}
		}
		if bound < 0 {
			continue
		}
		// The op that read the bound, to show that someone read that far.
		maxReader := -1
		for _, v := range ord.values[bound] {
			for _, r := range a.readersOf[k][v] {
				if a.h[r].Type == history.OK && (maxReader < 0 || r < maxReader) {
					maxReader = r
				}
			}
		}
		for idx := 0; idx <= bound; idx++ {
			for _, v := range ord.values[idx] {
				if ord.lastIndex[v] != idx || vs[v] {
					continue
				}
				w, ok := a.writerOf[k][v]
				if !ok || !a.mustHaveCommitted(w) {
					continue
				}
				ops := []int{w}
				if maxReader >= 0 {
					ops = append(ops, maxReader)
				}
				a.report(LostWrite, Anomaly{
					Ops: ops, Key: keyPtr(k), Values: []int64{v}, Offsets: []int64{ord.offsets[ord.firstIndex[v]]},
					Delta: bound - idx,
				})
			}
		}
	}
}

// delta is the distance from v1 to v2 in k's order, 1 (no anomaly) when
// either has no place in it.
func (a *analysis) delta(k history.Key, v1, v2 int64) (d int, skipped []int64) {
	ord := a.orders[k]
	if ord == nil {
		return 1, nil
	}
	i1, ok1 := ord.byValue[v1]
	i2, ok2 := ord.byValue[v2]
	if !ok1 || !ok2 {
		return 1, nil
	}
	d = i2 - i1
	if d > 1 {
		skipped = append([]int64(nil), ord.byIndex[i1+1:i2]...)
	}
	return d, skipped
}

// internal: within each op, successive polls and successive sends of a key
// must be adjacent in the key's order. Keys rebalanced during the op are
// exempt from the poll check.
func (a *analysis) internal() {
	for i := range a.h {
		if a.reads[i] != nil {
			rebalanced := map[history.Key]bool{}
			for _, k := range a.h[i].Rebalanced {
				rebalanced[k] = true
			}
			for _, k := range history.SortedKeys(a.reads[i]) {
				if !rebalanced[k] {
					a.pairs(i, k, a.reads[i][k], IntPollSkip, IntNonmonotonicPoll)
				}
			}
		}
		for _, k := range history.SortedKeys(a.writes[i]) {
			a.pairs(i, k, a.writes[i][k], IntSendSkip, IntNonmonotonicSend)
		}
	}
}

func (a *analysis) pairs(i int, k history.Key, ps []history.Pair, skip, nonmono Class) {
	for j := 1; j < len(ps); j++ {
		v1, v2 := ps[j-1].Value, ps[j].Value
		d, skipped := a.delta(k, v1, v2)
		switch {
		case d > 1:
			a.report(skip, Anomaly{Ops: []int{i}, Key: keyPtr(k), Values: []int64{v1, v2}, Delta: d, Skipped: skipped})
		case d < 1:
			a.report(nonmono, Anomaly{Ops: []int{i}, Key: keyPtr(k), Values: []int64{v1, v2}, Delta: d})
		}
	}
}

// byProcess returns each process's ops in order (completion order is process
// order: a process runs one op at a time), processes increasing.
func (a *analysis) byProcess() [][]int {
	m := map[int][]int{}
	for i := range a.h {
		m[a.h[i].Process] = append(m[a.h[i].Process], i)
	}
	ps := make([]int, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	out := make([][]int, len(ps))
	for j, p := range ps {
		out[j] = m[p]
	}
	return out
}

// external: each process's polls of a key must continue where its previous
// ok poll of that key left off, and its sends to a key must land after its
// previous sends there. An ok or info assign or subscribe forgets the polls
// of keys it no longer names. Any op's first read is compared; only ok ops
// move the process's position.
func (a *analysis) external() {
	for _, ops := range a.byProcess() {
		lastRead := map[history.Key]int{} // key -> op whose last read of it is the position
		lastSend := map[history.Key]int{}
		for _, i := range ops {
			o := &a.h[i]
			switch o.F {
			case history.Assign, history.Subscribe:
				if o.Type == history.Fail {
					continue
				}
				keep := map[history.Key]bool{}
				for _, k := range o.Keys {
					keep[k] = true
				}
				for k := range lastRead {
					if !keep[k] {
						delete(lastRead, k)
					}
				}
				continue
			}
			for _, k := range history.SortedKeys(a.reads[i]) {
				rs := a.reads[i][k]
				if len(rs) == 0 {
					continue
				}
				if prev, ok := lastRead[k]; ok {
					pr := a.reads[prev][k]
					v, v2 := pr[len(pr)-1].Value, rs[0].Value
					d, skipped := a.delta(k, v, v2)
					switch {
					case d > 1:
						a.report(PollSkip, Anomaly{Ops: []int{prev, i}, Key: keyPtr(k), Values: []int64{v, v2}, Delta: d, Skipped: skipped})
					case d < 1:
						a.report(NonmonotonicPoll, Anomaly{Ops: []int{prev, i}, Key: keyPtr(k), Values: []int64{v, v2}, Delta: d})
					}
				}
				if o.Type == history.OK {
					lastRead[k] = i
				}
			}
			if o.Type != history.OK && o.Type != history.Info {
				continue
			}
			for _, k := range history.SortedKeys(a.writes[i]) {
				ws := a.writes[i][k]
				if prev, ok := lastSend[k]; ok {
					pw := a.writes[prev][k]
					v, v2 := pw[len(pw)-1].Value, ws[0].Value
					if d, _ := a.delta(k, v, v2); d < 1 {
						a.report(NonmonotonicSend, Anomaly{Ops: []int{prev, i}, Key: keyPtr(k), Values: []int64{v, v2}, Delta: d})
					}
				}
				lastSend[k] = i
			}
		}
	}
}

// unseen: values sent by ok ops and polled by no ok op, one anomaly per key
// (with the first 32 values and their writers).
func (a *analysis) unseen(stats *Stats) {
	sent := map[history.Key][]int64{}
	for i := range a.h {
		if a.h[i].Type != history.OK {
			continue
		}
		for k, ps := range a.writes[i] {
			for _, p := range ps {
				if !a.okReads[k][p.Value] {
					sent[k] = append(sent[k], p.Value)
				}
			}
		}
	}
	for _, k := range history.SortedKeys(sent) {
		vs := sent[k]
		slices.Sort(vs)
		if stats.Unseen == nil {
			stats.Unseen = map[history.Key]int{}
		}
		stats.Unseen[k] = len(vs)
		show := vs
		if len(show) > 32 {
			show = show[:32]
		}
		ops := make([]int, 0, len(show))
		for _, v := range show {
			ops = append(ops, a.writerOf[k][v])
		}
		a.report(Unseen, Anomaly{Ops: ops, Key: keyPtr(k), Values: append([]int64(nil), show...), Count: len(vs)})
	}
}
