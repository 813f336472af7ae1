package integration

// segmentio/kafka-go's cases of the Go client compatibility matrix (see
// compat_go_test.go). kafka-go has no idempotent and no transactional
// producer (its Writer never sends InitProducerId and writes batches with
// producer id -1), so those two features are not in its matrix rows.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
)

// kafkaGoMessages makes n messages with keys, compressible values, two
// headers and explicit timestamps.
func kafkaGoMessages(tag string, n int) []kafka.Message {
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{
			Key:   fmt.Appendf(nil, "%s-key-%d", tag, i),
			Value: compatValue(tag, i),
			Headers: []kafka.Header{{Key: "i", Value: fmt.Appendf(nil, "%d", i)},
				{Key: "tag", Value: []byte(tag)}},
			Time: compatBaseTime.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return msgs
}

func kafkaGoMsg(m kafka.Message) compatMsg {
	var hs []string
	for _, h := range m.Headers {
		hs = append(hs, h.Key+"="+string(h.Value))
	}
	return compatMsg{Partition: int32(m.Partition), Offset: m.Offset, Key: string(m.Key), Value: string(m.Value),
		Headers: strings.Join(hs, ";"), Time: m.Time.UnixMilli()}
}

// kafkaGoWrite writes msgs to topic in one WriteMessages call, under the
// target's producer client id.
func kafkaGoWrite(t *testing.T, ctx context.Context, tg *compatTarget, topic string, codec kafka.Compression, msgs []kafka.Message) {
	t.Helper()
	// A Transport of its own: kafka-go's transports answer Metadata from
	// a cache refreshed every 6 s, so the shared DefaultTransport would
	// not know a topic created since by another client and would fail
	// with UNKNOWN_TOPIC_OR_PARTITION (against any Kafka broker).
	tr := &kafka.Transport{ClientID: tg.produceID}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(tg.produce), Topic: topic, Balancer: &kafka.Hash{}, Compression: codec,
		RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond, BatchSize: len(msgs), Transport: tr}
	defer w.Close()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

// kafkaGoDialer dials with the target's consumer client id.
func kafkaGoDialer(tg *compatTarget) *kafka.Dialer {
	return &kafka.Dialer{ClientID: tg.consumeID, Timeout: 10 * time.Second, DualStack: true}
}

func runCompatKafkaGo(t *testing.T, tg *compatTarget, client string) {
	ctx := testContext(t, 2*time.Minute)
	codecs := []struct {
		name  string
		codec kafka.Compression
		id    int8
	}{
		{"none", 0, 0},
		{"gzip", kafka.Gzip, 1},
		{"snappy", kafka.Snappy, 2},
		{"lz4", kafka.Lz4, 3},
		{"zstd", kafka.Zstd, 4},
	}
	for _, c := range codecs {
		compatCase(t, tg, client, c.name+" produce+consume", func(t *testing.T) {
			topic := "kafka-go-" + c.name
			createTopic(t, ctx, tg.admin, topic, 1, nil)
			msgs := kafkaGoMessages(c.name, 200)
			kafkaGoWrite(t, ctx, tg, topic, c.codec, msgs)
			checkStoredCodec(t, ctx, tg, topic, c.id, len(msgs))
			// One partition, one synchronous write: offsets follow the
			// order written.
			var want []compatMsg
			for i, m := range msgs {
				m.Offset = int64(i)
				want = append(want, kafkaGoMsg(m))
			}
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: tg.seeds, Topic: topic, Partition: 0, MaxWait: 200 * time.Millisecond,
				Dialer: kafkaGoDialer(tg)})
			defer r.Close()
			var got []compatMsg
			for range want {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					t.Fatalf("after %d records: %v", len(got), err)
				}
				got = append(got, kafkaGoMsg(m))
			}
			compareMsgs(t, topic, got, want)
		})
	}

	compatCase(t, tg, client, "consumer group commit+resume", func(t *testing.T) {
		const topic, group = "kafka-go-group", "kafka-go-g"
		createTopic(t, ctx, tg.admin, topic, 3, nil)
		adm := kadm.NewClient(tg.admin)
		endOffsets := func() map[int32]int64 {
			t.Helper()
			offs, err := adm.ListEndOffsets(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			out := map[int32]int64{}
			offs.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
			return out
		}
		committedAt := func(ends map[int32]int64) {
			t.Helper()
			offs, err := adm.FetchOffsets(ctx, group)
			if err != nil {
				t.Fatal(err)
			}
			for p, w := range ends {
				o, ok := offs.Lookup(topic, p)
				if w > 0 && (!ok || o.Err != nil || o.At != w) {
					t.Fatalf("committed offset of %s/%d = %+v, want %d", topic, p, o, w)
				}
			}
		}
		// session reads n messages with a new group Reader, committing each
		// synchronously (CommitInterval 0), checks nothing else arrives,
		// and leaves; it returns the messages read.
		session := func(n int) []kafka.Message {
			t.Helper()
			r := kafka.NewReader(kafka.ReaderConfig{
				Brokers: tg.seeds, GroupID: group, Topic: topic, StartOffset: kafka.FirstOffset, Dialer: kafkaGoDialer(tg),
				MaxWait: 200 * time.Millisecond, CommitInterval: 0,
				HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second,
			})
			var got []kafka.Message
			for len(got) < n {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					t.Fatalf("after %d records: %v", len(got), err)
				}
				if err := r.CommitMessages(ctx, m); err != nil {
					t.Fatal(err)
				}
				got = append(got, m)
			}
			qctx, cancel := context.WithTimeout(ctx, time.Second)
			m, err := r.FetchMessage(qctx)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("after all %d records, read %v (%v)", n, kafkaGoMsg(m), err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			return got
		}
		checkSession := func(got []kafka.Message, tag string, from, to map[int32]int64, n int) {
			t.Helper()
			seen := map[string]bool{}
			for _, m := range got {
				p := int32(m.Partition)
				if len(m.Headers) != 2 || string(m.Headers[1].Value) != tag || m.Offset < from[p] || m.Offset >= to[p] {
					t.Fatalf("read %v, want a %q record within offsets [%d, %d)", kafkaGoMsg(m), tag, from[p], to[p])
				}
				if seen[string(m.Value)] {
					t.Fatalf("read %v twice", kafkaGoMsg(m))
				}
				seen[string(m.Value)] = true
			}
			if len(seen) != n {
				t.Fatalf("read %d distinct records, want %d", len(seen), n)
			}
		}

		kafkaGoWrite(t, ctx, tg, topic, kafka.Snappy, kafkaGoMessages("first", 60))
		ends1 := endOffsets()
		checkSession(session(60), "first", map[int32]int64{}, ends1, 60)
		committedAt(ends1)

		kafkaGoWrite(t, ctx, tg, topic, kafka.Snappy, kafkaGoMessages("second", 30))
		ends2 := endOffsets()
		checkSession(session(30), "second", ends1, ends2, 30)
		committedAt(ends2)
	})
}
