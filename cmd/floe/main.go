// Command floe is the single floe binary: `floe dev` runs an agent on the
// embedded stores (SQLite and a local directory), `floe agent` runs one
// against a shared metadata store and bucket. This package only wires and
// configures; behaviour lives in the packages it imports.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"floe/agent"
	"floe/iceberg"
	"floe/schemaregistry"
	"floe/storage/faulty"
)

const usage = `floe — a diskless, Kafka-compatible broker on object storage.

Usage:
  floe dev   [flags]   run one agent on embedded stores (SQLite + ./floe-data)
  floe agent [flags]   run an agent against a shared metadata store and bucket
  floe compactor [flags]  merge objects, apply retention, collect garbage
  floe bench MODE      load-test a broker: produce, consume or e2e, with baselines
  floe user VERB       add, delete or list SASL/SCRAM users in the metadata store
  floe group VERB      list, describe or reset-offsets of consumer groups (Kafka admin API)
  floe acl VERB        add, remove or list ACLs (Kafka admin API)
  floe schema VERB     list, get, register, check, delete, config or mode of the schema registry
  floe table VERB      list, describe or scan the topics' Iceberg tables (the REST catalog)

Run 'floe <command> --help' for the flags of a command. Every flag can also
be set through the environment as FLOE_<NAME> (e.g. --flush-interval is
FLOE_FLUSH_INTERVAL).
`

// commands maps each subcommand to its entry point; each command's file
// registers itself in an init function.
var commands = map[string]func(args []string) error{}

func init() {
	commands["dev"] = runDev
	commands["agent"] = runAgent
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch name := os.Args[1]; name {
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		run, ok := commands[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "floe: unknown command %q\n\n%s", name, usage)
			os.Exit(2)
		}
		err = run(os.Args[2:])
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "floe: %v\n", err)
		os.Exit(1)
	}
}

// agentFlags registers the flags shared by dev and agent.
type agentFlags struct {
	cfg           agent.Config
	logLevel      string
	shutdownGrace time.Duration
	// bucketLatency and cpuProfile serve `floe bench`: S3-like PUT/GET
	// latency on any bucket, and a CPU profile of the agent under load.
	bucketLatency time.Duration
	cpuProfile    string
	// pprof serves Go's profiles on the HTTP listener (memlimit.go).
	pprof bool
	// compactor, when set (floe dev), runs the compactor's jobs in the
	// agent's process, and the Iceberg converter beside them.
	compactor *compactorFlags
	// iceberg configures the Iceberg catalog the agent serves at /iceberg.
	iceberg *icebergFlags
	// sec holds the listener, TLS and SASL flags (security.go).
	sec securityFlags
}

func (f *agentFlags) register(fs *flag.FlagSet) {
	c := &f.cfg
	fs.StringVar(&c.KafkaAddr, "kafka-addr", c.KafkaAddr, "Kafka listener `host:port`")
	registerTopicDefaults(fs, &c.TopicDefaults)
	fs.StringVar(&c.HTTPAddr, "http-addr", c.HTTPAddr, "HTTP listener `host:port` for /metrics, /healthz, /readyz (empty disables)")
	fs.StringVar(&c.SchemaRegistryAddr, "schema-registry-addr", c.SchemaRegistryAddr, "the schema registry's own listener `host:port` (Confluent's API; empty: only under /schema-registry/ on --http-addr)")
	registerAuthzFlags(fs, &c.Authz) // acl.go
	fs.StringVar(&c.AdvertiseAddr, "advertise-addr", c.AdvertiseAddr, "`host:port` given to clients in Metadata (default: the Kafka listener)")
	fs.StringVar(&c.AdvertiseHTTPAddr, "advertise-http-addr", c.AdvertiseHTTPAddr, "`host:port` the other agents reach the HTTP listener at, for the zone's shared read cache (default: the advertised Kafka host with the --http-addr port)")
	fs.StringVar(&c.Zone, "zone", c.Zone, "availability `zone` of this agent; clients with floe_az=ZONE in their client id prefer agents of their zone")
	fs.DurationVar(&c.FlushInterval, "flush-interval", c.FlushInterval, "longest time a produced batch waits before its object is flushed")
	fs.Int64Var(&c.FlushBytes, "flush-bytes", c.FlushBytes, "flush the pending object once it holds this many `bytes`")
	fs.IntVar(&c.MaxInflightFlushes, "flush-concurrency", c.MaxInflightFlushes, "flushes whose PUT or commit may run at once")
	fs.Int64Var(&c.BufferBytes, "buffer-bytes", c.BufferBytes, "produced `bytes` held in memory before producers are slowed down")
	int32Var(fs, &c.MaxRequestSize, "max-request-size", "largest Kafka request in `bytes` (socket.request.max.bytes)")
	fs.DurationVar(&c.RequestReadTimeout, "request-read-timeout", c.RequestReadTimeout, "longest time one request may take to arrive once it has begun; slower connections are closed")
	fs.DurationVar(&c.ConnectionsMaxIdle, "connections-max-idle", c.ConnectionsMaxIdle, "close connections that sent no request for this long (connections.max.idle.ms; 0: never)")
	fs.IntVar(&c.MaxConnections, "max-connections", c.MaxConnections, "most open Kafka connections; more are closed at accept (max.connections; 0: no limit)")
	fs.IntVar(&c.MaxConnectionsPerIP, "max-connections-per-ip", c.MaxConnectionsPerIP, "most Kafka connections from one address (max.connections.per.ip; 0: no limit)")
	fs.IntVar(&c.QueuedMaxRequests, "queued-max-requests", c.QueuedMaxRequests, "requests one connection may have in flight before its reads pause")
	int32Var(fs, &c.FetchMaxBytes, "fetch-max-bytes", "most record `bytes` in one Fetch answer, whatever the client asks (fetch.max.bytes)")
	fs.Int64Var(&c.FetchBufferBytes, "fetch-buffer-bytes", c.FetchBufferBytes, "record `bytes` of Fetch answers held in memory at once, over all connections")
	int32Var(fs, &c.MaxPartitionsPerTopic, "max-partitions-per-topic", "most partitions one topic may have (INVALID_PARTITIONS beyond)")
	fs.Int64Var(&c.MaxPartitions, "max-partitions", c.MaxPartitions, "most partitions in the cluster (POLICY_VIOLATION beyond; 0: no limit)")
	fs.IntVar(&c.MaxTopics, "max-topics", c.MaxTopics, "most topics in the cluster (POLICY_VIOLATION beyond; 0: no limit)")
	fs.Float64Var(&c.AutoCreateRate, "auto-create-rate", c.AutoCreateRate, "topics Metadata requests may auto-create per second (0: no limit)")
	fs.IntVar(&c.MaxOffsetCommitPartitions, "max-offset-commit-partitions", c.MaxOffsetCommitPartitions, "most partitions one OffsetCommit may name (0: no limit)")
	fs.BoolVar(&c.AutoCreateTopics, "auto-create-topics", c.AutoCreateTopics, "create unknown topics named in Metadata requests")
	int32Var(fs, &c.DefaultPartitions, "default-partitions", "partition `count` of auto-created topics")
	fs.DurationVar(&c.GroupMinSessionTimeout, "group-min-session-timeout", c.GroupMinSessionTimeout, "shortest session timeout a consumer group member may ask for; shorter joins are INVALID_SESSION_TIMEOUT (group.min.session.timeout.ms)")
	fs.DurationVar(&c.GroupMaxSessionTimeout, "group-max-session-timeout", c.GroupMaxSessionTimeout, "longest session timeout a consumer group member may ask for (group.max.session.timeout.ms)")
	fs.DurationVar(&c.GroupInitialRebalanceDelay, "group-initial-rebalance-delay", c.GroupInitialRebalanceDelay, "how long a new consumer group waits for more members before its first generation, once more per delay in which one joined (group.initial.rebalance.delay.ms)")
	fs.IntVar(&c.GroupMaxSize, "group-max-size", c.GroupMaxSize, "most members of one consumer group; more are GROUP_MAX_SIZE_REACHED (group.max.size; 0: no limit)")
	fs.DurationVar(&c.ConsumerGroupSessionTimeout, "group-consumer-session-timeout", c.ConsumerGroupSessionTimeout, "how long a KIP-848 consumer group member may go without a heartbeat (group.consumer.session.timeout.ms)")
	fs.DurationVar(&c.ConsumerGroupHeartbeatInterval, "group-consumer-heartbeat-interval", c.ConsumerGroupHeartbeatInterval, "heartbeat interval given to KIP-848 consumer group members (group.consumer.heartbeat.interval.ms)")
	fs.DurationVar(&c.ConsumerGroupMinSessionTimeout, "group-consumer-min-session-timeout", c.ConsumerGroupMinSessionTimeout, "shortest consumer.session.timeout.ms a KIP-848 group may set (group.consumer.min.session.timeout.ms)")
	fs.DurationVar(&c.ConsumerGroupMaxSessionTimeout, "group-consumer-max-session-timeout", c.ConsumerGroupMaxSessionTimeout, "longest consumer.session.timeout.ms a KIP-848 group may set (group.consumer.max.session.timeout.ms)")
	fs.DurationVar(&c.ConsumerGroupMinHeartbeatInterval, "group-consumer-min-heartbeat-interval", c.ConsumerGroupMinHeartbeatInterval, "shortest consumer.heartbeat.interval.ms a KIP-848 group may set (group.consumer.min.heartbeat.interval.ms)")
	fs.DurationVar(&c.ConsumerGroupMaxHeartbeatInterval, "group-consumer-max-heartbeat-interval", c.ConsumerGroupMaxHeartbeatInterval, "longest consumer.heartbeat.interval.ms a KIP-848 group may set (group.consumer.max.heartbeat.interval.ms)")
	fs.Int64Var(&c.CacheBytes, "cache-bytes", c.CacheBytes, "read cache budget in `bytes`")
	fs.Int64Var(&c.ReadAheadBytes, "read-ahead-bytes", c.ReadAheadBytes, "`bytes` of GETs read ahead of consumers catching up on old data, planned or running at once (0: no read-ahead)")
	fs.IntVar(&c.ReadAheadConcurrency, "read-ahead-concurrency", c.ReadAheadConcurrency, "read-ahead index look-ups and GETs running at once")
	fs.IntVar(&c.ReadAheadEntries, "read-ahead-entries", c.ReadAheadEntries, "index entries read ahead of a consumer, per partition")
	fs.Int64Var(&c.ReadAheadPartitionBytes, "read-ahead-partition-bytes", c.ReadAheadPartitionBytes, "`bytes` read ahead of a consumer, per partition")
	fs.BoolVar(&c.ReadCachePeers, "read-cache-peers", c.ReadCachePeers, "read the ranges another agent of this zone owns through that agent's read cache (one GET per range per zone); the agent serves its own ranges to peers either way")
	fs.DurationVar(&c.AgentTTL, "agent-ttl", c.AgentTTL, "how long an agent without heartbeat stays listed")
	fs.DurationVar(&c.LagInterval, "lag-interval", c.LagInterval, "how often floe_group_lag_* and floe_partition_retention_headroom_seconds are computed for the groups this agent coordinates (0: never)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `level`: debug, info, warn, error")
	fs.DurationVar(&f.shutdownGrace, "shutdown-grace", 30*time.Second, "bound on the whole shutdown: drain, flush, in-flight requests, lease hand-offs")
	fs.DurationVar(&c.DrainDelay, "drain-delay", c.DrainDelay, "on SIGTERM, how long the agent serves on after leaving the registry, so that the other agents stop naming it in Metadata first (at most half of --shutdown-grace)")
	fs.DurationVar(&f.bucketLatency, "bucket-latency", 0, "benchmarking: add this latency to every object-store request (e.g. 100ms, like S3)")
	fs.StringVar(&f.cpuProfile, "cpu-profile", "", "benchmarking: write a pprof CPU profile of the whole run to `file`")
	fs.BoolVar(&f.pprof, "pprof", false, "serve Go's runtime profiles (heap, CPU, goroutines) under /debug/pprof/ on the HTTP listener")
}

// check refuses settings that contradict each other, as Kafka refuses to
// start with them.
func (f *agentFlags) check() error {
	c := &f.cfg
	if err := f.sec.apply(c); err != nil {
		return err
	}
	switch {
	case c.GroupMinSessionTimeout <= 0 || c.GroupMaxSessionTimeout < c.GroupMinSessionTimeout:
		return errors.New("--group-min-session-timeout must be positive and at most --group-max-session-timeout")
	case c.GroupInitialRebalanceDelay < 0 || c.GroupMaxSize < 0:
		return errors.New("--group-initial-rebalance-delay and --group-max-size must not be negative")
	case c.ConsumerGroupHeartbeatInterval <= 0 || c.ConsumerGroupSessionTimeout <= c.ConsumerGroupHeartbeatInterval:
		return errors.New("--group-consumer-heartbeat-interval must be positive and shorter than --group-consumer-session-timeout")
	}
	return nil
}

// int32Var registers a positive int32 flag; its default is *p.
func int32Var(fs *flag.FlagSet, p *int32, name, usage string) {
	fs.Func(name, fmt.Sprintf("%s (default %d)", usage, *p), func(s string) error {
		var n int32
		if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
			return fmt.Errorf("invalid value %q: want a positive integer", s)
		}
		*p = n
		return nil
	})
}

func (f *agentFlags) logger() (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// parse parses args, then fills every flag not given on the command line
// from FLOE_<NAME> in the environment.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	set := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		env := "FLOE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s: %w", env, e)
			}
		}
	})
	return err
}

func newFlagSet(name, summary string) *flag.FlagSet {
	fs := flag.NewFlagSet("floe "+name, flag.ContinueOnError)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: floe %s [flags]\n\n%s\n\nFlags (each also read from FLOE_<NAME>):\n", name, summary)
		fs.PrintDefaults()
	}
	return fs
}

func runDev(args []string) error {
	f := agentFlags{cfg: agent.DevConfig()}
	devMemory(&f.cfg)
	fs := newFlagSet("dev", "Runs one agent on embedded stores: metadata in SQLite (DIR/meta.db) and\nobjects in a directory (DIR/objects). Nothing else to install or start.")
	dataDir := fs.String("data-dir", "./floe-data", "`directory` holding the metadata database and the objects")
	f.register(fs)
	f.sec.register(fs, &f.cfg, true)
	f.compactor = devCompactorFlags()
	f.compactor.register(fs, "compactor-")
	f.iceberg = devIcebergFlags()
	f.iceberg.register(fs, true)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	log, err := f.logger()
	if err != nil {
		return err
	}
	if !isSet(fs, "schema-registry-addr") && f.cfg.SchemaRegistryAddr != "" {
		// Confluent's port is a convenience: a second floe dev (or a
		// registry already running) leaves the registry under
		// /schema-registry/ alone.
		if ln, err := net.Listen("tcp", f.cfg.SchemaRegistryAddr); err != nil {
			log.Warn("schema registry port taken; serving the registry under /schema-registry/ on --http-addr only",
				"addr", f.cfg.SchemaRegistryAddr, "err", err)
			f.cfg.SchemaRegistryAddr = ""
		} else {
			ln.Close()
		}
	}
	abs, err := filepath.Abs(*dataDir)
	if err != nil {
		return err
	}
	return serve(f, "sqlite://"+filepath.Join(abs, "meta.db"), "file://"+filepath.Join(abs, "objects"), log)
}

func runAgent(args []string) error {
	f := agentFlags{cfg: agent.DefaultConfig()}
	fs := newFlagSet("agent", "Runs one stateless agent against a shared metadata store and bucket.\nRun as many as you like against the same stores.")
	metaURL := fs.String("metadata", "", "metadata store `URL`: postgres://user:pass@host:port/db or sqlite://PATH")
	bucketURL := fs.String("bucket", "", "bucket `URL`: s3://BUCKET[/prefix]?endpoint=URL&region=R, file://DIR or mem://")
	f.register(fs)
	f.sec.register(fs, &f.cfg, false)
	f.iceberg = defaultIcebergFlags()
	f.iceberg.register(fs, false)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *metaURL == "" || *bucketURL == "" {
		fs.Usage()
		return errors.New("--metadata and --bucket are required")
	}
	if err := f.check(); err != nil {
		return err
	}
	log, err := f.logger()
	if err != nil {
		return err
	}
	return serve(f, *metaURL, *bucketURL, log)
}

// serve opens the stores, runs the agent until SIGINT/SIGTERM, then shuts it
// down: stop accepting, flush, answer in-flight requests, deregister.
func serve(f agentFlags, metaURL, bucketURL string, log *slog.Logger) error {
	setMemoryLimit(log, f.memoryBudgets())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	store, bucket, closeStores, err := openStores(ctx, metaURL, bucketURL, f.cfg.HTTPAddr, log)
	if err != nil {
		return err
	}
	defer closeStores()
	if f.sec.devAuth {
		if err := ensureDevAdmin(ctx, store, log); err != nil {
			return err
		}
	}
	if f.bucketLatency > 0 {
		bucket = &faulty.Bucket{Bucket: bucket, Latency: f.bucketLatency}
	}
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	if err := f.iceberg.check(); err != nil {
		return err
	}
	cat, closeCat, err := f.iceberg.openCatalog(ctx, metaURL, bucketURL, log)
	if err != nil {
		return err
	}
	defer closeCat()
	if cat != nil {
		f.cfg.HTTPHandlers = map[string]http.Handler{"/iceberg/": iceberg.RESTHandler("/iceberg", cat, log)}
	}
	if f.pprof {
		addPprof(&f.cfg)
	}
	f.cfg.SchemaRegistry = schemaregistry.New(schemaregistry.Config{Store: store, Logger: log.With("component", "schema-registry")})

	// The compactor and the converter start first (their metrics join the
	// agent's); the compactor yields to the agent once it exists.
	var ag atomic.Pointer[agent.Agent]
	if f.compactor != nil {
		var gs prometheus.Gatherers
		if cat != nil {
			f.iceberg.conv.ID, f.iceberg.conv.LeaseTTL = f.compactor.cfg.ID, f.compactor.cfg.LeaseTTL
			conv := iceberg.NewConverter(f.iceberg.conv, store, bucket, cat, log)
			f.compactor.cfg.RetentionHold = conv.Hold
			conv.Start(ctx)
			defer conv.Close()
			gs = append(gs, conv.Gatherer())
		}
		f.compactor.cfg.TopicDefaults = f.cfg.TopicDefaults
		f.compactor.cfg.Busy = func() bool { a := ag.Load(); return a != nil && a.ProduceBusy() }
		c, err := startCompactor(ctx, f.compactor, store, bucket, log)
		if err != nil {
			return err
		}
		defer c.Close()
		f.cfg.ExtraMetrics = append(gs, c.Gatherer())
	}
	a := agent.New(f.cfg, store, bucket, log)
	ag.Store(a)
	if err := a.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	stop()
	log.Info("shutting down", "grace", f.shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownGrace)
	defer cancel()
	boundShutdown(f.shutdownGrace, log)
	return a.Close(sctx)
}

// boundShutdown makes --shutdown-grace a bound on the whole shutdown, the
// stores' and the compactor's closing included: a second SIGINT/SIGTERM,
// or the grace plus a few seconds, ends the process at once. The process
// is exiting anyway, so the watchdog is never stopped.
func boundShutdown(grace time.Duration, log *slog.Logger) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sig:
			log.Error("second signal during shutdown: exiting now", "signal", s.String())
		case <-time.After(grace + 5*time.Second):
			log.Error("shutdown took longer than --shutdown-grace: exiting now", "grace", grace)
		}
		os.Exit(1)
	}()
}
