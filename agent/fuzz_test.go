package agent

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
	"floe/metadata/sqlite"
	"floe/storage/mem"
)

// FuzzAgentRequest sends each input as one request frame (the input is the
// frame's body: header and request; the size prefix is added) on a fresh
// TCP connection to one in-process agent, started once per fuzz process.
// It fails when a handler panics (conn.go recovers the panic and logs
// "handler panic", which the agent's logger here records), or when the
// agent no longer answers ApiVersions on a new connection afterwards.
//
// The seeds are a filled request (one element in every array, every field
// set) of every version of every API the agent registers, so every request
// decoder reachable from the network and every handler is a starting point.
//
// Each input is cut off after fuzzWait: a long-polling Fetch or JoinGroup
// runs on in the agent while the next inputs are sent. A panic such a
// request hits later is charged to a later input, which then does not
// reproduce alone; the log record names the API key and version.
func FuzzAgentRequest(f *testing.F) {
	fa := startFuzzAgent(f)
	for _, v := range apis.All() {
		for version := v.AdvertisedMin; version <= v.Max; version++ {
			f.Add(fa.seed(f, v.Key, version, nil))
		}
	}
	// Produce's record validation decompresses: one seed per codec.
	produce, _ := apis.Lookup(int16(kmsg.Produce))
	for _, codec := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		c, err := kgo.DefaultCompressor(codec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(fa.seed(f, produce.Key, produce.Max, fuzzBatch(f, c)))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		fa.send(frame)
		if err := fa.apiVersions(); err != nil {
			t.Fatalf("agent does not answer ApiVersions after a frame of %d bytes: %v", len(frame), err)
		}
		if p := fa.panics.take(); len(p) > 0 {
			t.Fatalf("handler panic:\n%s", strings.Join(p, "\n"))
		}
	})
}

const (
	// fuzzTopic exists from the start; every string of the seeds is it,
	// so the seeds name a real topic, group, member and transactional id.
	fuzzTopic = "fuzz"
	// fuzzWait bounds how long one input waits for its answer.
	fuzzWait = 200 * time.Millisecond
	// fuzzMaxPartitions and fuzzMaxTopics bound what fuzzed CreateTopics,
	// CreatePartitions and auto-creating Metadata requests may create, so
	// that a mutated partition count costs no minutes-long transaction.
	fuzzMaxPartitions = 16
	fuzzMaxTopics     = 64
)

type fuzzAgent struct {
	a       *Agent
	panics  *panicLog
	topicID metadata.TopicID
	batch   []byte // a valid v2 batch, the seeds' produced records
}

// startFuzzAgent starts an agent over SQLite in a temp dir and a memory
// bucket, with fuzzTopic created, stopped when f's tests end.
func startFuzzAgent(f *testing.F) *fuzzAgent {
	ctx := context.Background()
	sq, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "meta.db"))
	if err != nil {
		f.Fatal(err)
	}
	store := &fuzzStore{Store: sq}
	topic, err := store.CreateTopic(ctx, fuzzTopic, 2, nil)
	if err != nil {
		f.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.KafkaAddr = "127.0.0.1:0"
	cfg.HTTPAddr = ""
	cfg.FlushInterval = 5 * time.Millisecond
	cfg.AutoCreateTopics = true
	cfg.DefaultPartitions = 2
	cfg.MaxRequestSize = 1 << 20
	panics := &panicLog{}
	a := New(cfg, store, mem.New(), slog.New(&panicHandler{log: panics}))
	if err := a.Start(ctx); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Close(cctx); err != nil {
			f.Error(err)
		}
		sq.Close()
	})
	return &fuzzAgent{a: a, panics: panics, topicID: topic.ID, batch: fuzzBatch(f, nil)}
}

// fuzzBatch is a valid v2 batch of two records, compressed with codec
// unless it is nil.
func fuzzBatch(f *testing.F, codec kgo.Compressor) []byte {
	var recs []byte
	for i := range 2 {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Key, r.Value = []byte("k"), []byte("v")
		r.Headers = []kmsg.Header{{Key: "h", Value: []byte("x")}}
		// Length counts the bytes after its own (one-byte) varint.
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	b.LastOffsetDelta = 1
	b.NumRecords = 2
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	b.Records = recs
	if codec != nil {
		var buf bytes.Buffer
		data, c := codec.Compress(&buf, recs)
		b.Attributes, b.Records = int16(c), bytes.Clone(data)
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	crcFix(raw)
	if err := kafkaproto.ValidateRecords(raw, kafkaproto.RecordRules{}); err != nil {
		f.Fatalf("fuzz batch invalid: %v", err)
	}
	return raw
}

// seed returns the frame body of a filled request for key at version; a
// Produce carries records (fa.batch when nil).
func (fa *fuzzAgent) seed(f *testing.F, key, version int16, records []byte) []byte {
	req := kmsg.RequestForKey(key)
	if req == nil {
		f.Fatalf("kmsg does not know registered api key %d", key)
	}
	fa.fill(reflect.ValueOf(req).Elem(), "", 0)
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		r.TransactionID, r.Acks = nil, -1
		if records != nil {
			r.Topics[0].Partitions[0].Records = records
		}
	case *kmsg.FetchRequest:
		// A session id we never handed out is answered at once, without
		// reading anything.
		r.SessionID, r.SessionEpoch = 0, -1
	case *kmsg.CreateTopicsRequest:
		// Both a count and an assignment is refused before any other check.
		r.Topics[0].Topic, r.Topics[0].ReplicaAssignment = fuzzTopic+"-new", nil
		r.Topics[0].Configs[0].Name = "cleanup.policy"
		r.Topics[0].Configs[0].Value = kmsg.StringPtr("compact")
	case *kmsg.CreatePartitionsRequest:
		r.Topics[0].Count, r.Topics[0].Assignment = 3, nil
	case *kmsg.DescribeConfigsRequest:
		r.Resources[0].ResourceType = kmsg.ConfigResourceTypeTopic
	case *kmsg.JoinGroupRequest:
		// A new member, with timeouts the agent accepts.
		r.MemberID, r.InstanceID = "", nil
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10_000, 10_000
		r.ProtocolType, r.Protocols[0].Name = "consumer", "range"
	case *kmsg.ConsumerGroupHeartbeatRequest:
		// A new member (epoch 0) with the default assignor, in a group
		// that JoinGroup's seeds do not make a classic one.
		r.Group, r.MemberEpoch, r.InstanceID, r.ServerAssignor = fuzzTopic+"-848", 0, nil, nil
		r.RebalanceTimeoutMillis = 10_000
	}
	req.SetVersion(version)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID(fuzzTopic)).AppendRequest(nil, req, 1)[4:]
}

// fill sets every field of v (a kmsg request or one of its parts), by
// reflection so that it keeps up with kmsg: strings are fuzzTopic, numbers
// 1, booleans true, every array gets one filled element. A few fields get
// values that the agent would otherwise refuse before doing anything.
func (fa *fuzzAgent) fill(v reflect.Value, name string, depth int) {
	if depth > 8 {
		return
	}
	switch name {
	case "Version", "UnknownTags":
		return // the version is set by SetVersion; tags stay empty
	case "Records":
		v.SetBytes(fa.batch)
		return
	case "TopicID":
		v.Set(reflect.ValueOf(fa.topicID).Convert(v.Type()))
		return
	case "ReplicaID", "LeaderEpoch", "CurrentLeaderEpoch":
		v.SetInt(-1) // a consumer, not a follower; no epoch checks
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fuzzTopic)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		v.SetInt(1)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fa.fill(p.Elem(), "", depth+1)
		v.Set(p)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte(fuzzTopic))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fa.fill(s.Index(0), "", depth+1)
		v.Set(s)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fa.fill(v.Field(i), v.Type().Field(i).Name, depth+1)
			}
		}
	}
}

// dial connects with linger 0, so that closing sends a reset and the
// thousands of connections of a fuzz run leave no ports in TIME_WAIT.
func (fa *fuzzAgent) dial() (net.Conn, error) {
	c, err := net.DialTimeout("tcp", fa.a.KafkaAddr(), time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.(*net.TCPConn).SetLinger(0)
	return c, nil
}

// send writes frame with its size prefix and reads one answer, for at most
// fuzzWait. Whatever happens (an answer, the agent closing the connection,
// nothing) is fine: only panics and a stuck agent fail.
func (fa *fuzzAgent) send(frame []byte) {
	c, err := fa.dial()
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(fuzzWait))
	wire := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(frame)), uint32(len(frame)))
	if _, err := c.Write(append(wire, frame...)); err != nil {
		return
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return
	}
	_, _ = io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:])))
}

// apiVersions checks that the agent answers an ApiVersions v3 request on a
// new connection, with its registrations and no error.
func (fa *fuzzAgent) apiVersions() error {
	c, err := fa.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "floe-fuzz", "1"
	if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 42)); err != nil {
		return err
	}
	frame, err := kafkaproto.ReadFrame(c, 1<<20)
	if err != nil {
		return err
	}
	// The ApiVersions response header is v0: the correlation id alone.
	if len(frame) < 4 || binary.BigEndian.Uint32(frame) != 42 {
		return errors.New("answer with the wrong correlation id")
	}
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if err := resp.ReadFrom(frame[4:]); err != nil {
		return err
	}
	if resp.ErrorCode != 0 || len(resp.ApiKeys) != len(apis.All()) {
		return fmt.Errorf("error code %d, %d api keys", resp.ErrorCode, len(resp.ApiKeys))
	}
	return nil
}

// fuzzStore refuses to create more than fuzzMaxTopics topics or topics of
// more than fuzzMaxPartitions partitions, and to delete fuzzTopic, which
// the seeds need. Everything else goes to the real store.
type fuzzStore struct {
	metadata.Store
	mu     sync.Mutex
	topics int // created through this store
}

func (s *fuzzStore) CreateTopic(ctx context.Context, name string, partitions int32, configs map[string]string) (metadata.Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if partitions > fuzzMaxPartitions || s.topics >= fuzzMaxTopics {
		return metadata.Topic{}, fmt.Errorf("fuzz store: %d partitions with %d topics: over the fuzz limits", partitions, s.topics)
	}
	t, err := s.Store.CreateTopic(ctx, name, partitions, configs)
	if err == nil {
		s.topics++
	}
	return t, err
}

func (s *fuzzStore) CreatePartitions(ctx context.Context, name string, total int32) error {
	if total > fuzzMaxPartitions {
		return fmt.Errorf("fuzz store: %d partitions: over the fuzz limit", total)
	}
	return s.Store.CreatePartitions(ctx, name, total)
}

func (s *fuzzStore) DeleteTopic(ctx context.Context, name string) error {
	if name == fuzzTopic {
		return errors.New("fuzz store: the seeds' topic stays")
	}
	return s.Store.DeleteTopic(ctx, name)
}

// panicLog collects the "handler panic" records conn.go logs when it
// recovers a handler's panic.
type panicLog struct {
	mu     sync.Mutex
	panics []string
}

// take returns the records collected since the last call.
func (l *panicLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.panics
	l.panics = nil
	return p
}

// panicHandler is the fuzzed agent's slog handler: it drops everything
// but error records, and keeps those that report a handler panic.
type panicHandler struct {
	log   *panicLog
	attrs []slog.Attr
}

func (h *panicHandler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelError
}

func (h *panicHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "handler panic" {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s", a)
		return true
	})
	h.log.mu.Lock()
	h.log.panics = append(h.log.panics, b.String())
	h.log.mu.Unlock()
	return nil
}

func (h *panicHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &panicHandler{log: h.log, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)}
}

func (h *panicHandler) WithGroup(string) slog.Handler { return h }
