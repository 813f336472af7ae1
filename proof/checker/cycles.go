package checker

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"floe/proof/history"
)

// Dependency kinds, as bits of an edge's mask.
const (
	relWW       uint8 = 1 << iota // From sent the value before To's, in a key's order
	relWR                         // To polled a value From sent
	relProcess                    // From is the previous ok op of To's process
	relRealtime                   // From completed before To was invoked
)

func relName(r uint8) string {
	switch r {
	case relWW:
		return "ww"
	case relWR:
		return "wr"
	case relProcess:
		return "process"
	case relRealtime:
		return "realtime"
	}
	return "?"
}

// edge is one dependency with its explanation.
type edge struct {
	from, to int32
	rel      uint8
	key      history.Key
	v1, v2   int64
}

// graph is the dependency graph over ops, in compressed adjacency form:
// node u's successors are succ[start[u]:start[u+1]], each with the mask of
// kinds relating them. Its edges, sorted by (from, to, rel), explain steps.
type graph struct {
	n     int
	start []int32
	succ  []int32
	mask  []uint8
	edges []edge

	// Scratch for sccs.
	index, low []int32
	onStack    []bool
}

// buildGraph infers the dependencies as Jepsen's Kafka checker does: ww
// between the writers of successive values of a key's order, wr from the
// writer of each value to every op that polled it, plus process order
// between successive ok ops of a process and real-time order (a transitive
// reduction of "completed before invoked").
func (a *analysis) buildGraph() *graph {
	// Room for every wr and ww edge, the process edges and a few real-time
	// edges per op, so that the slice seldom grows.
	size := 5 * len(a.h)
	for i := range a.h {
		for _, ps := range a.reads[i] {
			size += len(ps)
		}
		for _, ps := range a.writes[i] {
			size += len(ps)
		}
	}
	es := make([]edge, 0, size)
	for _, k := range a.keys {
		ord, writers := a.orders[k], a.writerOf[k]
		vs := make([]int64, 0, len(writers))
		for v := range writers {
			vs = append(vs, v)
		}
		slices.Sort(vs)
		for _, v2 := range vs {
			idx, ok := ord.byValue[v2]
			if !ok || idx == 0 {
				continue
			}
			v1 := ord.byIndex[idx-1]
			w1, ok := writers[v1]
			if w2 := writers[v2]; ok && w1 != w2 {
				es = append(es, edge{from: int32(w1), to: int32(w2), rel: relWW, key: k, v1: v1, v2: v2})
			}
		}
		readers := a.readersOf[k]
		rvs := make([]int64, 0, len(readers))
		for v := range readers {
			rvs = append(rvs, v)
		}
		slices.Sort(rvs)
		for _, v := range rvs {
			w, ok := writers[v]
			if !ok {
				continue
			}
			for _, r := range readers[v] {
				if r != w {
					es = append(es, edge{from: int32(w), to: int32(r), rel: relWR, key: k, v1: v})
				}
			}
		}
	}
	for _, ops := range a.byProcess() {
		prev := -1
		for _, i := range ops {
			if !a.h[i].IsTxn() || a.h[i].Type != history.OK {
				continue
			}
			if prev >= 0 {
				es = append(es, edge{from: int32(prev), to: int32(i), rel: relProcess})
			}
			prev = i
		}
	}
	es = a.realtimeEdges(es)

	es = sortEdges(es, len(a.h))
	g := &graph{n: len(a.h), start: make([]int32, len(a.h)+1)}
	// Deduplicate in place: es is sorted, so g.edges (a prefix of it) never
	// overtakes the edge being read.
	g.edges = es[:0]
	g.succ = make([]int32, 0, len(es))
	g.mask = make([]uint8, 0, len(es))
	for j := range es {
		e := es[j]
		if n := len(g.edges); n > 0 && g.edges[n-1].from == e.from && g.edges[n-1].to == e.to && g.edges[n-1].rel == e.rel {
			continue // keep the explanation with the smallest key and value
		}
		g.edges = append(g.edges, e)
		if m := len(g.succ); m > 0 && g.edges[len(g.edges)-2].from == e.from && g.succ[m-1] == e.to {
			g.mask[m-1] |= e.rel
			continue
		}
		g.succ = append(g.succ, e.to)
		g.mask = append(g.mask, e.rel)
		g.start[e.from+1]++
	}
	for u := 0; u < g.n; u++ {
		g.start[u+1] += g.start[u]
	}
	return g
}

// sortEdges orders edges by (from, to, rel, key, value): a counting sort on
// from, then a small sort of each node's edges, since a global sort of a
// large history's million edges dominated the check.
func sortEdges(es []edge, n int) []edge {
	start := make([]int32, n+1)
	for _, e := range es {
		start[e.from+1]++
	}
	for u := 0; u < n; u++ {
		start[u+1] += start[u]
	}
	out := make([]edge, len(es))
	fill := append([]int32(nil), start[:n]...)
	for _, e := range es {
		out[fill[e.from]] = e
		fill[e.from]++
	}
	for u := 0; u < n; u++ {
		slices.SortFunc(out[start[u]:start[u+1]], func(x, y edge) int {
			if c := cmp.Compare(x.to, y.to); c != 0 {
				return c
			}
			if c := cmp.Compare(x.rel, y.rel); c != 0 {
				return c
			}
			if c := cmp.Compare(x.key, y.key); c != 0 {
				return c
			}
			return cmp.Compare(x.v1, y.v1)
		})
	}
	return out
}

// realtimeEdges links every ok op to the ops invoked after it completed,
// keeping only a frontier of completed ops not already implied by a later
// one, as Elle's realtime graph does. Ties count as concurrent.
func (a *analysis) realtimeEdges(es []edge) []edge {
	type event struct {
		t        int64
		complete bool
		op       int
	}
	var evs []event
	for i := range a.h {
		o := &a.h[i]
		if !o.IsTxn() {
			continue
		}
		evs = append(evs, event{o.Invoke, false, i})
		if o.Type == history.OK {
			evs = append(evs, event{o.Complete, true, i})
		}
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].t != evs[j].t {
			return evs[i].t < evs[j].t
		}
		if evs[i].complete != evs[j].complete {
			return !evs[i].complete // invocations first: a tie is not "before"
		}
		return evs[i].op < evs[j].op
	})
	frontier := map[int]bool{}
	preds := map[int][]int{}
	for _, ev := range evs {
		if !ev.complete {
			ps := make([]int, 0, len(frontier))
			for p := range frontier {
				ps = append(ps, p)
			}
			slices.Sort(ps)
			for _, p := range ps {
				es = append(es, edge{from: int32(p), to: int32(ev.op), rel: relRealtime})
			}
			if a.h[ev.op].Type == history.OK {
				preds[ev.op] = ps
			}
			continue
		}
		for _, p := range preds[ev.op] {
			delete(frontier, p)
		}
		delete(preds, ev.op)
		frontier[ev.op] = true
	}
	return es
}

// explain finds the edge u→v of kind rel.
func (g *graph) explain(u, v int32, rel uint8) Step {
	j := sort.Search(len(g.edges), func(j int) bool {
		e := &g.edges[j]
		if e.from != u {
			return e.from > u
		}
		if e.to != v {
			return e.to > v
		}
		return e.rel >= rel
	})
	s := Step{From: int(u), To: int(v), Rel: relName(rel)}
	if j < len(g.edges) {
		e := &g.edges[j]
		if e.from == u && e.to == v && e.rel == rel && (rel == relWW || rel == relWR) {
			s.Key, s.Value, s.Value2 = e.key, e.v1, e.v2
		}
	}
	return s
}

// sccs returns the strongly connected components, with more than one node,
// of the subgraph of roots (nil: every node) over edges whose mask meets
// allowed (Tarjan's algorithm, iterative so that long chains cannot
// overflow). keep, when not nil, must be true exactly for the roots. Each
// component's nodes are increasing; components by their first node. Scratch
// arrays are reused across calls and reset on the nodes visited, so that
// searching many small components costs their size, not the history's.
func (g *graph) sccs(roots []int32, keep []bool, allowed uint8) [][]int32 {
	const unvisited = -1
	if g.index == nil {
		g.index = make([]int32, g.n)
		g.low = make([]int32, g.n)
		g.onStack = make([]bool, g.n)
		for i := range g.index {
			g.index[i] = unvisited
		}
	}
	index, low, onStack := g.index, g.low, g.onStack
	var visited, stack []int32
	type frame struct{ u, next int32 }
	var call []frame
	var out [][]int32
	next := int32(0)
	visit := func(root int32) {
		if index[root] != unvisited || g.start[root] == g.start[root+1] {
			return
		}
		call = append(call[:0], frame{root, g.start[root]})
		index[root], low[root] = next, next
		next++
		visited = append(visited, root)
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			u := f.u
			if f.next < g.start[u+1] {
				j := f.next
				f.next++
				v := g.succ[j]
				if g.mask[j]&allowed == 0 || (keep != nil && !keep[v]) {
					continue
				}
				if index[v] == unvisited {
					index[v], low[v] = next, next
					next++
					visited = append(visited, v)
					stack = append(stack, v)
					onStack[v] = true
					call = append(call, frame{v, g.start[v]})
				} else if onStack[v] && index[v] < low[u] {
					low[u] = index[v]
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				if p := call[len(call)-1].u; low[u] < low[p] {
					low[p] = low[u]
				}
			}
			if low[u] == index[u] {
				var comp []int32
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp = append(comp, w)
					if w == u {
						break
					}
				}
				if len(comp) > 1 {
					slices.Sort(comp)
					out = append(out, comp)
				}
			}
		}
	}
	if roots == nil {
		for u := int32(0); u < int32(g.n); u++ {
			visit(u)
		}
	} else {
		for _, u := range roots {
			visit(u)
		}
	}
	for _, u := range visited {
		index[u] = unvisited
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// cycleSpec is a cycle class to look for: edges of allowed kinds, at least
// one of each required kind.
type cycleSpec struct {
	class    Class
	allowed  uint8
	required []uint8
	// implies are the classes a cycle of this class makes redundant to
	// look for in the same component (Elle's implied anomalies).
	implies []Class
}

func cycleSpecs(wwDeps bool) []cycleSpec {
	g1c := relWR
	if wwDeps {
		g1c |= relWW
	}
	specs := []cycleSpec{
		{G0, relWW, []uint8{relWW}, []Class{G0Process, G0Realtime}},
		{G0Process, relWW | relProcess, []uint8{relProcess}, []Class{G0Realtime}},
		{G1c, g1c, []uint8{relWR}, []Class{G1cProcess, G1cRealtime}},
		{G0Realtime, relWW | relRealtime, []uint8{relRealtime}, nil},
		{G1cProcess, g1c | relProcess, []uint8{relWR, relProcess}, []Class{G1cRealtime}},
		{G1cRealtime, g1c | relRealtime, []uint8{relWR, relRealtime}, nil},
	}
	if wwDeps { // G1c then includes ww cycles, so a G0 is also a G1c
		specs[0].implies = append(specs[0].implies, G1c, G1cProcess, G1cRealtime)
		specs[1].implies = append(specs[1].implies, G1cProcess, G1cRealtime)
		specs[3].implies = append(specs[3].implies, G1cRealtime)
	}
	return specs
}

// cycles finds the graph's components and, in each, one cycle of each class
// not implied by a worse one already found there.
func (a *analysis) cycles(stats *Stats) {
	g := a.buildGraph()
	comps := g.sccs(nil, nil, 0xff)
	stats.SCCs = len(comps)
	specs := cycleSpecs(a.opts.WWDeps)
	keep := make([]bool, g.n)
	for _, comp := range comps {
		if len(comp) > stats.LargestSCC {
			stats.LargestSCC = len(comp)
		}
		for _, u := range comp {
			keep[u] = true
		}
		s := &search{g: g, comp: comp, keep: keep, deadline: time.Now().Add(a.opts.CycleSearchTimeout)}
		skip := map[Class]bool{}
		for _, spec := range specs {
			if skip[spec.class] {
				continue
			}
			steps, ok := s.find(spec)
			if !ok {
				ops := make([]int, 0, 10)
				for _, u := range comp[:min(10, len(comp))] {
					ops = append(ops, int(u))
				}
				a.report(CycleSearchTimeout, Anomaly{Ops: ops, Count: len(comp)})
				break
			}
			if steps == nil {
				continue
			}
			// Start the cycle at its smallest op, so that reports are stable.
			low := 0
			for j, st := range steps {
				if st.From < steps[low].From {
					low = j
				}
			}
			steps = slices.Concat(steps[low:], steps[:low])
			ops := make([]int, len(steps))
			for j, st := range steps {
				ops[j] = st.From
			}
			a.report(spec.class, Anomaly{Ops: ops, Steps: steps})
			for _, c := range spec.implies {
				skip[c] = true
			}
		}
		for _, u := range comp {
			keep[u] = false
		}
	}
}

// search looks for cycles of a spec inside one component (the nodes in
// keep), until its deadline.
type search struct {
	g        *graph
	comp     []int32
	keep     []bool
	deadline time.Time
	work     int
}

// timedOut is checked every so often; the clock is the only impure input.
func (s *search) timedOut() bool {
	s.work++
	return s.work%512 == 0 && time.Now().After(s.deadline)
}

// find returns a cycle of the spec as steps, nil if there is none, and ok
// false if the deadline passed first. It tries each edge of the first
// required kind lying inside a component of the spec's subgraph, and
// searches breadth first from its head back to its tail over states (node,
// required kinds met so far), so that the cycle found is a shortest one
// through that edge.
func (s *search) find(spec cycleSpec) (steps []Step, ok bool) {
	g := s.g
	sub := g.sccs(s.comp, s.keep, spec.allowed)
	if len(sub) == 0 {
		return nil, true
	}
	comp := make(map[int32]int)
	for ci, c := range sub {
		for _, u := range c {
			comp[u] = ci
		}
	}
	reqBit := func(rel uint8) int {
		for j, r := range spec.required {
			if r == rel {
				return 1 << j
			}
		}
		return 0
	}
	full := 1<<len(spec.required) - 1
	first := spec.required[0]
	type state struct {
		u    int32
		mask int
	}
	type parent struct {
		prev state
		rel  uint8
	}
	for _, c := range sub {
		for _, u := range c {
			for j := g.start[u]; j < g.start[u+1]; j++ {
				v := g.succ[j]
				if g.mask[j]&first == 0 {
					continue
				}
				if cv, in := comp[v]; !in || cv != comp[u] {
					continue
				}
				// Breadth-first from v back to u.
				start := state{v, reqBit(first)}
				if v == u && start.mask == full {
					return []Step{g.explain(u, v, first)}, true
				}
				seen := map[state]parent{start: {}}
				queue := []state{start}
				var goal *state
				for len(queue) > 0 && goal == nil {
					if s.timedOut() {
						return nil, false
					}
					x := queue[0]
					queue = queue[1:]
					for k := g.start[x.u]; k < g.start[x.u+1] && goal == nil; k++ {
						y := g.succ[k]
						if cy, in := comp[y]; !in || cy != comp[u] {
							continue
						}
						for m := g.mask[k] & spec.allowed; m != 0; m &= m - 1 {
							rel := m & -m
							ns := state{y, x.mask | reqBit(rel)}
							if _, dup := seen[ns]; dup {
								continue
							}
							if y == u && ns.mask != full {
								continue // a cycle through u must close at u
							}
							seen[ns] = parent{x, rel}
							if y == u {
								goal = &ns
								break
							}
							queue = append(queue, ns)
						}
					}
				}
				if goal == nil {
					continue
				}
				var rev []Step
				for st := *goal; st != start; {
					p := seen[st]
					rev = append(rev, g.explain(p.prev.u, st.u, p.rel))
					st = p.prev
				}
				steps = append(steps, g.explain(u, v, first))
				for k := len(rev) - 1; k >= 0; k-- {
					steps = append(steps, rev[k])
				}
				return steps, true
			}
		}
	}
	return nil, true
}
