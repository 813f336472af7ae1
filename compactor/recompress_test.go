package compactor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/internal/crc32c"
	"floe/kafkaproto"
	"floe/metadata"
)

// fetchedBatches splits what fetchAll returned into its batches.
func fetchedBatches(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var out [][]byte
	if _, err := kafkaproto.WalkBatches(data, 0, func(_ kafkaproto.BatchHeader, b []byte, _ int64) error {
		out = append(out, b)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// kgoDecode decodes a batch as a franz-go consumer does: kgo's own
// decompressor, kmsg's records; it returns them as "offset:key=value".
func kgoDecode(t *testing.T, batch []byte) []string {
	t.Helper()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(batch); err != nil {
		t.Fatal(err)
	}
	raw, err := kgo.DefaultDecompressor().Decompress(rb.Records, kgo.CompressionCodecType(rb.Attributes&7))
	if err != nil {
		t.Fatalf("kgo decompress: %v", err)
	}
	var out []string
	for range rb.NumRecords {
		var r kmsg.Record
		if err := r.ReadFrom(raw); err != nil {
			t.Fatal(err)
		}
		n, l := binary.Varint(raw)
		raw = raw[l+int(n):]
		out = append(out, fmt.Sprintf("%d:%s=%s", rb.FirstOffset+int64(r.OffsetDelta), r.Key, r.Value))
	}
	return out
}

// TestMergeRecompressesIntoTopicCodec: a topic set to zstd gets zstd
// batches from its first merge on, whatever its producers sent
// (uncompressed, snappy, a transaction's batches), with the same records,
// offsets, timestamps and producer fields and a valid CRC; its control
// batch stays uncompressed; a topic left at producer keeps its bytes.
func TestMergeRecompressesIntoTopicCodec(t *testing.T) {
	e := newEnv(t, nil)
	z, err := e.store.CreateTopic(e.ctx, "z", 1, map[string]string{"compression.type": "zstd"})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := e.store.CreateTopic(e.ctx, "plain", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	value := func() string {
		return fmt.Sprintf("value %d of a fairly compressible record %s", rng.IntN(1000), bytes.Repeat([]byte("x"), 100))
	}
	var keys []string
	for i := range 4 {
		var rs []rec
		for j := range 20 {
			rs = append(rs, rec{key: fmt.Sprintf("k%d", j), value: value(), ts: 1_700_000_000_000 + int64(i*100+j)})
		}
		var zb []byte
		switch i {
		case 1: // snappy, as a franz-go producer sends it
			zb, _, err = kafkaproto.Recompress(producerBatch(rs...), kafkaproto.Compression{Codec: kafkaproto.CodecSnappy})
			if err != nil {
				t.Fatal(err)
			}
		case 2: // a transactional idempotent producer's gzip batch
			zb = producerBatch(rs...)
			binary.BigEndian.PutUint64(zb[43:], 77)
			binary.BigEndian.PutUint16(zb[51:], 2)
			binary.BigEndian.PutUint32(zb[53:], 40)
			binary.BigEndian.PutUint16(zb[21:], 0x10)
			kafkaproto.SetBatchCRC(zb)
			if zb, _, err = kafkaproto.Recompress(zb, kafkaproto.Compression{Codec: kafkaproto.CodecGzip, Level: -1}); err != nil {
				t.Fatal(err)
			}
		case 3: // its commit marker
			zb = producerBatch(rec{value: "\x00\x00\x00\x00\x00\x00", ts: 1_700_000_000_500})
			binary.BigEndian.PutUint64(zb[43:], 77)
			binary.BigEndian.PutUint16(zb[51:], 2)
			binary.BigEndian.PutUint16(zb[21:], 0x30)
			kafkaproto.SetBatchCRC(zb)
		default:
			zb = producerBatch(rs...)
		}
		e.flush(z.ID, map[int32][][]byte{0: {zb}})
		keys = append(keys, e.flush(plain.ID, map[int32][][]byte{0: {producerBatch(rs...)}}))
	}
	zBefore, zRecs := e.fetchAll(z.ID, 0)
	pBefore, _ := e.fetchAll(plain.ID, 0)
	objs, err := e.store.Objects(e.ctx, metadata.ObjectLive)
	if err != nil {
		t.Fatal(err)
	}
	var srcBytes int64
	all := make([]string, 0, len(objs))
	for _, o := range objs {
		all = append(all, o.Key)
		if !slices.Contains(keys, o.Key) {
			srcBytes += o.Size
		}
	}

	if err := e.c.merge(e.ctx, MergeJob{Level: 0, Keys: all}); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.count(); n != 1 {
		t.Fatalf("%d objects after the merge", n)
	}
	pAfter, _ := e.fetchAll(plain.ID, 0)
	if !bytes.Equal(pAfter, pBefore) {
		t.Fatal("the producer topic's bytes changed")
	}
	zAfter, got := e.fetchAll(z.ID, 0)
	if !slices.Equal(got, zRecs) {
		t.Fatalf("records\n got %v\nwant %v", got, zRecs)
	}
	before, after := fetchedBatches(t, zBefore), fetchedBatches(t, zAfter)
	if len(after) != len(before) {
		t.Fatalf("%d batches, want %d", len(after), len(before))
	}
	var zBytes int
	for i, b := range after {
		hb, _ := kafkaproto.ParseBatchHeader(before[i])
		h, _ := kafkaproto.ParseBatchHeader(b)
		zBytes += len(b)
		if crc32c.Checksum(b[21:]) != h.CRC {
			t.Fatalf("batch %d: CRC does not match", i)
		}
		want := hb
		want.Length, want.CRC = h.Length, h.CRC
		if !hb.IsControl() {
			want.Attributes = hb.Attributes&^7 | int16(kafkaproto.CodecZstd)
		}
		if h != want {
			t.Fatalf("batch %d header\n got %+v\nwant %+v", i, h, want)
		}
		if hb.IsControl() {
			if !bytes.Equal(b, before[i]) {
				t.Fatal("the control batch changed")
			}
			continue
		}
		if w, g := kgoDecode(t, before[i]), kgoDecode(t, b); !slices.Equal(g, w) {
			t.Fatalf("batch %d through kgo\n got %v\nwant %v", i, g, w)
		}
	}
	// Fewer bytes to GET: the zstd run is a fraction of what was flushed.
	if int64(zBytes)*3 > srcBytes {
		t.Fatalf("zstd batches take %d bytes, sources %d", zBytes, srcBytes)
	}
	t.Logf("topic z: %d bytes in its source objects, %d in zstd batches", srcBytes, zBytes)

	// Already zstd: the next merge copies the batches as they are.
	e.flush(z.ID, map[int32][][]byte{0: {producerBatch(rec{key: "k", value: value(), ts: 1_700_000_001_000})}})
	objs, _ = e.store.Objects(e.ctx, metadata.ObjectLive)
	all = all[:0]
	for _, o := range objs {
		all = append(all, o.Key)
	}
	if err := e.c.merge(e.ctx, MergeJob{Level: 0, Keys: all}); err != nil {
		t.Fatal(err)
	}
	again, _ := e.fetchAll(z.ID, 0)
	if !bytes.HasPrefix(again, zAfter) {
		t.Fatal("zstd batches were rewritten by the next merge")
	}
	last := fetchedBatches(t, again)
	if h, _ := kafkaproto.ParseBatchHeader(last[len(last)-1]); h.Codec() != kafkaproto.CodecZstd {
		t.Fatalf("the new batch is in codec %d", h.Codec())
	}
}

// TestMergeRecompressionBudget: past MergeBufferBytes of recompressed
// rows, a merge copies the rest of its rows as they are (held in memory
// otherwise), and the fetches still read every record.
func TestMergeRecompressionBudget(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MergeBufferBytes = 1 })
	tp, err := e.store.CreateTopic(e.ctx, "z", 1, map[string]string{"compression.type": "lz4"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range 3 {
		keys = append(keys, e.flush(tp.ID, map[int32][][]byte{0: {producerBatch(rec{key: "k", value: fmt.Sprint("v", i), ts: int64(i)})}}))
	}
	_, want := e.fetchAll(tp.ID, 0)
	if err := e.c.merge(e.ctx, MergeJob{Level: 0, Keys: keys}); err != nil {
		t.Fatal(err)
	}
	data, got := e.fetchAll(tp.ID, 0)
	if !slices.Equal(got, want) {
		t.Fatalf("records\n got %v\nwant %v", got, want)
	}
	var codecs []int8
	for _, b := range fetchedBatches(t, data) {
		h, _ := kafkaproto.ParseBatchHeader(b)
		codecs = append(codecs, h.Codec())
	}
	if !slices.Equal(codecs, []int8{kafkaproto.CodecLZ4, 0, 0}) {
		t.Fatalf("codecs %v: the first row recompressed, the rest past the budget copied", codecs)
	}
}

// TestMergeKeepsDamagedBatch: a batch whose CRC does not hold is merged as
// it was (not laundered under a fresh CRC into the topic's codec), and
// counted.
func TestMergeKeepsDamagedBatch(t *testing.T) {
	e := newEnv(t, nil)
	tp, err := e.store.CreateTopic(e.ctx, "z", 1, map[string]string{"compression.type": "gzip"})
	if err != nil {
		t.Fatal(err)
	}
	bad := producerBatch(rec{key: "k", value: "v", ts: 1})
	bad[17] ^= 0xff // the CRC no longer holds
	keys := []string{
		e.flush(tp.ID, map[int32][][]byte{0: {bad}}),
		e.flush(tp.ID, map[int32][][]byte{0: {producerBatch(rec{key: "k", value: "w", ts: 2})}}),
	}
	before, _ := e.fetchAll(tp.ID, 0)
	if err := e.c.merge(e.ctx, MergeJob{Level: 0, Keys: keys}); err != nil {
		t.Fatal(err)
	}
	after, _ := e.fetchAll(tp.ID, 0)
	bs := fetchedBatches(t, after)
	if !bytes.Equal(bs[0], fetchedBatches(t, before)[0]) {
		t.Fatal("the damaged batch changed")
	}
	if h, _ := kafkaproto.ParseBatchHeader(bs[1]); h.Codec() != kafkaproto.CodecGzip {
		t.Fatalf("the good batch is in codec %d", h.Codec())
	}
	if n := testutil.ToFloat64(e.c.metrics.recompressSkipped); n != 1 {
		t.Fatalf("skipped batches counted %v, want 1", n)
	}
}

// TestKeyCompactionWritesTopicCodec: key compaction's output batches are in
// the topic's codec, with the records the model keeps.
func TestKeyCompactionWritesTopicCodec(t *testing.T) {
	e := newEnv(t, nil)
	tp, err := e.store.CreateTopic(e.ctx, "kc", 1, map[string]string{"cleanup.policy": "compact", "compression.type": "snappy"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	randomFlushes(e, rand.New(rand.NewPCG(7, 8)), tp, 30, 5, 0, func(i int) int64 { return now + int64(i) })
	_, full := e.fetchAll(tp.ID, 0)
	e.runOnce()
	data, got := e.fetchAll(tp.ID, 0)
	if want := compactModel(full, 0); !slices.Equal(got, want) {
		t.Fatalf("records\n got %v\nwant %v", got, want)
	}
	for i, b := range fetchedBatches(t, data) {
		if h, _ := kafkaproto.ParseBatchHeader(b); h.Codec() != kafkaproto.CodecSnappy {
			t.Fatalf("batch %d in codec %d", i, h.Codec())
		}
	}
	if testutil.ToFloat64(e.c.metrics.recompressed) == 0 {
		t.Fatal("no recompressed batch counted")
	}
}
