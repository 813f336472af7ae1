package workload

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"floe/proof/history"
)

// targets are, per key, the highest offset an ok op sent or polled: what the
// final reader must read past before unseen values can be called lost.
func targets(h history.History) map[history.Key]int64 {
	t := map[history.Key]int64{}
	see := func(k history.Key, off int64) {
		if cur, ok := t[k]; !ok || off > cur {
			t[k] = off
		}
	}
	for i := range h {
		if h[i].Type != history.OK {
			continue
		}
		for _, m := range h[i].Mops {
			switch m.F {
			case history.MopSend:
				if m.Offset != history.UnknownOffset {
					see(m.Key, m.Offset)
				}
			case history.MopPoll:
				for k, ps := range m.Polls {
					for _, p := range ps {
						see(k, p.Offset)
					}
				}
			}
		}
	}
	return t
}

// finalPolls reads every key from its start with a fresh client, as Jepsen's
// final generator does, until each key's target is read or FinalTimeout
// passes. Each poll is an op of the history.
func (r *run) finalPolls(ctx context.Context) error {
	want := targets(r.rec.History())
	pid := r.nextProcess()
	parts := map[string]map[int32]kgo.Offset{}
	var all []history.Key
	for k := range r.keys.Count() {
		key := history.Key(k)
		all = append(all, key)
		t, p := r.keys.Partition(key)
		if parts[t] == nil {
			parts[t] = map[int32]kgo.Offset{}
		}
		parts[t][p] = kgo.NewOffset().AtStart()
	}
	inv := r.rec.Now()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(r.cfg.Brokers...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(parts),
	)
	if err != nil {
		return fmt.Errorf("final client: %w", err)
	}
	defer cl.Close()
	r.rec.Add(history.Op{Process: pid, Type: history.OK, F: history.Assign, Invoke: inv, Complete: r.rec.Now(), Keys: all, SeekToBeginning: true})

	w := &worker{run: r, pid: pid, cl: cl}
	deadline := time.Now().Add(r.cfg.FinalTimeout)
	for len(want) > 0 {
		if time.Now().After(deadline) {
			r.cfg.Logger.Warn("final polls gave up", "waiting_for", want)
			return nil
		}
		opCtx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
		o := history.Op{Process: pid, Type: history.OK, F: history.Poll, Invoke: r.rec.Now()}
		m, err := w.pollOnce(opCtx, func(ctx context.Context) kgo.Fetches { return cl.PollFetches(ctx) })
		cancel()
		o.Complete = r.rec.Now()
		o.Mops = []history.Mop{history.PollMop(m)}
		if err != nil {
			o.Type, o.Error = history.Info, err.Error()
			r.rec.Add(o)
			return fmt.Errorf("final poll: %w", err)
		}
		r.rec.Add(o)
		for k, ps := range m {
			if len(ps) > 0 && ps[len(ps)-1].Offset >= want[k] {
				delete(want, k)
			}
		}
	}
	return nil
}
