package integration

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// The schema registry in floe's agents, from outside: franz-go's pkg/sr
// client and pkg/sr/serde against floe dev and against two agents on
// PostgreSQL and MinIO, and broker-side validation of produced records.
// The registry's API fidelity is tested in package schemaregistry; these
// tests check that every agent serves one registry, on its own port and
// under /schema-registry/, and that produce enforces it.

const orderV1 = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},{"name":"amount","type":"double"}]}`

// orderV2 adds an optional field: BACKWARD compatible.
const orderV2 = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},{"name":"amount","type":"double"},{"name":"note","type":["null","string"],"default":null}]}`

type order struct {
	ID     int64   `avro:"id"`
	Amount float64 `avro:"amount"`
}

func srClient(t *testing.T, url string) *sr.Client {
	t.Helper()
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// orderSerde registers schema id for order values.
func orderSerde(t *testing.T, id int) *sr.Serde {
	t.Helper()
	schema := avro.MustParse(orderV1)
	var serde sr.Serde
	serde.Register(id, order{},
		sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schema, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(schema, b, v) }))
	return &serde
}

func createTopicWith(t *testing.T, ctx context.Context, addr, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

func TestSchemaRegistryOnFloeDev(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 2*time.Minute)
	own := srClient(t, "http://"+p.RegistryAddr)
	mounted := srClient(t, "http://"+p.HTTPAddr+"/schema-registry")

	v1, err := own.CreateSchema(ctx, "orders-value", sr.Schema{Schema: orderV1})
	if err != nil {
		t.Fatal(err)
	}
	// Evolve through the mounted registry: the same registry.
	v2, err := mounted.CreateSchema(ctx, "orders-value", sr.Schema{Schema: orderV2})
	if err != nil {
		t.Fatal(err)
	}
	if v1.Version != 1 || v2.Version != 2 || v2.ID <= v1.ID {
		t.Fatalf("versions %d, %d ids %d, %d: want 1, 2 and increasing ids", v1.Version, v2.Version, v1.ID, v2.ID)
	}
	// BACKWARD (the default) refuses a change that drops a field without a default.
	_, err = own.CreateSchema(ctx, "orders-value", sr.Schema{Schema: `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"string"}]}`})
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.ErrorCode != 409 && re.ErrorCode != 40901 {
		t.Fatalf("incompatible schema registered: %v", err)
	}
	got, err := mounted.SchemaByID(ctx, v1.ID)
	if err != nil || got.Schema != orderV1 {
		t.Fatalf("schema %d through /schema-registry: %q, %v", v1.ID, got.Schema, err)
	}
	// The error body of an unknown subject, byte for byte.
	resp, err := http.Get("http://" + p.RegistryAddr + "/subjects/absent/versions")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || strings.TrimSpace(string(body)) != `{"error_code":40401,"message":"Subject 'absent' not found."}` {
		t.Fatalf("unknown subject: %d %s", resp.StatusCode, body)
	}

	validationRound(t, ctx, p.Addr, own, v1.ID, "orders")
}

// validationRound creates topic with full value validation and produces,
// in one request, good records to partition 0 and bad ones (unframed, an
// unknown id, framed but not decoding, an id of another subject) to
// partitions 1-4: the good land and read back, each bad partition is
// refused with INVALID_RECORD.
func validationRound(t *testing.T, ctx context.Context, addr string, reg *sr.Client, id int, topic string) {
	t.Helper()
	full := "full"
	createTopicWith(t, ctx, addr, topic, 5, map[string]*string{"confluent.value.schema.validation": &full})
	other, err := reg.CreateSchema(ctx, "elsewhere-value", sr.Schema{Schema: `{"type":"record","name":"Other","fields":[{"name":"x","type":"int"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	serde := orderSerde(t, id)
	good, err := serde.Encode(order{ID: 7, Amount: 12.5})
	if err != nil {
		t.Fatal(err)
	}
	var h sr.ConfluentHeader
	frame := func(id int, payload []byte) []byte {
		b, _ := h.AppendEncode(nil, id, nil)
		return append(b, payload...)
	}
	bad := map[int32][]byte{
		1: []byte(`{"id":7}`),                  // unframed
		2: frame(987654, good[5:]),             // unknown id
		3: frame(id, good[5:6]),                // truncated: does not decode
		4: frame(other.ID, []byte{0x02, 0x04}), // another subject's schema
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(50*time.Millisecond), kgo.RecordRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := []*kgo.Record{{Topic: topic, Partition: 0, Value: good}}
	for part, v := range bad {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Value: v})
	}
	results := cl.ProduceSync(ctx, recs...)
	for _, r := range results {
		switch {
		case r.Record.Partition == 0 && r.Err != nil:
			t.Fatalf("a good record beside bad ones: %v", r.Err)
		case r.Record.Partition != 0 && !errors.Is(r.Err, kerr.InvalidRecord):
			t.Fatalf("bad record to partition %d: %v, want INVALID_RECORD", r.Record.Partition, r.Err)
		}
	}
	back := consumeFrom(t, ctx, addr, topic, 1)
	var o order
	if err := serde.Decode(back[0].Value, &o); err != nil || o != (order{ID: 7, Amount: 12.5}) {
		t.Fatalf("read back %+v, %v", o, err)
	}
}

func TestSchemaRegistryAcrossAgents(t *testing.T) {
	c := newCluster(t, "registry_agents")
	agents := c.startAgents(t, 2)
	ctx := testContext(t, 2*time.Minute)
	first, second := srClient(t, "http://"+agents[0].RegistryAddr), srClient(t, "http://"+agents[1].RegistryAddr)
	v1, err := first.CreateSchema(ctx, "orders-value", sr.Schema{Schema: orderV1})
	if err != nil {
		t.Fatal(err)
	}
	// Read through the other agent at once: the store is the registry.
	got, err := second.SchemaByID(ctx, v1.ID)
	if err != nil || got.Schema != orderV1 {
		t.Fatalf("schema %d through the second agent: %q, %v", v1.ID, got.Schema, err)
	}
	v2, err := second.CreateSchema(ctx, "orders-value", sr.Schema{Schema: orderV2})
	if err != nil {
		t.Fatal(err)
	}
	if v2.Version != 2 || v2.ID <= v1.ID {
		t.Fatalf("second version through the second agent: version %d id %d", v2.Version, v2.ID)
	}
	// The mounted registry of the first agent sees both versions.
	resp, err := http.Get("http://" + agents[0].HTTPAddr + "/schema-registry/subjects/orders-value/versions")
	if err != nil {
		t.Fatal(err)
	}
	var versions []int
	err = json.NewDecoder(resp.Body).Decode(&versions)
	resp.Body.Close()
	if err != nil || len(versions) != 2 {
		t.Fatalf("versions through the first agent: %v, %v", versions, err)
	}
	// A schema registered through one agent validates records produced
	// through the other.
	validationRound(t, ctx, agents[1].Addr, first, v1.ID, "orders")
}
