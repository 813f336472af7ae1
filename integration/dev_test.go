package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDevCodecsRoundTripAndRestart drives `floe dev` as a real process with
// franz-go: per codec, 100,000 records to 32 partitions come back
// byte-identical with dense offsets; ListOffsets agrees with the model; after
// a restart the data is still there and new records continue at the right
// offsets.
func TestDevCodecsRoundTripAndRestart(t *testing.T) {
	dataDir := t.TempDir()
	p := startFloe(t, "dev", "--data-dir", dataDir)
	ctx := testContext(t, 15*time.Minute)

	const partitions, n = 32, 100_000
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"none", kgo.NoCompression()},
		{"gzip", kgo.GzipCompression()},
		{"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()},
		{"zstd", kgo.ZstdCompression()},
	}
	produced := make(map[string][]*kgo.Record)
	for i, c := range codecs {
		topic := "codec-" + c.name
		t.Run(c.name, func(t *testing.T) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ProducerBatchCompression(c.codec),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			createTopic(t, ctx, cl, topic, partitions, nil)
			recs := genRecords(uint64(i+1), topic, partitions, n)
			start := time.Now()
			produceAll(t, ctx, cl, recs)
			t.Logf("%s: produced %d records in %v", c.name, n, time.Since(start))
			produced[topic] = recs

			start = time.Now()
			consumed := consumeN(t, ctx, []string{p.Addr}, topic, n)
			t.Logf("%s: consumed %d records in %v", c.name, n, time.Since(start))
			verifyRecords(t, recs, consumed)
			checkListOffsets(t, ctx, cl, topic, partitions, recs)
		})
	}
	if t.Failed() {
		return
	}
	// One PUT and one commit per flush, and no flush failed.
	flushes := p.metric(t, "floe_agent_flushes_total")
	puts := p.metric(t, `floe_storage_requests_total{op="put"}`)
	if flushes == 0 || puts != flushes || p.metric(t, "floe_agent_flush_errors_total") != 0 {
		t.Fatalf("%v flushes, %v PUTs, %v flush errors", flushes, puts, p.metric(t, "floe_agent_flush_errors_total"))
	}
	t.Logf("%v flushes for %d records", flushes, len(codecs)*n)
	// The in-process compactor's metrics are served beside the agent's
	// (from the end of its first round, which starts with the process).
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(p.metricsText(t), "floe_compactor_objects"); {
		if time.Now().After(deadline) {
			t.Fatalf("floe dev /metrics lacks the compactor's metrics")
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Restart: the same data is served and offsets continue.
	p.Restart()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topic := "codec-zstd"
	recs := produced[topic]
	consumed := consumeN(t, ctx, []string{p.Addr}, topic, n)
	verifyRecords(t, recs, consumed)
	ends := make(map[int32]int64)
	for _, r := range recs {
		ends[r.Partition]++
	}
	more := genRecords(99, topic, partitions, 1000)
	produceAll(t, ctx, cl, more)
	next := make(map[int32]int64)
	for _, r := range more {
		if want := ends[r.Partition] + next[r.Partition]; r.Offset != want {
			t.Fatalf("after restart: record to partition %d got offset %d, want %d", r.Partition, r.Offset, want)
		}
		next[r.Partition]++
	}
	all := append(append([]*kgo.Record{}, recs...), more...)
	verifyRecords(t, all, consumeN(t, ctx, []string{p.Addr}, topic, len(all)))
}
