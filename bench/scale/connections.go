package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/bench"
	"floe/bench/harness"
)

// connections holds o.idleConns idle Kafka connections open on one agent
// (each has done an ApiVersions round trip, as every client does first),
// then runs o.producers producers, one client each, at 10 records/s each.
func (e *env) connections(ctx context.Context, store string, r *result) error {
	// --pprof: its heap profile endpoint collects garbage on request, so
	// that live heap per connection can be read apart from garbage.
	spec, err := e.spec(ctx, store, "--pprof")
	if err != nil {
		return err
	}
	p, err := startAgent(ctx, spec)
	if err != nil {
		return err
	}
	defer p.Stop()
	r.Command = p.command
	pid := p.Pid()
	cur, _ := rss(pid)
	r.add("agent RSS idle", float64(cur)/mib, "MiB")
	r.add("agent open fds idle", float64(harness.OpenFDs(pid)), "fds")
	live0, err := p.liveMemory(ctx)
	if err != nil {
		return err
	}

	// The idle connections, opened 50 at a time.
	conns := make([]*rawConn, e.opts.idleConns)
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	sem := make(chan struct{}, 50)
	start := time.Now()
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := dialRaw(p.kafka)
			if err == nil {
				req := kmsg.NewPtrApiVersionsRequest()
				req.Version = 3
				req.ClientSoftwareName, req.ClientSoftwareVersion = "floe-scale", "1"
				_, err = c.do(req, kmsg.NewPtrApiVersionsResponse())
				if err != nil {
					c.Close()
				}
			}
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	r.add(fmt.Sprintf("%d idle connections opened in", e.opts.idleConns), time.Since(start).Seconds(), "s")
	r.add("  of which failed", float64(failed.Load()), "connections")
	if err, ok := firstErr.Load().(string); ok {
		r.note("first connection failure: %s", err)
	}
	time.Sleep(2 * time.Second)
	before, _ := rss(pid)
	m, err := p.metrics(ctx)
	if err != nil {
		return err
	}
	r.add("agent connections (floe_agent_connections)", m["floe_agent_connections"], "connections")
	r.add("agent RSS with the idle connections", float64(before)/mib, "MiB")
	if ok := e.opts.idleConns - int(failed.Load()); ok > 0 {
		r.add("  RSS per idle connection", float64(before-cur)/float64(ok)/1024, "KiB")
	}
	r.add("agent open fds with the idle connections", float64(harness.OpenFDs(pid)), "fds")
	r.add("  Go heap in use (go_memstats_heap_inuse_bytes)", m["go_memstats_heap_inuse_bytes"]/mib, "MiB")
	r.add("  goroutines (go_goroutines)", m["go_goroutines"], "goroutines")
	if ok := e.opts.idleConns - int(failed.Load()); ok > 0 {
		live1, err := p.liveMemory(ctx)
		if err != nil {
			return err
		}
		d := live1.Sub(live0)
		r.add("  live heap per idle connection (after a GC)", d["go_memstats_heap_alloc_bytes"]/float64(ok)/1024, "KiB")
		r.add("  goroutine stacks per idle connection", d["go_memstats_stack_inuse_bytes"]/float64(ok)/1024, "KiB")
	}

	// The producers.
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka))
	if err != nil {
		return err
	}
	defer cl.Close()
	const topic = "scale-connections"
	if res, err := kadm.NewClient(cl).CreateTopic(ctx, 64, 1, nil, topic); err != nil || res.Err != nil {
		return fmt.Errorf("create topic: %v %v", err, res.Err)
	}
	producers := make([]*kgo.Client, e.opts.producers)
	for i := range producers {
		if producers[i], err = kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.DefaultProduceTopic(topic),
			kgo.ProducerLinger(0), kgo.ClientID(fmt.Sprintf("scale-producer-%d", i))); err != nil {
			return err
		}
		defer producers[i].Close()
	}
	lat := bench.NewHistogram()
	var errs atomic.Int64
	var sampleMu sync.Mutex
	var peakFDs int
	var peakRSS int64
	warmup := 5 * time.Second
	sendStart := time.Now()
	measureFrom := sendStart.Add(warmup)
	end := measureFrom.Add(e.opts.produceFor)
	var cpu0, gen0 float64
	done := make(chan struct{})
	go func() { // samples RSS and fds while the producers send
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				c, _ := rss(pid)
				f := harness.OpenFDs(pid)
				sampleMu.Lock()
				peakRSS, peakFDs = max(peakRSS, c), max(peakFDs, f)
				sampleMu.Unlock()
			}
		}
	}()
	go func() {
		time.Sleep(time.Until(measureFrom))
		cpu0, gen0 = cpuSeconds(pid), bench.ProcessCPUSeconds()
	}()
	value := make([]byte, 1024)
	var sent atomic.Int64
	var pwg sync.WaitGroup
	for i, pc := range producers {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			// Spread the producers' ticks over the first 100 ms.
			time.Sleep(time.Duration(i) * 100 * time.Millisecond / time.Duration(len(producers)))
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for now := range t.C {
				if now.After(end) {
					break
				}
				sent.Add(1)
				pc.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						errs.Add(1)
						return
					}
					if now.After(measureFrom) {
						lat.Record(time.Since(now))
					}
				})
			}
			pc.Flush(ctx)
		}()
	}
	pwg.Wait()
	close(done)
	cpu := cpuSeconds(pid) - cpu0
	gen := bench.ProcessCPUSeconds() - gen0
	m, err = p.metrics(ctx)
	if err != nil {
		return err
	}
	s := lat.Summary()
	r.add(fmt.Sprintf("%d producers × 10 records/s of 1 KiB, acks=all, for", e.opts.producers), e.opts.produceFor.Seconds(), "s")
	r.add("  records acknowledged (after the warm-up)", float64(s.Count), "records")
	r.add("  produce errors", float64(errs.Load()), "records")
	r.add("  produce p50", s.P50, "ms")
	r.add("  produce p99", s.P99, "ms")
	r.add("  produce max", s.Max, "ms")
	r.add("  agent connections during the load", m["floe_agent_connections"], "connections")
	r.add("  agent peak RSS during the load (sampled)", float64(peakRSS)/mib, "MiB")
	r.add("  agent peak open fds during the load (sampled)", float64(peakFDs), "fds")
	r.add("  agent CPU over the measured span", cpu, "CPU-s")
	r.add("  load generator CPU over the measured span", gen, "CPU-s")
	_, hwm := rss(pid)
	r.add("agent peak RSS (VmHWM)", float64(hwm)/mib, "MiB")
	return nil
}
