package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata/storeurl"
)

// partitions measures a topic of o.partitions partitions: creating it,
// describing it, and one produce request touching o.flushParts of them.
func (e *env) partitions(ctx context.Context, store string, r *result) error {
	spec, err := e.spec(ctx, store)
	if err != nil {
		return err
	}
	p, err := startAgent(ctx, spec)
	if err != nil {
		return err
	}
	defer p.Stop()
	r.Command = p.command
	cur, _ := rss(p.Pid())
	r.add("agent RSS idle", float64(cur)/mib, "MiB")

	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const topic = "scale-partitions"
	adm.SetTimeoutMillis(120_000)
	start := time.Now()
	cpu0 := cpuSeconds(p.Pid())
	created, err := adm.CreateTopic(ctx, int32(e.opts.partitions), 1, nil, topic)
	if err == nil {
		err = created.Err
	}
	if err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	r.add(fmt.Sprintf("CreateTopics, %d partitions", e.opts.partitions), time.Since(start).Seconds(), "s")
	r.add("  agent CPU for it", cpuSeconds(p.Pid())-cpu0, "CPU-s")
	cur, _ = rss(p.Pid())
	r.add("agent RSS after create", float64(cur)/mib, "MiB")

	// Metadata of the one topic, at v12, over a raw connection: the answer's
	// exact size, and its time from request to the last byte.
	rc, err := dialRaw(p.kafka)
	if err != nil {
		return err
	}
	defer rc.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	var times []time.Duration
	var size int
	cpu0 = cpuSeconds(p.Pid())
	const rounds = 20
	for i := range rounds + 1 {
		resp := kmsg.NewPtrMetadataResponse()
		t := time.Now()
		n, err := rc.do(req, resp)
		if err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		d := time.Since(t)
		if len(resp.Topics) != 1 {
			return fmt.Errorf("metadata: %d topics, want 1", len(resp.Topics))
		}
		if mt := resp.Topics[0]; mt.ErrorCode != 0 || len(mt.Partitions) != e.opts.partitions {
			return fmt.Errorf("metadata: %d partitions, error %v", len(mt.Partitions), kerr.ErrorForCode(mt.ErrorCode))
		}
		if i > 0 { // the first warms the agent's topic cache
			times = append(times, d)
		}
		size = n
	}
	cpuMeta := cpuSeconds(p.Pid()) - cpu0
	slices.Sort(times)
	r.add("Metadata v12 response size", float64(size)/1024, "KiB")
	r.add(fmt.Sprintf("Metadata v12 time p50 (of %d)", rounds), float64(times[len(times)/2].Microseconds())/1e3, "ms")
	r.add(fmt.Sprintf("Metadata v12 time max (of %d)", rounds), float64(times[len(times)-1].Microseconds())/1e3, "ms")
	r.add("  agent CPU per Metadata", cpuMeta/(rounds+1)*1e3, "CPU-ms")

	// kadm's view of the same: what a client library pays to describe it.
	start = time.Now()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return fmt.Errorf("kadm metadata: %w", err)
	}
	r.add("kadm Metadata time (client decode included)", float64(time.Since(start).Microseconds())/1e3, "ms")
	if n := len(md.Topics[topic].Partitions); n != e.opts.partitions {
		return fmt.Errorf("kadm metadata: %d partitions, want %d", n, e.opts.partitions)
	}

	// One produce request with one batch for each of o.flushParts
	// partitions; the agent should put them into one object and one commit.
	prod, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ManualFlushing(), kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(e.opts.flushParts*2))
	if err != nil {
		return err
	}
	defer prod.Close()
	// A first record: the producer id and the metadata come before the
	// measured requests.
	var warmErr error
	prod.Produce(ctx, &kgo.Record{Partition: 0, Value: []byte("warm")}, func(_ *kgo.Record, err error) { warmErr = err })
	if err := prod.Flush(ctx); err != nil || warmErr != nil {
		return fmt.Errorf("warm-up produce: %v %v", err, warmErr)
	}
	db, _, err := storeurl.OpenSQL(spec.metaURL())
	if err != nil {
		return err
	}
	defer db.Close()
	countRows := func() (int64, error) {
		var n int64
		err := db.QueryRowContext(ctx, "SELECT count(*) FROM object_index").Scan(&n)
		return n, err
	}
	rows0, err := countRows()
	if err != nil {
		return fmt.Errorf("count index rows: %w", err)
	}
	m0, err := p.metrics(ctx)
	if err != nil {
		return err
	}
	const requests = 5
	value := make([]byte, 100)
	for range requests {
		for part := range e.opts.flushParts {
			prod.Produce(ctx, &kgo.Record{Partition: int32(part), Value: value}, nil)
		}
		if err := prod.Flush(ctx); err != nil {
			return err
		}
	}
	m1, err := p.metrics(ctx)
	if err != nil {
		return err
	}
	rows1, err := countRows()
	if err != nil {
		return err
	}
	d := m1.Sub(m0)
	produces := d[`floe_agent_request_duration_seconds_count{api_key="0"}`]
	puts := d[`floe_storage_requests_total{op="put"}`]
	commits := d[`floe_agent_metadata_commit_duration_seconds_count`]
	flushes := d[`floe_agent_flushes_total`]
	r.add(fmt.Sprintf("produce requests of %d partitions each", e.opts.flushParts), produces, "requests")
	r.add("  PUTs per produce request", puts/produces, "PUTs")
	r.add("  metadata commits per produce request", commits/produces, "commits")
	r.add("  flushes per produce request", flushes/produces, "flushes")
	if flushes > 0 {
		r.add("  index rows per flush", float64(rows1-rows0)/flushes, "rows")
	}
	if c := d[`floe_agent_metadata_commit_duration_seconds_sum`]; commits > 0 {
		r.add("  metadata commit time, mean", c/commits*1e3, "ms")
	}
	cur, peak := rss(p.Pid())
	r.add("agent RSS at the end", float64(cur)/mib, "MiB")
	r.add("agent peak RSS (VmHWM)", float64(peak)/mib, "MiB")
	return nil
}
