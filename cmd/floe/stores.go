package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

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
