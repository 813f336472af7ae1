package checker

import (
	"fmt"
	"time"

	"floe/proof/history"
)

// Check judges h. It returns an error (wrapping history.ErrInvalid) only when
// h is not a history Validate accepts.
func Check(h history.History, opts Options) (Result, error) {
	if err := h.Validate(); err != nil {
		return Result{}, fmt.Errorf("check: %w", err)
	}
	if opts.MaxAnomalies <= 0 {
		opts.MaxAnomalies = 1000
	}
	if opts.CycleSearchTimeout <= 0 {
		opts.CycleSearchTimeout = time.Second
	}
	a := newAnalysis(h, opts)
	stats := a.stats()
	a.g1a()
	a.precommittedRead()
	a.noWriter()
	a.lostWrite()
	a.internal()
	a.external()
	a.unseen(&stats)
	a.cycles(&stats)
	var worst Lag
	polls := false
	eachLag(h, func(l Lag) {
		if !polls || l.Lag > worst.Lag {
			worst, polls = l, true
		}
	})
	if polls {
		stats.WorstRealtimeLag = &worst
	}

	allowed := AllowedClasses(h, opts)
	isAllowed := map[Class]bool{}
	for _, c := range allowed {
		isAllowed[c] = true
	}
	r := Result{
		Found:     []Class{},
		Bad:       []Class{},
		Allowed:   allowed,
		Counts:    a.counts,
		Anomalies: a.anomalies,
		Stats:     stats,
	}
	for _, c := range Classes {
		if a.counts[c] == 0 {
			continue
		}
		r.Found = append(r.Found, c)
		if !isAllowed[c] {
			r.Bad = append(r.Bad, c)
		}
	}
	r.Valid = len(r.Bad) == 0
	return r, nil
}

func (a *analysis) stats() Stats {
	s := Stats{
		Ops:       len(a.h),
		OpsByType: map[history.Type]int{},
		OpsByF:    map[history.F]int{},
		MaxOffset: map[history.Key]int64{},
	}
	for i := range a.h {
		s.OpsByType[a.h[i].Type]++
		s.OpsByF[a.h[i].F]++
	}
	for _, k := range a.keys {
		ord := a.orders[k]
		s.MaxOffset[k] = ord.offsets[len(ord.offsets)-1]
	}
	return s
}
