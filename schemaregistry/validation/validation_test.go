package validation_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"

	"floe/metadata/sqlite"
	"floe/schemaregistry"
	"floe/schemaregistry/validation"
)

const (
	avroOrder = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},{"name":"amount","type":"double"}]}`
	jsonOrder = `{"title":"shop.Order","type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`
	protoFile = `syntax = "proto3";
package shop;
message Order { int64 id = 1; string note = 2; message Line { int32 qty = 1; } }
message Refund { int64 id = 1; }`
)

type env struct {
	t   *testing.T
	reg *schemaregistry.Server
	cl  *sr.Client
}

func newEnv(t *testing.T) *env {
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	reg := schemaregistry.New(schemaregistry.Config{Store: store})
	hs := httptest.NewServer(reg)
	t.Cleanup(hs.Close)
	cl, err := sr.NewClient(sr.URLs(hs.URL))
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, reg: reg, cl: cl}
}

func (e *env) register(subject, schema string, typ sr.SchemaType) int {
	e.t.Helper()
	s, err := e.cl.CreateSchema(context.Background(), subject, sr.Schema{Schema: schema, Type: typ})
	if err != nil {
		e.t.Fatalf("register %s: %v", subject, err)
	}
	return s.ID
}

func frame(id int, index []int, payload []byte) []byte {
	var h sr.ConfluentHeader
	b, err := h.AppendEncode(nil, id, index)
	if err != nil {
		panic(err)
	}
	return append(b, payload...)
}

// avroOrderPayload encodes {id, amount} by hand: a zigzag long, then a
// little-endian double.
func avroOrderPayload(id int64) []byte {
	b := protowire.AppendVarint(nil, protowire.EncodeZigZag(id))
	return append(b, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f) // 1.0
}

func TestCheck(t *testing.T) {
	e := newEnv(t)
	avroID := e.register("orders-value", avroOrder, sr.TypeAvro)
	jsonID := e.register("events-value", jsonOrder, sr.TypeJSON)
	protoID := e.register("protos-value", protoFile, sr.TypeProtobuf)
	recordID := e.register("shop.Order", avroOrder, sr.TypeAvro) // the same schema: the same id
	if recordID != avroID {
		t.Fatalf("the same schema under a second subject got id %d, want %d", recordID, avroID)
	}
	e.register("protos-shop.Refund", protoFile, sr.TypeProtobuf)

	protoOrder := protowire.AppendTag(nil, 1, protowire.VarintType)
	protoOrder = protowire.AppendVarint(protoOrder, 7)
	badProto := protowire.AppendTag(nil, 1, protowire.BytesType) // id as bytes, truncated
	badProto = append(badProto, 9, 'x')

	id := validation.Rule{Mode: validation.ID}
	full := validation.Rule{Mode: validation.Full}
	recordName := validation.Rule{Mode: validation.Full, Strategy: validation.RecordName}
	topicRecord := validation.Rule{Mode: validation.Full, Strategy: validation.TopicRecordName}
	for _, c := range []struct {
		name  string
		topic string
		key   bool
		rule  validation.Rule
		data  []byte
		want  validation.Reason // "" accepted
	}{
		{"off takes anything", "orders", false, validation.Rule{}, []byte("junk"), ""},
		{"null value is not checked", "orders", false, full, nil, ""},
		{"avro framed", "orders", false, id, frame(avroID, nil, []byte("not avro")), ""},
		{"avro full", "orders", false, full, frame(avroID, nil, avroOrderPayload(5)), ""},
		{"avro full truncated", "orders", false, full, frame(avroID, nil, avroOrderPayload(5)[:3]), validation.Invalid},
		{"unframed", "orders", false, id, []byte(`{"id":1}`), validation.Unframed},
		{"unknown id", "orders", false, id, frame(9999, nil, nil), validation.UnknownID},
		{"id of another subject", "orders", false, id, frame(jsonID, nil, []byte(`{"id":1}`)), validation.WrongSubject},
		{"key side uses -key", "orders", true, id, frame(avroID, nil, avroOrderPayload(1)), validation.WrongSubject},
		{"json full", "events", false, full, frame(jsonID, nil, []byte(`{"id":1}`)), ""},
		{"json full, wrong type", "events", false, full, frame(jsonID, nil, []byte(`{"id":"one"}`)), validation.Invalid},
		{"json full, not json", "events", false, full, frame(jsonID, nil, []byte(`{"id":`)), validation.Invalid},
		{"protobuf full", "protos", false, full, frame(protoID, []int{0}, protoOrder), ""},
		{"protobuf nested message", "protos", false, full, frame(protoID, []int{0, 0}, protoOrder), ""},
		{"protobuf does not decode", "protos", false, full, frame(protoID, []int{0}, badProto), validation.Invalid},
		{"protobuf index names no message", "protos", false, full, frame(protoID, []int{5}, protoOrder), validation.BadIndex},
		{"protobuf indexes missing", "protos", false, full, frame(protoID, nil, nil)[:5], validation.BadIndex},
		// Under TopicNameStrategy in mode true the indexes are not read: a
		// serializer that writes none (kafkajs's) is framed well enough.
		{"protobuf true, no indexes written", "protos", false, id, append(frame(protoID, nil, nil)[:5], 0x08, 0xac, 0x02, 0x12, 0x00), ""},
		{"record name strategy", "anything", false, recordName, frame(avroID, nil, avroOrderPayload(2)), ""},
		{"record name strategy, json title unregistered", "anything", false, recordName, frame(jsonID, nil, []byte(`{"id":1}`)), validation.WrongSubject},
		{"topic record name strategy", "protos", false, topicRecord, frame(protoID, []int{1}, protoOrder), ""},
		{"topic record name strategy, other message", "protos", false, topicRecord, frame(protoID, []int{0}, protoOrder), validation.WrongSubject},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := validation.Check(context.Background(), e.reg, c.topic, c.key, c.rule, c.data)
			var r *validation.Refusal
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && !errors.As(err, &r):
				t.Fatalf("got %v, want a refusal for %s", err, c.want)
			case c.want != "" && r.Reason != c.want:
				t.Fatalf("refused for %s (%s), want %s", r.Reason, r.Msg, c.want)
			}
		})
	}
}

func TestRulesOf(t *testing.T) {
	for _, c := range []struct {
		configs map[string]string
		want    validation.Rules
	}{
		{nil, validation.Rules{}},
		{map[string]string{"floe.value.schema.validation": "full"}, validation.Rules{Value: validation.Rule{Mode: validation.Full}}},
		{map[string]string{"confluent.key.schema.validation": "TRUE",
			"confluent.key.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy"},
			validation.Rules{Key: validation.Rule{Mode: validation.ID, Strategy: validation.RecordName}}},
		{map[string]string{"redpanda.value.schema.id.validation": "true", "floe.value.schema.validation": "false"},
			validation.Rules{}}, // floe's name wins
		{map[string]string{"redpanda.value.schema.id.validation": "true", "confluent.value.schema.validation": "full"},
			validation.Rules{Value: validation.Rule{Mode: validation.Full}}}, // and Confluent's Redpanda's
	} {
		if got := validation.RulesOf(c.configs); got != c.want {
			t.Errorf("RulesOf(%v) = %+v, want %+v", c.configs, got, c.want)
		}
	}
	for v, ok := range map[string]bool{"true": true, "False": true, "full": true, "yes": false, "": false} {
		if got := validation.CheckMode(v) == ""; got != ok {
			t.Errorf("CheckMode(%q) accepted %v, want %v", v, got, ok)
		}
	}
	for v, ok := range map[string]bool{"TopicNameStrategy": true, "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy": true,
		"com.example.RecordNameStrategy": false, "Topic": false} {
		if got := validation.CheckStrategy(v) == ""; got != ok {
			t.Errorf("CheckStrategy(%q) accepted %v, want %v", v, got, ok)
		}
	}
}

// countingRegistry counts look-ups.
type countingRegistry struct {
	validation.Registry
	byID, holds int
}

func (c *countingRegistry) SchemaByID(ctx context.Context, id int) (schemaregistry.Schema, error) {
	c.byID++
	return c.Registry.SchemaByID(ctx, id)
}

func (c *countingRegistry) SubjectHasID(ctx context.Context, subject string, id int) (bool, error) {
	c.holds++
	return c.Registry.SubjectHasID(ctx, subject, id)
}

// TestCheckerLooksUpOncePerBatch: a batch of records of one schema costs
// one look-up of the schema and one of the subject, in both modes; a
// refused id is refused for every record without asking again.
func TestCheckerLooksUpOncePerBatch(t *testing.T) {
	e := newEnv(t)
	id := e.register("orders-value", avroOrder, sr.TypeAvro)
	for _, mode := range []validation.Mode{validation.ID, validation.Full} {
		reg := &countingRegistry{Registry: e.reg}
		c := validation.NewChecker(reg, "orders", validation.Rules{Value: validation.Rule{Mode: mode}})
		for i := range 50 {
			if err := c.Check(context.Background(), false, frame(id, nil, avroOrderPayload(int64(i)))); err != nil {
				t.Fatal(err)
			}
		}
		if reg.byID != 1 || reg.holds != 1 {
			t.Fatalf("mode %d: %d SchemaByID, %d SubjectHasID for 50 records of one schema; want 1 and 1", mode, reg.byID, reg.holds)
		}
		other := &countingRegistry{Registry: e.reg}
		c = validation.NewChecker(other, "elsewhere", validation.Rules{Value: validation.Rule{Mode: mode}})
		for range 10 {
			var r *validation.Refusal
			if err := c.Check(context.Background(), false, frame(id, nil, avroOrderPayload(1))); !errors.As(err, &r) || r.Reason != validation.WrongSubject {
				t.Fatalf("wrong subject: %v", err)
			}
		}
		if other.byID != 1 || other.holds != 1 {
			t.Fatalf("mode %d: %d SchemaByID, %d SubjectHasID for 10 refused records; want 1 and 1", mode, other.byID, other.holds)
		}
	}
}
