package integration

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// rewrap returns batch (one of makeBatch's) with its records section
// replaced by records, compressed or not as codec (the attributes' low
// bits) says, and its length and CRC fixed: the batch-level checks pass,
// only the records are wrong.
func rewrap(batch []byte, codec int16, records []byte) []byte {
	b := append(slices.Clone(batch[:61]), records...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint16(b[21:], uint16(codec))
	resetCRC(b)
	return b
}

// produceRaw sends one partition's records field in a Produce v9 request
// and returns that partition's answer.
func produceRaw(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// gzipped, snappied, lz4ed and zstded compress a records section as
// clients do.
func gzipped(raw []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(raw)
	w.Close()
	return buf.Bytes()
}

func lz4ed(raw []byte) []byte {
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	w.Write(raw)
	w.Close()
	return buf.Bytes()
}

func zstded(raw []byte) []byte {
	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()
	return enc.EncodeAll(raw, nil)
}

// TestProduceValidatesRecords is issue 12's "record contents are not
// validated on produce": batches whose CRC and header are right but whose
// records lie were answered with error 0, after which consumers of the
// partition stalled and ListOffsets by timestamp answered CORRUPT_MESSAGE.
// Each is now answered with the Kafka error code for its partition, and the
// partition keeps serving exactly the good records around them.
func TestProduceValidatesRecords(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir(), "--auto-create-topics=false")
	ctx := testContext(t, 2*time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxVersions(kversion.V3_0_0())) // raw requests keep topic names
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createTopic(t, ctx, cl, "plain", 1, nil)
	createTopic(t, ctx, cl, "compacted", 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")})
	good := genRecords(12, "plain", 1, 300)
	produceAll(t, ctx, cl, good[:150])

	// The records of makeBatch(3), to build lies from.
	three := makeBatch(3)
	records := three[61:]
	// One record: attributes, timestamp and offset deltas, a null key, then
	// a value length and no value.
	hugeValue := []byte{0, 0, 0, 1}
	hugeValue = binary.AppendVarint(hugeValue, math.MaxInt32)
	hugeValue = append(hugeValue, 0) // no headers
	hugeValue = append(binary.AppendVarint(nil, int64(len(hugeValue))), hugeValue...)
	lyingCount := func(b []byte) []byte {
		b = slices.Clone(b)
		binary.BigEndian.PutUint32(b[23:], 4) // lastOffsetDelta, agreeing with
		binary.BigEndian.PutUint32(b[57:], 5) // a count of 5 records of 3
		resetCRC(b)
		return b
	}
	junk := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef, 0x42}, 30)

	for _, tc := range []struct {
		name  string
		batch []byte
		want  *kerr.Error
	}{
		{"record count lies", lyingCount(three), kerr.InvalidRecord},
		{"gzip record count lies", lyingCount(rewrap(three, 1, gzipped(records))), kerr.InvalidRecord},
		{"record length 2^31-1", rewrap(makeBatch(1), 0, append(binary.AppendVarint(nil, math.MaxInt32), records[1:]...)), kerr.InvalidRecord},
		{"value length 2^31-1", rewrap(makeBatch(1), 0, hugeValue), kerr.InvalidRecord},
		{"zstd value length 2^31-1", rewrap(makeBatch(1), 4, zstded(hugeValue)), kerr.InvalidRecord},
		{"junk gzip payload", rewrap(three, 1, junk), kerr.CorruptMessage},
		{"junk snappy payload", rewrap(three, 2, junk), kerr.CorruptMessage},
		{"junk lz4 payload", rewrap(three, 3, junk), kerr.CorruptMessage},
		{"junk zstd payload", rewrap(three, 4, junk), kerr.CorruptMessage},
		{"truncated snappy payload", rewrap(three, 2, snappy.Encode(nil, records)[:20]), kerr.CorruptMessage},
		{"truncated lz4 payload", rewrap(three, 3, lz4ed(records)[:20]), kerr.CorruptMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := produceRaw(t, ctx, cl, "plain", tc.batch)
			if sp.ErrorCode != tc.want.Code {
				t.Fatalf("error code %d (%v), want %d (%v)", sp.ErrorCode, kerr.ErrorForCode(sp.ErrorCode), tc.want.Code, tc.want)
			}
			if sp.ErrorMessage == nil || *sp.ErrorMessage == "" {
				t.Errorf("no error message")
			}
		})
	}
	t.Run("null key on a compacted topic", func(t *testing.T) {
		sp := produceRaw(t, ctx, cl, "compacted", three) // makeBatch's keys are null
		if sp.ErrorCode != kerr.InvalidRecord.Code {
			t.Fatalf("error code %d (%v), want INVALID_RECORD", sp.ErrorCode, kerr.ErrorForCode(sp.ErrorCode))
		}
		var named []int32
		for _, r := range sp.ErrorRecords {
			named = append(named, r.RelativeOffset)
		}
		if !slices.Equal(named, []int32{0, 1, 2}) {
			t.Fatalf("record errors name %v, want [0 1 2]", named)
		}
	})

	produceAll(t, ctx, cl, good[150:])
	keyed := genRecords(13, "compacted", 1, 50)
	for _, r := range keyed {
		if r.Key == nil {
			r.Key = []byte("k")
		}
	}
	produceAll(t, ctx, cl, keyed)
	if !p.Alive() {
		t.Fatalf("floe died:\n%s", p.Log())
	}
	cctx := testContext(t, 30*time.Second)
	verifyRecords(t, good, consumeN(t, cctx, []string{p.Addr}, "plain", len(good)))
	verifyRecords(t, keyed, consumeN(t, cctx, []string{p.Addr}, "compacted", len(keyed)))
	checkListOffsets(t, ctx, cl, "plain", 1, good)
}
