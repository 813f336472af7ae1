package workload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"floe/proof/history"
)

// Kind is what a worker's client does.
type Kind string

// The worker kinds, assigned round-robin from Config.Kinds.
const (
	KindAssign       Kind = "assign"
	KindTxnAssign    Kind = "txn-assign"
	KindSubscribe    Kind = "subscribe"
	KindTxnSubscribe Kind = "txn-subscribe"
)

// Config is a run's configuration.
type Config struct {
	// Brokers is the bootstrap address list.
	Brokers []string
	// TopicPrefix names the topics: prefix0, prefix1, …, each with
	// Partitions partitions. Run creates them when missing, and refuses to
	// run (ErrNotFresh) when any holds records.
	TopicPrefix string
	Topics      int
	Partitions  int
	// Workers is the number of concurrent clients; Kinds their kinds,
	// round-robin (all four by default).
	Workers int
	Kinds   []Kind
	// SaramaWorkers is how many of the workers use a sarama client instead
	// of franz-go (0: none): the first ones of a kind sarama serves
	// (SaramaKinds), up to their number.
	SaramaWorkers int
	// Duration is how long workers run before the final polls.
	Duration time.Duration
	// MaxTxnLen bounds the micro-ops of a transaction (4).
	MaxTxnLen int
	// OpTimeout bounds one op; past it the outcome is unknown (5s).
	OpTimeout time.Duration
	// PollWait is how long one poll waits for records (100ms).
	PollWait time.Duration
	// AbortP is the probability that a transaction that sent aborts (0.1).
	AbortP float64
	// CrashP is the probability that a worker crashes its client before an
	// op, to open a fresh one (0.005; negative for never). A transactional
	// worker's new client fences the old one's transactional id.
	CrashP float64
	// ReassignP is the probability that an assign worker assigns itself a
	// new set of keys before an op (0.02; negative for never).
	ReassignP float64
	// CrashBackoff is how long a worker whose op's outcome was unknown
	// waits before it opens its next client (100ms; negative for never): a
	// cluster that refuses every request (its metadata store down) is not
	// hammered by reconnecting clients, nor the history flooded with crash
	// ops (thousands a second without it).
	CrashBackoff time.Duration
	// FinalTimeout bounds the final polls (10s).
	FinalTimeout time.Duration
	// Group prefixes the consumer groups (floe-proof).
	Group string
	// Seed seeds the random choices; printed in the log so a run replays
	// its choices (not the broker's timing).
	Seed uint64
	// Logger receives progress and client errors (discarded if nil).
	Logger *slog.Logger
}

func (c *Config) defaults() error {
	if len(c.Brokers) == 0 {
		return errors.New("workload: no brokers")
	}
	if c.TopicPrefix == "" {
		c.TopicPrefix = "floe-proof-"
	}
	if c.Topics <= 0 {
		c.Topics = 2
	}
	if c.Partitions <= 0 {
		c.Partitions = 3
	}
	if c.Workers <= 0 {
		c.Workers = 6
	}
	if len(c.Kinds) == 0 {
		c.Kinds = []Kind{KindAssign, KindTxnAssign, KindSubscribe, KindTxnSubscribe}
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.MaxTxnLen <= 0 {
		c.MaxTxnLen = 4
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = 5 * time.Second
	}
	if c.PollWait <= 0 {
		c.PollWait = 100 * time.Millisecond
	}
	if c.AbortP == 0 {
		c.AbortP = 0.1
	}
	if c.CrashP == 0 {
		c.CrashP = 0.005
	}
	if c.ReassignP == 0 {
		c.ReassignP = 0.02
	}
	if c.CrashBackoff == 0 {
		c.CrashBackoff = 100 * time.Millisecond
	}
	if c.FinalTimeout <= 0 {
		c.FinalTimeout = 10 * time.Second
	}
	if c.Group == "" {
		c.Group = "floe-proof"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Keys maps keys to (topic, partition) and back: key k is partition
// k mod Partitions of topic Prefix(k div Partitions).
type Keys struct {
	Prefix     string
	Topics     int
	Partitions int
}

// Count is the number of keys.
func (m Keys) Count() int { return m.Topics * m.Partitions }

// TopicNames lists the topics.
func (m Keys) TopicNames() []string {
	ts := make([]string, m.Topics)
	for i := range ts {
		ts[i] = fmt.Sprintf("%s%d", m.Prefix, i)
	}
	return ts
}

// Partition returns the topic and partition of k.
func (m Keys) Partition(k history.Key) (string, int32) {
	return fmt.Sprintf("%s%d", m.Prefix, int(k)/m.Partitions), int32(int(k) % m.Partitions)
}

// Key returns the key of a topic's partition, false if it is not one of ours.
func (m Keys) Key(topic string, partition int32) (history.Key, bool) {
	for i := range m.Topics {
		if topic == fmt.Sprintf("%s%d", m.Prefix, i) && int(partition) < m.Partitions {
			return history.Key(i*m.Partitions + int(partition)), true
		}
	}
	return 0, false
}

// run is the state shared by a run's workers: the recorder, and counters
// for unique values and process ids (atomics; nothing else is shared).
type run struct {
	cfg     Config
	keys    Keys
	rec     *history.Recorder
	value   atomic.Int64
	process atomic.Int64
}

func (r *run) nextProcess() int { return int(r.process.Add(1) - 1) }

// Run runs the workload until cfg.Duration has passed (or ctx ends), then
// the final polls, and returns the history. An error means the run could not
// start or finish its bookkeeping; broker errors are outcomes in the history.
func Run(ctx context.Context, cfg Config) (history.History, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	r := &run{
		cfg:  cfg,
		keys: Keys{Prefix: cfg.TopicPrefix, Topics: cfg.Topics, Partitions: cfg.Partitions},
		rec:  history.NewRecorder(),
	}
	if err := r.prepare(ctx); err != nil {
		return nil, err
	}
	cfg.Logger.Info("workload start", "seed", cfg.Seed, "workers", cfg.Workers, "keys", r.keys.Count(), "duration", cfg.Duration)
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, cfg.Workers)
	saramas := 0
	for w := range cfg.Workers {
		wk := &worker{
			run:  r,
			id:   w,
			kind: cfg.Kinds[w%len(cfg.Kinds)],
			rng:  rand.New(rand.NewPCG(cfg.Seed, uint64(w))),
			log:  cfg.Logger.With("component", "workload", "worker", w),
		}
		if saramas < cfg.SaramaWorkers && slices.Contains(SaramaKinds, wk.kind) {
			wk.sarama = true
			saramas++
		}
		wg.Go(func() { errs[w] = wk.loop(runCtx, ctx) })
	}
	if saramas > 0 {
		cfg.Logger.Info("sarama workers", "n", saramas)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return r.rec.History(), err
	}
	if err := r.finalPolls(ctx); err != nil {
		return r.rec.History(), err
	}
	h := r.rec.History()
	cfg.Logger.Info("workload done", "ops", len(h))
	return h, nil
}
