package integration

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupTopic creates topic with the given partitions and produces n
// records whose values are "topic/i".
func groupTopic(t testing.TB, ctx context.Context, addr, topic string, partitions int32, n int, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.RoundRobinPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	createTopic(t, ctx, cl, topic, partitions, nil)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s/%d", topic, i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return cl
}

// checkCommittedAtEnd asserts, the way Kafka tools compute lag, that group
// has committed the end offset of every partition of topic: lag 0, and the
// commits add up to n.
func checkCommittedAtEnd(t testing.TB, ctx context.Context, cl *kgo.Client, group, topic string, n int) {
	t.Helper()
	adm := kadm.NewClient(cl)
	var last error
	for range 50 { // commits of closing members may land a moment later
		lags, err := adm.Lag(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		gl := lags[group]
		if err := gl.Error(); err != nil {
			t.Fatal(err)
		}
		var sum, lag int64
		for _, l := range gl.Lag.Sorted() {
			if l.Topic != topic {
				continue
			}
			if l.Err != nil {
				t.Fatalf("lag of %s/%d: %v", l.Topic, l.Partition, l.Err)
			}
			sum += l.Commit.At
			lag += l.Lag
		}
		if sum == int64(n) && lag == 0 && gl.Lag.Total() == 0 {
			return
		}
		last = fmt.Errorf("group %s: commits add up to %d (want %d), lag %d", group, sum, n, lag)
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal(last)
}

// seenSet counts how often each value was consumed, and by which member.
type seenSet struct {
	mu       sync.Mutex
	m        map[string]int
	byMember map[int]int
}

func newSeen() *seenSet { return &seenSet{m: map[string]int{}, byMember: map[int]int{}} }

func (s *seenSet) add(v string) {
	s.mu.Lock()
	s.m[v]++
	s.mu.Unlock()
}

func (s *seenSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

func (s *seenSet) check(t testing.TB, topic string, n int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range n {
		if s.m[fmt.Sprintf("%s/%d", topic, i)] == 0 {
			t.Fatalf("record %s/%d never consumed (%d distinct of %d)", topic, i, len(s.m), n)
		}
	}
	if len(s.m) != n {
		t.Fatalf("consumed %d distinct values, want %d", len(s.m), n)
	}
}

// runKgoMembers runs members franz-go consumers of group until all n
// records were seen, committing after every poll.
func runKgoMembers(t testing.TB, ctx context.Context, seeds []string, group, topic string, members, n int, opts ...kgo.Opt) *seenSet {
	t.Helper()
	seen := newSeen()
	var wg sync.WaitGroup
	// Nobody fetches until every member has been assigned a partition:
	// else, on a loaded machine, the first member to join may drain the
	// topic before the others are in the group.
	var assignedMu sync.Mutex
	assignedTo := map[int]bool{}
	allIn := make(chan struct{})
	for i := range members {
		onAssigned := kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, got map[string][]int32) {
			if len(got[topic]) == 0 {
				return
			}
			assignedMu.Lock()
			defer assignedMu.Unlock()
			if assignedTo[i] = true; len(assignedTo) == members {
				select {
				case <-allIn:
				default:
					close(allIn)
				}
			}
		})
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds[i%len(seeds)]), kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic), kgo.ClientID(fmt.Sprintf("m%d", i)), kgo.DisableAutoCommit(),
			kgo.FetchMaxWait(200 * time.Millisecond), kgo.FetchMaxPartitionBytes(2 << 10), onAssigned}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		cl.PauseFetchTopics(topic)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for paused := true; seen.len() < n && ctx.Err() == nil; {
				if paused {
					select {
					case <-allIn:
						cl.ResumeFetchTopics(topic)
						paused = false
					default:
					}
				}
				pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				fs := cl.PollFetches(pctx)
				cancel()
				fs.EachRecord(func(r *kgo.Record) {
					seen.add(string(r.Value))
					seen.mu.Lock()
					seen.byMember[i]++
					seen.mu.Unlock()
				})
				if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
					t.Logf("member %d commit: %v", i, err)
				}
			}
		}()
	}
	wg.Wait()
	return seen
}

// TestGroupBalancers: three franz-go members per group with each client
// side balancer consume every record of a 6-partition topic and commit
// the end offsets (lag 0 via kadm).
func TestGroupBalancers(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 3*time.Minute)
	const n = 3000
	// Small batches: consumption takes many polls, so all members share it.
	admin := groupTopic(t, ctx, p.Addr, "balanced", 6, n, kgo.ProducerBatchMaxBytes(600), kgo.ProducerLinger(0))
	for _, tc := range []struct {
		name string
		b    kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"roundrobin", kgo.RoundRobinBalancer()},
		{"sticky", kgo.StickyBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			group := "bal-" + tc.name
			seen := runKgoMembers(t, ctx, []string{p.Addr}, group, "balanced", 3, n, kgo.Balancers(tc.b))
			seen.check(t, "balanced", n)
			for m := range 3 {
				if seen.byMember[m] == 0 {
					t.Fatalf("member %d consumed nothing: %v", m, seen.byMember)
				}
			}
			checkCommittedAtEnd(t, ctx, admin, group, "balanced", n)
			d, err := kadm.NewClient(admin).DescribeGroups(ctx, group)
			if err != nil {
				t.Fatal(err)
			}
			if g := d[group]; g.State != "Empty" || g.Protocol != "" && g.Protocol != tc.name {
				t.Fatalf("group after all left: state %q protocol %q", g.State, g.Protocol)
			}
		})
	}
}

// saramaHandler marks every message and stops once all n were seen.
type saramaHandler struct {
	seen *seenSet
	n    int
	done chan struct{}
	once sync.Once
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.seen.add(string(m.Value))
		s.MarkMessage(m, "sarama-meta")
		if h.seen.len() >= h.n {
			s.Commit()
			h.once.Do(func() { close(h.done) })
		}
	}
	return nil
}

// TestGroupSarama: two sarama consumer-group members (sarama's own
// JoinGroup/SyncGroup/OffsetCommit versions) consume everything and commit.
func TestGroupSarama(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 2*time.Minute)
	const n = 1000
	admin := groupTopic(t, ctx, p.Addr, "sarama-g", 4, n)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	h := &saramaHandler{seen: newSeen(), n: n, done: make(chan struct{})}
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 2 {
		cg, err := sarama.NewConsumerGroup([]string{p.Addr}, "sarama-grp", cfg)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cg.Close()
			for cctx.Err() == nil {
				if err := cg.Consume(cctx, []string{"sarama-g"}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
					t.Logf("sarama consume: %v", err)
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	select {
	case <-h.done:
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	h.seen.check(t, "sarama-g", n)
	checkCommittedAtEnd(t, ctx, admin, "sarama-grp", "sarama-g", n)
	// The metadata string came back through OffsetFetch.
	offs, err := kadm.NewClient(admin).FetchOffsets(ctx, "sarama-grp")
	if err != nil {
		t.Fatal(err)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Metadata != "sarama-meta" {
			t.Errorf("partition %d metadata %q", o.Partition, o.Metadata)
		}
	})
}

// TestGroupKafkaGo: a kafka-go Reader with GroupID (JoinGroup v1/v2,
// SyncGroup/Heartbeat/LeaveGroup v0, OffsetCommit v2, OffsetFetch v1)
// reads everything and commits.
func TestGroupKafkaGo(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 2*time.Minute)
	const n = 500
	admin := groupTopic(t, ctx, p.Addr, "kgo-reader", 3, n)
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: []string{p.Addr}, GroupID: "kafka-go-grp", Topic: "kgo-reader",
		StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond, CommitInterval: 0,
		HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second,
	})
	seen := newSeen()
	for seen.len() < n {
		m, err := r.ReadMessage(ctx) // commits synchronously (CommitInterval 0)
		if err != nil {
			t.Fatalf("after %d records: %v", seen.len(), err)
		}
		seen.add(string(m.Value))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	seen.check(t, "kgo-reader", n)
	checkCommittedAtEnd(t, ctx, admin, "kafka-go-grp", "kgo-reader", n)
}

// TestGroupKcat: `kcat -G` (librdkafka 2.0: JoinGroup v5, OffsetCommit v7)
// consumes everything; its commits give lag 0; a second run of the same
// group resumes from the commits and sees nothing.
func TestGroupKcat(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat not installed (make kcat)")
	}
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 2*time.Minute)
	const n = 300
	admin := groupTopic(t, ctx, p.Addr, "kcat-g", 3, n)
	run := func(count int) []string {
		args := []string{"-b", p.Addr, "-G", "kcat-grp", "kcat-g", "-X", "auto.offset.reset=earliest", "-q", "-f", "%s\n",
			"-X", "auto.commit.interval.ms=100"}
		if count > 0 {
			args = append(args, "-c", fmt.Sprint(count))
		} else {
			args = append(args, "-e")
		}
		cmd := exec.CommandContext(ctx, "kcat", args...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kcat -G: %v\n%s\nfloe log:\n%s", err, out, p.Log())
		}
		return strings.Fields(string(out))
	}
	seen := newSeen()
	for _, v := range run(n) {
		seen.add(v)
	}
	seen.check(t, "kcat-g", n)
	checkCommittedAtEnd(t, ctx, admin, "kcat-grp", "kcat-g", n)
	if again := run(0); len(again) != 0 {
		t.Fatalf("second kcat -G run re-read %d records", len(again))
	}
}

// TestGroupKafkajs runs js/group.js: two kafkajs consumers in one group
// (JoinGroup ≤5, OffsetCommit ≤5) consume and commit everything.
func TestGroupKafkajs(t *testing.T) {
	node, dir := npmInstall(t, "js")
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 2*time.Minute)
	const n = 200
	// kafkajs has no snappy codec built in: produce uncompressed.
	admin := groupTopic(t, ctx, p.Addr, "kafkajs-g", 3, n, kgo.ProducerBatchCompression(kgo.NoCompression()))
	cmd := exec.CommandContext(ctx, node, "group.js", p.Addr, "kafkajs-g", "kafkajs-grp", fmt.Sprint(n))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("kafkajs group: %v\n%s\nfloe log:\n%s", err, out, p.Log())
	}
	checkCommittedAtEnd(t, ctx, admin, "kafkajs-grp", "kafkajs-g", n)
}

// TestGroupStaticMemberRestart: a static member (group.instance.id) that
// restarts within its session timeout gets its partitions back without a
// rebalance: the other member's generation and assignment never change.
func TestGroupStaticMemberRestart(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 2*time.Minute)
	groupTopic(t, ctx, p.Addr, "static", 4, 100)
	var (
		mu       sync.Mutex
		assigned = map[string]int{}
	)
	member := func(instance string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ConsumerGroup("static-grp"), kgo.ConsumeTopics("static"),
			kgo.InstanceID(instance), kgo.SessionTimeout(20*time.Second), kgo.Balancers(kgo.RangeBalancer()),
			kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
				mu.Lock()
				assigned[instance]++
				mu.Unlock()
			}))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	a, b := member("a"), member("b")
	defer a.Close()
	waitGen := func(cl *kgo.Client) int32 {
		t.Helper()
		for ctx.Err() == nil {
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			cl.PollFetches(pctx)
			cancel()
			if _, gen := cl.GroupMetadata(); gen > 0 {
				return gen
			}
		}
		t.Fatal("member never joined")
		return 0
	}
	genA := waitGen(a)
	genB := waitGen(b)
	// Both in the same generation once the group settled.
	for genA != genB && ctx.Err() == nil {
		genA, genB = waitGen(a), waitGen(b)
	}
	d, err := kadm.NewClient(a).DescribeGroups(ctx, "static-grp")
	if err != nil || len(d["static-grp"].Members) != 2 {
		t.Fatalf("describe: %+v %v", d, err)
	}
	mu.Lock()
	before := assigned["a"]
	mu.Unlock()
	b.Close() // static members do not leave on close
	b2 := member("b")
	defer b2.Close()
	if gen := waitGen(b2); gen != genA {
		t.Fatalf("restarted static member is in generation %d, want %d (no rebalance)", gen, genA)
	}
	time.Sleep(2 * time.Second) // give a rebalance the chance to show
	waitGen(a)
	if _, gen := a.GroupMetadata(); gen != genA {
		t.Fatalf("other member moved to generation %d from %d", gen, genA)
	}
	mu.Lock()
	defer mu.Unlock()
	if assigned["a"] != before {
		t.Fatalf("other member was reassigned (%d -> %d assignments)", before, assigned["a"])
	}
	if d, _ := kadm.NewClient(a).DescribeGroups(ctx, "static-grp"); d["static-grp"].State != "Stable" || len(d["static-grp"].Members) != 2 {
		t.Fatalf("group after restart: %+v", d["static-grp"])
	}
}

// TestGroupKIP848: franz-go members on the KIP-848 protocol
// (ConsumerGroupHeartbeat, server-side assignor) join, consume everything,
// commit; lag is 0 and ConsumerGroupDescribe names the assignor asked for.
func TestGroupKIP848(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 3*time.Minute)
	const n = 2000
	admin := groupTopic(t, ctx, p.Addr, "kip848", 6, n, kgo.ProducerBatchMaxBytes(600), kgo.ProducerLinger(0))
	for _, tc := range []struct {
		name, assignor string
		b              kgo.GroupBalancer
	}{
		{"uniform", "uniform", kgo.CooperativeStickyBalancer()},
		{"range", "range", kgo.RangeBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := "kip848-" + tc.name
			seen := runKgoMembers(t, ctx, []string{p.Addr}, group, "kip848", 3, n, kgo.ServerSideBalancer(), kgo.Balancers(tc.b))
			seen.check(t, "kip848", n)
			for m := range 3 { // the server-side assignor gave everyone a share
				if seen.byMember[m] == 0 {
					t.Fatalf("member %d consumed nothing: %v", m, seen.byMember)
				}
			}
			checkCommittedAtEnd(t, ctx, admin, group, "kip848", n)
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Groups = []string{group}
			resp, err := req.RequestWith(ctx, admin)
			if err != nil {
				t.Fatal(err)
			}
			// The members have left: an empty KIP-848 group that used the
			// assignor asked for.
			if g := resp.Groups[0]; g.ErrorCode != 0 || g.State != "Empty" || g.AssignorName != tc.assignor || g.Epoch < 1 {
				t.Fatalf("ConsumerGroupDescribe = %+v", g)
			}
			lg, err := kadm.NewClient(admin).ListGroups(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if l, ok := lg[group]; !ok || l.ProtocolType != "consumer" || l.GroupType != "consumer" {
				t.Fatalf("ListGroups entry %+v (found %v)", lg[group], ok)
			}
		})
	}
}
