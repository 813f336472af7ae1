package agent

import (
	"context"
	"encoding/binary"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"floe/kafkaproto"
	"floe/metadata"
	"floe/metadata/sqlite"
	"floe/storage"
	"floe/storage/mem"
)

func TestMain(m *testing.M) {
	// The parallel tests mostly wait (for flushes, sessions, leases, long
	// polls) rather than compute: run four per processor unless
	// -test.parallel says otherwise.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(4*runtime.GOMAXPROCS(0)))
	}
	goleak.VerifyTestMain(m,
		// Started by the SQLite driver and franz-go internals that outlive a test's Close.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
	)
}

type testAgent struct {
	*Agent
	store  metadata.Store
	bucket storage.Bucket
}

// newTestAgent starts an agent on 127.0.0.1:0 over SQLite in a temp dir and
// the given bucket (memory when nil), stopped at cleanup.
func newTestAgent(t testing.TB, bucket storage.Bucket, opts ...func(*Config)) *testAgent {
	t.Helper()
	return newTestAgentOver(t, bucket, nil, opts...)
}

// newParallelAgent marks t parallel and starts a test agent as
// newTestAgent(t, nil, opts...) does.
func newParallelAgent(t *testing.T, opts ...func(*Config)) *testAgent {
	t.Helper()
	t.Parallel()
	return newTestAgent(t, nil, opts...)
}

// newTestAgentOver is newTestAgent with the agent's store wrapped by wrap
// (when not nil) before the agent starts.
func newTestAgentOver(t testing.TB, bucket storage.Bucket, wrap func(metadata.Store) metadata.Store, opts ...func(*Config)) *testAgent {
	t.Helper()
	ctx := context.Background()
	sqliteStore, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	var store metadata.Store = sqliteStore
	if wrap != nil {
		store = wrap(store)
	}
	if bucket == nil {
		bucket = mem.New()
	}
	cfg := DevConfig()
	cfg.KafkaAddr = "127.0.0.1:0"
	cfg.HTTPAddr = "127.0.0.1:0"
	for _, o := range opts {
		o(&cfg)
	}
	var log *slog.Logger
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	a := startAgent(t, cfg, store, bucket, log, func() { sqliteStore.Close() })
	return &testAgent{Agent: a, store: sqliteStore, bucket: bucket}
}

// startAgent starts an agent with cfg over store and bucket (which the
// test's other agents may share) and, at cleanup, closes it and then calls
// done (the closing of what the test opened for it; nil for nothing).
func startAgent(t testing.TB, cfg Config, store metadata.Store, bucket storage.Bucket, log *slog.Logger, done func()) *Agent {
	t.Helper()
	a := New(cfg, store, bucket, log)
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Close(cctx); err != nil {
			t.Error(err)
		}
		if done != nil {
			done()
		}
	})
	return a
}

func (ta *testAgent) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(ta.KafkaAddr())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func (ta *testAgent) createTopic(t testing.TB, cl *kgo.Client, name string, partitions int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

// TestOneFlushIsOnePutAndOneCommit checks the economics: a flush holding 1 or
// 500 partitions costs exactly one PUT and one metadata transaction.
func TestOneFlushIsOnePutAndOneCommit(t *testing.T) {
	t.Parallel()
	for _, partitions := range []int32{1, 500} {
		ta := newTestAgent(t, nil, func(c *Config) { c.FlushInterval = 2 * time.Second })
		// Linger so every record is buffered before the first request, and
		// no idempotence so several requests may be in flight: every batch
		// then reaches the agent well within one flush interval.
		cl := ta.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(50*time.Millisecond),
			kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5))
		ta.createTopic(t, cl, "econ", partitions)
		ctx := context.Background()
		commitsBefore, err := ta.store.CommitCount(ctx)
		if err != nil {
			t.Fatal(err)
		}
		putsBefore := counterValue(t, ta.metrics.bucketOps.WithLabelValues("put"))

		var recs []*kgo.Record
		for p := range partitions {
			recs = append(recs, &kgo.Record{Topic: "econ", Partition: p, Value: []byte{byte(p)}})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		commits, err := ta.store.CommitCount(ctx)
		if err != nil {
			t.Fatal(err)
		}
		puts := counterValue(t, ta.metrics.bucketOps.WithLabelValues("put")) - putsBefore
		if puts != 1 || commits-commitsBefore != 1 {
			t.Fatalf("%d partitions: %v PUTs and %d commits for one flush, want 1 and 1", partitions, puts, commits-commitsBefore)
		}
		for _, r := range recs {
			if r.Offset != 0 {
				t.Fatalf("partition %d: offset %d, want 0", r.Partition, r.Offset)
			}
		}
	}
}

// TestBatcherDirectOneObject drives the batcher itself: batches for 500
// partitions cut at once make one object, one commit, dense offsets.
func TestBatcherDirectOneObject(t *testing.T) {
	ta := newParallelAgent(t, func(c *Config) { c.FlushInterval = time.Hour })
	ctx := context.Background()
	topic, err := ta.store.CreateTopic(ctx, "direct", 500, nil)
	if err != nil {
		t.Fatal(err)
	}
	var waiters []*produceWaiter
	for p := range int32(500) {
		for range 2 {
			b := testBatch(t, 3)
			pw, err := ta.batcher.add(topic.ID, p, produceBatch{data: b, records: 3, pid: -1})
			if err != nil {
				t.Fatal(err)
			}
			waiters = append(waiters, pw)
		}
	}
	before, _ := ta.store.CommitCount(ctx)
	ta.batcher.cut(0)
	for i, pw := range waiters {
		<-pw.done
		if pw.err != nil {
			t.Fatal(pw.err)
		}
		if want := int64(i%2) * 3; pw.baseOffset != want {
			t.Fatalf("waiter %d: base offset %d, want %d", i, pw.baseOffset, want)
		}
	}
	after, _ := ta.store.CommitCount(ctx)
	if after-before != 1 {
		t.Fatalf("%d commits, want 1", after-before)
	}
	var objects int
	ta.bucket.List(ctx, "", func(storage.ObjectInfo) error { objects++; return nil })
	if objects != 1 {
		t.Fatalf("%d objects, want 1", objects)
	}
}

// testBatch builds a valid uncompressed batch of n records with franz-go's
// own encoder.
func testBatch(t *testing.T, n int) []byte {
	t.Helper()
	var recs []byte
	for i := range n {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Value = []byte{byte(i)}
		// Length counts the bytes after its own varint (one byte here).
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	b.LastOffsetDelta = int32(n - 1)
	b.NumRecords = int32(n)
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	b.Records = recs
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	crcFix(raw)
	if _, err := kafkaproto.ValidateProduced(raw); err != nil {
		t.Fatalf("test batch invalid: %v", err)
	}
	if err := kafkaproto.ValidateRecords(raw, kafkaproto.RecordRules{}); err != nil {
		t.Fatalf("test batch records invalid: %v", err)
	}
	return raw
}

func TestProduceFetchRoundTrip(t *testing.T) {
	ta := newParallelAgent(t)
	cl := ta.client(t, kgo.ConsumeTopics("rt"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 100 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "rt", Key: []byte{byte(i)}, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var got int
	for got < 100 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 100", got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(got) || r.Key[0] != byte(got) {
				t.Fatalf("record %d: offset %d key %v", got, r.Offset, r.Key)
			}
			got++
		})
	}
}

// TestApiVersionsAboveOurs checks KIP-511: an ApiVersions request at a
// version we do not speak gets a v0 body with UNSUPPORTED_VERSION and our
// ranges, with a v0 response header.
func TestApiVersionsAboveOurs(t *testing.T) {
	ta := newParallelAgent(t)
	rc := dialRaw(t, ta)
	// key 18, version 99, correlation 7, client id "x", then a body we never read.
	req := []byte{0, 18, 0, 99, 0, 0, 0, 7, 0, 1, 'x', 0, 1, 2, 3}
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(req)))
	rc.c.Write(append(frame, req...))
	corr, body, err := rc.read()
	if err != nil {
		t.Fatal(err)
	}
	if corr != 7 {
		t.Fatalf("correlation id %d, want 7", corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d, want UNSUPPORTED_VERSION", resp.ErrorCode)
	}
	found := false
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 18 {
			found = k.MinVersion == 0 && k.MaxVersion == 4
		}
	}
	if !found {
		t.Fatalf("ApiVersions range missing or wrong: %+v", resp.ApiKeys)
	}
}
