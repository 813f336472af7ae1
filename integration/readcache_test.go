package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The records of the read cache test: value = partition (4 bytes), index
// in the partition (8), CRC32C of the rest (4), then filler derived from
// the first two. One producer per partition in order, so a record's index
// is its offset; a reader checks all of it without keeping what was sent.
const rcHeader = 16

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func rcValue(p int32, i int64, size int) []byte {
	v := make([]byte, size)
	binary.BigEndian.PutUint32(v, uint32(p))
	binary.BigEndian.PutUint64(v[4:], uint64(i))
	w := uint64(p)<<40 ^ uint64(i)*0x9e3779b97f4a7c15
	for j := rcHeader; j+8 <= size; j += 8 {
		w ^= w << 13
		w ^= w >> 7
		w ^= w << 17
		binary.LittleEndian.PutUint64(v[j:], w)
	}
	binary.BigEndian.PutUint32(v[12:], crc32.Checksum(v[rcHeader:], castagnoli))
	return v
}

func rcCheck(r *kgo.Record, size int) error {
	v := r.Value
	switch {
	case len(v) != size:
		return fmt.Errorf("%d/%d: value of %d bytes, want %d", r.Partition, r.Offset, len(v), size)
	case int32(binary.BigEndian.Uint32(v)) != r.Partition || int64(binary.BigEndian.Uint64(v[4:])) != r.Offset:
		return fmt.Errorf("%d/%d: record of %d/%d", r.Partition, r.Offset, binary.BigEndian.Uint32(v), binary.BigEndian.Uint64(v[4:]))
	case binary.BigEndian.Uint32(v[12:]) != crc32.Checksum(v[rcHeader:], castagnoli):
		return fmt.Errorf("%d/%d: value corrupt", r.Partition, r.Offset)
	}
	return nil
}

// rcProduce writes perPartition records of size bytes to every partition.
func rcProduce(t *testing.T, ctx context.Context, seeds []string, topic string, partitions int32, perPartition int64, size int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(1<<20),
		kgo.MaxBufferedBytes(128<<20), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for i := range perPartition {
		for p := range partitions {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: rcValue(p, i, size)}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.CompareAndSwap(nil, &err)
				}
				wg.Done()
			})
		}
		if e := failed.Load(); e != nil {
			break
		}
	}
	wg.Wait()
	if e := failed.Load(); e != nil {
		t.Fatalf("produce: %v", *e)
	}
}

// rcReader is one of the test's consumers: it reads every record of every
// partition once, checking each, and counts them.
type rcReader struct {
	name    string
	records atomic.Int64
	err     error
}

// readLeaders consumes topic from the start with a franz-go direct consumer
// seeded at seed: its fetches go where Metadata names each partition's
// leader, as any Kafka client's do. Errors reaching a killed agent are the
// client's to ride out; only what it consumes is checked.
func (r *rcReader) readLeaders(ctx context.Context, seeds []string, topic string, partitions int32, want int64, size int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.MetadataMinAge(250*time.Millisecond), kgo.RetryTimeout(time.Minute))
	if err != nil {
		r.err = err
		return
	}
	defer cl.Close()
	next := make([]int64, partitions)
	for r.records.Load() < want*int64(partitions) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			r.err = fmt.Errorf("%d of %d records before timeout", r.records.Load(), want*int64(partitions))
			return
		}
		var bad error
		fs.EachRecord(func(rec *kgo.Record) {
			if bad != nil {
				return
			}
			if rec.Offset != next[rec.Partition] {
				bad = fmt.Errorf("partition %d: offset %d, want %d", rec.Partition, rec.Offset, next[rec.Partition])
				return
			}
			if err := rcCheck(rec, size); err != nil {
				bad = err
				return
			}
			next[rec.Partition]++
			r.records.Add(1)
		})
		if bad != nil {
			r.err = bad
			return
		}
	}
}

// readPinned reads topic with Fetch requests sent to one agent, whatever
// leader Metadata names: what the zone's shared cache must make cheap (a
// partition fetched at several agents of a zone: clients with different
// zone hints, stale metadata after agents come and go). Any failed fetch
// or partition error from a live agent is the reader's error; when its
// agent is the one killed (dead reports it), it moves to the next live
// agent and carries on from where it was.
func (r *rcReader) readPinned(ctx context.Context, agents []*proc, at int, dead func(int) bool, topic string, partitions int32, want int64, size int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(agents[at].Addr))
	if err != nil {
		r.err = err
		return
	}
	defer cl.Close()
	// Node ids by Kafka address, from the Metadata of the agent we start at.
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil {
		r.err = err
		return
	}
	node := map[string]int32{}
	for _, b := range mresp.Brokers {
		node[b.Host+":"+strconv.Itoa(int(b.Port))] = b.NodeID
	}
	topicID := mresp.Topics[0].TopicID
	next := make([]int64, partitions)
	for r.records.Load() < want*int64(partitions) {
		if ctx.Err() != nil {
			r.err = fmt.Errorf("%d of %d records before timeout", r.records.Load(), want*int64(partitions))
			return
		}
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.MinBytes, req.MaxWaitMillis = -1, 8<<20, 1, 200
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		for p := range partitions {
			if next[p] < want {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, next[p], 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		req.Topics = append(req.Topics, rt)
		id, ok := node[agents[at].Addr]
		if !ok {
			r.err = fmt.Errorf("agent %s not in Metadata %+v", agents[at].Addr, node)
			return
		}
		resp, err := cl.Broker(int(id)).Request(ctx, req)
		if err != nil {
			if dead(at) {
				at = (at + 1) % len(agents)
				continue
			}
			r.err = fmt.Errorf("fetch from live agent %s: %w", agents[at].Addr, err)
			return
		}
		fr := resp.(*kmsg.FetchResponse)
		if fr.ErrorCode != 0 {
			r.err = fmt.Errorf("fetch from %s: %w", agents[at].Addr, kerr.ErrorForCode(fr.ErrorCode))
			return
		}
		for _, ft := range fr.Topics {
			for i := range ft.Partitions {
				rp := &ft.Partitions[i]
				fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: topic, Partition: rp.Partition,
					Offset: next[rp.Partition]}, rp, kgo.DefaultDecompressor(), nil)
				if fp.Err != nil {
					r.err = fmt.Errorf("fetch from %s, partition %d: %w", agents[at].Addr, rp.Partition, fp.Err)
					return
				}
				for _, rec := range fp.Records {
					if rec.Offset != next[rec.Partition] {
						r.err = fmt.Errorf("partition %d: offset %d, want %d", rec.Partition, rec.Offset, next[rec.Partition])
						return
					}
					if err := rcCheck(rec, size); err != nil {
						r.err = err
						return
					}
					next[rec.Partition]++
					r.records.Add(1)
				}
			}
		}
	}
}

// rcSum sums one series over agents that are still running.
func rcSum(t *testing.T, agents []*proc, series string) float64 {
	t.Helper()
	var s float64
	for _, a := range agents {
		if a.Alive() {
			s += a.metric(t, series)
		}
	}
	return s
}

// rcRanges counts the distinct byte ranges of topic's index: what a fetch
// GETs, one range per (object, partition) run.
func rcRanges(t *testing.T, ctx context.Context, metaURL, topic string) int {
	t.Helper()
	conn, err := pgx.Connect(ctx, metaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM object_index oi JOIN topics t ON t.id = oi.topic_id
		WHERE t.name = $1`, topic).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReadCache: three agents of one zone on PostgreSQL and MinIO; eight
// consumers read the same data (FLOE_READCACHE_MB, default 1024 MiB), four
// as Kafka clients do (fetches to each partition's leader), four with
// fetches pinned to one agent each, so that every range is fetched at all
// three agents. The object-store GETs over the three stay about one per
// range: at most 1.1× the ranges plus 20. Without the shared cache the
// pinned readers alone cost three GETs per range (each agent's own cache
// misses once), so the bound cannot hold by accident; peer reads must be
// well over the ranges too. Then agent 3 is killed (-9) while eight fresh
// consumers read a second topic: every consumer still gets every record,
// the readers pinned to live agents see no failed fetch, and the live
// agents count peer errors for the ranges the dead one owned.
func TestReadCache(t *testing.T) {
	mb := 1024
	if s := os.Getenv("FLOE_READCACHE_MB"); s != "" {
		var err error
		if mb, err = strconv.Atoi(s); err != nil || mb <= 0 {
			t.Fatalf("FLOE_READCACHE_MB=%q", s)
		}
	}
	const (
		partitions = 12
		size       = 16 << 10
		readers    = 8
	)
	perPartition := int64(mb) << 20 / size / partitions
	c := newCluster(t, "floe_readcache")
	ctx := testContext(t, 15*time.Minute)
	// Caches that hold the whole working set: the bound is about the ring
	// (each range GET'd once per zone), not about LRU eviction when
	// readers drift apart by more than a cache.
	cacheBytes := strconv.Itoa((mb + mb/4 + 64) << 20)
	agents := c.startAgents(t, 3, "--zone", "z1", "--cache-bytes", cacheBytes)
	seeds := []string{agents[0].Addr, agents[1].Addr, agents[2].Addr}

	adm, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	createTopic(t, ctx, adm, "shared", partitions, nil)
	start := time.Now()
	rcProduce(t, ctx, seeds, "shared", partitions, perPartition, size)
	t.Logf("produced %d records of %d bytes (%d MiB) in %v", perPartition*partitions, size,
		perPartition*partitions*size>>20, time.Since(start).Round(time.Millisecond))

	getsBefore := rcSum(t, agents, `floe_storage_requests_total{op="get"}`)
	never := func(int) bool { return false }
	rs := make([]*rcReader, readers)
	var wg sync.WaitGroup
	start = time.Now()
	for i := range rs {
		rs[i] = &rcReader{name: fmt.Sprintf("reader %d", i)}
		wg.Go(func() {
			if i < readers/2 {
				rs[i].name += " (leaders)"
				rs[i].readLeaders(ctx, []string{seeds[i%3]}, "shared", partitions, perPartition, size)
			} else {
				rs[i].name += fmt.Sprintf(" (pinned to agent %d)", i%3)
				rs[i].readPinned(ctx, agents, i%3, never, "shared", partitions, perPartition, size)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, r := range rs {
		if r.err != nil {
			t.Fatalf("%s: %v", r.name, r.err)
		}
	}
	ranges := rcRanges(t, ctx, c.metaURL, "shared")
	gets := rcSum(t, agents, `floe_storage_requests_total{op="get"}`) - getsBefore
	peerReads := rcSum(t, agents, "floe_agent_read_cache_peer_reads_total")
	peerBytes := rcSum(t, agents, "floe_agent_read_cache_peer_read_bytes_total")
	peerErrs := rcSum(t, agents, "floe_agent_read_cache_peer_errors_total")
	saved := rcSum(t, agents, "floe_agent_read_cache_gets_saved_total")
	served := rcSum(t, agents, "floe_agent_read_cache_peer_served_total")
	t.Logf("%d readers read %d MiB each in %v; %d ranges, %v GETs (%.3f per range), %v peer reads (%v MiB), %v served, %v GETs saved, %v peer errors",
		readers, perPartition*partitions*size>>20, elapsed.Round(time.Millisecond), ranges, gets, gets/float64(ranges),
		peerReads, int64(peerBytes)>>20, served, saved, peerErrs)
	if ranges < 50 {
		t.Fatalf("only %d ranges: too few objects for the test to mean anything", ranges)
	}
	if gets < float64(ranges) || gets > 1.1*float64(ranges)+20 {
		t.Fatalf("%v GETs for %d ranges read by %d consumers over 3 agents, want between %d and 1.1× + 20", gets, ranges, readers, ranges)
	}
	// The pinned readers alone make each agent miss each range once: two
	// of the three read it through its owner.
	if peerReads < 1.5*float64(ranges) || saved < float64(ranges) {
		t.Fatalf("%v peer reads, %v GETs saved for %d ranges; want at least 1.5× and 1×", peerReads, saved, ranges)
	}

	// kill -9 one ring member while fresh consumers read a second topic.
	createTopic(t, ctx, adm, "kill", partitions, nil)
	perKill := max(perPartition/4, 64)
	rcProduce(t, ctx, seeds, "kill", partitions, perKill, size)
	errsBefore := rcSum(t, agents[:2], "floe_agent_read_cache_peer_errors_total")
	var killed atomic.Bool
	dead := func(i int) bool { return i == 2 && killed.Load() }
	rs = make([]*rcReader, readers)
	for i := range rs {
		rs[i] = &rcReader{name: fmt.Sprintf("reader %d", i)}
		wg.Go(func() {
			if i < readers/2 {
				rs[i].name += " (leaders)"
				rs[i].readLeaders(ctx, seeds, "kill", partitions, perKill, size)
			} else {
				rs[i].name += fmt.Sprintf(" (pinned to agent %d)", i%3)
				rs[i].readPinned(ctx, agents, i%3, dead, "kill", partitions, perKill, size)
			}
		})
	}
	total := perKill * partitions
	for {
		least := total
		for _, r := range rs {
			least = min(least, r.records.Load())
		}
		if least >= total/5 || ctx.Err() != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	killed.Store(true)
	agents[2].Kill()
	progress := make([]string, len(rs))
	for i, r := range rs {
		progress[i] = strconv.FormatInt(r.records.Load(), 10)
	}
	t.Logf("killed agent 2 with the readers at %s of %d records", strings.Join(progress, ", "), total)
	wg.Wait()
	for _, r := range rs {
		if r.err != nil {
			t.Fatalf("%s: %v", r.name, r.err)
		}
		if r.records.Load() != total {
			t.Fatalf("%s: %d records, want %d", r.name, r.records.Load(), total)
		}
	}
	errsAfter := rcSum(t, agents[:2], "floe_agent_read_cache_peer_errors_total")
	t.Logf("live agents: %v peer errors after the kill, each a direct GET", errsAfter-errsBefore)
	if errsAfter-errsBefore == 0 {
		t.Fatal("no peer errors on the live agents: the dead owner's ranges were never asked for, the kill proved nothing")
	}
}
