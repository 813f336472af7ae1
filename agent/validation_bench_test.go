package agent

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/internal/budget"
	"floe/kafkaproto"
	"floe/metadata"
	"floe/schemaregistry"
	"floe/storage/faulty"
	"floe/storage/mem"
)

// benchRecords is where package validation keeps the 1 KiB records (twenty
// fields) and their schemas that its own benchmarks decode.
const benchRecords = "../schemaregistry/validation/testdata/bench"

// BenchmarkProduceValidation is the CPU a produce costs with schema
// validation off, true (framed with an id registered under the subject) and
// full (the payload decodes too), for Avro, JSON Schema and Protobuf
// values of 1 KiB: requests of one uncompressed 64-record batch handed to
// the agent's Produce handler as the connection reader hands them (a frame
// charged to the request budget), with acks=0 so that the loop is not
// paced by flushes (cut at 4 MiB); one acks=-1 request at the end waits
// until every batch is in the bucket and committed. MB/s is the wall rate on this
// machine; cpu-s/GB is the process's CPU (user and system: validation,
// batching, object encoding, the PUT to memory and the SQLite commits) per
// GB produced, the figure to compare across modes.
func BenchmarkProduceValidation(b *testing.B) {
	for _, f := range []struct {
		name, schemaType, schema, record string
		index                            bool // Protobuf: message indexes, [0]
	}{
		{"avro", "AVRO", "order.avsc", "order.avro", false},
		{"json", "JSON", "order.schema.json", "order.json", false},
		{"protobuf", "PROTOBUF", "order.proto", "order.pb", true},
	} {
		b.Run(f.name, func(b *testing.B) {
			schema := readBenchFile(b, f.schema)
			payload := readBenchFile(b, f.record)
			for _, mode := range []string{"off", "true", "full"} {
				ta, topic := benchValidationAgent(b, f.name, mode)
				id := registerBench(b, ta.cfg.SchemaRegistry, topic+"-value", f.schemaType, schema)
				value := binary.BigEndian.AppendUint32([]byte{0}, uint32(id))
				if f.index {
					value = append(value, 0)
				}
				value = append(value, payload...)
				batch := benchBatch(b, value, 64)
				b.Run(mode, func(b *testing.B) { benchProduce(b, ta, topic, batch) })
			}
		})
	}
}

// benchValidationAgent is an agent of its own (nothing left of another
// mode's run) with a registry on its store, its bucket keeping no object
// (memory stays flat however much is produced), and a topic with value
// validation mode ("off": no config).
func benchValidationAgent(b *testing.B, format, mode string) (*testAgent, string) {
	var store metadata.Store
	bucket := faulty.New(mem.New())
	bucket.AfterPut = func(key string) error { return bucket.Bucket.Delete(context.Background(), key) }
	ta := newTestAgentOver(b, bucket, func(s metadata.Store) metadata.Store { store = s; return s }, func(c *Config) {
		c.SchemaRegistry = schemaregistry.New(schemaregistry.Config{Store: store})
		c.SchemaRegistryAddr = ""
		// Flushes cut by size only (but the last, see benchProduce): the
		// per-flush cost (a PUT, a commit) is then the same per GB
		// whatever the rate.
		c.FlushInterval, c.FlushBytes, c.BufferBytes = time.Hour, 4<<20, 32<<20
	})
	topic := format + "-" + mode
	configs := map[string]*string{}
	if mode != "off" {
		configs["floe.value.schema.validation"] = &mode
	}
	resp, err := kadm.NewClient(ta.client(b)).CreateTopic(context.Background(), 1, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		b.Fatalf("create %s: %v", topic, err)
	}
	return ta, topic
}

// benchProduce produces batch to topic's partition 0 b.N times and then
// waits for all of it to be committed. The loop is b.N's, not b.Loop's, so
// that the wait is timed too.
func benchProduce(b *testing.B, ta *testAgent, topic string, batch []byte) {
	ctx := context.Background()
	prev := make(chan struct{})
	close(prev)
	// request is a Produce of batch as the connection reader hands it over:
	// prev closed (its turn has come), next closed by the handler once the
	// batch is with the batcher.
	request := func(acks int16) *request {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 11, acks, 30_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch // never written to
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return &request{req: req, frame: budget.NewFrame(ta.reqBudget.Claim(false), nil, nil), prev: prev, next: make(chan struct{})}
	}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for range b.N {
		r := request(0)
		resp, err := ta.handleProduce(ctx, r)
		r.frame.Unref() // the connection's reference, dropped once answered
		if resp != nil || err != nil {
			b.Fatalf("acks=0 produce: %v %v", resp, err)
		}
	}
	// The last request waits for its flush, cut as soon as the batch is
	// added (flushes are otherwise cut by size), which commits after every
	// earlier one.
	r := request(-1)
	done := make(chan struct{})
	var resp kmsg.Response
	var err error
	go func() {
		defer close(done)
		resp, err = ta.handleProduce(ctx, r)
		r.frame.Unref()
	}()
	<-r.next
	ta.batcher.cut(0)
	<-done
	if err != nil {
		b.Fatal(err)
	}
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		b.Fatalf("acks=-1 produce: error code %d", code)
	}
	b.StopTimer()
	gb := float64(b.N+1) * float64(len(batch)) / 1e9
	b.ReportMetric((cpuTime(b)-cpu0).Seconds()/gb, "cpu-s/GB")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func readBenchFile(b testing.TB, name string) []byte {
	data, err := os.ReadFile(filepath.Join(benchRecords, name))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// registerBench registers schema under subject through the registry's
// HTTP handler and returns its id.
func registerBench(b testing.TB, reg SchemaRegistry, subject, schemaType string, schema []byte) int {
	body, _ := json.Marshal(map[string]string{"schema": string(schema), "schemaType": schemaType})
	w := httptest.NewRecorder()
	reg.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/subjects/"+subject+"/versions", bytes.NewReader(body)))
	var created struct{ ID int }
	if err := json.Unmarshal(w.Body.Bytes(), &created); err != nil || w.Code != http.StatusOK {
		b.Fatalf("register %s: %d %s", subject, w.Code, w.Body)
	}
	return created.ID
}

// benchBatch is an uncompressed v2 batch of n records, each with value,
// no key.
func benchBatch(b *testing.B, value []byte, n int) []byte {
	var recs []byte
	ts := time.Now().UnixMilli()
	for i := range n {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Value = value
		// Length counts the bytes after its own varint (one byte while
		// Length is 0).
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.FirstTimestamp, rb.MaxTimestamp = ts, ts
	rb.LastOffsetDelta = int32(n - 1)
	rb.NumRecords = int32(n)
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = -1, -1, -1
	rb.Records = recs
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	crcFix(raw)
	if _, err := validateProduceRecords(11, raw, 1<<30, kafkaproto.RecordRules{}); err != nil {
		b.Fatalf("bench batch invalid: %v", err)
	}
	return raw
}
