// Command roundtrip is deploy/compose/test.sh's Kafka client: against a
// running floe cluster it checks the brokers the cluster lists, creates a
// topic, produces -n records with acks=all, consumes them all back in a
// consumer group, commits, and checks the group's committed offsets add up
// to -n. With -produce=false it only consumes: -topic's -n records, again,
// in a new group. It prints what it saw and exits non-zero on the first
// mismatch.
//
//	go run ./deploy/compose/roundtrip -brokers localhost:9092,localhost:9093,localhost:9094 -want-brokers 3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "roundtrip: FAIL: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	brokers := flag.String("brokers", "localhost:9092", "comma-separated seed brokers")
	wantBrokers := flag.Int("want-brokers", 3, "how many brokers the cluster must list")
	topic := flag.String("topic", fmt.Sprintf("compose-%d", time.Now().UnixNano()), "topic to create and use")
	partitions := flag.Int("partitions", 3, "partitions of the topic")
	n := flag.Int("n", 1000, "records to produce and consume")
	group := flag.String("group", "", "consumer group (default: TOPIC-group)")
	timeout := flag.Duration("timeout", 2*time.Minute, "time limit for the whole round trip")
	brokerWait := flag.Duration("broker-wait", 0, "how long to wait for -want-brokers brokers to be listed")
	produce := flag.Bool("produce", true, "create -topic and produce -n records (false: consume an existing topic only)")
	flag.Parse()
	if *group == "" {
		*group = *topic + "-group"
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	seeds := strings.Split(*brokers, ",")

	// Agents just started register with their first heartbeat, and
	// stopped ones stay listed for --agent-ttl: -broker-wait allows for
	// it, asking each time with a new client, as a newly started client
	// would (one client retrying kadm's BrokerMetadata every 500 ms was
	// seen to keep the partial list it first got for 20-30 s, while new
	// connections were given all three within 2 s).
	brokerDeadline := time.Now().Add(*brokerWait)
	for {
		mdCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
		if err != nil {
			return err
		}
		md, err := kadm.NewClient(mdCl).BrokerMetadata(ctx)
		mdCl.Close()
		if err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		var listed []string
		for _, b := range md.Brokers {
			listed = append(listed, fmt.Sprintf("%d=%s:%d", b.NodeID, b.Host, b.Port))
		}
		sort.Strings(listed)
		if len(listed) == *wantBrokers {
			fmt.Printf("brokers: %d listed: %s\n", len(listed), strings.Join(listed, " "))
			break
		}
		if time.Now().After(brokerDeadline) {
			return fmt.Errorf("%d brokers listed, want %d: %s", len(listed), *wantBrokers, strings.Join(listed, " "))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d brokers listed, want %d: %w", len(listed), *wantBrokers, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}

	admCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if *produce {
		if err := createAndProduce(ctx, adm, seeds, *topic, *partitions, *n); err != nil {
			return err
		}
	}
	return consume(ctx, adm, seeds, *topic, *group, *n)
}

func createAndProduce(ctx context.Context, adm *kadm.Client, seeds []string, topic string, partitions, n int) error {
	ct, err := adm.CreateTopic(ctx, int32(partitions), -1, nil, topic)
	if err == nil {
		err = ct.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	fmt.Printf("topic: %s with %d partitions\n", topic, partitions)

	// Produce: acks=all (kgo's default, stated here), idempotent.
	start := time.Now()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return err
	}
	defer prod.Close()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte("record-" + strconv.Itoa(i))}
	}
	if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	perPart := map[int32]int{}
	for _, r := range rs {
		perPart[r.Partition]++
	}
	fmt.Printf("produced: %d records, acks=all, in %v, per partition %v\n", n, time.Since(start).Round(time.Millisecond), perPart)
	return nil
}

// consume reads topic from the start in group until its n records are all
// back, commits, and checks the committed offsets add up to n.
func consume(ctx context.Context, adm *kadm.Client, seeds []string, topic, group string, n int) error {
	start := time.Now()
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		return err
	}
	defer cons.Close()
	seen := make(map[string]bool, n)
	for len(seen) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("consume: %d of %d records back before the time limit", len(seen), n)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = errors.Join(ferr, fmt.Errorf("%s/%d: %w", t, p, err)) })
		if ferr != nil {
			return fmt.Errorf("fetch: %w", ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != "record-"+string(r.Key) {
				ferr = fmt.Errorf("record key %q value %q do not match", r.Key, r.Value)
			}
			seen[string(r.Key)] = true
		})
		if ferr != nil {
			return ferr
		}
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	fmt.Printf("consumed: %d distinct records in group %s in %v, offsets committed\n", len(seen), group, time.Since(start).Round(time.Millisecond))

	offs, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		return fmt.Errorf("fetch committed offsets: %w", err)
	}
	var committed int64
	offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
	fmt.Printf("committed: offsets of group %s add up to %d\n", group, committed)
	if committed != int64(n) {
		return fmt.Errorf("committed offsets add up to %d, want %d", committed, n)
	}
	fmt.Println("roundtrip: OK")
	return nil
}
