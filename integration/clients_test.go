package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"floe/kafkaproto"
)

// devForClients is one `floe dev` shared by the client round-trip tests.
func devForClients(t *testing.T) (*proc, *kgo.Client) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	// Pinned to Kafka 3.0's versions so raw requests keep topic names
	// (franz-go raises a raw request's version to the highest both speak).
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return p, cl
}

// rawBatches fetches partition 0 of topic from offset 0 with a raw Fetch and
// returns the batch headers as stored.
func rawBatches(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) []kafkaproto.BatchHeader {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		t.Fatalf("fetch %s: error %d", topic, sp.ErrorCode)
	}
	batches, err := kafkaproto.SplitBatches(sp.RecordBatches)
	if err != nil {
		t.Fatal(err)
	}
	var hs []kafkaproto.BatchHeader
	for _, b := range batches {
		h, err := kafkaproto.ParseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	return hs
}

func TestKcat(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat not installed (make kcat)")
	}
	p, cl := devForClients(t)
	ctx := testContext(t, 2*time.Minute)
	kcat := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "kcat", append([]string{"-b", p.Addr}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kcat %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	createTopic(t, ctx, cl, "kcat", 1, nil)

	var md struct {
		Brokers []struct {
			ID   int32  `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic      string            `json:"topic"`
			Partitions []json.RawMessage `json:"partitions"`
		} `json:"topics"`
	}
	if err := json.Unmarshal([]byte(kcat("", "-L", "-J")), &md); err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].Name != p.Addr {
		t.Fatalf("kcat -L brokers = %+v, want one at %s", md.Brokers, p.Addr)
	}
	found := false
	for _, tp := range md.Topics {
		found = found || (tp.Topic == "kcat" && len(tp.Partitions) == 1)
	}
	if !found {
		t.Fatalf("kcat -L does not list topic kcat: %+v", md.Topics)
	}

	var in, want strings.Builder
	for i := range 50 {
		fmt.Fprintf(&in, "key-%d:value-%d\n", i, i)
		fmt.Fprintf(&want, "%d key-%d=value-%d\n", i, i, i)
	}
	kcat(in.String(), "-P", "-t", "kcat", "-p", "0", "-K:", "-z", "gzip")
	got := kcat("", "-C", "-t", "kcat", "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o %k=%s\n")
	if got != want.String() {
		t.Fatalf("kcat -C:\n%s\nwant:\n%s", got, want.String())
	}
	// librdkafka compresses only when Produce v0 is advertised: check that
	// the stored batch really is gzip.
	for _, h := range rawBatches(t, ctx, cl, "kcat") {
		if h.Codec() != 1 {
			t.Fatalf("kcat -z gzip stored a batch with codec %d", h.Codec())
		}
	}
}

func TestSarama(t *testing.T) {
	for _, v := range []sarama.KafkaVersion{sarama.V2_8_0_0, sarama.V4_0_0_0} {
		t.Run(v.String(), func(t *testing.T) {
			p, cl := devForClients(t)
			ctx := testContext(t, 2*time.Minute)
			createTopic(t, ctx, cl, "sarama", 3, nil)

			cfg := sarama.NewConfig()
			cfg.Version = v
			cfg.Producer.Return.Successes = true
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Compression = sarama.CompressionSnappy
			prod, err := sarama.NewSyncProducer([]string{p.Addr}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer prod.Close()
			want := make(map[int32][]string)
			for i := range 90 {
				m := &sarama.ProducerMessage{Topic: "sarama", Key: sarama.StringEncoder(fmt.Sprint("k", i)),
					Value:   sarama.StringEncoder(fmt.Sprint("v", i)),
					Headers: []sarama.RecordHeader{{Key: []byte("i"), Value: []byte(fmt.Sprint(i))}}}
				part, off, err := prod.SendMessage(m)
				if err != nil {
					t.Fatal(err)
				}
				if off != int64(len(want[part])) {
					t.Fatalf("partition %d: offset %d, want %d", part, off, len(want[part]))
				}
				want[part] = append(want[part], fmt.Sprintf("%d k%d=v%d i=%d", off, i, i, i))
			}

			cons, err := sarama.NewConsumer([]string{p.Addr}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			for part, w := range want {
				pc, err := cons.ConsumePartition("sarama", part, sarama.OffsetOldest)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for len(got) < len(w) {
					select {
					case m := <-pc.Messages():
						got = append(got, fmt.Sprintf("%d %s=%s %s=%s", m.Offset, m.Key, m.Value, m.Headers[0].Key, m.Headers[0].Value))
					case err := <-pc.Errors():
						t.Fatal(err)
					case <-ctx.Done():
						t.Fatalf("partition %d: got %d of %d", part, len(got), len(w))
					}
				}
				pc.Close()
				if strings.Join(got, "\n") != strings.Join(w, "\n") {
					t.Fatalf("partition %d:\n%s\nwant:\n%s", part, strings.Join(got, "\n"), strings.Join(w, "\n"))
				}
			}
		})
	}
}

func TestKafkaGo(t *testing.T) {
	p, cl := devForClients(t)
	ctx := testContext(t, 2*time.Minute)
	createTopic(t, ctx, cl, "kafka-go", 3, nil)

	w := &kafka.Writer{Addr: kafka.TCP(p.Addr), Topic: "kafka-go", Balancer: &kafka.Hash{},
		Compression: kafka.Lz4, RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond}
	defer w.Close()
	var msgs []kafka.Message
	for i := range 60 {
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i))})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	var got []string
	for part := range 3 {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{p.Addr}, Topic: "kafka-go", Partition: part, MaxWait: 200 * time.Millisecond})
		end, err := kafkaGoEnd(ctx, p.Addr, part)
		if err != nil {
			t.Fatal(err)
		}
		for i := int64(0); i < end; i++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m.Offset != i {
				t.Fatalf("partition %d: offset %d, want %d", part, m.Offset, i)
			}
			got = append(got, fmt.Sprintf("%s=%s", m.Key, m.Value))
		}
		r.Close()
	}
	var want []string
	for _, m := range msgs {
		want = append(want, fmt.Sprintf("%s=%s", m.Key, m.Value))
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("kafka-go read %v, want %v", got, want)
	}
}

// kafkaGoEnd asks for a partition's end offset the way kafka-go does.
func kafkaGoEnd(ctx context.Context, addr string, part int) (int64, error) {
	conn, err := kafka.DialLeader(ctx, "tcp", addr, "kafka-go", part)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	return conn.ReadLastOffset()
}
