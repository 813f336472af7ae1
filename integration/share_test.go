package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share groups (KIP-932) from the outside: franz-go's share consumer
// against floe dev and against two agents on PostgreSQL + MinIO. The
// records of these tests carry their index as value ("i"), so a test can
// tell a redelivery from a new record whatever offset it landed at.

// setGroupConfigs sets configs of a GROUP resource through
// IncrementalAlterConfigs, as kafka-configs.sh --entity-type groups does.
func setGroupConfigs(t testing.TB, ctx context.Context, cl *kgo.Client, group string, kvs ...string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	for i := 0; i+1 < len(kvs); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kvs[i], kmsg.StringPtr(kvs[i+1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			t.Fatalf("IncrementalAlterConfigs %s %v: %v", group, kvs, err)
		}
	}
}

// shareStartOffsets returns the share-partition start offset of every
// partition of topic for group, from DescribeShareGroupOffsets.
func shareStartOffsets(t testing.TB, ctx context.Context, cl *kgo.Client, group, topic string) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic = topic
	g.Topics = append(g.Topics, rt)
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, g := range resp.Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			t.Fatalf("DescribeShareGroupOffsets %s: %v", group, err)
		}
		for _, rt := range g.Topics {
			for _, p := range rt.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					t.Fatalf("DescribeShareGroupOffsets %s %s/%d: %v", group, topic, p.Partition, err)
				}
				out[p.Partition] = p.StartOffset
			}
		}
	}
	return out
}

// shareMembers returns the member ids of a share group that hold an
// assignment, from ShareGroupDescribe.
func shareMembers(t testing.TB, ctx context.Context, cl *kgo.Client, group string) []string {
	t.Helper()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, g := range resp.Groups {
		if g.ErrorCode == kerr.GroupIDNotFound.Code {
			continue
		}
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			t.Fatalf("ShareGroupDescribe %s: %v", group, err)
		}
		for _, m := range g.Members {
			if len(m.Assignment.TopicPartitions) > 0 {
				ids = append(ids, m.MemberID)
			}
		}
	}
	return ids
}

// produceIndexed produces records with values "from".."to-1" to topic
// (partitions round robin) and waits for every acknowledgement.
func produceIndexed(t testing.TB, ctx context.Context, cl *kgo.Client, topic string, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func newShareConsumer(t testing.TB, seeds []string, group, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// pollShare polls cl once and reports records and fetch errors other
// than the first-read EOF franz-go reports on a fresh connection.
func pollShare(t testing.TB, ctx context.Context, cl *kgo.Client) []*kgo.Record {
	fs := cl.PollFetches(ctx)
	for _, e := range fs.Errors() {
		var eof *kgo.ErrFirstReadEOF
		if errors.As(e.Err, &eof) || errors.Is(e.Err, context.DeadlineExceeded) || errors.Is(e.Err, context.Canceled) {
			continue
		}
		t.Logf("share fetch %s/%d: %v", e.Topic, e.Partition, e.Err)
	}
	return fs.Records()
}

func recordIndex(t testing.TB, r *kgo.Record) int {
	i, err := strconv.Atoi(string(r.Value))
	if err != nil {
		t.Fatalf("record %s/%d@%d: value %q is no index", r.Topic, r.Partition, r.Offset, r.Value)
	}
	return i
}

// drainUntilSentinel polls cl, accepting everything, until the record
// with index sentinel arrives, and returns the indexes seen before it.
// Share partitions hand out their lowest available offsets first, so
// once a record produced after all others arrives, nothing before it
// was left available: what came first are redeliveries.
func drainUntilSentinel(t testing.TB, ctx context.Context, cl *kgo.Client, sentinel int) []int {
	t.Helper()
	var before []int
	for ctx.Err() == nil {
		for _, r := range pollShare(t, ctx, cl) {
			r.Ack(kgo.AckAccept)
			if i := recordIndex(t, r); i == sentinel {
				if err := cl.FlushAcks(ctx); err != nil {
					t.Fatal(err)
				}
				return before
			} else {
				before = append(before, i)
			}
		}
	}
	t.Fatalf("sentinel %d never delivered (saw %d records before giving up)", sentinel, len(before))
	return nil
}

// TestShareGroupQueue: three share consumers on one single-partition
// topic all get records, and every record is accepted exactly once in
// all (no consumer fails, so none is redelivered); the share-partition
// start offset ends at the end of the log.
func TestShareGroupQueue(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 3*time.Minute)
	const topic, group, n = "share-queue", "share-queue-g", 3000
	admin := groupTopic(t, ctx, p.Addr, topic, 1, 0)
	setGroupConfigs(t, ctx, admin, group, "share.auto.offset.reset", "earliest")

	var consumers []*kgo.Client
	for range 3 {
		cl := newShareConsumer(t, []string{p.Addr}, group, topic, kgo.ShareMaxRecords(25))
		defer cl.Close()
		consumers = append(consumers, cl)
	}
	// A share consumer joins at its first poll; have all three hold
	// the partition before any record exists, so that one of them
	// cannot drain the topic before the others are there.
	for _, cl := range consumers {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		pollShare(t, pctx, cl)
		cancel()
	}
	waitFor(t, time.Minute, "three share members with assignments", func() bool {
		return len(shareMembers(t, ctx, admin, group)) == 3
	})

	var (
		mu       sync.Mutex
		accepted = map[int]int{}
		byMember = make([]int, len(consumers))
	)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for m, cl := range consumers {
		wg.Go(func() {
			for {
				select {
				case <-done:
					if err := cl.FlushAcks(ctx); err != nil {
						t.Error(err)
					}
					return
				default:
				}
				pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
				recs := pollShare(t, pctx, cl)
				cancel()
				mu.Lock()
				for _, r := range recs {
					accepted[recordIndex(t, r)]++
					byMember[m]++
					r.Ack(kgo.AckAccept)
				}
				mu.Unlock()
				// Slow consumers, as queue workers are: each one
				// holds its records a moment, so the others get theirs.
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	for i := 0; i < n; i += 100 {
		produceIndexed(t, ctx, admin, topic, i, i+100)
	}
	waitFor(t, 2*time.Minute, "every record accepted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted) == n
	})
	close(done)
	wg.Wait()

	for i := range n {
		if accepted[i] != 1 {
			t.Errorf("record %d accepted %d times, want exactly once", i, accepted[i])
		}
	}
	for m, got := range byMember {
		if got == 0 {
			t.Errorf("consumer %d received no record (by consumer: %v)", m, byMember)
		}
	}
	t.Logf("records by consumer: %v", byMember)
	waitFor(t, 30*time.Second, "share-partition start offset at the log end", func() bool {
		return shareStartOffsets(t, ctx, admin, group, topic)[0] == n
	})
}

// TestShareGroupRejectAndDeliveryLimit: rejected records are never
// delivered again, and a record released every time it is delivered is
// delivered exactly group.share.delivery.count.limit times, then archived.
func TestShareGroupRejectAndDeliveryLimit(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 3*time.Minute)
	const topic, n = "share-limits", 200
	admin := groupTopic(t, ctx, p.Addr, topic, 1, 0)
	produceIndexed(t, ctx, admin, topic, 0, n)

	t.Run("reject", func(t *testing.T) {
		const group = "share-reject-g"
		setGroupConfigs(t, ctx, admin, group, "share.auto.offset.reset", "earliest")
		cl := newShareConsumer(t, []string{p.Addr}, group, topic)
		defer cl.Close()
		seen := map[int]bool{}
		for len(seen) < n && ctx.Err() == nil {
			for _, r := range pollShare(t, ctx, cl) {
				i := recordIndex(t, r)
				if seen[i] {
					t.Fatalf("record %d delivered again after it was rejected or accepted", i)
				}
				seen[i] = true
				if i%10 == 0 {
					r.Ack(kgo.AckReject)
				} else {
					r.Ack(kgo.AckAccept)
				}
			}
		}
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
		cl.Close()
		// A fresh member of the group gets the next new record first:
		// nothing rejected is available again.
		produceIndexed(t, ctx, admin, topic, n, n+1)
		fresh := newShareConsumer(t, []string{p.Addr}, group, topic)
		defer fresh.Close()
		if again := drainUntilSentinel(t, ctx, fresh, n); len(again) > 0 {
			t.Fatalf("records delivered again after reject/accept: %v", again)
		}
		if got := shareStartOffsets(t, ctx, admin, group, topic)[0]; got != n+1 {
			t.Errorf("share-partition start offset %d, want %d (rejected records are archived, not in flight)", got, n+1)
		}
	})

	t.Run("delivery-count-limit", func(t *testing.T) {
		const group, limit = "share-limit-g", 3
		setGroupConfigs(t, ctx, admin, group, "share.auto.offset.reset", "earliest",
			"group.share.delivery.count.limit", strconv.Itoa(limit))
		cl := newShareConsumer(t, []string{p.Addr}, group, topic)
		defer cl.Close()
		deliveries := map[int][]int32{}
		total := 0
		// Release every record of the first n, each time: each must come
		// back until its delivery count reaches the limit, no more.
		for total < n*limit && ctx.Err() == nil {
			for _, r := range pollShare(t, ctx, cl) {
				i := recordIndex(t, r)
				if i >= n {
					r.Ack(kgo.AckAccept)
					continue
				}
				deliveries[i] = append(deliveries[i], r.DeliveryCount())
				total++
				r.Ack(kgo.AckRelease)
			}
		}
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
		produceIndexed(t, ctx, admin, topic, n+1, n+2)
		if again := drainUntilSentinel(t, ctx, cl, n+1); slices.ContainsFunc(again, func(i int) bool { return i < n }) {
			t.Fatalf("records delivered beyond the delivery-count limit %d: %v", limit, again)
		}
		want := make([]int32, limit)
		for k := range want {
			want[k] = int32(k + 1)
		}
		for i := range n {
			if !slices.Equal(deliveries[i], want) {
				t.Errorf("record %d delivered with counts %v, want %v", i, deliveries[i], want)
			}
		}
	})
}

// TestShareGroupKilledConsumer: a consumer process killed (-9) while
// holding acquired records: they are delivered again to another member
// of the group, with a delivery count of 2, once their acquisition locks
// (share.record.lock.duration.ms) expire or the broker sees the
// connection gone.
func TestShareGroupKilledConsumer(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 3*time.Minute)
	const topic, group, n = "share-killed", "share-killed-g", 100
	admin := groupTopic(t, ctx, p.Addr, topic, 1, 0)
	setGroupConfigs(t, ctx, admin, group, "share.auto.offset.reset", "earliest",
		"share.record.lock.duration.ms", "2000")
	produceIndexed(t, ctx, admin, topic, 0, n)

	// The holder is this test binary run again as a share consumer
	// (TestShareHelperConsumer): it prints the indexes it holds and waits
	// to be killed.
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestShareHelperConsumer$", "-test.v")
	cmd.Env = append(os.Environ(), "FLOE_SHARE_HELPER="+strings.Join([]string{p.Addr, group, topic}, ","))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var held []int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "HELD "); ok {
			for _, f := range strings.Fields(v) {
				i, _ := strconv.Atoi(f)
				held = append(held, i)
			}
			break
		}
	}
	if len(held) == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the helper consumer held no records")
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Logf("killed a consumer holding %d records", len(held))

	cl := newShareConsumer(t, []string{p.Addr}, group, topic)
	defer cl.Close()
	redelivered := map[int]int32{}
	accepted := map[int]bool{}
	for len(accepted) < n && ctx.Err() == nil {
		for _, r := range pollShare(t, ctx, cl) {
			i := recordIndex(t, r)
			if slices.Contains(held, i) {
				redelivered[i] = r.DeliveryCount()
			}
			accepted[i] = true
			r.Ack(kgo.AckAccept)
		}
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	for _, i := range held {
		if dc, ok := redelivered[i]; !ok || dc != 2 {
			t.Errorf("record %d held by the killed consumer: redelivered %v with delivery count %d, want 2", i, ok, dc)
		}
	}
	if len(accepted) != n {
		t.Errorf("%d of %d records accepted", len(accepted), n)
	}
}

// TestShareHelperConsumer is the consumer TestShareGroupKilledConsumer
// runs as a process of its own; without FLOE_SHARE_HELPER it does nothing.
func TestShareHelperConsumer(t *testing.T) {
	spec := os.Getenv("FLOE_SHARE_HELPER")
	if spec == "" {
		t.Skip("run by TestShareGroupKilledConsumer")
	}
	f := strings.Split(spec, ",")
	addr, group, topic := f[0], f[1], f[2]
	cl := newShareConsumer(t, []string{addr}, group, topic, kgo.ShareMaxRecords(30), kgo.ShareMaxRecordsStrict())
	ctx := context.Background()
	for {
		recs := pollShare(t, ctx, cl)
		if len(recs) == 0 {
			continue
		}
		var idx []string
		for _, r := range recs {
			idx = append(idx, strconv.Itoa(recordIndex(t, r)))
		}
		fmt.Println("HELD " + strings.Join(idx, " "))
		select {} // hold them until killed
	}
}

// TestShareGroupAgentKilled: two agents on PostgreSQL + MinIO, two share
// consumers seeded to different agents, a producer running. One agent
// is killed (-9) mid-way. Every record is accepted at least once, and no
// record whose acceptance an agent acknowledged is ever delivered again:
// the share state that was acknowledged survived the agent.
func TestShareGroupAgentKilled(t *testing.T) {
	c := newCluster(t, "floe_share_killed")
	ctx := testContext(t, 5*time.Minute)
	agents := c.startAgents(t, 2)
	seeds := []string{agents[0].Addr, agents[1].Addr}
	const topic, group, n = "share-agent-killed", "share-agent-killed-g", 6000
	admin := groupTopic(t, ctx, agents[1].Addr, topic, 3, 0)
	setGroupConfigs(t, ctx, admin, group, "share.auto.offset.reset", "earliest",
		"share.record.lock.duration.ms", "3000")

	var (
		mu          sync.Mutex
		accepted    = map[int]bool{} // accepted at least once
		confirmed   = map[int]bool{} // accept acknowledged by an agent
		badRedelive []int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for m := range 2 {
		wg.Go(func() {
			var ackErr error
			var ackMu sync.Mutex
			cl := newShareConsumer(t, []string{seeds[m]}, group, topic, kgo.ShareMaxRecords(50),
				kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
					ackMu.Lock()
					defer ackMu.Unlock()
					if err := rs.Error(); err != nil {
						ackErr = err
					}
				}))
			defer cl.Close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				pctx, cancel := context.WithTimeout(ctx, time.Second)
				recs := pollShare(t, pctx, cl)
				cancel()
				if len(recs) == 0 {
					continue
				}
				ackMu.Lock()
				ackErr = nil
				ackMu.Unlock()
				mu.Lock()
				for _, r := range recs {
					i := recordIndex(t, r)
					if confirmed[i] {
						badRedelive = append(badRedelive, i)
					}
					accepted[i] = true
					r.Ack(kgo.AckAccept)
				}
				mu.Unlock()
				fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := cl.FlushAcks(fctx)
				cancel()
				ackMu.Lock()
				if err == nil && ackErr == nil {
					mu.Lock()
					for _, r := range recs {
						confirmed[recordIndex(t, r)] = true
					}
					mu.Unlock()
				}
				ackMu.Unlock()
			}
		})
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	for i := 0; i < n; i += 200 {
		produceIndexed(t, ctx, producer, topic, i, i+200)
		if i == n/2 {
			waitFor(t, time.Minute, "half the records accepted and confirmed", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(confirmed) >= n/4
			})
			agents[0].Kill()
			t.Logf("killed agent %s", agents[0].Addr)
		}
	}
	waitFor(t, 3*time.Minute, "every record accepted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted) == n
	})
	close(stop)
	wg.Wait()
	// Records whose acceptance died with the agent come back once their
	// locks expire: a last consumer takes them until every partition's
	// share-partition start offset is at its end — nothing left in flight.
	last := newShareConsumer(t, []string{agents[1].Addr}, group, topic)
	defer last.Close()
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "every share-partition start offset at its end", func() bool {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		recs := pollShare(t, pctx, last)
		cancel()
		mu.Lock()
		for _, r := range recs {
			if i := recordIndex(t, r); confirmed[i] {
				badRedelive = append(badRedelive, i)
			}
			r.Ack(kgo.AckAccept)
		}
		mu.Unlock()
		if err := last.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
		spso := shareStartOffsets(t, ctx, admin, group, topic)
		done := true
		ends.Each(func(o kadm.ListedOffset) {
			done = done && spso[o.Partition] == o.Offset
		})
		return done
	})
	if len(badRedelive) > 0 {
		slices.Sort(badRedelive)
		t.Fatalf("%d records delivered again after their acceptance was acknowledged: %v", len(badRedelive), badRedelive[:min(20, len(badRedelive))])
	}
}

// TestShareGroupResetOffsetsCLI: `floe group describe` and
// `floe group reset-offsets` on a share group, as kafka-share-groups.sh
// has them: describe shows the start offset and lag of each
// share-partition; a reset is refused while the group has a member; the
// dry run changes nothing; a reset --to-datetime makes the group deliver
// exactly the records at or after the time again.
func TestShareGroupResetOffsetsCLI(t *testing.T) {
	dev := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 2*time.Minute)
	const topic, group, n = "share-replay", "share-replayers", 40
	admin := groupTopic(t, ctx, dev.Addr, topic, 1, 0)
	setGroupConfigs(t, ctx, admin, group, "share.auto.offset.reset", "earliest")
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i)), Timestamp: base.Add(time.Duration(i) * time.Minute)})
	}
	if err := admin.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	member := newShareConsumer(t, []string{dev.Addr}, group, topic)
	for got := 0; got < n && ctx.Err() == nil; {
		for _, r := range pollShare(t, ctx, member) {
			r.Ack(kgo.AckAccept)
			got++
		}
	}
	if err := member.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	describe := func() string {
		t.Helper()
		out, err := floeCmd(ctx, "group", "describe", "--bootstrap", dev.Addr, "--group", group)
		if err != nil {
			t.Fatalf("describe: %v\n%s", err, out)
		}
		return out
	}
	if out := describe(); !strings.Contains(out, "TYPE share") || !hasRow(out, fmt.Sprintf("%s 0 %d %d 0", topic, n, n)) {
		t.Fatalf("describe after consuming everything:\n%s", out)
	}
	args := []string{"group", "reset-offsets", "--bootstrap", dev.Addr, "--group", group, "--topic", topic,
		"--to-datetime", base.Add(25 * time.Minute).UTC().Format(time.RFC3339)}
	if out, err := floeCmd(ctx, args...); err == nil || !strings.Contains(out, "member") {
		t.Fatalf("reset with a live member: %v\n%s", err, out)
	}
	member.Close()
	waitFor(t, 60*time.Second, "the share group to empty", func() bool {
		return len(shareMembers(t, ctx, admin, group)) == 0 && !strings.Contains(describe(), "MEMBERS 1")
	})
	out, err := floeCmd(ctx, append(args, "--dry-run")...)
	if err != nil || !strings.Contains(out, "dry run") || !hasRow(out, topic+" 0 25") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if got := shareStartOffsets(t, ctx, admin, group, topic)[0]; got != n {
		t.Fatalf("the dry run moved the start offset to %d", got)
	}
	if out, err := floeCmd(ctx, args...); err != nil {
		t.Fatalf("reset: %v\n%s", err, out)
	}
	if out := describe(); !hasRow(out, fmt.Sprintf("%s 0 25 %d %d", topic, n, n-25)) {
		t.Fatalf("describe after the reset:\n%s", out)
	}
	// The next member gets 25..39 again, then the new record n.
	produceIndexed(t, ctx, admin, topic, n, n+1)
	again := newShareConsumer(t, []string{dev.Addr}, group, topic)
	defer again.Close()
	got := drainUntilSentinel(t, ctx, again, n)
	slices.Sort(got)
	want := make([]int, 0, n-25)
	for i := 25; i < n; i++ {
		want = append(want, i)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("after the reset the group delivered %v, want %v", got, want)
	}
}
