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
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"floe/compactor"
	"floe/iceberg"
	"floe/metadata"
	"floe/storage"
	"floe/storage/faulty"
	"floe/topicconfig"
)

func init() {
	commands["compactor"] = runCompactor
}

// compactorFlags registers a compactor.Config's flags, each name prefixed
// (`floe dev` prefixes them with "compactor-" next to the agent's flags).
type compactorFlags struct {
	cfg compactor.Config
}

func (f *compactorFlags) register(fs *flag.FlagSet, prefix string) {
	c := &f.cfg
	fs.StringVar(&c.ID, prefix+"id", c.ID, "compactor `id`, the owner name of its job leases (default: random per process)")
	fs.DurationVar(&c.Interval, prefix+"interval", c.Interval, "pause between rounds of jobs")
	fs.DurationVar(&c.LeaseTTL, prefix+"lease-ttl", c.LeaseTTL, "job lease duration; a dead compactor's jobs are taken over after it")
	fs.IntVar(&c.Plan.FanIn, prefix+"fan-in", c.Plan.FanIn, "`objects` of one level merged into one object of the next")
	fs.DurationVar(&c.Plan.MaxWait, prefix+"max-wait", c.Plan.MaxWait, "merge fewer than fan-in objects once the oldest is this old")
	fs.IntVar(&c.Plan.MaxLevel, prefix+"max-level", c.Plan.MaxLevel, "highest `level` merges write")
	fs.Int64Var(&c.Plan.MaxBytes, prefix+"max-merge-bytes", c.Plan.MaxBytes, "largest merged object in `bytes`")
	fs.DurationVar(&c.Grace, prefix+"grace", c.Grace, "how long unreferenced objects stay in the bucket, and how old an uncommitted object must be to be deleted as an orphan")
	if prefix == "" {
		// floe dev registers the topic defaults once, for agent and
		// compactor both (agentFlags.register).
		registerTopicDefaults(fs, &c.TopicDefaults)
	}
	fs.Int64Var(&c.KeyCompactMaxBytes, prefix+"key-compact-max-bytes", c.KeyCompactMaxBytes, "largest partition in `bytes`, as stored and as decoded, that key compaction rewrites (in memory, holding up to three times this)")
	fs.Int64Var(&c.MaxRowBytes, prefix+"max-row-bytes", c.MaxRowBytes, "largest index row in `bytes` a merge writes (fetches read a row whole)")
	fs.Int64Var(&c.MergeBufferBytes, prefix+"merge-buffer-bytes", c.MergeBufferBytes, "source `bytes` one merge holds at once: merged objects are streamed into their PUT through a window of each source")
	fs.Float64Var(&c.PaceRatio, prefix+"pace", c.PaceRatio, "in floe dev, merges pause this many times each step's duration while the agent is producing (0: never)")
}

func (f *compactorFlags) check() error {
	c := f.cfg
	if c.Interval <= 0 || c.LeaseTTL <= 0 || c.Plan.FanIn < 2 || c.Plan.MaxLevel < 1 || c.Plan.MaxBytes <= 0 || c.Grace < 0 {
		return errors.New("compactor: interval and lease TTL must be positive, fan-in >= 2, max level >= 1, max merge bytes > 0, grace >= 0")
	}
	return nil
}

func runCompactor(args []string) error {
	af := agentFlags{} // only for --log-level and --bucket-latency
	cf := compactorFlags{cfg: compactor.DefaultConfig()}
	fs := newFlagSet("compactor", "Runs the background jobs against a shared metadata store and bucket: merges small\nobjects, applies retention, key-compacts cleanup.policy=compact topics and deletes\nunreferenced and orphaned objects. Run several for availability: jobs are leased.")
	metaURL := fs.String("metadata", "", "metadata store `URL`: postgres://user:pass@host:port/db or sqlite://PATH")
	bucketURL := fs.String("bucket", "", "bucket `URL`: s3://BUCKET[/prefix]?endpoint=URL&region=R, file://DIR or mem://")
	httpAddr := fs.String("http-addr", ":8081", "HTTP listener `host:port` for /metrics, /healthz, /readyz (empty disables)")
	fs.StringVar(&af.logLevel, "log-level", "info", "log `level`: debug, info, warn, error")
	fs.DurationVar(&af.bucketLatency, "bucket-latency", 0, "testing: add this latency to every object-store request (widens the windows a crash test aims at)")
	cf.register(fs, "")
	ice := defaultIcebergFlags()
	ice.register(fs, true)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *metaURL == "" || *bucketURL == "" {
		fs.Usage()
		return errors.New("--metadata and --bucket are required")
	}
	if err := cf.check(); err != nil {
		return err
	}
	if err := ice.check(); err != nil {
		return err
	}
	log, err := af.logger()
	if err != nil {
		return err
	}
	setMemoryLimit(log, append(cf.memoryBudgets(""), ice.memoryBudgets()...))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	store, bucket, closeStores, err := openStores(ctx, *metaURL, *bucketURL, *httpAddr, log)
	if err != nil {
		return err
	}
	defer closeStores()
	if af.bucketLatency > 0 {
		bucket = &faulty.Bucket{Bucket: bucket, Latency: af.bucketLatency}
	}

	cat, closeCat, err := ice.openCatalog(ctx, *metaURL, *bucketURL, log)
	if err != nil {
		return err
	}
	defer closeCat()
	var conv *iceberg.Converter
	var gs prometheus.Gatherers
	if cat != nil {
		ice.conv.ID, ice.conv.LeaseTTL = cf.cfg.ID, cf.cfg.LeaseTTL
		conv = iceberg.NewConverter(ice.conv, store, bucket, cat, log)
		cf.cfg.RetentionHold = conv.Hold
		gs = append(gs, conv.Gatherer())
	}
	c := compactor.New(cf.cfg, store, bucket, log)
	var srv *http.Server
	if *httpAddr != "" {
		ln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			return fmt.Errorf("http listener: %w", err)
		}
		srv = &http.Server{Handler: compactorHTTP(append(gs, c.Gatherer()), store), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
	}
	c.Start(ctx)
	if conv != nil {
		conv.Start(ctx)
		defer conv.Close()
	}
	log.Info("compactor running", "id", cf.cfg.ID)
	<-ctx.Done()
	log.Info("shutting down")
	c.Close()
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}
	return nil
}

// compactorHTTP serves /metrics, /healthz and /readyz (the metadata store
// answers).
func compactorHTTP(g prometheus.Gatherer, store metadata.Store) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, err := store.Leases(ctx); err != nil {
			http.Error(w, "metadata store unreachable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	return mux
}

// devCompactorFlags are the compactor defaults of `floe dev`: rounds and
// grace periods short enough to watch locally. Its topic defaults (records
// kept forever) are the agent's, agent.DevConfig.
func devCompactorFlags() *compactorFlags {
	f := &compactorFlags{cfg: compactor.DefaultConfig()}
	f.cfg.Interval = 5 * time.Second
	f.cfg.Grace = time.Minute
	f.cfg.Plan.MaxWait = time.Minute
	// A laptop's memory: 16 MiB of merge windows, key compaction of
	// partitions up to 16 MiB (48 MiB held; memlimit.go).
	f.cfg.MergeBufferBytes = 16 << 20
	f.cfg.KeyCompactMaxBytes = 16 << 20
	// Beside a busy agent, merges take at most a quarter of a core.
	f.cfg.PaceRatio = 3
	return f
}

// startCompactor runs a compactor in this process (floe dev) until its
// Close is called.
func startCompactor(ctx context.Context, f *compactorFlags, store metadata.Store, bucket storage.Bucket, log *slog.Logger) (*compactor.Compactor, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	c := compactor.New(f.cfg, store, bucket, log)
	c.Start(ctx)
	return c, nil
}

// registerTopicDefaults adds the flags of the cluster's topic config
// defaults: agents report them (DescribeConfigs) and apply
// max.message.bytes, compactors enforce the rest. Give agents and
// compactors the same values.
func registerTopicDefaults(fs *flag.FlagSet, d *topicconfig.Defaults) {
	fs.DurationVar(&d.Retention, "retention", d.Retention, "default retention.ms (log.retention.ms; negative: keep forever)")
	fs.Int64Var(&d.RetentionBytes, "retention-bytes", d.RetentionBytes, "default retention.bytes per partition (log.retention.bytes; negative: unlimited)")
	fs.DurationVar(&d.DeleteRetention, "delete-retention", d.DeleteRetention, "default delete.retention.ms: how long tombstones survive key compaction")
	fs.DurationVar(&d.MaxCompactionLag, "max-compaction-lag", d.MaxCompactionLag, "default max.compaction.lag.ms: key compaction runs once uncompacted data is this old")
	fs.Float64Var(&d.MinCleanableDirtyRatio, "min-cleanable-dirty-ratio", d.MinCleanableDirtyRatio, "default min.cleanable.dirty.ratio")
	fs.Int64Var(&d.MaxMessageBytes, "max-message-bytes", d.MaxMessageBytes, "default max.message.bytes: the largest batch produce accepts (message.max.bytes)")
}
