package agent

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
	"floe/schemaregistry"
	"floe/storage/mem"
)

// failingRegistry is a registry whose schema look-ups fail, as when its
// store is unreachable.
type failingRegistry struct{ SchemaRegistry }

func (failingRegistry) SchemaByID(context.Context, int) (schemaregistry.Schema, error) {
	return schemaregistry.Schema{}, errors.New("store unreachable")
}

// TestProduceSchemaRefusals produces, over the wire, batches to topics
// with value validation true and full and key validation true, and checks
// each partition's whole answer: the error code, the message, and the
// record errors with theirs; compressed batches are answered as
// uncompressed ones, a batch's own fault wins over its schemas', an agent
// without a registry refuses, and a registry that fails answers
// KAFKA_STORAGE_ERROR after the refusals found before it.
func TestProduceSchemaRefusals(t *testing.T) {
	avsc, payload := readBenchFile(t, "order.avsc"), readBenchFile(t, "order.avro")
	agent := func(reg func(SchemaRegistry) SchemaRegistry) *testAgent {
		var store metadata.Store
		return newTestAgentOver(t, mem.New(), func(s metadata.Store) metadata.Store { store = s; return s }, func(c *Config) {
			c.SchemaRegistry, c.SchemaRegistryAddr = reg(schemaregistry.New(schemaregistry.Config{Store: store})), ""
		})
	}
	ta := agent(func(r SchemaRegistry) SchemaRegistry { return r })
	failing := agent(func(r SchemaRegistry) SchemaRegistry { return failingRegistry{r} })
	none := agent(func(SchemaRegistry) SchemaRegistry { return nil })
	on, full := "true", "full"
	topics := map[string]map[string]*string{
		"v-true": {"confluent.value.schema.validation": &on},
		"v-full": {"floe.value.schema.validation": &full},
		"k-true": {"floe.key.schema.validation": &on},
	}
	for _, a := range []*testAgent{ta, failing, none} {
		for topic, configs := range topics {
			if _, err := kadm.NewClient(a.client(t)).CreateTopic(context.Background(), 1, 1, configs, topic); err != nil {
				t.Fatal(err)
			}
		}
	}
	reg := ta.cfg.SchemaRegistry
	id := registerBench(t, reg, "v-true-value", "AVRO", avsc)
	registerBench(t, reg, "v-full-value", "AVRO", avsc)
	registerBench(t, reg, "k-true-key", "AVRO", avsc)
	other := registerBench(t, reg, "elsewhere-value", "AVRO", []byte(`{"type":"record","name":"Other","fields":[{"name":"x","type":"int"}]}`))
	if failingID := registerBench(t, failing.cfg.SchemaRegistry, "v-true-value", "AVRO", avsc); failingID != id {
		t.Fatalf("ids %d and %d", id, failingID)
	}
	frame := func(id int, payload []byte) []byte {
		return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), payload...)
	}
	good, unframed, unknown, elsewhere := frame(id, payload), []byte("{}"), frame(987654, payload), frame(other, payload)
	notFramed := "value is not framed with a schema id (magic byte 0 and a 4-byte id)"
	type answer struct {
		code    int16
		msg     string           // prefix of the partition's message; "" none
		records map[int32]string // record errors: prefix of each message ("-": none)
	}
	vals := func(vs ...[]byte) []schemaRec {
		var rs []schemaRec
		for _, v := range vs {
			rs = append(rs, schemaRec{value: v})
		}
		return rs
	}
	refused := answer{kerr.InvalidRecord.Code, "record 1: " + notFramed + " (and 2 more records refused)", map[int32]string{
		1: notFramed,
		2: "value names schema id 987654, which the registry does not have",
		4: fmt.Sprintf("value's schema id %d is not registered under subject v-true-value", other),
	}}
	for _, tc := range []struct {
		name, topic string
		a           *testAgent
		codec       kgo.CompressionCodec
		badDelta    bool
		recs        []schemaRec
		want        answer
	}{
		{"good", "v-true", ta, kgo.NoCompression(), false, vals(good, good, nil), answer{}},
		{"refused", "v-true", ta, kgo.NoCompression(), false, vals(good, unframed, unknown, good, elsewhere), refused},
		{"refused gzip", "v-true", ta, kgo.GzipCompression(), false, vals(good, unframed, unknown, good, elsewhere), refused},
		{"refused zstd", "v-true", ta, kgo.ZstdCompression(), false, vals(good, unframed, unknown, good, elsewhere), refused},
		{"refused snappy", "v-true", ta, kgo.SnappyCompression(), false, vals(good, unframed, unknown, good, elsewhere), refused},
		{"full", "v-full", ta, kgo.NoCompression(), false, vals(good, frame(id, payload[:3])), answer{kerr.InvalidRecord.Code,
			fmt.Sprintf("record 1: value does not decode with schema id %d: ", id), map[int32]string{1: fmt.Sprintf("value does not decode with schema id %d: ", id)}}},
		{"full framed only", "v-true", ta, kgo.NoCompression(), false, vals(frame(id, payload[:3])), answer{}},
		{"batch fault first", "v-true", ta, kgo.NoCompression(), true, vals(unframed, unframed), answer{kerr.InvalidRecord.Code, "record 1 has offset delta 7", map[int32]string{1: "-"}}},
		{"key", "k-true", ta, kgo.NoCompression(), false, []schemaRec{{nil, unframed}, {frame(id, payload), nil}, {unframed, good}}, answer{kerr.InvalidRecord.Code,
			"record 2: key is not framed with a schema id (magic byte 0 and a 4-byte id)", map[int32]string{2: "key is not framed"}}},
		{"no registry", "v-true", none, kgo.NoCompression(), false, vals(good), answer{kerr.InvalidRecord.Code, errNoRegistry.Error(), nil}},
		{"registry fails", "v-true", failing, kgo.NoCompression(), false, vals(unframed, good, unframed), answer{kerr.KafkaStorageError.Code, "", map[int32]string{0: notFramed}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis = 11, -1, 30_000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = tc.topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = schemaTestBatch(t, tc.codec, tc.badDelta, tc.recs)
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(context.Background(), tc.a.client(t))
			if err != nil {
				t.Fatal(err)
			}
			sp := resp.Topics[0].Partitions[0]
			msg := ""
			if sp.ErrorMessage != nil {
				msg = *sp.ErrorMessage
			}
			if sp.ErrorCode != tc.want.code || !strings.HasPrefix(msg, tc.want.msg) || (tc.want.msg == "") != (msg == "") || len(sp.ErrorRecords) != len(tc.want.records) {
				t.Fatalf("code %d %q, %d record errors; want %d %q, %d", sp.ErrorCode, msg, len(sp.ErrorRecords), tc.want.code, tc.want.msg, len(tc.want.records))
			}
			for _, er := range sp.ErrorRecords {
				want, ok := tc.want.records[er.RelativeOffset]
				switch {
				case !ok:
					t.Errorf("record %d refused", er.RelativeOffset)
				case want == "-" && er.ErrorMessage != nil:
					t.Errorf("record %d: %q, want no message", er.RelativeOffset, *er.ErrorMessage)
				case want != "-" && (er.ErrorMessage == nil || !strings.HasPrefix(*er.ErrorMessage, want)):
					t.Errorf("record %d: %v, want %q", er.RelativeOffset, er.ErrorMessage, want)
				}
			}
		})
	}
	if n := counterValue(t, ta.metrics.schemaFailures.WithLabelValues("v-true", "unframed")); n != 4 {
		t.Errorf("%v unframed refusals counted, want 4", n)
	}
}

// schemaRec is a record's key and value.
type schemaRec struct{ key, value []byte }

// schemaTestBatch is a v2 batch of recs compressed with codec, record 1's
// offset delta 7 when badDelta.
func schemaTestBatch(t *testing.T, codec kgo.CompressionCodec, badDelta bool, recs []schemaRec) []byte {
	t.Helper()
	var data []byte
	for i, rc := range recs {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		if badDelta && i == 1 {
			r.OffsetDelta = 7
		}
		r.Key, r.Value = rc.key, rc.value
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		data = r.AppendTo(data)
	}
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	b.LastOffsetDelta = int32(len(recs) - 1)
	b.NumRecords = int32(len(recs))
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	b.Records = data
	c, err := kgo.DefaultCompressor(codec)
	if err != nil {
		t.Fatal(err)
	}
	if c != nil {
		var buf bytes.Buffer
		out, attrs := c.Compress(&buf, data)
		b.Attributes, b.Records = int16(attrs), bytes.Clone(out)
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	crcFix(raw)
	return raw
}
