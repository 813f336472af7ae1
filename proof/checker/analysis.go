package checker

import (
	"cmp"
	"slices"

	"floe/proof/history"
)

// analysis is the state of one Check: indexes built once from the history
// and the anomalies found so far. It is owned by the Check call.
type analysis struct {
	h    history.History
	opts Options

	// reads and writes are per op: the pairs polled per key (in the order
	// the op's polls returned them) and the sends per key (in send order,
	// offsets possibly unknown). nil for ops with none.
	reads  []map[history.Key][]history.Pair
	writes []map[history.Key][]history.Pair

	// writerOf is the op that sent each value; readersOf the ops (of any
	// outcome) that polled it.
	writerOf  map[history.Key]map[int64]int
	readersOf map[history.Key]map[int64][]int
	// okReads are the values polled by ok ops; failedWrites the values sent
	// by failed ops.
	okReads      map[history.Key]map[int64]bool
	failedWrites map[history.Key]map[int64]bool

	orders map[history.Key]*order
	keys   []history.Key // every key with an order, increasing

	counts    map[Class]int
	anomalies map[Class][]Anomaly
}

// order is a key's version order. Dense indexes number the offsets at which
// some value was seen, in offset order, ignoring gaps (transaction markers and
// aborted records take offsets no read_committed client sees).
type order struct {
	offsets []int64   // seen offsets, increasing; position = dense index
	values  [][]int64 // values seen at each, increasing; more than one is inconsistent
	// byIndex is the value standing for each dense index (the smallest, when
	// an offset is inconsistent); byValue maps those values back, the last
	// index winning for a duplicate, as Jepsen's index does.
	byIndex []int64
	byValue map[int64]int
	// firstIndex and lastIndex hold, for every value seen, its first and
	// last dense index (they differ for duplicates).
	firstIndex map[int64]int
	lastIndex  map[int64]int
}

func newAnalysis(h history.History, opts Options) *analysis {
	a := &analysis{
		h:            h,
		opts:         opts,
		reads:        make([]map[history.Key][]history.Pair, len(h)),
		writes:       make([]map[history.Key][]history.Pair, len(h)),
		writerOf:     map[history.Key]map[int64]int{},
		readersOf:    map[history.Key]map[int64][]int{},
		okReads:      map[history.Key]map[int64]bool{},
		failedWrites: map[history.Key]map[int64]bool{},
		orders:       map[history.Key]*order{},
		counts:       map[Class]int{},
		anomalies:    map[Class][]Anomaly{},
	}
	for i := range h {
		a.index(i)
	}
	a.buildOrders()
	return a
}

func (a *analysis) index(i int) {
	o := &a.h[i]
	if !o.IsTxn() {
		return
	}
	for _, m := range o.Mops {
		switch m.F {
		case history.MopSend:
			if a.writes[i] == nil {
				a.writes[i] = map[history.Key][]history.Pair{}
			}
			a.writes[i][m.Key] = append(a.writes[i][m.Key], history.Pair{Offset: m.Offset, Value: m.Value})
			setIn(a.writerOf, m.Key)[m.Value] = i
			if o.Type == history.Fail {
				setIn(a.failedWrites, m.Key)[m.Value] = true
			}
		case history.MopPoll:
			for _, k := range history.SortedKeys(m.Polls) {
				ps := m.Polls[k]
				if a.reads[i] == nil {
					a.reads[i] = map[history.Key][]history.Pair{}
				}
				a.reads[i][k] = append(a.reads[i][k], ps...)
			}
		}
	}
	for _, k := range history.SortedKeys(a.reads[i]) {
		rk := a.readersOf[k]
		if rk == nil {
			rk = map[int64][]int{}
			a.readersOf[k] = rk
		}
		for _, p := range a.reads[i][k] {
			if rs := rk[p.Value]; len(rs) == 0 || rs[len(rs)-1] != i {
				rk[p.Value] = append(rs, i)
			}
			if o.Type == history.OK {
				setIn(a.okReads, k)[p.Value] = true
			}
		}
	}
}

func setIn[V any](m map[history.Key]map[int64]V, k history.Key) map[int64]V {
	s := m[k]
	if s == nil {
		s = map[int64]V{}
		m[k] = s
	}
	return s
}

// mustHaveCommitted: the op is ok, or info and some value it sent was read by
// an ok op. Only such ops' sends inform the version orders and can be lost.
func (a *analysis) mustHaveCommitted(i int) bool {
	switch a.h[i].Type {
	case history.OK:
		return true
	case history.Info:
		for k, ps := range a.writes[i] {
			for _, p := range ps {
				if a.okReads[k][p.Value] {
					return true
				}
			}
		}
	}
	return false
}

// buildOrders builds each key's version order from every poll and from the
// sends of ops that must have committed, then reports inconsistent-offsets
// and duplicate.
func (a *analysis) buildOrders() {
	// Two passes, counting then filling, so that each key's observations
	// are allocated once.
	committed := make([]bool, len(a.h))
	size := map[history.Key]int{}
	for i := range a.h {
		for k, ps := range a.reads[i] {
			size[k] += len(ps)
		}
		if committed[i] = a.writes[i] != nil && a.mustHaveCommitted(i); committed[i] {
			for k, ps := range a.writes[i] {
				size[k] += len(ps)
			}
		}
	}
	obs := make(map[history.Key][]history.Pair, len(size))
	for k, n := range size {
		if n > 0 { // a key only ever polled empty has no order
			obs[k] = make([]history.Pair, 0, n)
		}
	}
	for i := range a.h {
		for k, ps := range a.reads[i] {
			if len(ps) > 0 {
				obs[k] = append(obs[k], ps...)
			}
		}
		if committed[i] {
			for k, ps := range a.writes[i] {
				for _, p := range ps {
					if p.Offset != history.UnknownOffset {
						obs[k] = append(obs[k], p)
					}
				}
			}
		}
	}
	for k, ps := range obs {
		if len(ps) == 0 { // only sends of unknown offset
			delete(obs, k)
		}
	}
	a.keys = history.SortedKeys(obs)
	for _, k := range a.keys {
		ps := obs[k]
		slices.SortFunc(ps, func(p, q history.Pair) int {
			if c := cmp.Compare(p.Offset, q.Offset); c != 0 {
				return c
			}
			return cmp.Compare(p.Value, q.Value)
		})
		ord := &order{byValue: map[int64]int{}, firstIndex: map[int64]int{}, lastIndex: map[int64]int{}}
		for j, p := range ps {
			if j > 0 && ps[j-1] == p {
				continue
			}
			if n := len(ord.offsets); n > 0 && ord.offsets[n-1] == p.Offset {
				ord.values[n-1] = append(ord.values[n-1], p.Value)
			} else {
				ord.offsets = append(ord.offsets, p.Offset)
				ord.values = append(ord.values, []int64{p.Value})
			}
			idx := len(ord.offsets) - 1
			if _, ok := ord.firstIndex[p.Value]; !ok {
				ord.firstIndex[p.Value] = idx
			}
			ord.lastIndex[p.Value] = idx
		}
		ord.byIndex = make([]int64, len(ord.offsets))
		for idx, vs := range ord.values {
			ord.byIndex[idx] = vs[0]
			ord.byValue[vs[0]] = idx
		}
		a.orders[k] = ord
		a.orderAnomalies(k, ord)
	}
}

func (a *analysis) orderAnomalies(k history.Key, ord *order) {
	for idx, vs := range ord.values {
		if len(vs) > 1 {
			off := ord.offsets[idx]
			a.report(InconsistentOffsets, Anomaly{
				Ops: a.opsAtOffset(k, off), Key: keyPtr(k), Offsets: []int64{off}, Values: vs,
			})
		}
	}
	// A value at more than one offset; walk values in order of first index
	// so that the report is deterministic.
	for idx, vs := range ord.values {
		for _, v := range vs {
			if ord.firstIndex[v] != idx || ord.lastIndex[v] == idx {
				continue
			}
			var offs []int64
			for j := idx; j <= ord.lastIndex[v]; j++ {
				if containsValue(ord.values[j], v) {
					offs = append(offs, ord.offsets[j])
				}
			}
			var ops []int
			if w, ok := a.writerOf[k][v]; ok {
				ops = append(ops, w)
			}
			ops = append(ops, a.readersOf[k][v]...)
			a.report(Duplicate, Anomaly{Ops: ops, Key: keyPtr(k), Values: []int64{v}, Offsets: offs, Count: len(offs)})
		}
	}
}

// opsAtOffset lists the ops that sent or polled something at k's offset off.
// Only called for inconsistent offsets, so a scan of the history is fine.
func (a *analysis) opsAtOffset(k history.Key, off int64) []int {
	var ops []int
	for i := range a.h {
		hit := false
		for _, p := range a.reads[i][k] {
			hit = hit || p.Offset == off
		}
		for _, p := range a.writes[i][k] {
			hit = hit || p.Offset == off
		}
		if hit {
			ops = append(ops, i)
		}
	}
	return ops
}

func containsValue(vs []int64, v int64) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

func keyPtr(k history.Key) *history.Key { return &k }

// report records one anomaly of class c.
func (a *analysis) report(c Class, an Anomaly) {
	a.counts[c]++
	if len(a.anomalies[c]) < a.opts.MaxAnomalies {
		a.anomalies[c] = append(a.anomalies[c], an)
	}
}
