package integration

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestBadInput sends what a broken or hostile client might, and checks for
// the error code a Kafka broker gives or a clean close — and that the process
// stays up with its stored data intact.
func TestBadInput(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir(), "--auto-create-topics=false", "--max-request-size", "1048576")
	ctx := testContext(t, 2*time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxVersions(kversion.V3_0_0())) // raw requests keep topic names
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createTopic(t, ctx, cl, "good", 2, nil)
	good := genRecords(3, "good", 2, 2000)
	produceAll(t, ctx, cl, good)

	expectClosed := func(t *testing.T, payload []byte) {
		t.Helper()
		c, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(payload)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := io.Copy(io.Discard, c)
		if err != nil {
			t.Fatalf("connection not closed cleanly: read %d bytes, %v", n, err)
		}
	}
	t.Run("frame over the size limit", func(t *testing.T) {
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], 2<<20)
		expectClosed(t, append(hdr[:], make([]byte, 1024)...))
	})
	t.Run("negative frame size", func(t *testing.T) {
		expectClosed(t, []byte{0xff, 0xff, 0xff, 0xfe, 1, 2, 3})
	})
	t.Run("random bytes", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for range 20 {
			b := make([]byte, 4+rng.IntN(300))
			for i := range b {
				b[i] = byte(rng.UintN(256))
			}
			// A plausible length so the frame is read and decoded.
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			expectClosedOrAnswered(t, p.Addr, b)
		}
	})

	produce := func(t *testing.T, topic string, partition int32, records []byte) int16 {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Version = 9
		req.Acks = -1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = partition, records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	expectCode := func(t *testing.T, got int16, want *kerr.Error) {
		t.Helper()
		if got != want.Code {
			t.Fatalf("error code %d (%v), want %d (%v)", got, kerr.ErrorForCode(got), want.Code, want)
		}
	}
	t.Run("wrong crc", func(t *testing.T) {
		b := makeBatch(3)
		b[len(b)-1] ^= 0xff
		expectCode(t, produce(t, "good", 0, b), kerr.CorruptMessage)
	})
	t.Run("magic 1 message set", func(t *testing.T) {
		expectCode(t, produce(t, "good", 0, makeMagic1Message()), kerr.InvalidRecord)
	})
	t.Run("batch length mismatch", func(t *testing.T) {
		b := makeBatch(2)
		binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12+5))
		expectCode(t, produce(t, "good", 0, b), kerr.CorruptMessage)
	})
	t.Run("count mismatch", func(t *testing.T) {
		b := makeBatch(2)
		binary.BigEndian.PutUint32(b[57:], 5) // NumRecords
		resetCRC(b)
		expectCode(t, produce(t, "good", 0, b), kerr.InvalidRecord)
	})
	t.Run("unknown topic without auto-creation", func(t *testing.T) {
		expectCode(t, produce(t, "no-such-topic", 0, makeBatch(1)), kerr.UnknownTopicOrPartition)
	})
	t.Run("unknown partition", func(t *testing.T) {
		expectCode(t, produce(t, "good", 7, makeBatch(1)), kerr.UnknownTopicOrPartition)
	})
	t.Run("fetch past the high watermark", func(t *testing.T) {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 11
		req.MaxBytes = 1 << 20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "good"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset = 1 << 40
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		expectCode(t, resp.Topics[0].Partitions[0].ErrorCode, kerr.OffsetOutOfRange)
	})

	if !p.Alive() {
		t.Fatalf("floe died:\n%s", p.Log())
	}
	verifyRecords(t, good, consumeN(t, ctx, []string{p.Addr}, "good", len(good)))
}

// expectClosedOrAnswered sends a frame of garbage: the agent must either
// answer (a decodable request) or close the connection — never hang or die.
func expectClosedOrAnswered(t *testing.T, addr string, payload []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(payload)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var buf [1]byte
	if _, err := c.Read(buf[:]); err != nil && err != io.EOF {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			// A request can legitimately wait (e.g. a long-poll fetch with a
			// huge wait); it must not have crashed the agent.
			return
		}
	}
}

// makeBatch builds a valid uncompressed v2 batch of n records.
func makeBatch(n int) []byte {
	var recs []byte
	for i := range n {
		var r []byte
		r = append(r, 0)                                // attributes
		r = binary.AppendVarint(r, int64(i))            // timestamp delta
		r = binary.AppendVarint(r, int64(i))            // offset delta
		r = binary.AppendVarint(r, -1)                  // null key
		r = binary.AppendVarint(r, 3)                   // value length
		r = append(r, 'v', byte('0'+i%10), byte('a'+i)) // value
		r = binary.AppendVarint(r, 0)                   // headers
		recs = binary.AppendVarint(recs, int64(len(r)))
		recs = append(recs, r...)
	}
	b := make([]byte, 61, 61+len(recs))
	binary.BigEndian.PutUint64(b[0:], 0)                    // base offset
	binary.BigEndian.PutUint32(b[8:], uint32(49+len(recs))) // batch length
	binary.BigEndian.PutUint32(b[12:], 0xffffffff)          // leader epoch
	b[16] = 2                                               // magic
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))         // last offset delta
	binary.BigEndian.PutUint64(b[27:], uint64(time.Now().UnixMilli()))
	binary.BigEndian.PutUint64(b[35:], uint64(time.Now().UnixMilli()+int64(n)))
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff) // producer id
	binary.BigEndian.PutUint16(b[51:], 0xffff)             // producer epoch
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)         // base sequence
	binary.BigEndian.PutUint32(b[57:], uint32(n))          // records
	b = append(b, recs...)
	resetCRC(b)
	return b
}

func resetCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
}

// makeMagic1Message builds a one-message v1 message set, as pre-0.11 clients sent.
func makeMagic1Message() []byte {
	body := []byte{1, 0} // magic 1, attributes
	body = binary.BigEndian.AppendUint64(body, uint64(time.Now().UnixMilli()))
	body = binary.BigEndian.AppendUint32(body, 0xffffffff) // null key
	body = binary.BigEndian.AppendUint32(body, 2)
	body = append(body, 'h', 'i')
	msg := binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(body))
	msg = append(msg, body...)
	out := binary.BigEndian.AppendUint64(nil, 0)               // offset
	out = binary.BigEndian.AppendUint32(out, uint32(len(msg))) // message size
	return append(out, msg...)
}
