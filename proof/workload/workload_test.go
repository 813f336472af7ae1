package workload

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"

	"floe/proof/checker"
	"floe/proof/history"
)

func TestKeysRoundTrip(t *testing.T) {
	m := Keys{Prefix: "p-", Topics: 3, Partitions: 4}
	for k := range m.Count() {
		topic, p := m.Partition(history.Key(k))
		back, ok := m.Key(topic, p)
		if !ok || back != history.Key(k) {
			t.Fatalf("key %d -> %s/%d -> %d %v", k, topic, p, back, ok)
		}
	}
	if _, ok := m.Key("p-3", 0); ok {
		t.Fatal("p-3 is not a topic of ours")
	}
	if _, ok := m.Key("p-0", 4); ok {
		t.Fatal("partition 4 is not one of ours")
	}
}

// TestWorkloadAgainstKfake runs every kind of worker for a few seconds
// against kfake, a correct broker, and checks that the checker finds no
// anomaly outside the allowed set, reads every committed value, and
// that every kind of op happened.
func TestWorkloadAgainstKfake(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 10 seconds")
	}
	defer goleak.VerifyNone(t)
	const topics, partitions = 2, 3
	c, err := kfake.NewCluster(kfake.NumBrokers(1)) // Run creates the topics
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelInfo
	}
	cfg := Config{
		Brokers:     c.ListenAddrs(),
		TopicPrefix: "floe-proof-",
		Topics:      topics,
		Partitions:  partitions,
		Workers:     6,
		Duration:    10 * time.Second,
		Seed:        uint64(time.Now().UnixNano()),
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := history.WriteJSON(&buf, h); err != nil {
		t.Fatal(err)
	}
	h2, err := history.ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	res, err := checker.Check(h2, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var rep bytes.Buffer
	_ = checker.WriteMarkdown(&rep, res)
	t.Logf("seed %d\n%s", cfg.Seed, rep.String())
	if !res.Valid {
		t.Fatalf("bad classes %v", res.Bad)
	}
	if res.Counts[checker.Unseen] != 0 {
		t.Fatalf("unseen values: %v", res.Stats.Unseen)
	}
	for _, f := range []history.F{history.Send, history.Poll, history.Txn, history.Assign, history.Subscribe} {
		if res.Stats.OpsByF[f] == 0 {
			t.Errorf("no %s op in %v", f, res.Stats.OpsByF)
		}
	}
	if res.Stats.OpsByType[history.Fail] == 0 {
		t.Errorf("no aborted transaction in %v", res.Stats.OpsByType)
	}

	// The topics now hold records: a second run on them is refused.
	cfg.Duration = time.Second
	if _, err := Run(ctx, cfg); !errors.Is(err, ErrNotFresh) {
		t.Fatalf("second run on used topics: %v", err)
	}
}
