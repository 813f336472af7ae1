package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"floe/internal/freeport"
	"floe/metadata/pgtest"
	"floe/proof/nemesis"
	"floe/storage/miniotest"
)

// The ports of every agent, each on its own namespace's address.
const (
	kafkaPort = 9092
	httpPort  = 8080
)

// cluster is the run's processes: PostgreSQL and MinIO and the compactor in
// the root namespace (listening on the network's root address), and the
// agents each in a namespace of its own.
type cluster struct {
	dir       string
	net       *nemesis.Net
	pg        *pgtest.Server
	pgBin     string
	pgPort    int
	pgOpts    string
	metaURL   string // as the agents reach it
	minio     *nemesis.Process
	mi        *miniotest.Server
	bucketURL string
	agents    []*nemesis.Process
	addrs     []string // Kafka addresses of the agents
	httpAddrs []string
	compactor *nemesis.Process
	compHTTP  string
}

// preflight says what the run needs and lacks.
func preflight() error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (network namespaces)")
	}
	for _, c := range nemesis.HaveTools() {
		missing = append(missing, "the "+c+" command (apt-get install -y iproute2 iptables)")
	}
	if _, err := pgtest.BinDir(); err != nil {
		missing = append(missing, "PostgreSQL server binaries (make postgres)")
	}
	if minioBin() == "" {
		missing = append(missing, miniotest.EnvBinary+" (make minio)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("the proof needs %s", strings.Join(missing, ", "))
	}
	return nil
}

func minioBin() string {
	if b := os.Getenv(miniotest.EnvBinary); b != "" {
		return b
	}
	home, _ := os.UserHomeDir()
	matches, _ := filepath.Glob(filepath.Join(home, ".cache", "floe-tools", "minio-*", "minio"))
	if len(matches) > 0 {
		return matches[len(matches)-1]
	}
	return ""
}

// startCluster starts everything; on an error the caller still calls stop.
func startCluster(ctx context.Context, c *cluster, cfg config) error {
	if err := c.startPostgres(ctx); err != nil {
		return err
	}
	if err := c.startMinIO(ctx); err != nil {
		return err
	}
	env := c.mi.Env()
	for i := range cfg.Agents {
		ip := c.net.AgentIP(i)
		addr, httpAddr := fmt.Sprintf("%s:%d", ip, kafkaPort), fmt.Sprintf("%s:%d", ip, httpPort)
		p := nemesis.NewProcess(fmt.Sprintf("agent%d", i), c.net.AgentNS(i),
			[]string{cfg.floeBin, "agent", "--metadata", c.metaURL, "--bucket", c.bucketURL,
				"--kafka-addr", addr, "--http-addr", httpAddr, "--schema-registry-addr", "127.0.0.1:8081",
				"--flush-interval", "50ms", "--agent-ttl", cfg.agentTTL.String(), "--iceberg-vend-credentials"},
			env, filepath.Join(c.dir, fmt.Sprintf("agent%d.log", i)), nemesis.HTTPReady("http://"+httpAddr+"/readyz"))
		c.agents = append(c.agents, p)
		c.addrs = append(c.addrs, addr)
		c.httpAddrs = append(c.httpAddrs, httpAddr)
	}
	for _, p := range c.agents {
		if err := p.Start(ctx); err != nil {
			return err
		}
	}
	port, err := freeport.Get()
	if err != nil {
		return err
	}
	chttp := fmt.Sprintf("127.0.0.1:%d", port)
	c.compHTTP = chttp
	c.compactor = nemesis.NewProcess("compactor", "",
		[]string{cfg.floeBin, "compactor", "--metadata", c.metaURL, "--bucket", c.bucketURL, "--http-addr", chttp,
			"--interval", "2s", "--lease-ttl", "10s", "--iceberg-default", "--iceberg-interval", "2s"},
		env, filepath.Join(c.dir, "compactor.log"), nemesis.HTTPReady("http://"+chttp+"/readyz"))
	if err := c.compactor.Start(ctx); err != nil {
		return err
	}
	return c.settle(ctx, len(c.agents))
}

// settle waits until Metadata lists every agent, so that clients
// bootstrapped now know all of them (see integration's startAgents).
func (c *cluster) settle(ctx context.Context, n int) error {
	deadline := time.Now().Add(60 * time.Second)
	for _, addr := range c.addrs {
		for {
			// A fresh client each time: a client's metadata is cached.
			got, err := brokerCount(ctx, addr)
			if err == nil && got == n {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("agent %s lists %d of %d agents after 60s (%v)", addr, got, n, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

func brokerCount(ctx context.Context, addr string) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	return len(md.Brokers), err
}

func (c *cluster) startPostgres(ctx context.Context) error {
	// pgtest listens on 127.0.0.1; the agents reach the root namespace at
	// the network's root address, which $FLOE_PGTEST_OPTS adds, and
	// pg_hba.conf must trust.
	listen := "-c listen_addresses=127.0.0.1," + c.net.RootIP
	os.Setenv("FLOE_PGTEST_OPTS", listen)
	dir := filepath.Join(c.dir, "pg")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(c.dir, 0o755); err != nil {
		return err
	}
	s, err := pgtest.StartServer(dir)
	if err != nil {
		return err
	}
	c.pg = s
	c.pgPort = s.Port()
	c.pgBin, _ = pgtest.BinDir()
	c.pgOpts = strings.Join([]string{"-p " + strconv.Itoa(c.pgPort), listen,
		"-c unix_socket_directories=" + filepath.Join(dir, "sock"),
		"-c fsync=off", "-c full_page_writes=off", "-c max_connections=200"}, " ")
	hba, err := os.OpenFile(filepath.Join(dir, "data", "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(hba, "host all all %s.0/24 trust\n", c.net.Subnet)
	if err := hba.Close(); err != nil {
		return err
	}
	s.Stop()
	if err := c.pgStart(ctx); err != nil {
		return err
	}
	url, err := s.CreateDB(ctx, "floeproof")
	if err != nil {
		return err
	}
	c.metaURL = strings.Replace(url, "127.0.0.1", c.net.RootIP, 1)
	return nil
}

// pgStart starts the stopped cluster again (pgtest starts it once only).
func (c *cluster) pgStart(ctx context.Context) error {
	dir := filepath.Join(c.dir, "pg")
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "runuser", "-u", "postgres", "--", filepath.Join(c.pgBin, "pg_ctl"), "start", "-w", "-t", "60",
		"-D", filepath.Join(dir, "data"), "-l", filepath.Join(dir, "server.log"), "-o", c.pgOpts)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl start: %w: %s", err, out)
	}
	return nil
}

func (c *cluster) postgresTarget() nemesis.Target {
	return &nemesis.Funcs{
		N:      "postgres",
		KillF:  func() error { c.pg.Stop(); return nil },
		StartF: c.pgStart,
		PauseF: func() error { return errors.New("postgres is not paused") },
		ResF:   func() error { return nil },
	}
}

func (c *cluster) startMinIO(ctx context.Context) error {
	port, err := freeport.Get()
	if err != nil {
		return err
	}
	console, err := freeport.Get()
	if err != nil {
		return err
	}
	endpoint := fmt.Sprintf("http://%s:%d", c.net.RootIP, port)
	c.mi = &miniotest.Server{Endpoint: endpoint, AccessKey: "floeproof", SecretKey: "floeproof-secret"}
	data := filepath.Join(c.dir, "minio")
	c.minio = nemesis.NewProcess("minio", "",
		[]string{minioBin(), "server", data, "--address", fmt.Sprintf("%s:%d", c.net.RootIP, port),
			"--console-address", fmt.Sprintf("127.0.0.1:%d", console), "--quiet"},
		[]string{"MINIO_ROOT_USER=" + c.mi.AccessKey, "MINIO_ROOT_PASSWORD=" + c.mi.SecretKey, "MINIO_BROWSER=off",
			"MINIO_UPDATE=off", "MINIO_CALLHOME_ENABLE=off", "MINIO_SCANNER_SPEED=slowest"},
		filepath.Join(c.dir, "minio.log"), nemesis.HTTPReady(endpoint+"/minio/health/live"))
	if err := c.minio.Start(ctx); err != nil {
		return err
	}
	if err := c.mi.CreateBucket(ctx, "floeproof"); err != nil {
		return err
	}
	c.bucketURL = c.mi.URL("floeproof")
	return nil
}

// stop stops everything that was started, agents first.
func (c *cluster) stop() {
	for _, p := range c.agents {
		p.Stop(10 * time.Second)
	}
	if c.compactor != nil {
		c.compactor.Stop(10 * time.Second)
	}
	if c.minio != nil {
		c.minio.Stop(10 * time.Second)
	}
	if c.pg != nil {
		c.pg.Stop()
	}
}

func (c *cluster) minioPort() int {
	_, port, _ := strings.Cut(strings.TrimPrefix(c.mi.Endpoint, "http://"), ":")
	n, _ := strconv.Atoi(port)
	return n
}

// runDirPrefix names a run's directory in the temp dir, with the runner's
// pid after it.
const runDirPrefix = "floe-proof-"

// keepMarker marks a run directory -keep asked to keep: later runs leave it.
const keepMarker = "KEEP"

// cleanStaleRuns stops the PostgreSQL of runs whose runner died without
// its cleanup (pg_ctl's postmaster outlives it; MinIO, the agents and the
// compactor die with it) and removes their directories, unless -keep marked
// them.
func cleanStaleRuns(log *slog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), runDirPrefix+"*-*"))
	for _, d := range dirs {
		pidStr, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), runDirPrefix), "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil {
			continue
		}
		if _, err := os.Stat("/proc/" + pidStr); err == nil || pid == os.Getpid() {
			continue // its runner is alive
		}
		data := filepath.Join(d, "pg", "data")
		if _, err := os.Stat(filepath.Join(data, "postmaster.pid")); err == nil {
			if bin, err := pgtest.BinDir(); err == nil {
				out, err := exec.Command("runuser", "-u", "postgres", "--", filepath.Join(bin, "pg_ctl"), "stop", "-m", "immediate", "-w", "-D", data).CombinedOutput()
				if err != nil {
					log.Warn("stop a dead run's postgres", "dir", d, "err", err, "out", string(out))
				}
			}
		}
		if _, err := os.Stat(filepath.Join(d, keepMarker)); err == nil {
			continue // kept on purpose (-keep)
		}
		if err := os.RemoveAll(d); err != nil {
			log.Warn("remove a dead run's directory", "dir", d, "err", err)
		}
	}
}
