package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// answerWithin is how long any request of these tests may take to be
// answered: a client's own timeout, not a performance goal.
const answerWithin = 10 * time.Second

// liveness is another client that, round after round until stopped,
// produces one record, consumes it back and commits its offset for its
// own group, each round within answerWithin: the broker still serves
// everyone else.
type liveness struct {
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	rounds int
	err    error
}

func startLiveness(t *testing.T, addr, topic string) *liveness {
	t.Helper()
	ctx := testContext(t, 5*time.Minute)
	// A record in flight is not failed by its context: the delivery
	// timeout bounds a round against a broker that stopped answering.
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(answerWithin))
	if err != nil {
		t.Fatal(err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	l := &liveness{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		defer prod.Close()
		defer cons.Close()
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			default:
			}
			if err := l.round(ctx, prod, cons, i); err != nil {
				l.mu.Lock()
				l.err = fmt.Errorf("round %d: %w", i, err)
				l.mu.Unlock()
				return
			}
			l.mu.Lock()
			l.rounds++
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() { l.finish(t) })
	return l
}

func (l *liveness) round(ctx context.Context, prod, cons *kgo.Client, i int) error {
	ctx, cancel := context.WithTimeout(ctx, answerWithin)
	defer cancel()
	value := fmt.Sprintf("live-%d", i)
	r := &kgo.Record{Value: []byte(value)}
	if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	for {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("record %q not fetched: %w", value, err)
		}
		if err := fs.Err(); err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		found := false
		fs.EachRecord(func(got *kgo.Record) { found = found || string(got.Value) == value })
		if found {
			break
		}
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = "live", -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = r.Topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = r.Partition, r.Offset+1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, prod)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// awaitRounds waits for n more rounds than done so far, failing on the
// first round that was not answered, or when none ends for a minute.
func (l *liveness) awaitRounds(t *testing.T, n int) {
	t.Helper()
	l.mu.Lock()
	want, last := l.rounds+n, l.rounds
	l.mu.Unlock()
	progress := time.Now()
	for {
		l.mu.Lock()
		rounds, err := l.rounds, l.err
		l.mu.Unlock()
		if err != nil {
			t.Fatalf("the other client was not served: %v", err)
		}
		if rounds >= want {
			return
		}
		if rounds > last {
			last, progress = rounds, time.Now()
		} else if time.Since(progress) > time.Minute {
			t.Fatalf("the other client's round %d has not ended for a minute", rounds)
		}
		select {
		case <-l.done:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (l *liveness) finish(t *testing.T) {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	select {
	case <-l.done:
	case <-time.After(time.Minute):
		t.Errorf("the other client's round has not ended for a minute")
		return
	}
	if l.err != nil {
		t.Errorf("the other client was not served: %v", l.err)
	}
}

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestCreateTopicsMaxInt32PartitionsRefusedAtOnce: CreateTopics with
// 2,147,483,647 partitions ran one store transaction for minutes that
// blocked flush commits, heartbeats and leases. It is INVALID_PARTITIONS at
// once, creating or validating, while another client's produce, fetch and
// commit go on being answered.
func TestCreateTopicsMaxInt32PartitionsRefusedAtOnce(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 2*time.Minute)
	cl := newClient(t, p.Addr)
	createTopic(t, ctx, cl, "live", 1, nil)
	live := startLiveness(t, p.Addr, "live")
	live.awaitRounds(t, 1)

	for _, validateOnly := range []bool{false, true} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis, req.ValidateOnly = 60_000, validateOnly
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "huge", 1<<31-1, 1
		req.Topics = append(req.Topics, rt)
		rctx, cancel := context.WithTimeout(ctx, answerWithin)
		resp, err := req.RequestWith(rctx, cl)
		cancel()
		if err != nil {
			t.Fatalf("validate-only %v: CreateTopics not answered: %v", validateOnly, err)
		}
		st := resp.Topics[0]
		if st.ErrorCode != kerr.InvalidPartitions.Code || st.ErrorMessage == nil || !strings.Contains(*st.ErrorMessage, "2147483647") {
			t.Fatalf("validate-only %v: %v %v, want INVALID_PARTITIONS naming the count", validateOnly, kerr.ErrorForCode(st.ErrorCode), st.ErrorMessage)
		}
	}
	live.awaitRounds(t, 2)
	topics, err := kadm.NewClient(cl).ListTopics(ctx, "huge")
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("huge") {
		t.Fatal("topic huge was created")
	}
	if n := p.metric(t, `floe_agent_limit_hits_total{limit="max.partitions.per.topic"}`); n != 2 {
		t.Errorf("max.partitions.per.topic hits %v, want 2", n)
	}
}

// TestCreateTopicsClusterPartitionLimit: with --max-partitions and
// --max-topics, CreateTopics and CreatePartitions beyond them are
// POLICY_VIOLATION as a franz-go admin client sees it, and nothing beyond
// is created.
func TestCreateTopicsClusterPartitionLimit(t *testing.T) {
	// floe dev's __consumer_offsets holds one partition of the ten.
	p := startFloe(t, "dev", "--data-dir", t.TempDir(), "--max-partitions", "10", "--max-topics", "4")
	ctx := testContext(t, 2*time.Minute)
	cl := newClient(t, p.Addr)
	adm := kadm.NewClient(cl)
	createTopic(t, ctx, cl, "a", 6, nil)
	resp, err := adm.CreateTopics(ctx, 4, 1, nil, "b")
	if err != nil {
		t.Fatal(err)
	}
	if err := resp["b"].Err; !errors.Is(err, kerr.PolicyViolation) || !strings.Contains(resp["b"].ErrMessage, "limit of 10") {
		t.Fatalf("topic b past the cluster's partitions: %v %q, want POLICY_VIOLATION", err, resp["b"].ErrMessage)
	}
	createTopic(t, ctx, cl, "b", 3, nil) // exactly ten
	cp, err := adm.CreatePartitions(ctx, 1, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := cp["a"].Err; !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("CreatePartitions past the cluster's partitions: %v, want POLICY_VIOLATION", err)
	}
	if _, err := adm.DeleteTopics(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	createTopic(t, ctx, cl, "c", 1, nil)
	createTopic(t, ctx, cl, "d", 1, nil)
	resp, err = adm.CreateTopics(ctx, 1, 1, nil, "e")
	if err != nil {
		t.Fatal(err)
	}
	if err := resp["e"].Err; !errors.Is(err, kerr.PolicyViolation) || !strings.Contains(resp["e"].ErrMessage, "limit is 4") {
		t.Fatalf("a fifth topic: %v %q, want POLICY_VIOLATION", err, resp["e"].ErrMessage)
	}
	details, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range details.Sorted() {
		names = append(names, fmt.Sprintf("%s:%d", d.Topic, len(d.Partitions)))
	}
	if got := strings.Join(names, " "); got != "a:6 c:1 d:1" {
		t.Fatalf("topics %s, want a:6 c:1 d:1", got)
	}
}

// TestMetadataTenThousandUnknownTopicsAnsweredFast: a Metadata request
// naming 10,000 unknown topics auto-created them one by one for minutes
// past the client's timeout. It is answered at once, creates about
// --auto-create-rate a second, and answers the rest
// UNKNOWN_TOPIC_OR_PARTITION for the client to retry, which later creates
// more.
func TestMetadataTenThousandUnknownTopicsAnsweredFast(t *testing.T) {
	const rate = 20
	p := startFloe(t, "dev", "--data-dir", t.TempDir(), "--auto-create-topics=true", "--auto-create-rate", fmt.Sprint(rate))
	ctx := testContext(t, 2*time.Minute)
	cl := newClient(t, p.Addr)
	createTopic(t, ctx, cl, "live", 1, nil)
	live := startLiveness(t, p.Addr, "live")
	names := make([]string, 10_000)
	for i := range names {
		names[i] = fmt.Sprintf("auto-%05d", i)
	}
	created := map[string]bool{}
	ask := func() {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = true
		for _, n := range names {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, rt)
		}
		rctx, cancel := context.WithTimeout(ctx, answerWithin)
		defer cancel()
		resp, err := req.RequestWith(rctx, cl)
		if err != nil {
			t.Fatalf("Metadata of 10,000 unknown topics not answered: %v", err)
		}
		if len(resp.Topics) != len(names) {
			t.Fatalf("%d topics answered, want %d", len(resp.Topics), len(names))
		}
		for _, mt := range resp.Topics {
			switch mt.ErrorCode {
			case 0, kerr.LeaderNotAvailable.Code: // created before, or by this request
				created[*mt.Topic] = true
			case kerr.UnknownTopicOrPartition.Code:
			default:
				t.Fatalf("topic %s: %v", *mt.Topic, kerr.ErrorForCode(mt.ErrorCode))
			}
		}
	}
	start := time.Now()
	ask()
	first := len(created)
	time.Sleep(time.Second)
	ask()
	elapsed := time.Since(start)
	live.awaitRounds(t, 1)

	// A burst of rate, then rate a second; one more for rounding.
	if most := rate + int(rate*elapsed.Seconds()) + 1; len(created) > most {
		t.Errorf("%d topics created in %v, want at most %d", len(created), elapsed, most)
	}
	if first < 1 || len(created) <= first {
		t.Errorf("%d topics created by the first request, %d by both: the retry should create more", first, len(created))
	}
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range topics {
		if strings.HasPrefix(d.Topic, "auto-") {
			n++
			if !created[d.Topic] {
				t.Errorf("topic %s exists but was answered UNKNOWN_TOPIC_OR_PARTITION", d.Topic)
			}
		}
	}
	if n != len(created) {
		t.Errorf("%d auto-created topics exist, the answers said %d", n, len(created))
	}
}

// offsetCommit builds a v8 admin commit (generation -1) of group: for each
// topic, partitions 0..n-1 at offset(topic index, partition).
func offsetCommit(group string, topics []string, n int32, offset func(ti int, p int32) int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	for ti, topic := range topics {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rt.Partitions = make([]kmsg.OffsetCommitRequestTopicPartition, n)
		for p := range n {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, offset(ti, p)
			rp.Metadata = kmsg.StringPtr(fmt.Sprintf("m%d", p%7))
			rt.Partitions[p] = rp
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestOffsetCommitMillionPartitionsRefused: an OffsetCommit of 1,000,000
// partitions held the store for the full 10 s timeout on each retry and
// failed other clients' health checks. It is refused at once, every
// partition INVALID_COMMIT_OFFSET_SIZE, while another group's commits and a
// producer go on being answered. The partitions exist (the topic limits
// are raised for it), so that the commit would be written if it were not
// refused.
func TestOffsetCommitMillionPartitionsRefused(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir(), "--max-partitions-per-topic", "1000000", "--max-partitions", "2000000")
	ctx := testContext(t, 2*time.Minute)
	cl := newClient(t, p.Addr)
	createTopic(t, ctx, cl, "live", 1, nil)
	createTopic(t, ctx, cl, "wide", 1_000_000, nil)
	live := startLiveness(t, p.Addr, "live")
	live.awaitRounds(t, 1)

	req := offsetCommit("huge", []string{"wide"}, 1_000_000, func(_ int, p int32) int64 { return int64(p) })
	rctx, cancel := context.WithTimeout(ctx, answerWithin)
	resp, err := req.RequestWith(rctx, cl)
	cancel()
	if err != nil {
		t.Fatalf("OffsetCommit of 1,000,000 partitions not answered: %v", err)
	}
	n := 0
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			n++
			if rp.ErrorCode != kerr.InvalidCommitOffsetSize.Code {
				t.Fatalf("partition %d: %v, want INVALID_COMMIT_OFFSET_SIZE", rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	if n != 1_000_000 {
		t.Fatalf("%d partitions answered, want 1,000,000", n)
	}
	live.awaitRounds(t, 2)
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, "huge")
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) != 0 {
		t.Fatalf("the refused commit stored %d offsets", len(offs))
	}
	if h := p.metric(t, `floe_agent_limit_hits_total{limit="max.offset.commit.partitions"}`); h != 1 {
		t.Errorf("max.offset.commit.partitions hits %v, want 1", h)
	}
}

// TestOffsetCommitFiftyThousandPartitions: a commit of 50,000 partitions,
// within the limit, is written whole (in chunks) and OffsetFetch reads every
// offset and metadata string back.
func TestOffsetCommitFiftyThousandPartitions(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 2*time.Minute)
	cl := newClient(t, p.Addr)
	topics := []string{"w0", "w1", "w2", "w3", "w4"}
	for _, topic := range topics {
		createTopic(t, ctx, cl, topic, 10_000, nil)
	}
	offset := func(ti int, p int32) int64 { return int64(p)*5 + int64(ti) }
	req := offsetCommit("wide", topics, 10_000, offset)
	rctx, cancel := context.WithTimeout(ctx, answerWithin)
	resp, err := req.RequestWith(rctx, cl)
	cancel()
	if err != nil {
		t.Fatalf("OffsetCommit of 50,000 partitions not answered: %v", err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("%s/%d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, "wide")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ti, topic := range topics {
		for p := range int32(10_000) {
			o, ok := offs.Lookup(topic, p)
			want := fmt.Sprintf("m%d", p%7)
			if !ok || o.Err != nil || o.At != offset(ti, p) || o.Metadata != want {
				t.Fatalf("%s/%d read back %+v (found %v), want offset %d metadata %q", topic, p, o, ok, offset(ti, p), want)
			}
			n++
		}
	}
	if total := len(offs.Sorted()); total != n {
		t.Fatalf("OffsetFetch returned %d offsets, want %d", total, n)
	}
}
