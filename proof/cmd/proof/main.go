package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"floe/proof/checker"
	"floe/proof/nemesis"
	"floe/proof/workload"
)

// config is a run's parameters, all of them in the report.
type config struct {
	Duration   time.Duration  `json:"duration"`
	Seed       uint64         `json:"seed"`
	Agents     int            `json:"agents"`
	Workers    int            `json:"workers"`
	Sarama     int            `json:"sarama_workers"`
	Topics     int            `json:"topics"`
	Partitions int            `json:"partitions"`
	Kinds      []nemesis.Kind `json:"fault_kinds"`
	Gap        time.Duration  `json:"fault_gap"`
	Hold       time.Duration  `json:"fault_hold"`
	Concurrent int            `json:"fault_schedules"`
	Settle     time.Duration  `json:"settle"`
	Iceberg    bool           `json:"iceberg_check"`
	Checkpoint time.Duration  `json:"iceberg_checkpoint"`
	agentTTL   time.Duration
	floeBin    string
	out        string
	keepDir    bool
	logger     *slog.Logger
}

func main() {
	var cfg config
	var kinds string
	flag.DurationVar(&cfg.Duration, "duration", 3*time.Minute, "how long the workload runs under faults")
	flag.Uint64Var(&cfg.Seed, "seed", 0, "seed of the workload's and the nemesis's choices (0: a random one, printed)")
	flag.IntVar(&cfg.Agents, "agents", 3, "floe agents, each in a network namespace of its own")
	flag.IntVar(&cfg.Workers, "workers", 8, "workload clients")
	flag.IntVar(&cfg.Sarama, "sarama-workers", 2, "how many of the assign and subscribe workers use sarama instead of franz-go")
	flag.IntVar(&cfg.Topics, "topics", 2, "workload topics")
	flag.IntVar(&cfg.Partitions, "partitions", 3, "partitions per topic")
	flag.StringVar(&kinds, "faults", "all", "comma-separated fault kinds (all: every kind)")
	flag.DurationVar(&cfg.Gap, "fault-gap", 8*time.Second, "longest quiet time between two faults")
	flag.DurationVar(&cfg.Hold, "fault-hold", 12*time.Second, "longest time a fault lasts")
	flag.IntVar(&cfg.Concurrent, "fault-schedules", 1, "fault schedules running at once (more than 1: faults overlap, and a seed no longer replays the schedule exactly)")
	flag.DurationVar(&cfg.Settle, "settle", 15*time.Second, "time without faults at the end of the run, before the final reads")
	flag.BoolVar(&cfg.Iceberg, "iceberg", true, "read the topics' Iceberg tables after the run and check them against the history")
	flag.DurationVar(&cfg.Checkpoint, "iceberg-checkpoint", 30*time.Second, "how often the tables are also read during the run (0: never)")
	flag.StringVar(&cfg.floeBin, "floe", "", "floe binary (default: built from this module)")
	flag.StringVar(&cfg.out, "out", "docs/proof", "directory of the report")
	flag.BoolVar(&cfg.keepDir, "keep", false, "keep the run's directory (logs, data) after the run")
	render := flag.String("render", "", "only write the report again, with this version's report, from a kept run's `DIR` (its result.json and history.jsonl.gz)")
	flag.Parse()
	if *render != "" {
		if err := rerender(*render); err != nil {
			fmt.Fprintln(os.Stderr, "proof:", err)
			os.Exit(1)
		}
		return
	}
	var err error
	if cfg.Kinds, err = nemesis.ParseKinds(kinds); err != nil {
		fmt.Fprintln(os.Stderr, "proof:", err)
		os.Exit(2)
	}
	cfg.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "proof:", err)
		os.Exit(2)
	}
	if !res.Valid {
		fmt.Fprintln(os.Stderr, "proof: the history is INVALID; see", filepath.Join(cfg.out, "README.md"))
		os.Exit(1)
	}
}

// outcome is what a run found.
type outcome struct {
	Valid    bool
	Check    checker.Result
	Iceberg  *icebergResult
	Injected map[nemesis.Kind]int
}

// run runs the whole proof and writes the report to cfg.out.
func run(ctx context.Context, cfg config) (outcome, error) {
	if err := preflight(); err != nil {
		return outcome{}, err
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64() >> 12 // printable, and fits a JSON number
	}
	if cfg.agentTTL == 0 {
		cfg.agentTTL = defaultAgentTTL
	}
	log := cfg.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log.Info("proof", "seed", cfg.Seed, "duration", cfg.Duration, "replay", fmt.Sprintf("-seed %d", cfg.Seed))
	cleanStaleRuns(log)
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", runDirPrefix, os.Getpid()))
	if err != nil {
		return outcome{}, err
	}
	if cfg.keepDir {
		if err := os.WriteFile(filepath.Join(dir, keepMarker), nil, 0o644); err != nil {
			return outcome{}, err
		}
		log.Info("run directory kept", "dir", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if cfg.floeBin == "" {
		cfg.floeBin = filepath.Join(dir, "floe")
		build := exec.CommandContext(ctx, "go", "build", "-o", cfg.floeBin, "floe/cmd/floe")
		if out, err := build.CombinedOutput(); err != nil {
			return outcome{}, fmt.Errorf("build floe: %w: %s", err, out)
		}
	}
	if err := nemesis.CleanStale(ctx); err != nil {
		log.Warn("stale namespaces left", "err", err)
	}
	nw, err := nemesis.NewNet(ctx, cfg.Agents)
	if err != nil {
		return outcome{}, err
	}
	defer func() {
		if err := nw.Close(); err != nil {
			log.Warn("network cleanup", "err", err)
		}
	}()
	c := &cluster{dir: dir, net: nw}
	defer c.stop()
	if err := startCluster(ctx, c, cfg); err != nil {
		return outcome{}, fmt.Errorf("start cluster: %w", err)
	}
	log.Info("cluster up", "agents", c.addrs, "postgres", c.metaURL, "minio", c.mi.Endpoint)

	nem := nemesis.New(nemesis.Cluster{
		Net: nw, Compactor: c.compactor, Postgres: c.postgresTarget(), MinIO: c.minio,
		Agents: targets(c.agents), PGPort: c.pgPort, MinIOPort: c.minioPort(), KafkaPort: kafkaPort, HTTPPort: httpPort,
		AgentTTL: cfg.agentTTL,
	}, nemesis.Config{Seed: cfg.Seed, Kinds: cfg.Kinds, Gap: cfg.Gap, Hold: cfg.Hold, Concurrency: cfg.Concurrent, Logger: log})
	nctx, ncancel := context.WithTimeout(ctx, cfg.Duration-cfg.Settle)
	defer ncancel()
	nemDone := make(chan struct{})
	started := time.Now()
	go func() {
		defer close(nemDone)
		nem.Run(nctx)
	}()
	keys := workload.Keys{Prefix: "floe-proof-", Topics: cfg.Topics, Partitions: cfg.Partitions}
	var scans []scan
	cpDone := make(chan struct{})
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	go func() {
		defer close(cpDone)
		if cfg.Iceberg && cfg.Checkpoint > 0 {
			scans = checkpoints(cctx, c, keys, cfg.Checkpoint, started)
		}
	}()
	h, werr := workload.Run(ctx, workload.Config{
		Brokers: c.addrs, TopicPrefix: keys.Prefix, Topics: cfg.Topics, Partitions: cfg.Partitions,
		Workers: cfg.Workers, SaramaWorkers: cfg.Sarama, Duration: cfg.Duration, FinalTimeout: 90 * time.Second, Seed: cfg.Seed,
		Logger: log,
	})
	ncancel()
	<-nemDone
	ccancel()
	<-cpDone
	if werr != nil && len(h) == 0 {
		return outcome{}, fmt.Errorf("workload: %w", werr)
	}
	if werr != nil {
		log.Warn("workload ended with an error; checking what it recorded", "err", werr)
	}
	res, err := checker.Check(h, checker.Options{})
	if err != nil {
		return outcome{}, err
	}
	o := outcome{Valid: res.Valid, Check: res, Injected: nem.Injected()}
	if cfg.Iceberg {
		ic := checkIceberg(ctx, c, cfg, h, scans)
		o.Iceberg = &ic
		o.Valid = o.Valid && ic.Err == "" && ic.Bad() == 0
	}
	rep := report{cfg: cfg, out: o, h: h, timeline: nem.Timeline(), started: started, workloadErr: werr}
	if err := rep.write(cfg.out); err != nil {
		return o, err
	}
	log.Info("proof done", "valid", o.Valid, "ops", len(h), "bad", res.Bad, "faults", o.Injected, "seed", cfg.Seed)
	return o, nil
}

func targets(ps []*nemesis.Process) []nemesis.Target {
	ts := make([]nemesis.Target, len(ps))
	for i, p := range ps {
		ts[i] = p
	}
	return ts
}
