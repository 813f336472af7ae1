package integration

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Produce/consume figures against real floe processes:
//
//	go test -run '^$' -bench . -benchtime 200000x ./integration/
//
// The throughput benchmarks produce b.N records of 1 KiB as fast as the
// client takes them and report produce MB/s (b.SetBytes), the latency of each
// acknowledgement from when the record was handed to the client (queueing in
// the client included: an open-loop burst, not a paced load) and consume MB/s.
// The latency benchmarks produce one record at a time and wait for its
// acknowledgement: the round trip of one flush.

func BenchmarkDevProduceConsume(b *testing.B) {
	p := startFloe(b, "dev", "--data-dir", b.TempDir())
	benchProduceConsume(b, p.Addr)
}

func BenchmarkPostgresMinIOProduceConsume(b *testing.B) {
	c := newClusterTB(b, "floe_bench")
	p := c.startAgent(b)
	benchProduceConsume(b, p.Addr)
}

func BenchmarkDevProduceLatency(b *testing.B) {
	p := startFloe(b, "dev", "--data-dir", b.TempDir())
	benchProduceLatency(b, p.Addr)
}

func BenchmarkPostgresMinIOProduceLatency(b *testing.B) {
	c := newClusterTB(b, "floe_bench_latency")
	p := c.startAgent(b)
	benchProduceLatency(b, p.Addr)
}

func benchProduceLatency(b *testing.B, addr string) {
	ctx := testContext(b, 10*time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	createTopic(b, ctx, cl, "latency", 1, nil)
	value := make([]byte, 1024)
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "latency", Value: value}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(start)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

func benchProduceConsume(b *testing.B, addr string) {
	const partitions, size = 16, 1024
	ctx := testContext(b, 30*time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	createTopic(b, ctx, cl, "bench", partitions, nil)
	value := make([]byte, size)
	for i := range value {
		value[i] = byte(i)
	}

	b.SetBytes(size)
	b.ResetTimer()
	lat := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	wg.Add(b.N)
	start := time.Now()
	for i := range b.N {
		sent := time.Now()
		cl.Produce(ctx, &kgo.Record{Topic: "bench", Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
			lat[i] = time.Since(sent)
			wg.Done()
		})
	}
	wg.Wait()
	produceDur := time.Since(start)
	b.StopTimer()

	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(b.N*size)/produceDur.Seconds()/1e6, "produce-MB/s")

	start = time.Now()
	consumeCount(b, ctx, addr, "bench", b.N)
	b.ReportMetric(float64(b.N*size)/time.Since(start).Seconds()/1e6, "consume-MB/s")
}

// consumeCount reads n records of topic from the start.
func consumeCount(b testing.TB, ctx context.Context, addr, topic string, n int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(64<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("consumed %d of %d", got, n)
		}
		got += fs.NumRecords()
	}
}
