package integration

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"floe/kafkaproto"
)

// storedCodecs counts the codecs of a topic's stored batches, read from
// the index and the bucket as the fetch path reads them.
func (e *compactorEnv) storedCodecs(ctx context.Context, topic string) map[int8]int {
	t := e.t
	t.Helper()
	tp, err := e.store.Topic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := e.store.Partitions(ctx, tp.ID)
	if err != nil {
		t.Fatal(err)
	}
	codecs := map[int8]int{}
	for _, p := range parts {
		rows, err := e.store.PartitionRows(ctx, tp.ID, p.Partition, p.NextOffset)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			data, err := e.bucket.GetRange(ctx, r.ObjectKey, r.ByteOffset, r.ByteLength)
			if err != nil {
				continue // replaced and deleted since the rows were read
			}
			if _, err := kafkaproto.WalkBatches(data, r.BaseOffset, func(h kafkaproto.BatchHeader, _ []byte, _ int64) error {
				codecs[h.Codec()]++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return codecs
}

// TestCompactorRecompressesIntoTopicCodec: a topic created with
// compression.type=zstd, produced to in snappy by franz-go, is stored in
// snappy until the compactor merges it, then in zstd only; franz-go
// consumers read the same records (keys, values, headers, timestamps,
// offsets) before and after.
func TestCompactorRecompressesIntoTopicCodec(t *testing.T) {
	e := newCompactorEnv(t)
	ctx := testContext(t, 3*time.Minute)
	zstd := "zstd"
	createTopic(t, ctx, e.cl, "z", 2, map[string]*string{"compression.type": &zstd})
	snappy, err := kgo.NewClient(kgo.SeedBrokers(e.agent.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer snappy.Close()
	recs := genRecords(29, "z", 2, 120)
	for _, r := range recs {
		// franz-go sends a batch uncompressed when snappy would not shrink it.
		r.Value = append(r.Value, bytes.Repeat([]byte(" compressible"), 20)...)
		if err := snappy.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	want, ends := byPartition(recs)
	if c := e.storedCodecs(ctx, "z"); c[kafkaproto.CodecSnappy] != len(recs) {
		t.Fatalf("stored codecs before any merge %v, want %d snappy batches", c, len(recs))
	}
	got, err := readAll(ctx, e.agent.Addr, "z", ends)
	if err == nil {
		err = sameRecords(want, got)
	}
	if err != nil {
		t.Fatal(err)
	}

	e.startCompactor("--fan-in", "8", "--max-wait", "300ms")
	waitFor(t, 90*time.Second, "every batch of z in zstd", func() bool {
		c := e.storedCodecs(ctx, "z")
		return c[kafkaproto.CodecZstd] == len(recs) && len(c) == 1
	})
	got, err = readAll(ctx, e.agent.Addr, "z", ends)
	if err == nil {
		err = sameRecords(want, got)
	}
	if err != nil {
		t.Fatal(err)
	}
}
