package main

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"floe/bench"
	"floe/storage"
	"floe/storage/s3"
)

const (
	oldTopic      = "scale-old"
	oldPartitions = 16
	oldRecordSize = 1024
)

// oldReads produces o.oldBytes to a topic in MinIO, then reads it back
// from agents started cold (an empty read cache): o.readers consumers on
// different old offset ranges at once, then one consumer catching up on
// the whole topic, then raw ranged GETs of the agent's range size. With
// o.readers 0 only the catch-up and the raw GETs run.
func (e *env) oldReads(ctx context.Context, store string, r *result) error {
	total := e.opts.oldBytes
	if free := freeDiskBytes(e.tmp); free >= 0 && free-total < e.opts.minFreeDisk {
		r.note("%.1f GB free on disk: producing %.1f GB instead of %.1f GB", float64(free)/1e9,
			float64(e.opts.fallbackBytes)/1e9, float64(total)/1e9)
		total = e.opts.fallbackBytes
	}
	spec, err := e.spec(ctx, store, e.opts.oldFlags...)
	if err != nil {
		return err
	}
	// Whatever happens, the bucket's objects go: others share the disk.
	bucket, err := openS3(ctx, spec.bucket)
	if err != nil {
		return err
	}
	defer emptyBucket(bucket, r)

	perPartition := total / oldRecordSize / oldPartitions
	if err := e.fill(ctx, spec, r, perPartition); err != nil {
		return err
	}
	if e.opts.readers > 0 {
		if err := e.readRanges(ctx, spec, r, perPartition); err != nil {
			return err
		}
	}
	rangeSize, err := e.catchUp(ctx, spec, r, perPartition)
	if err != nil {
		return err
	}
	return e.rawGets(ctx, bucket, r, rangeSize)
}

// fill produces perPartition records of oldRecordSize bytes to each
// partition of oldTopic.
func (e *env) fill(ctx context.Context, spec agentSpec, r *result, perPartition int64) error {
	p, err := startAgent(ctx, spec)
	if err != nil {
		return err
	}
	defer p.Stop()
	r.Command = p.command
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.DefaultProduceTopic(oldTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedBytes(256<<20),
		// Random values, uncompressed: the bytes in MinIO are the bytes produced.
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return err
	}
	defer cl.Close()
	if res, err := kadm.NewClient(cl).CreateTopic(ctx, oldPartitions, 1, nil, oldTopic); err != nil || res.Err != nil {
		return fmt.Errorf("create topic: %v %v", err, res.Err)
	}
	value := make([]byte, oldRecordSize)
	crand.Read(value)
	var failed atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	cpu0 := cpuSeconds(p.Pid())
	for i := range perPartition {
		for part := range oldPartitions {
			cl.Produce(ctx, &kgo.Record{Partition: int32(part), Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			})
		}
		if i%(perPartition/20+1) == 0 {
			fmt.Fprintf(os.Stderr, "\r  producing: %3d%%", i*100/perPartition)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr)
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d records failed: %v", n, firstErr.Load())
	}
	secs := time.Since(start).Seconds()
	bytes := float64(perPartition * oldPartitions * oldRecordSize)
	r.add(fmt.Sprintf("produced %d × %d partitions × 1 KiB records", perPartition, oldPartitions), bytes/1e9, "GB")
	r.add("  produce throughput (one client)", bytes/1e6/secs, "MB/s")
	r.add("  agent CPU per GB produced", (cpuSeconds(p.Pid())-cpu0)/(bytes/1e9), "CPU-s/GB")
	return nil
}

// readRanges runs o.readers consumers at once, consumer i on partition
// i%16 from an offset of its own, each reading o.readerBytes, from a cold
// agent.
func (e *env) readRanges(ctx context.Context, spec agentSpec, r *result, perPartition int64) error {
	p, err := startAgent(ctx, spec)
	if err != nil {
		return err
	}
	defer p.Stop()
	records := e.opts.readerBytes / oldRecordSize
	slots := int64((e.opts.readers + oldPartitions - 1) / oldPartitions)
	stride := perPartition / slots
	if stride < records {
		return fmt.Errorf("%d readers of %d records do not fit in %d records per partition", e.opts.readers, records, perPartition)
	}
	m0, err := p.metrics(ctx)
	if err != nil {
		return err
	}
	cpu0 := cpuSeconds(p.Pid())
	lat := bench.NewHistogram() // time to each consumer's first record
	var wg sync.WaitGroup
	errs := make(chan error, e.opts.readers)
	start := time.Now()
	for i := range e.opts.readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			part := int32(i % oldPartitions)
			from := int64(i/oldPartitions) * stride
			errs <- consumeRange(ctx, p.kafka, part, from, from+records, lat)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	secs := time.Since(start).Seconds()
	m1, err := p.metrics(ctx)
	if err != nil {
		return err
	}
	d := m1.Sub(m0)
	read := d["floe_agent_fetched_bytes_total"]
	gets := d[`floe_storage_requests_total{op="get"}`]
	getBytes := d[`floe_storage_bytes_total{op="get"}`]
	r.add(fmt.Sprintf("%d consumers × %d records, each its own old range", e.opts.readers, records), read/1e9, "GB fetched")
	r.add("  wall time", secs, "s")
	r.add("  aggregate MB/s", read/1e6/secs, "MB/s")
	r.add("  time to first record p50", lat.Summary().P50, "ms")
	r.add("  time to first record p99", lat.Summary().P99, "ms")
	r.add("  object-store GETs", gets, "GETs")
	r.add("  GETs per GB fetched", gets/(read/1e9), "GETs/GB")
	r.add("  bytes per GET", getBytes/max(gets, 1)/1024, "KiB")
	r.add("  GET bytes / fetched bytes", getBytes/max(read, 1), "×")
	cacheFigures(r, d)
	r.add("  agent CPU per GB fetched", (cpuSeconds(p.Pid())-cpu0)/(read/1e9), "CPU-s/GB")
	_, peak := rss(p.Pid())
	r.add("  agent peak RSS (VmHWM)", float64(peak)/mib, "MiB")
	return nil
}

// cacheFigures reports the read cache's hit rate from the agent's
// counters, when it exports them.
func cacheFigures(r *result, d bench.Sample) {
	hits, ok1 := d["floe_agent_read_cache_hits_total"]
	misses, ok2 := d["floe_agent_read_cache_misses_total"]
	if !ok1 || !ok2 {
		r.note("the agent exports no read-cache hit and miss counters")
		return
	}
	r.add("  read-cache hits", hits, "ranges")
	r.add("  read-cache misses", misses, "ranges")
	if hits+misses > 0 {
		r.add("  read-cache hit rate", hits/(hits+misses)*100, "%")
	}
	// Read-ahead (agent/readahead.go), when the agent has it.
	if gets, ok := d["floe_agent_read_ahead_gets_total"]; ok {
		r.add("  read-ahead GETs", gets, "GETs")
		r.add("  read-ahead bytes", d["floe_agent_read_ahead_bytes_total"]/1e6, "MB")
		r.add("  read-ahead hits (fetches served by read-ahead data)", d["floe_agent_read_ahead_hits_total"], "ranges")
	}
}

// consumeRange reads offsets [from, to) of one partition of oldTopic with
// a client of its own, and records the time to its first record.
func consumeRange(ctx context.Context, broker string, part int32, from, to int64, firstLat *bench.Histogram) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		oldTopic: {part: kgo.NewOffset().At(from)}}))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	start := time.Now()
	next := from
	for next < to {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return fmt.Errorf("partition %d at %d: %w", part, next, err)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if next == from {
				firstLat.Record(time.Since(start))
			}
			if rec.Offset >= next {
				next = rec.Offset + 1
			}
		})
	}
	return nil
}

// catchUp reads the whole topic with one consumer from a cold agent, and
// returns the agent's mean GET size for the raw GET baseline.
func (e *env) catchUp(ctx context.Context, spec agentSpec, r *result, perPartition int64) (int64, error) {
	p, err := startAgent(ctx, spec)
	if err != nil {
		return 0, err
	}
	defer p.Stop()
	offsets := map[int32]kgo.Offset{}
	for part := range oldPartitions {
		offsets[int32(part)] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{oldTopic: offsets}))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	m0, err := p.metrics(ctx)
	if err != nil {
		return 0, err
	}
	cpu0, gen0 := cpuSeconds(p.Pid()), bench.ProcessCPUSeconds()
	want := perPartition * oldPartitions
	var got, valueBytes int64
	start := time.Now()
	for got < want {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return 0, fmt.Errorf("catch-up after %d records: %w", got, err)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			got++
			valueBytes += int64(len(rec.Value))
		})
		if got%(want/20+1) < 2000 {
			fmt.Fprintf(os.Stderr, "\r  catching up: %3d%%", got*100/want)
		}
	}
	fmt.Fprintln(os.Stderr)
	secs := time.Since(start).Seconds()
	m1, err := p.metrics(ctx)
	if err != nil {
		return 0, err
	}
	d := m1.Sub(m0)
	read := d["floe_agent_fetched_bytes_total"]
	gets := d[`floe_storage_requests_total{op="get"}`]
	getBytes := d[`floe_storage_bytes_total{op="get"}`]
	r.add("catch-up: one consumer, all partitions from the start, cold agent", read/1e9, "GB fetched")
	r.add("  wall time", secs, "s")
	r.add("  consumer MB/s (record batch bytes)", read/1e6/secs, "MB/s")
	r.add("  consumer MB/s (record values)", float64(valueBytes)/1e6/secs, "MB/s")
	r.add("  object-store GETs", gets, "GETs")
	r.add("  GETs per GB fetched", gets/(read/1e9), "GETs/GB")
	r.add("  bytes per GET", getBytes/max(gets, 1)/1024, "KiB")
	r.add("  GET MB/s", getBytes/1e6/secs, "MB/s")
	cacheFigures(r, d)
	r.add("  agent CPU per GB fetched", (cpuSeconds(p.Pid())-cpu0)/(read/1e9), "CPU-s/GB")
	r.add("  consumer CPU per GB fetched", (bench.ProcessCPUSeconds()-gen0)/(read/1e9), "CPU-s/GB")
	_, peak := rss(p.Pid())
	r.add("  agent peak RSS (VmHWM)", float64(peak)/mib, "MiB")
	if gets == 0 {
		return 0, fmt.Errorf("catch-up made no GETs")
	}
	return int64(getBytes / gets), nil
}

// rawGets reads random ranges of size bytes from the bucket's objects,
// back to back, from 1, 4 and 16 workers: what MinIO gives a client that
// does nothing but GET at the agent's range size.
func (e *env) rawGets(ctx context.Context, b storage.Bucket, r *result, size int64) error {
	type obj struct {
		key  string
		size int64
	}
	var objs []obj
	if err := b.List(ctx, "", func(o storage.ObjectInfo) error {
		if o.Size >= size {
			objs = append(objs, obj{o.Key, o.Size})
		}
		return nil
	}); err != nil {
		return err
	}
	if len(objs) == 0 {
		return fmt.Errorf("no object of %d bytes or more to GET", size)
	}
	r.add("raw GET baseline: range size (the agent's mean)", float64(size)/1024, "KiB")
	for _, workers := range []int{1, 4, 16} {
		var n, bytes atomic.Int64
		lat := bench.NewHistogram()
		cpu0 := bench.ProcessCPUSeconds()
		start := time.Now()
		end := start.Add(e.opts.rawGetFor)
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 1))
				for time.Now().Before(end) {
					o := objs[rng.IntN(len(objs))]
					off := rng.Int64N(o.size - size + 1)
					t := time.Now()
					data, err := b.GetRange(ctx, o.key, off, size)
					if err != nil {
						errs <- err
						return
					}
					lat.Record(time.Since(t))
					n.Add(1)
					bytes.Add(int64(len(data)))
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return fmt.Errorf("raw get: %w", err)
		}
		secs := time.Since(start).Seconds()
		r.add(fmt.Sprintf("  raw GETs, %2d concurrent", workers), float64(bytes.Load())/1e6/secs, "MB/s")
		r.add(fmt.Sprintf("    GETs/s, %2d concurrent", workers), float64(n.Load())/secs, "GETs/s")
		r.add(fmt.Sprintf("    GET p50, %2d concurrent", workers), lat.Summary().P50, "ms")
		r.add(fmt.Sprintf("    client CPU per GB, %2d concurrent", workers), (bench.ProcessCPUSeconds()-cpu0)/(float64(bytes.Load())/1e9), "CPU-s/GB")
	}
	return nil
}

func openS3(ctx context.Context, url string) (storage.Bucket, error) {
	cfg, err := s3.ParseURL(url)
	if err != nil {
		return nil, err
	}
	return s3.New(ctx, cfg)
}

// emptyBucket deletes every object of b, so that the run leaves the disk
// as it found it.
func emptyBucket(b storage.Bucket, r *result) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var keys []string
	_ = b.List(ctx, "", func(o storage.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	})
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	var failed atomic.Int64
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if b.Delete(ctx, k) != nil {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	r.note("deleted %d objects after the run (%d deletes failed)", len(keys)-int(failed.Load()), failed.Load())
}
