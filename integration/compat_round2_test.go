package integration

// Issue 13's bugs with real clients against real floe processes: JoinGroup
// validation order and the group settings' flags, the Metadata answer for
// an auto-created topic (and every client still producing to one), and the
// replication-factor policy.

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// saramaBroker is a sarama connection to one floe, closed at cleanup.
func saramaBroker(t *testing.T, addr string) *sarama.Broker {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	b := sarama.NewBroker(addr)
	if err := b.Open(cfg); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Connected(); !ok {
		t.Fatalf("sarama connect %s: %v", addr, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestCompatRound2JoinGroupSessionTimeoutFirst: floe answered
// INCONSISTENT_GROUP_PROTOCOL to a JoinGroup with a 3 s session timeout and
// no protocols, where Kafka answers INVALID_SESSION_TIMEOUT (kafka-go's own
// suite sends it). The bounds are --group-min/max-session-timeout now, with
// Kafka's 6 s and 30 min in floe dev as in floe agent.
func TestCompatRound2JoinGroupSessionTimeoutFirst(t *testing.T) {
	dev := startFloe(t, "dev", "--data-dir", t.TempDir())
	var lenient *proc // started after floe dev's defaults are checked
	for _, tc := range []struct {
		name    string
		lenient bool // --group-min-session-timeout 2s --group-max-session-timeout 4s
		session int32
		want    sarama.KError
	}{
		{"kafka-go's join of zeros", false, 0, sarama.ErrInvalidSessionTimeout},
		{"3 s without protocols", false, 3000, sarama.ErrInvalidSessionTimeout},
		{"31 min", false, 31 * 60_000, sarama.ErrInvalidSessionTimeout},
		{"6 s without protocols", false, 6000, sarama.ErrInconsistentGroupProtocol},
		{"3 s without protocols, --group-min-session-timeout 2s", true, 3000, sarama.ErrInconsistentGroupProtocol},
		{"5 s, --group-max-session-timeout 4s", true, 5000, sarama.ErrInvalidSessionTimeout},
	} {
		p := dev
		if tc.lenient {
			if lenient == nil {
				lenient = startFloe(t, "dev", "--data-dir", t.TempDir(), "--group-min-session-timeout", "2s", "--group-max-session-timeout", "4s")
			}
			p = lenient
		}
		b := saramaBroker(t, p.Addr)
		resp, err := b.JoinGroup(&sarama.JoinGroupRequest{GroupId: "order", SessionTimeout: tc.session})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if resp.Err != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, resp.Err, tc.want)
		}
	}

	// Settings that contradict each other stop floe at start, as Kafka.
	for _, args := range [][]string{
		{"--group-min-session-timeout", "10m", "--group-max-session-timeout", "1m"},
		{"--group-consumer-heartbeat-interval", "1m", "--group-consumer-session-timeout", "30s"},
	} {
		cmd := exec.Command(floeBin, append([]string{"dev", "--data-dir", t.TempDir(), "--kafka-addr", "127.0.0.1:0", "--http-addr", ""}, args...)...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--group-") {
			t.Errorf("floe dev %v: %v\n%s", args, err, out)
		}
	}
}

// TestCompatRound2InitialRebalanceDelayFlag: the initial rebalance delay
// was a fixed 500 ms. It is --group-initial-rebalance-delay now: 500 ms in
// floe dev, Kafka's 3 s in floe agent, and what the flag says.
func TestCompatRound2InitialRebalanceDelayFlag(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		min, max time.Duration
	}{
		{nil, 500 * time.Millisecond, 2 * time.Second},
		{[]string{"--group-initial-rebalance-delay", "0"}, 0, 400 * time.Millisecond},
		{[]string{"--group-initial-rebalance-delay", "2500ms"}, 2500 * time.Millisecond, 5 * time.Second},
	} {
		p := startFloe(t, append([]string{"dev", "--data-dir", t.TempDir()}, tc.args...)...)
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(int16(kmsg.JoinGroup), 2) // no MEMBER_ID_REQUIRED round trip
		cl := newClient(t, p.Addr, kgo.MaxVersions(vs))
		ctx := testContext(t, 30*time.Second)
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = "delayed", 10_000, 10_000, "consumer"
		pr := kmsg.NewJoinGroupRequestProtocol()
		pr.Name, pr.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		req.Protocols = append(req.Protocols, pr)
		start := time.Now()
		resp, err := req.RequestWith(ctx, cl)
		took := time.Since(start)
		if err != nil || resp.ErrorCode != 0 || resp.Generation != 1 {
			t.Fatalf("%v: join = %+v, %v", tc.args, resp, err)
		}
		if took < tc.min || took > tc.max {
			t.Errorf("%v: first generation after %v, want %v to %v", tc.args, took, tc.min, tc.max)
		}
	}
}

// metadataAuto asks for topic with auto-creation allowed, as every client
// does before producing, and returns the answer for it.
func metadataAuto(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range resp.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			return mt
		}
	}
	t.Fatalf("Metadata does not answer for %s: %+v", topic, resp.Topics)
	return kmsg.MetadataResponseTopic{}
}

// readValues consumes partition 0 of topic from the start until it has n
// records and returns their values in offset order.
func readValues(t *testing.T, ctx context.Context, addr, topic string, n int) []string {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: read %d of %d records: %v", topic, len(got), n, got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("%s: %v", topic, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(got)) {
				t.Fatalf("%s: offset %d, want %d", topic, r.Offset, len(got))
			}
			got = append(got, string(r.Value))
		})
	}
	return got
}

// TestCompatRound2AutoCreateLeaderNotAvailable: a Metadata that auto-created
// a topic listed its partitions at once; Kafka answers LEADER_NOT_AVAILABLE
// and lists it from the next request. Every client still produces to a topic
// it makes floe create: franz-go, sarama, kcat (librdkafka), kafkajs retry
// by themselves; kafka-go's WriteMessages returns the first answer, as
// against Kafka, and its retry lands. A deleted topic named again is created
// anew.
func TestCompatRound2AutoCreateLeaderNotAvailable(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 2*time.Minute)
	cl := newClient(t, p.Addr)

	first := metadataAuto(t, ctx, cl, "fresh")
	if first.ErrorCode != kerr.LeaderNotAvailable.Code || len(first.Partitions) != 0 {
		t.Fatalf("first Metadata of an auto-created topic: %v with %d partitions, want LEADER_NOT_AVAILABLE and none",
			kerr.ErrorForCode(first.ErrorCode), len(first.Partitions))
	}
	next := metadataAuto(t, ctx, cl, "fresh")
	if next.ErrorCode != 0 || len(next.Partitions) != 1 || next.Partitions[0].Leader < 0 {
		t.Fatalf("next Metadata: %v with %d partitions", kerr.ErrorForCode(next.ErrorCode), len(next.Partitions))
	}

	values := func(client string) []string {
		var vs []string
		for i := range 5 {
			vs = append(vs, fmt.Sprintf("%s-%d", client, i))
		}
		return vs
	}
	check := func(client string) {
		t.Helper()
		topic := "auto-" + client
		if got, want := strings.Join(readValues(t, ctx, p.Addr, topic, 5), ","), strings.Join(values(client), ","); got != want {
			t.Errorf("%s produced %s, read back %s", client, want, got)
		}
	}

	t.Run("franz-go", func(t *testing.T) {
		pcl := newClient(t, p.Addr, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("auto-franz-go"))
		for _, v := range values("franz-go") {
			if err := pcl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		check("franz-go")
	})
	t.Run("sarama", func(t *testing.T) {
		cfg := sarama.NewConfig()
		cfg.Version = sarama.V2_8_0_0
		cfg.Producer.Return.Successes = true
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		prod, err := sarama.NewSyncProducer([]string{p.Addr}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		for _, v := range values("sarama") {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "auto-sarama", Value: sarama.StringEncoder(v)}); err != nil {
				t.Fatal(err)
			}
		}
		check("sarama")
	})
	t.Run("kafka-go", func(t *testing.T) {
		w := &kafka.Writer{Addr: kafka.TCP(p.Addr), Topic: "auto-kafka-go", AllowAutoTopicCreation: true,
			Transport: &kafka.Transport{}, BatchTimeout: 5 * time.Millisecond, RequiredAcks: kafka.RequireAll}
		defer w.Close()
		var msgs []kafka.Message
		for _, v := range values("kafka-go") {
			msgs = append(msgs, kafka.Message{Value: []byte(v)})
		}
		// As kafka-go's own TestWriterAutoCreateTopic: retry the errors a
		// broker that is creating the topic answers.
		var firstErr error
		for attempt := 0; ; attempt++ {
			err := w.WriteMessages(ctx, msgs...)
			if attempt == 0 {
				firstErr = err
			}
			if err == nil {
				break
			}
			if !errors.Is(err, kafka.LeaderNotAvailable) && !errors.Is(err, kafka.UnknownTopicOrPartition) || attempt == 20 {
				t.Fatalf("write attempt %d: %v", attempt, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
		if !errors.Is(firstErr, kafka.LeaderNotAvailable) {
			t.Errorf("first write to a topic it auto-creates: %v, want LEADER_NOT_AVAILABLE as from Kafka", firstErr)
		}
		check("kafka-go")
	})
	t.Run("kcat", func(t *testing.T) {
		if _, err := exec.LookPath("kcat"); err != nil {
			t.Skip("kcat not installed (make kcat)")
		}
		cmd := exec.CommandContext(ctx, "kcat", "-b", p.Addr, "-P", "-t", "auto-kcat", "-p", "0")
		cmd.Stdin = strings.NewReader(strings.Join(values("kcat"), "\n") + "\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kcat -P: %v\n%s", err, out)
		}
		check("kcat")
	})
	t.Run("kafkajs", func(t *testing.T) {
		node, err := exec.LookPath("node")
		if err != nil {
			t.Skip("node not installed")
		}
		dir, _ := filepath.Abs("js")
		script := `const { Kafka, logLevel } = require('kafkajs')
const kafka = new Kafka({ clientId: 'round2', brokers: [process.argv[1]], logLevel: logLevel.NOTHING })
const producer = kafka.producer({ allowAutoTopicCreation: true })
producer.connect()
  .then(async () => { for (const v of process.argv[2].split(',')) await producer.send({ topic: 'auto-kafkajs', acks: -1, messages: [{ value: v }] }) })
  .then(() => producer.disconnect()).then(() => console.log('ok'))
  .catch(e => { console.error(e); process.exit(1) })`
		cmd := exec.CommandContext(ctx, node, "-e", script, p.Addr, strings.Join(values("kafkajs"), ","))
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "ok" {
			t.Fatalf("kafkajs: %v\n%s", err, out)
		}
		check("kafkajs")
	})

	t.Run("deleted and named again", func(t *testing.T) {
		old := metadataAuto(t, ctx, cl, "auto-franz-go")
		if old.ErrorCode != 0 {
			t.Fatalf("auto-franz-go: %v", kerr.ErrorForCode(old.ErrorCode))
		}
		dr, err := kadm.NewClient(cl).DeleteTopics(ctx, "auto-franz-go")
		if err != nil || dr["auto-franz-go"].Err != nil {
			t.Fatalf("delete: %v %v", err, dr["auto-franz-go"].Err)
		}
		if mt := metadataAuto(t, ctx, cl, "auto-franz-go"); mt.ErrorCode != kerr.LeaderNotAvailable.Code || len(mt.Partitions) != 0 {
			t.Fatalf("deleted topic named again: %v with %d partitions, want LEADER_NOT_AVAILABLE", kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions))
		}
		again := metadataAuto(t, ctx, cl, "auto-franz-go")
		if again.ErrorCode != 0 || len(again.Partitions) != 1 || again.TopicID == old.TopicID {
			t.Fatalf("recreated topic: %v, %d partitions, id %x (old %x)", kerr.ErrorForCode(again.ErrorCode), len(again.Partitions), again.TopicID, old.TopicID)
		}
		pcl := newClient(t, p.Addr, kgo.DefaultProduceTopic("auto-franz-go"))
		r, err := pcl.ProduceSync(ctx, &kgo.Record{Value: []byte("reborn")}).First()
		if err != nil || r.Offset != 0 {
			t.Fatalf("produce to the recreated topic: offset %v, %v; want 0", r, err)
		}
		if got := readValues(t, ctx, p.Addr, "auto-franz-go", 1); got[0] != "reborn" {
			t.Fatalf("recreated topic holds %q", got)
		}
	})
}

// TestCompatRound2ReplicationFactor: CreateTopics accepted a replication
// factor of 11 on one agent. -1 and 1 to 3 (or the live agents, if more)
// are accepted and reported as 1 everywhere (CreateTopics, Metadata through
// kadm and sarama's ClusterAdmin, DescribeConfigs); 0 and 11 are
// INVALID_REPLICATION_FACTOR for kadm and sarama alike.
func TestCompatRound2ReplicationFactor(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, time.Minute)
	adm := kadm.NewClient(newClient(t, p.Addr))
	for rf, want := range map[int16]error{-1: nil, 1: nil, 3: nil, 4: kerr.InvalidReplicationFactor, 11: kerr.InvalidReplicationFactor, 0: kerr.InvalidReplicationFactor} {
		topic := fmt.Sprintf("kadm-rf%d", rf+1)
		resp, err := adm.CreateTopics(ctx, 2, rf, nil, topic)
		if err != nil {
			t.Fatal(err)
		}
		r := resp[topic]
		if !errors.Is(r.Err, want) && r.Err != want {
			t.Errorf("kadm factor %d: %v, want %v", rf, r.Err, want)
			continue
		}
		if want == nil && (r.ReplicationFactor != 1 || r.NumPartitions != 2) {
			t.Errorf("kadm factor %d: answered %d partitions, factor %d; want 2, 1", rf, r.NumPartitions, r.ReplicationFactor)
		}
	}
	td, err := adm.ListTopics(ctx, "kadm-rf4")
	if err != nil || td["kadm-rf4"].Err != nil {
		t.Fatalf("describe kadm-rf4: %v %v", err, td["kadm-rf4"].Err)
	}
	for _, pd := range td["kadm-rf4"].Partitions {
		if len(pd.Replicas) != 1 || pd.Replicas[0] != pd.Leader || len(pd.ISR) != 1 || pd.ISR[0] != pd.Leader {
			t.Errorf("factor-3 topic partition %d: leader %d replicas %v isr %v, want the leader alone", pd.Partition, pd.Leader, pd.Replicas, pd.ISR)
		}
	}
	bc, err := adm.DescribeBrokerConfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range bc {
		for _, c := range rc.Configs {
			if c.Key == "default.replication.factor" && c.MaybeValue() != "1" {
				t.Errorf("DescribeConfigs default.replication.factor = %q, want 1", c.MaybeValue())
			}
		}
	}

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	sa, err := sarama.NewClusterAdmin([]string{p.Addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	if err := sa.CreateTopic("sarama-rf3", &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 3}, false); err != nil {
		t.Fatalf("sarama factor 3: %v", err)
	}
	if err := sa.CreateTopic("sarama-rf11", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 11}, false); !errors.Is(err, sarama.ErrInvalidReplicationFactor) {
		t.Fatalf("sarama factor 11: %v, want %v", err, sarama.ErrInvalidReplicationFactor)
	}
	md, err := sa.DescribeTopics([]string{"sarama-rf3"})
	if err != nil || len(md) != 1 || !errors.Is(md[0].Err, sarama.ErrNoError) || len(md[0].Partitions) != 3 {
		t.Fatalf("sarama describe: %+v, %v", md, err)
	}
	for _, pm := range md[0].Partitions {
		if len(pm.Replicas) != 1 || pm.Replicas[0] != pm.Leader || len(pm.Isr) != 1 || len(pm.OfflineReplicas) != 0 {
			t.Errorf("sarama partition %d: leader %d replicas %v isr %v offline %v", pm.ID, pm.Leader, pm.Replicas, pm.Isr, pm.OfflineReplicas)
		}
	}
}
