package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"floe/metadata/pgtest"
	"floe/storage/miniotest"
)

// Servers is a throwaway PostgreSQL and MinIO, started once per run.
type Servers struct {
	PG        *pgtest.Server
	MinIO     *miniotest.Server
	stopMinio func()
	pgDir     string
	prefix    string
	seq       int
}

// StartServers starts PostgreSQL (its data in a directory of its own under
// the system temp directory, which the postgres user can traverse) and
// MinIO (under tmp). prefix names the databases and buckets Fresh makes.
func StartServers(tmp, prefix string) (*Servers, error) {
	pgDir, err := os.MkdirTemp("", prefix+"-pg-")
	if err != nil {
		return nil, err
	}
	pg, err := pgtest.StartServer(pgDir)
	if err != nil {
		os.RemoveAll(pgDir)
		return nil, fmt.Errorf("postgres: %w (run `make postgres`)", err)
	}
	mdir := filepath.Join(tmp, "minio")
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		pg.Stop()
		os.RemoveAll(pgDir)
		return nil, err
	}
	mi, stop, err := miniotest.StartProcess(mdir)
	if err != nil {
		pg.Stop()
		os.RemoveAll(pgDir)
		return nil, fmt.Errorf("minio: %w", err)
	}
	return &Servers{PG: pg, MinIO: mi, stopMinio: stop, pgDir: pgDir, prefix: prefix}, nil
}

// Stop stops both servers and removes PostgreSQL's directory.
func (s *Servers) Stop() {
	s.stopMinio()
	s.PG.Stop()
	os.RemoveAll(s.pgDir)
}

// Fresh returns a new database and bucket, so runs never share state.
func (s *Servers) Fresh(ctx context.Context) (metaURL, bucketURL string, err error) {
	s.seq++
	name := fmt.Sprintf("%s-%d", s.prefix, s.seq)
	if metaURL, err = s.PG.CreateDB(ctx, strings.ReplaceAll(name, "-", "_")); err != nil {
		return "", "", err
	}
	if err := s.MinIO.CreateBucket(ctx, name); err != nil {
		return "", "", err
	}
	return metaURL, s.MinIO.URL(name), nil
}
