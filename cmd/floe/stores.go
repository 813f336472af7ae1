package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"floe/metadata"
	"floe/metadata/storeurl"
	"floe/storage"
	"floe/storage/file"
	"floe/storage/mem"
	"floe/storage/s3"
)

func openStore(ctx context.Context, u string) (metadata.Store, error) {
	s, err := storeurl.Open(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("open metadata store: %w", err)
	}
	return s, nil
}

// openBucket opens file://DIR, mem:// or s3://BUCKET?... The AWS SDK is only
// configured for s3:// URLs, so dev mode never looks for cloud credentials.
func openBucket(ctx context.Context, raw string) (storage.Bucket, func(), error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("bucket url: %w", err)
	}
	switch u.Scheme {
	case "file":
		dir := strings.TrimPrefix(raw, "file://")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("bucket dir: %w", err)
		}
		b, err := file.New(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("open bucket: %w", err)
		}
		if err := b.MakeDirs(storage.ObjectKeyPrefixes()...); err != nil {
			return nil, nil, fmt.Errorf("open bucket: %w", err)
		}
		return b, func() {}, nil
	case "mem":
		return mem.New(), func() {}, nil
	case "s3":
		cfg, err := s3.ParseURL(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("bucket url: %w", err)
		}
		b, err := s3.New(ctx, cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("open bucket: %w", err)
		}
		return b, func() {}, nil
	}
	return nil, nil, fmt.Errorf("bucket url %q: scheme must be file, mem or s3", raw)
}

// openStores opens the metadata store and the bucket, waiting while either
// cannot be reached (PostgreSQL still starting, the bucket not created yet)
// instead of exiting: a fleet's agents and compactors start in any order
// beside their stores. It retries with backoff (100 ms doubling to 5 s),
// logging each failure, until both answer or ctx ends; meanwhile, if
// httpAddr is set, it answers /healthz "ok" (the process is not wedged) and
// /readyz 503 (it cannot serve yet). A malformed URL fails at once.
func openStores(ctx context.Context, metaURL, bucketURL, httpAddr string, log *slog.Logger) (metadata.Store, storage.Bucket, func(), error) {
	if err := checkURLs(metaURL, bucketURL); err != nil {
		return nil, nil, nil, err
	}
	var waiting atomic.Value
	waiting.Store("starting")
	stopHTTP := func() {}
	if httpAddr != "" {
		if ln, err := net.Listen("tcp", httpAddr); err == nil {
			mux := http.NewServeMux()
			mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
			mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "waiting for "+waiting.Load().(string), http.StatusServiceUnavailable)
			})
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
			go srv.Serve(ln)
			// Close the listener here, not only through srv: Serve may
			// not have taken it yet, and the agent binds the same address
			// next.
			stopHTTP = func() { srv.Close(); ln.Close() }
		}
	}
	defer stopHTTP()
	backoff := 100 * time.Millisecond
	wait := func(what string, err error) error {
		waiting.Store(what)
		log.Warn("waiting for "+what, "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (gave up: %v)", what, err, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
		return nil
	}
	var store metadata.Store
	for {
		s, err := openStore(ctx, metaURL)
		if err == nil {
			store = s
			break
		}
		if werr := wait("the metadata store", err); werr != nil {
			return nil, nil, nil, werr
		}
	}
	for {
		b, closeBucket, err := openBucket(ctx, bucketURL)
		if err == nil {
			err = probeBucket(ctx, b)
			if err == nil {
				return store, b, func() { closeBucket(); store.Close() }, nil
			}
			closeBucket()
		}
		if werr := wait("the bucket", err); werr != nil {
			store.Close()
			return nil, nil, nil, werr
		}
	}
}

// errProbed stops probeBucket's listing at its first key.
var errProbed = errors.New("probed")

// probeBucket lists one key under objects/: it fails while the bucket does
// not exist or cannot be reached.
func probeBucket(ctx context.Context, b storage.Bucket) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := b.List(ctx, "objects/", func(storage.ObjectInfo) error { return errProbed })
	if errors.Is(err, errProbed) {
		return nil
	}
	return err
}

// checkURLs refuses URLs no retry can fix: unknown schemes, malformed S3
// URLs.
func checkURLs(metaURL, bucketURL string) error {
	scheme, _, ok := strings.Cut(metaURL, "://")
	if s := strings.ToLower(scheme); !ok || (s != "sqlite" && s != "postgres" && s != "postgresql") {
		return fmt.Errorf("metadata url %q: want sqlite://PATH or postgres://…", metaURL)
	}
	u, err := url.Parse(bucketURL)
	if err != nil {
		return fmt.Errorf("bucket url: %w", err)
	}
	switch u.Scheme {
	case "file", "mem":
		return nil
	case "s3":
		_, err := s3.ParseURL(bucketURL)
		return err
	}
	return fmt.Errorf("bucket url %q: scheme must be file, mem or s3", bucketURL)
}
