package integration

// sarama's cases of the Go client compatibility matrix (see
// compat_go_test.go), run once with Kafka 2.8 and once with Kafka 4.0
// configured: sarama picks its request versions from cfg.Version.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
)

// saramaConfig is the configuration every sarama case starts from.
func saramaConfig(v sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = v
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	return cfg
}

// saramaMessages makes n messages for topic over partitions, with keys,
// compressible values, two headers and explicit timestamps; want holds
// them in compatMsg form, offsets to be filled in once acknowledged.
func saramaMessages(topic, tag string, partitions int32, n int) []*sarama.ProducerMessage {
	msgs := make([]*sarama.ProducerMessage, n)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{
			Topic: topic, Partition: int32(i) % partitions,
			Key:   sarama.StringEncoder(fmt.Sprintf("%s-key-%d", tag, i)),
			Value: sarama.ByteEncoder(compatValue(tag, i)),
			Headers: []sarama.RecordHeader{{Key: []byte("i"), Value: fmt.Appendf(nil, "%d", i)},
				{Key: []byte("tag"), Value: []byte(tag)}},
			Timestamp: compatBaseTime.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return msgs
}

// saramaAcked renders acknowledged messages as compatMsgs.
func saramaAcked(t testing.TB, msgs []*sarama.ProducerMessage) []compatMsg {
	t.Helper()
	var out []compatMsg
	for _, m := range msgs {
		k, err := m.Key.Encode()
		if err != nil {
			t.Fatal(err)
		}
		v, err := m.Value.Encode()
		if err != nil {
			t.Fatal(err)
		}
		var hs []string
		for _, h := range m.Headers {
			hs = append(hs, string(h.Key)+"="+string(h.Value))
		}
		out = append(out, compatMsg{Partition: m.Partition, Offset: m.Offset, Key: string(k), Value: string(v),
			Headers: strings.Join(hs, ";"), Time: m.Timestamp.UnixMilli()})
	}
	return out
}

func saramaConsumed(m *sarama.ConsumerMessage) compatMsg {
	var hs []string
	for _, h := range m.Headers {
		hs = append(hs, string(h.Key)+"="+string(h.Value))
	}
	return compatMsg{Partition: m.Partition, Offset: m.Offset, Key: string(m.Key), Value: string(m.Value),
		Headers: strings.Join(hs, ";"), Time: m.Timestamp.UnixMilli()}
}

// saramaSend produces msgs with a new SyncProducer on cfg, under the
// target's producer client id.
func saramaSend(t *testing.T, tg *compatTarget, cfg *sarama.Config, msgs []*sarama.ProducerMessage) {
	t.Helper()
	cfg.ClientID = tg.produceID
	prod, err := sarama.NewSyncProducer([]string{tg.produce}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
}

// saramaRead reads one partition from the oldest offset with a
// PartitionConsumer, under the target's consumer client id, until stop
// says so.
func saramaRead(t *testing.T, ctx context.Context, tg *compatTarget, cfg *sarama.Config, topic string, part int32, stop func([]compatMsg) bool) []compatMsg {
	t.Helper()
	cfg.ClientID = tg.consumeID
	cons, err := sarama.NewConsumer(tg.seeds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, part, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var got []compatMsg
	for !stop(got) {
		select {
		case m := <-pc.Messages():
			got = append(got, saramaConsumed(m))
		case err := <-pc.Errors():
			t.Fatalf("consume %s/%d: %v", topic, part, err)
		case <-ctx.Done():
			t.Fatalf("consume %s/%d: read %d records before timeout", topic, part, len(got))
		}
	}
	return got
}

func readCount(n int) func([]compatMsg) bool {
	return func(ms []compatMsg) bool { return len(ms) >= n }
}

func runCompatSarama(t *testing.T, tg *compatTarget, client string) {
	ctx := testContext(t, 2*time.Minute)
	v, prefix := sarama.V2_8_0_0, "sarama-28"
	if client == "sarama 4.0" {
		v, prefix = sarama.V4_0_0_0, "sarama-40"
	}
	codecs := []struct {
		name  string
		codec sarama.CompressionCodec
		id    int8
	}{
		{"none", sarama.CompressionNone, 0},
		{"gzip", sarama.CompressionGZIP, 1},
		{"snappy", sarama.CompressionSnappy, 2},
		{"lz4", sarama.CompressionLZ4, 3},
		{"zstd", sarama.CompressionZSTD, 4},
	}
	for _, c := range codecs {
		compatCase(t, tg, client, c.name+" produce+consume", func(t *testing.T) {
			topic := prefix + "-" + c.name
			createTopic(t, ctx, tg.admin, topic, 1, nil)
			cfg := saramaConfig(v)
			cfg.Producer.Compression = c.codec
			msgs := saramaMessages(topic, c.name, 1, 200)
			saramaSend(t, tg, cfg, msgs)
			checkStoredCodec(t, ctx, tg, topic, c.id, len(msgs))
			want := saramaAcked(t, msgs)
			compareMsgs(t, topic, saramaRead(t, ctx, tg, cfg, topic, 0, readCount(len(want))), want)
		})
	}

	compatCase(t, tg, client, "idempotent produce", func(t *testing.T) {
		topic := prefix + "-idempotent"
		createTopic(t, ctx, tg.admin, topic, 1, nil)
		cfg := saramaConfig(v)
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Flush.Messages = 20 // several batches, so sequences must continue
		msgs := saramaMessages(topic, "idem", 1, 100)
		saramaSend(t, tg, cfg, msgs)
		checkIdempotentBatches(t, ctx, tg, topic, len(msgs))
		want := saramaAcked(t, msgs)
		compareMsgs(t, topic, saramaRead(t, ctx, tg, cfg, topic, 0, readCount(len(want))), want)
	})

	compatCase(t, tg, client, "consumer group commit+resume", func(t *testing.T) {
		topic, group := prefix+"-group", prefix+"-g"
		createTopic(t, ctx, tg.admin, topic, 3, nil)
		cfg := saramaConfig(v)
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Consumer.Offsets.AutoCommit.Enable = false // commits only by session.Commit
		first := saramaMessages(topic, "first", 3, 60)
		saramaSend(t, tg, cfg, first)
		ends := map[int32]int64{}
		committedAt := func(msgs []*sarama.ProducerMessage) {
			t.Helper()
			for _, m := range msgs {
				ends[m.Partition] = max(ends[m.Partition], m.Offset+1)
			}
			offs, err := kadm.NewClient(tg.admin).FetchOffsets(ctx, group)
			if err != nil {
				t.Fatal(err)
			}
			for p, w := range ends {
				o, ok := offs.Lookup(topic, p)
				if !ok || o.Err != nil || o.At != w {
					t.Fatalf("committed offset of %s/%d = %+v, want %d", topic, p, o, w)
				}
			}
		}

		got := saramaGroupSession(t, ctx, tg, cfg, group, topic, len(first))
		compareMsgs(t, "first session", got, saramaAcked(t, first))
		committedAt(first)

		second := saramaMessages(topic, "second", 3, 30)
		saramaSend(t, tg, cfg, second)
		got = saramaGroupSession(t, ctx, tg, cfg, group, topic, len(second))
		compareMsgs(t, "second session (must resume after the commits)", got, saramaAcked(t, second))
		committedAt(second)
	})

	compatCase(t, tg, client, "transactional produce read_committed", func(t *testing.T) {
		topic := prefix + "-txn"
		createTopic(t, ctx, tg.admin, topic, 1, nil)
		cfg := saramaConfig(v)
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.Transaction.ID = prefix + "-txn-" + tg.name
		cfg.ClientID = tg.produceID
		prod, err := sarama.NewSyncProducer([]string{tg.produce}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		c, a, l := txnValues()
		txn := func(values []string, commit bool) {
			t.Helper()
			if err := prod.BeginTxn(); err != nil {
				t.Fatal(err)
			}
			var msgs []*sarama.ProducerMessage
			for _, v := range values {
				msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(v)})
			}
			if err := prod.SendMessages(msgs); err != nil {
				t.Fatal(err)
			}
			end := prod.AbortTxn
			if commit {
				end = prod.CommitTxn
			}
			if err := end(); err != nil {
				t.Fatalf("end transaction (commit %v): %v (producer status %v)", commit, err, prod.TxnStatus())
			}
		}
		txn(c, true)
		txn(a, false)
		txn(l, true)
		checkTxnLayout(t, ctx, tg, topic)
		for _, iso := range []struct {
			name  string
			level sarama.IsolationLevel
			all   bool
		}{{"read_committed", sarama.ReadCommitted, false}, {"read_uncommitted", sarama.ReadUncommitted, true}} {
			ccfg := saramaConfig(v)
			ccfg.Consumer.IsolationLevel = iso.level
			// The last committed record is last in the log: once it is
			// read, every aborted record would have been read before it.
			ms := saramaRead(t, ctx, tg, ccfg, topic, 0, func(ms []compatMsg) bool {
				return len(ms) > 0 && ms[len(ms)-1].Value == "c-14"
			})
			var got []string
			for _, m := range ms {
				got = append(got, fmt.Sprintf("%d=%s", m.Offset, m.Value))
			}
			if want := txnWant(iso.all); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("%s read\n  %v\nwant\n  %v", iso.name, got, want)
			}
		}
	})
}

// saramaGroupSession joins group with a new sarama ConsumerGroup, reads
// until n messages arrived (marking each), commits, reads half a second
// longer to catch any record read twice, and leaves.
func saramaGroupSession(t *testing.T, ctx context.Context, tg *compatTarget, cfg *sarama.Config, group, topic string, n int) []compatMsg {
	t.Helper()
	cfg.ClientID = tg.consumeID
	cg, err := sarama.NewConsumerGroup(tg.seeds, group, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &compatSaramaHandler{n: n, done: make(chan struct{})}
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for cctx.Err() == nil {
			if err := cg.Consume(cctx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				t.Logf("sarama consume: %v", err)
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	select {
	case <-h.done:
		time.Sleep(500 * time.Millisecond)
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	if err := cg.Close(); err != nil {
		t.Errorf("close consumer group: %v", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.got) < n {
		t.Fatalf("group %s read %d of %d records before timeout", group, len(h.got), n)
	}
	return h.got
}

// compatSaramaHandler marks every message and commits once n were read.
type compatSaramaHandler struct {
	n    int
	done chan struct{}
	once sync.Once
	mu   sync.Mutex
	got  []compatMsg
}

func (h *compatSaramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *compatSaramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *compatSaramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		// Marked before counted: when the count reaches n, all n are
		// marked and one Commit covers every partition.
		s.MarkMessage(m, "")
		h.mu.Lock()
		h.got = append(h.got, saramaConsumed(m))
		full := len(h.got) >= h.n
		h.mu.Unlock()
		if full {
			h.once.Do(func() {
				s.Commit()
				close(h.done)
			})
		}
	}
	return nil
}
