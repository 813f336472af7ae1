// Package pgtest starts throwaway PostgreSQL clusters for tests, from the
// server binaries installed on the machine (initdb, pg_ctl). Each cluster
// lives in its own temporary directory, listens only on 127.0.0.1 on a free
// port and on a unix socket inside that directory, and is stopped and removed
// when the test ends. It never touches the machine's own cluster.
//
// When the process runs as root, the binaries run as the postgres OS user
// (PostgreSQL refuses to run as root) through runuser.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"floe/internal/freeport"
)

// ErrNoBinaries means no PostgreSQL server binaries were found.
var ErrNoBinaries = errors.New("pgtest: PostgreSQL server binaries (initdb, pg_ctl) not found")

// osUser is the OS account the server runs as when this process is root.
const osUser = "postgres"

// Server is one running throwaway cluster. Its superuser is "postgres",
// authenticated by trust.
type Server struct {
	dir    string // cluster directory: data/, sock/, server.log
	bindir string
	port   int
	asUser bool // binaries run through runuser -u postgres
	dbSeq  atomic.Int64
}

// Start starts a cluster for the test and stops and removes it in
// t.Cleanup. Without server binaries it fails the test when
// FLOE_REQUIRE_SERVERS=1 and skips it otherwise.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := BinDir(); err != nil {
		if os.Getenv("FLOE_REQUIRE_SERVERS") == "1" {
			t.Fatalf("%v (FLOE_REQUIRE_SERVERS=1; run `make deps`)", err)
		}
		t.Skipf("%v; run `make deps` to install them", err)
	}
	// Not t.TempDir(): the postgres user must be able to traverse every
	// parent of the cluster directory, and the test's temp dir may sit
	// below a directory private to root.
	dir, err := os.MkdirTemp("", "floe-pg-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	s, err := StartServer(dir)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		s.Stop()
		os.RemoveAll(dir)
	})
	return s
}

// StartServer initializes a cluster in dir (an existing, empty directory
// the caller removes after Stop) and starts it. It returns an error wrapping
// ErrNoBinaries when the server binaries are missing. The cluster runs
// without fsync (tests need no durability); $FLOE_PGTEST_OPTS adds server
// options after floe's, overriding them, e.g. "-c fsync=on" to measure a
// durable commit, or "-c shared_preload_libraries=pg_stat_statements".
func StartServer(dir string) (*Server, error) {
	bindir, err := BinDir()
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bindir: bindir, asUser: os.Geteuid() == 0}
	if err := os.MkdirAll(filepath.Join(dir, "sock"), 0o755); err != nil {
		return nil, err
	}
	if s.asUser {
		if err := s.chownToServerUser(); err != nil {
			return nil, err
		}
	}
	if out, err := s.run("initdb", "-D", s.dataDir(), "-A", "trust", "-U", "postgres", "-E", "UTF8",
		"--locale=C", "--no-sync"); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	// A port found free may be taken before the server binds it; try again
	// with another.
	var lastErr error
	for range 5 {
		port, err := freeport.Get()
		if err != nil {
			return nil, err
		}
		s.port = port
		opts := strings.Join([]string{
			"-p " + strconv.Itoa(port),
			"-c listen_addresses=127.0.0.1",
			"-c unix_socket_directories=" + filepath.Join(dir, "sock"),
			"-c fsync=off",
			"-c full_page_writes=off",
			"-c max_connections=200",
			os.Getenv("FLOE_PGTEST_OPTS"),
		}, " ")
		out, err := s.run("pg_ctl", "start", "-w", "-t", "60", "-D", s.dataDir(),
			"-l", filepath.Join(dir, "server.log"), "-o", opts)
		if err == nil {
			return s, nil
		}
		log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		lastErr = fmt.Errorf("pg_ctl start on port %d: %w\n%s\n%s", port, err, out, log)
	}
	return nil, lastErr
}

// Stop stops the server at once (pg_ctl stop -m immediate).
func (s *Server) Stop() {
	s.run("pg_ctl", "stop", "-m", "immediate", "-w", "-D", s.dataDir())
}

// Port is the TCP port the server listens on (127.0.0.1).
func (s *Server) Port() int { return s.port }

// URL returns a postgres:// URL for database dbname on this server.
func (s *Server) URL(dbname string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, dbname)
}

// CreateDatabase creates a new empty database named name (or, if name is
// "", a fresh unique name) and returns its URL.
func (s *Server) CreateDatabase(t testing.TB, name string) string {
	t.Helper()
	url, err := s.CreateDB(context.Background(), name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return url
}

// CreateDB is CreateDatabase for callers without a testing.TB.
func (s *Server) CreateDB(ctx context.Context, name string) (string, error) {
	if name == "" {
		name = fmt.Sprintf("floe_test_%d", s.dbSeq.Add(1))
	}
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.URL(name), nil
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

// run runs one server binary, as the postgres user when we are root.
func (s *Server) run(name string, args ...string) ([]byte, error) {
	bin := filepath.Join(s.bindir, name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var cmd *exec.Cmd
	if s.asUser {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", osUser, "--", bin}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, bin, args...)
	}
	cmd.Dir = s.dir
	// LC_ALL=C keeps initdb from failing on a locale the machine lacks.
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	// The postmaster pg_ctl leaves behind writes to server.log, but should
	// it hold our output pipe, do not wait for it past this.
	cmd.WaitDelay = 5 * time.Second
	return cmd.CombinedOutput()
}

// chownToServerUser hands dir to the postgres user and makes sure that user
// can reach it.
func (s *Server) chownToServerUser() error {
	u, err := user.Lookup(osUser)
	if err != nil {
		return fmt.Errorf("running as root needs the %q OS user: %w", osUser, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chmod(s.dir, 0o755); err != nil {
		return err
	}
	return filepath.Walk(s.dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}

// BinDir finds the directory holding initdb and pg_ctl: $FLOE_PG_BINDIR,
// then `pg_config --bindir`, then the newest /usr/lib/postgresql/*/bin, then
// $PATH.
func BinDir() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("FLOE_PG_BINDIR"); d != "" {
		if has(d) {
			return d, nil
		}
		return "", fmt.Errorf("%w in FLOE_PG_BINDIR=%s", ErrNoBinaries, d)
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); has(d) {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", ErrNoBinaries
}

// versionOf reads the major version from /usr/lib/postgresql/<v>/bin.
func versionOf(bindir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bindir)))
	return v
}
