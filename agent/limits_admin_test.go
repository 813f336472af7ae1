package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
	"floe/metadata/sqlite"
	"floe/storage/mem"
)

// hookedStore calls hook before the store calls the admin, Metadata and
// offset-commit paths make: a hook may count them, fail them or hold them.
type hookedStore struct {
	metadata.Store
	hook func(ctx context.Context, op string) error
}

func (s *hookedStore) before(ctx context.Context, op string) error {
	if s.hook == nil {
		return nil
	}
	return s.hook(ctx, op)
}

func (s *hookedStore) Topic(ctx context.Context, name string) (metadata.Topic, error) {
	if err := s.before(ctx, "Topic"); err != nil {
		return metadata.Topic{}, err
	}
	return s.Store.Topic(ctx, name)
}

func (s *hookedStore) TopicByID(ctx context.Context, id metadata.TopicID) (metadata.Topic, error) {
	if err := s.before(ctx, "TopicByID"); err != nil {
		return metadata.Topic{}, err
	}
	return s.Store.TopicByID(ctx, id)
}

func (s *hookedStore) TopicTotals(ctx context.Context) (int, int64, error) {
	if err := s.before(ctx, "TopicTotals"); err != nil {
		return 0, 0, err
	}
	return s.Store.TopicTotals(ctx)
}

// runawayPartitions is more partitions than any test creates: the hooked
// store fails such a creation rather than run it for minutes, so that a
// limit that does not hold fails its test at once.
const runawayPartitions = 1_000_000

func (s *hookedStore) CreateTopic(ctx context.Context, name string, partitions int32, configs map[string]string) (metadata.Topic, error) {
	if err := s.before(ctx, "CreateTopic"); err != nil {
		return metadata.Topic{}, err
	}
	if partitions > runawayPartitions {
		return metadata.Topic{}, fmt.Errorf("hooked store: refusing to create %d partitions", partitions)
	}
	return s.Store.CreateTopic(ctx, name, partitions, configs)
}

func (s *hookedStore) CreatePartitions(ctx context.Context, name string, total int32) error {
	if err := s.before(ctx, "CreatePartitions"); err != nil {
		return err
	}
	if total > runawayPartitions {
		return fmt.Errorf("hooked store: refusing to create %d partitions", total)
	}
	return s.Store.CreatePartitions(ctx, name, total)
}

func (s *hookedStore) DeleteTopic(ctx context.Context, name string) error {
	if err := s.before(ctx, "DeleteTopic"); err != nil {
		return err
	}
	return s.Store.DeleteTopic(ctx, name)
}

func (s *hookedStore) AdvanceLogStart(ctx context.Context, topic metadata.TopicID, partition int32, offset int64) (metadata.PartitionState, error) {
	if err := s.before(ctx, "AdvanceLogStart"); err != nil {
		return metadata.PartitionState{}, err
	}
	return s.Store.AdvanceLogStart(ctx, topic, partition, offset)
}

func (s *hookedStore) CommitOffsets(ctx context.Context, group string, offsets []metadata.GroupOffset) error {
	if err := s.before(ctx, "CommitOffsets"); err != nil {
		return err
	}
	return s.Store.CommitOffsets(ctx, group, offsets)
}

func (s *hookedStore) LoadTxn(ctx context.Context, id string) (metadata.Transaction, error) {
	if err := s.before(ctx, "LoadTxn"); err != nil {
		return metadata.Transaction{}, err
	}
	return s.Store.LoadTxn(ctx, id)
}

// opCounter is a hook that counts store calls by operation.
type opCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *opCounter) hook(ctx context.Context, op string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[op]++
	return nil
}

func (c *opCounter) get(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[op]
}

func (c *opCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.n {
		n += v
	}
	return n
}

// handlerAgent builds an agent over a hooked SQLite store that is never
// started: the tests call its handlers directly, as a connection would.
// It has no internal topics, so the cluster's totals are the test's own.
func handlerAgent(t *testing.T, opts ...func(*Config)) (*Agent, *hookedStore) {
	t.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	hs := &hookedStore{Store: store}
	cfg := DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return New(cfg, hs, mem.New(), nil), hs
}

func limitHits(t *testing.T, a *Agent, limit string) float64 {
	t.Helper()
	return counterValue(t, a.metrics.limitHits.WithLabelValues(limit))
}

func createTopicsReq(validateOnly bool, timeoutMillis int32, topics ...any) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.ValidateOnly = validateOnly
	req.TimeoutMillis = timeoutMillis
	for i := 0; i < len(topics); i += 2 {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topics[i].(string), topics[i+1].(int32), -1
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func (a *Agent) mustHandle(t *testing.T, req kmsg.Request) kmsg.Response {
	t.Helper()
	hdr := kafkaproto.RequestHeader{APIKey: req.Key(), APIVersion: req.GetVersion()}
	resp, err := a.handle(context.Background(), &request{c: &conn{a: a}, hdr: hdr, req: req})
	if err != nil {
		t.Fatalf("%T: %v", req, err)
	}
	return resp
}

// wantTopicCodes checks a CreateTopics answer topic by topic, and that an
// error's message contains msg (when given).
func wantTopicCodes(t *testing.T, what string, resp *kmsg.CreateTopicsResponse, want map[string]*kerr.Error, msg map[string]string) {
	t.Helper()
	if len(resp.Topics) != len(want) {
		t.Fatalf("%s: %d topics answered, want %d", what, len(resp.Topics), len(want))
	}
	for _, st := range resp.Topics {
		w, ok := want[st.Topic]
		if !ok {
			t.Fatalf("%s: unexpected topic %q", what, st.Topic)
		}
		if got := kerr.ErrorForCode(st.ErrorCode); got != errOrNil(w) {
			t.Errorf("%s: topic %s: %v, want %v", what, st.Topic, got, w)
		}
		if m := msg[st.Topic]; m != "" && (st.ErrorMessage == nil || !strings.Contains(*st.ErrorMessage, m)) {
			t.Errorf("%s: topic %s: message %v, want one containing %q", what, st.Topic, deref(st.ErrorMessage), m)
		}
	}
}

func errOrNil(e *kerr.Error) error {
	if e == nil {
		return nil
	}
	return e
}

// TestCreateTopicsPartitionsPerTopicLimit: 2,147,483,647 partitions ran one
// store transaction for minutes and stopped every other metadata write;
// a count above MaxPartitionsPerTopic is INVALID_PARTITIONS at once, with a
// message, whether creating or validating, and nothing is written.
func TestCreateTopicsPartitionsPerTopicLimit(t *testing.T) {
	t.Parallel()
	a, hs := handlerAgent(t, func(c *Config) { c.MaxPartitionsPerTopic = 100 })
	resp := a.mustHandle(t, createTopicsReq(false, 5000, "ok", int32(100), "over", int32(101), "max", int32(1<<31-1))).(*kmsg.CreateTopicsResponse)
	wantTopicCodes(t, "create", resp, map[string]*kerr.Error{"ok": nil, "over": kerr.InvalidPartitions, "max": kerr.InvalidPartitions},
		map[string]string{"over": "limit of 100", "max": "2147483647 partitions exceed the limit of 100"})
	if resp.Topics[0].NumPartitions != 100 {
		t.Errorf("ok: answered %d partitions, want 100", resp.Topics[0].NumPartitions)
	}
	resp = a.mustHandle(t, createTopicsReq(true, 5000, "vmax", int32(1<<31-1), "vok", int32(100))).(*kmsg.CreateTopicsResponse)
	wantTopicCodes(t, "validate-only", resp, map[string]*kerr.Error{"vmax": kerr.InvalidPartitions, "vok": nil}, map[string]string{"vmax": "limit of 100"})

	// A replica assignment counts as its partitions.
	req := createTopicsReq(false, 5000, "assigned", int32(-1))
	for p := range int32(101) {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = p, []int32{0}
		req.Topics[0].ReplicaAssignment = append(req.Topics[0].ReplicaAssignment, ra)
	}
	wantTopicCodes(t, "assignment", a.mustHandle(t, req).(*kmsg.CreateTopicsResponse), map[string]*kerr.Error{"assigned": kerr.InvalidPartitions}, nil)

	ts, err := hs.Store.Topics(context.Background())
	if err != nil || len(ts) != 1 || ts[0].Name != "ok" {
		t.Fatalf("stored topics %+v, %v; want only ok", ts, err)
	}
	if n := limitHits(t, a, "max.partitions.per.topic"); n != 4 {
		t.Errorf("max.partitions.per.topic hits %v, want 4", n)
	}
}

// TestCreateTopicsClusterLimits: topics and partitions that would take the
// cluster past MaxTopics or MaxPartitions are POLICY_VIOLATION, counting
// what the same request created before them; an existing topic is still
// TOPIC_ALREADY_EXISTS, and validate-only is checked the same way.
func TestCreateTopicsClusterLimits(t *testing.T) {
	t.Parallel()
	a, _ := handlerAgent(t, func(c *Config) { c.MaxTopics, c.MaxPartitions, c.MaxPartitionsPerTopic = 3, 10, 8 })
	resp := a.mustHandle(t, createTopicsReq(false, 5000, "a", int32(4), "b", int32(4), "c", int32(4))).(*kmsg.CreateTopicsResponse)
	wantTopicCodes(t, "partitions", resp, map[string]*kerr.Error{"a": nil, "b": nil, "c": kerr.PolicyViolation},
		map[string]string{"c": "the cluster has 8 partitions, 4 more would exceed the limit of 10"})
	resp = a.mustHandle(t, createTopicsReq(false, 5000, "c", int32(2), "d", int32(1), "a", int32(1))).(*kmsg.CreateTopicsResponse)
	wantTopicCodes(t, "topics", resp, map[string]*kerr.Error{"c": nil, "d": kerr.PolicyViolation, "a": kerr.TopicAlreadyExists},
		map[string]string{"d": "the cluster has 3 topics, the limit is 3"})
	resp = a.mustHandle(t, createTopicsReq(true, 5000, "e", int32(1))).(*kmsg.CreateTopicsResponse)
	wantTopicCodes(t, "validate-only", resp, map[string]*kerr.Error{"e": kerr.PolicyViolation}, nil)

	cp := func(topic string, count int32, validateOnly bool) (*kerr.Error, string) {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis, req.ValidateOnly = 5000, validateOnly
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = topic, count
		req.Topics = append(req.Topics, rt)
		st := a.mustHandle(t, req).(*kmsg.CreatePartitionsResponse).Topics[0]
		e, _ := kerr.ErrorForCode(st.ErrorCode).(*kerr.Error)
		return e, deref(st.ErrorMessage)
	}
	if code, msg := cp("a", 9, false); code != kerr.InvalidPartitions || !strings.Contains(msg, "limit of 8") {
		t.Errorf("CreatePartitions past the topic limit: %v %q", code, msg)
	}
	if code, msg := cp("a", 1<<31-1, true); code != kerr.InvalidPartitions || !strings.Contains(msg, "limit of 8") {
		t.Errorf("validate-only CreatePartitions to 2147483647: %v %q", code, msg)
	}
	if code, msg := cp("a", 5, false); code != kerr.PolicyViolation || !strings.Contains(msg, "limit of 10") {
		t.Errorf("CreatePartitions past the cluster limit: %v %q", code, msg)
	}
	if code, _ := cp("a", 5, true); code != kerr.PolicyViolation {
		t.Errorf("validate-only CreatePartitions past the cluster limit: %v", code)
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TimeoutMillis, del.TopicNames = 5000, []string{"b"}
	if code := a.mustHandle(t, del).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("delete b: %v", kerr.ErrorForCode(code))
	}
	if code, msg := cp("a", 8, false); code != nil {
		t.Errorf("CreatePartitions within the limits after a delete: %v %q", code, msg)
	}
	if n := limitHits(t, a, "max.topics") + limitHits(t, a, "max.partitions"); n != 5 {
		t.Errorf("cluster limit hits %v, want 5", n)
	}
}

// holdUntilDone holds the named store calls until the caller's context
// ends (returning its error), or fails them after 10 s if it never does.
func holdUntilDone(ops ...string) func(ctx context.Context, op string) error {
	return func(ctx context.Context, op string) error {
		for _, o := range ops {
			if o == op {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(10 * time.Second):
					return fmt.Errorf("%s held for 10 s: no deadline", op)
				}
			}
		}
		return nil
	}
}

// TestAdminRequestsHonourTheirTimeout: a store call of CreateTopics,
// CreatePartitions, DeleteTopics or DeleteRecords that does not return is
// given up at the request's TimeoutMillis and answered REQUEST_TIMED_OUT
// for what it had left, instead of running on past the client's timeout.
func TestAdminRequestsHonourTheirTimeout(t *testing.T) {
	a, hs := handlerAgent(t)
	ctx := context.Background()
	tp, err := hs.Store.CreateTopic(ctx, "t", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	hs.hook = holdUntilDone("CreateTopic", "CreatePartitions", "DeleteTopic", "AdvanceLogStart")
	const timeout = 300
	check := func(what string, req kmsg.Request, codes func(kmsg.Response) []int16) {
		t.Helper()
		start := time.Now()
		resp := a.mustHandle(t, req)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: answered after %v, the request's timeout is %d ms", what, d, timeout)
		}
		for i, c := range codes(resp) {
			if c != kerr.RequestTimedOut.Code {
				t.Errorf("%s: answer %d is %v, want REQUEST_TIMED_OUT", what, i, kerr.ErrorForCode(c))
			}
		}
	}
	check("CreateTopics", createTopicsReq(false, timeout, "x", int32(1), "y", int32(1)), func(r kmsg.Response) (c []int16) {
		for _, st := range r.(*kmsg.CreateTopicsResponse).Topics {
			c = append(c, st.ErrorCode)
		}
		return c
	})
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.TimeoutMillis = timeout
	for _, topic := range []string{"t", "t2"} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = topic, 3
		cp.Topics = append(cp.Topics, rt)
	}
	check("CreatePartitions", cp, func(r kmsg.Response) (c []int16) {
		for _, st := range r.(*kmsg.CreatePartitionsResponse).Topics {
			c = append(c, st.ErrorCode)
		}
		return c
	})
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.Version, dt.TimeoutMillis, dt.TopicNames = 5, timeout, []string{"t", "t2"}
	check("DeleteTopics", dt, func(r kmsg.Response) (c []int16) {
		for _, st := range r.(*kmsg.DeleteTopicsResponse).Topics {
			c = append(c, st.ErrorCode)
		}
		return c
	})
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.TimeoutMillis = timeout
	drt := kmsg.NewDeleteRecordsRequestTopic()
	drt.Topic = "t"
	for p := range int32(2) {
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = p, -1
		drt.Partitions = append(drt.Partitions, rp)
	}
	dr.Topics = append(dr.Topics, drt)
	check("DeleteRecords", dr, func(r kmsg.Response) (c []int16) {
		for _, sp := range r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions {
			c = append(c, sp.ErrorCode)
		}
		return c
	})
	// Nothing was changed meanwhile.
	if got, err := hs.Store.Topic(ctx, "t"); err != nil || got.ID != tp.ID || got.Partitions != 2 {
		t.Errorf("topic t after the timed-out requests: %+v, %v", got, err)
	}
}

func metadataReq(autoCreate bool, names ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	req.AllowAutoTopicCreation = autoCreate
	for _, n := range names {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func unknownNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return names
}

// TestMetadataAutoCreateRate: a Metadata request naming thousands of
// unknown topics auto-created them one by one for minutes; the agent's
// token bucket creates a burst of AutoCreateRate and answers the rest
// UNKNOWN_TOPIC_OR_PARTITION at once, for the client to retry.
func TestMetadataAutoCreateRate(t *testing.T) {
	ops := &opCounter{}
	a, hs := handlerAgent(t, func(c *Config) { c.AutoCreateTopics, c.AutoCreateRate = true, 5 })
	hs.hook = ops.hook
	start := time.Now()
	resp := a.mustHandle(t, metadataReq(true, unknownNames("auto", 1000)...)).(*kmsg.MetadataResponse)
	elapsed := time.Since(start)
	created := 0
	for _, mt := range resp.Topics {
		switch mt.ErrorCode {
		case kerr.LeaderNotAvailable.Code: // created, listed from the next request on
			created++
			if len(mt.Partitions) != 0 {
				t.Errorf("created topic %s answered with %d partitions", *mt.Topic, len(mt.Partitions))
			}
		case kerr.UnknownTopicOrPartition.Code:
		default:
			t.Errorf("topic %s: %v", *mt.Topic, kerr.ErrorForCode(mt.ErrorCode))
		}
	}
	if len(resp.Topics) != 1000 {
		t.Fatalf("%d topics answered, want 1000", len(resp.Topics))
	}
	// The burst, plus what the bucket refilled while the request ran.
	if most := 5 + int(5*elapsed.Seconds()) + 1; created < 5 || created > most {
		t.Errorf("%d topics created in %v, want 5 to %d", created, elapsed, most)
	}
	ts, err := hs.Store.Topics(context.Background())
	if err != nil || len(ts) != created {
		t.Errorf("store holds %d topics (%v), the answer says %d were created", len(ts), err, created)
	}
	if n := ops.get("Topic"); n > missLookups+created {
		t.Errorf("%d store look-ups by name for 1000 unknown topics, want at most %d", n, missLookups+created)
	}
	if n := limitHits(t, a, "auto.create.rate"); n != float64(1000-created) {
		t.Errorf("auto.create.rate hits %v, want %d", n, 1000-created)
	}
}

// TestMetadataAutoCreateClusterLimit: auto-creation stays within MaxTopics;
// topics beyond are UNKNOWN_TOPIC_OR_PARTITION, as a Kafka broker answers
// a topic whose creation the controller refused.
func TestMetadataAutoCreateClusterLimit(t *testing.T) {
	t.Parallel()
	a, hs := handlerAgent(t, func(c *Config) { c.AutoCreateTopics, c.AutoCreateRate, c.MaxTopics = true, 100, 3 })
	resp := a.mustHandle(t, metadataReq(true, unknownNames("cap", 10)...)).(*kmsg.MetadataResponse)
	created := 0
	for _, mt := range resp.Topics {
		if mt.ErrorCode == kerr.LeaderNotAvailable.Code {
			created++
		} else if mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("topic %s: %v", *mt.Topic, kerr.ErrorForCode(mt.ErrorCode))
		}
	}
	if n, _, err := hs.Store.TopicTotals(context.Background()); err != nil || n != 3 || created != 3 {
		t.Errorf("created %d, store holds %d (%v); want 3", created, n, err)
	}
}

// TestMetadataUnknownTopicsBoundedLookups: every unknown topic of a
// Metadata request was looked up in the store one by one; past
// missLookups the cached view answers alone, by name and by id.
func TestMetadataUnknownTopicsBoundedLookups(t *testing.T) {
	t.Parallel()
	ops := &opCounter{}
	a, hs := handlerAgent(t)
	hs.hook = ops.hook
	req := metadataReq(false, unknownNames("gone", 10_000)...)
	for i := range 1000 {
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = [16]byte{1, byte(i >> 8), byte(i)}
		req.Topics = append(req.Topics, rt)
	}
	resp := a.mustHandle(t, req).(*kmsg.MetadataResponse)
	for _, mt := range resp.Topics {
		want := kerr.UnknownTopicOrPartition.Code
		if mt.Topic == nil {
			want = kerr.UnknownTopicID.Code
		}
		if mt.ErrorCode != want {
			t.Fatalf("topic %v: %v", mt.Topic, kerr.ErrorForCode(mt.ErrorCode))
		}
	}
	if n := ops.get("Topic") + ops.get("TopicByID"); n > missLookups {
		t.Errorf("%d store look-ups for 11,000 unknown topics, want at most %d", n, missLookups)
	}
}

// TestOffsetCommitOverLimitTouchesNoStore: a 1,000,000-partition
// OffsetCommit held the store for its whole timeout on every retry; more
// than MaxOffsetCommitPartitions is answered INVALID_COMMIT_OFFSET_SIZE for
// every partition without a single store call, for OffsetCommit and
// TxnOffsetCommit alike.
func TestOffsetCommitOverLimitTouchesNoStore(t *testing.T) {
	t.Parallel()
	ops := &opCounter{}
	a, hs := handlerAgent(t, func(c *Config) { c.MaxOffsetCommitPartitions = 100 })
	hs.hook = ops.hook
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.Generation = 8, "g", -1
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.Version, tc.TransactionalID, tc.Group, tc.ProducerID, tc.Generation = 3, "txn", "g", 1, -1
	for _, topic := range []string{"a", "b"} {
		ot := kmsg.NewOffsetCommitRequestTopic()
		tt := kmsg.NewTxnOffsetCommitRequestTopic()
		ot.Topic, tt.Topic = topic, topic
		for p := range int32(51) {
			op := kmsg.NewOffsetCommitRequestTopicPartition()
			op.Partition, op.Offset = p, 1
			ot.Partitions = append(ot.Partitions, op)
			tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			tp.Partition, tp.Offset = p, 1
			tt.Partitions = append(tt.Partitions, tp)
		}
		oc.Topics = append(oc.Topics, ot)
		tc.Topics = append(tc.Topics, tt)
	}
	n := 0
	for _, rt := range a.mustHandle(t, oc).(*kmsg.OffsetCommitResponse).Topics {
		for _, rp := range rt.Partitions {
			n++
			if rp.ErrorCode != kerr.InvalidCommitOffsetSize.Code {
				t.Fatalf("OffsetCommit %s/%d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	for _, rt := range a.mustHandle(t, tc).(*kmsg.TxnOffsetCommitResponse).Topics {
		for _, rp := range rt.Partitions {
			n++
			if rp.ErrorCode != kerr.InvalidCommitOffsetSize.Code {
				t.Fatalf("TxnOffsetCommit %s/%d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	if n != 204 {
		t.Errorf("%d partitions answered, want 204", n)
	}
	if c := ops.total(); c != 0 {
		t.Errorf("%d store calls for refused commits (%v), want none", c, ops.n)
	}
	if h := limitHits(t, a, "max.offset.commit.partitions"); h != 2 {
		t.Errorf("max.offset.commit.partitions hits %v, want 2", h)
	}
}

// TestOffsetCommitAtLimitIsWritten: a commit of exactly
// MaxOffsetCommitPartitions partitions, more than one store chunk, is
// written whole and reads back.
func TestOffsetCommitAtLimitIsWritten(t *testing.T) {
	t.Parallel()
	const n = 2500
	ta := newTestAgent(t, nil, func(c *Config) { c.MaxOffsetCommitPartitions = n })
	cl := ta.client(t)
	ta.createTopic(t, cl, "big", n)
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "g", -1
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic = "big"
	for p := range int32(n) {
		op := kmsg.NewOffsetCommitRequestTopicPartition()
		op.Partition, op.Offset = p, int64(p)*3
		ot.Partitions = append(ot.Partitions, op)
	}
	oc.Topics = append(oc.Topics, ot)
	resp, err := oc.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rp := range resp.Topics[0].Partitions {
		if rp.ErrorCode != 0 {
			t.Fatalf("partition %d: %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
		}
	}
	offs, err := ta.store.FetchOffsets(context.Background(), "g")
	if err != nil || len(offs) != n {
		t.Fatalf("FetchOffsets: %d offsets, %v; want %d", len(offs), err, n)
	}
	for _, o := range offs {
		if o.Topic != "big" || o.Offset != int64(o.Partition)*3 {
			t.Fatalf("stored %+v", o)
		}
	}
}
