package checker

import (
	"cmp"
	"slices"
	"sort"

	"floe/proof/history"
)

// Lag is how far behind one poll of a key was, as Jepsen's realtime-lag
// measures it: a conservative (lower) bound on how long the log had already
// held a record past the last one the poll returned.
type Lag struct {
	Op      int         `json:"op"`
	Process int         `json:"process"`
	Key     history.Key `json:"key"`
	// Time is the poll's invocation; Lag is in nanoseconds (0 when the poll
	// was provably caught up).
	Time int64 `json:"time"`
	Lag  int64 `json:"lag"`
}

// RealtimeLags returns, for every ok poll or txn op, the lag of each key its
// process holds a position on, in history order. Offset o is known to exist
// from the earliest completion of an ok op that sent or polled o or a higher
// offset of the same key; an op invoked at t by a process whose position on a
// key is o lags by t minus the time offset o+1 was known, when that is
// earlier. Gaps left by transaction markers count as offsets, as in Jepsen.
func RealtimeLags(h history.History) []Lag {
	var out []Lag
	eachLag(h, func(l Lag) { out = append(out, l) })
	return out
}

// eachLag calls fn with each lag of RealtimeLags, in order, without keeping
// them: a check only needs the worst.
func eachLag(h history.History, fn func(Lag)) {
	// known[k] holds (offset, time) points, offsets decreasing, times
	// strictly decreasing: offset >= p.off was known from p.t.
	type point struct{ off, t int64 }
	raw := map[history.Key][]point{}
	maxOff := map[history.Key]int64{} // reused for each op
	for i := range h {
		o := &h[i]
		if o.Type != history.OK || !o.IsTxn() {
			continue
		}
		clear(maxOff)
		for _, m := range o.Mops {
			if m.F == history.MopSend && m.Offset != history.UnknownOffset {
				maxOff[m.Key] = max(maxOff[m.Key], m.Offset+1)
			}
			for k, ps := range m.Polls {
				for _, p := range ps {
					maxOff[k] = max(maxOff[k], p.Offset+1)
				}
			}
		}
		for k, n := range maxOff { // n = highest offset seen + 1; 0 means none
			if n > 0 {
				raw[k] = append(raw[k], point{n - 1, o.Complete})
			}
		}
	}
	known := map[history.Key][]point{}
	for k, ps := range raw {
		slices.SortFunc(ps, func(a, b point) int {
			if c := cmp.Compare(b.off, a.off); c != 0 {
				return c
			}
			return cmp.Compare(a.t, b.t)
		})
		var frontier []point
		for _, p := range ps {
			if len(frontier) == 0 || p.t < frontier[len(frontier)-1].t {
				frontier = append(frontier, p)
			}
		}
		known[k] = frontier
	}
	// since returns when offset off of k was first known to exist.
	since := func(k history.Key, off int64) (int64, bool) {
		f := known[k]
		// The last point (smallest time) whose offset still covers off.
		j := sort.Search(len(f), func(j int) bool { return f[j].off < off })
		if j == 0 {
			return 0, false
		}
		return f[j-1].t, true
	}
	// Each process's position per key: the highest offset its ops sent or
	// polled (-1: none yet), for the keys it has; an assign keeps the
	// positions of the keys it keeps and starts the others at -1, a
	// subscribe forgets them all (the group decides what comes).
	pos := map[int]map[history.Key]int64{}
	var ks []history.Key // reused for each op
	for i := range h {
		o := &h[i]
		if o.Type != history.OK {
			continue
		}
		switch o.F {
		case history.Assign:
			next := map[history.Key]int64{}
			for _, k := range o.Keys {
				next[k] = -1
				if off, ok := pos[o.Process][k]; ok {
					next[k] = off
				}
			}
			pos[o.Process] = next
			continue
		case history.Subscribe:
			pos[o.Process] = map[history.Key]int64{}
			continue
		case history.Poll, history.Txn:
		default:
			continue
		}
		p := pos[o.Process]
		if p == nil {
			p = map[history.Key]int64{}
			pos[o.Process] = p
		}
		for _, m := range o.Mops {
			switch m.F {
			case history.MopSend:
				if m.Offset != history.UnknownOffset {
					if cur, ok := p[m.Key]; !ok || m.Offset > cur {
						p[m.Key] = m.Offset
					}
				}
			case history.MopPoll:
				for k, ps := range m.Polls {
					if _, ok := p[k]; !ok {
						p[k] = -1
					}
					for _, pr := range ps {
						p[k] = max(p[k], pr.Offset)
					}
				}
			}
		}
		ks = ks[:0]
		for k := range p {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		for _, k := range ks {
			l := Lag{Op: i, Process: o.Process, Key: k, Time: o.Invoke}
			if t, ok := since(k, p[k]+1); ok && t < o.Invoke {
				l.Lag = o.Invoke - t
			}
			fn(l)
		}
	}
}
