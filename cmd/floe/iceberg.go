package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"floe/iceberg"
	"floe/metadata/storeurl"
	"floe/storage/s3"
)

// icebergFlags configure floe's Iceberg tables: the catalog every agent
// serves (namespace, warehouse, what readers are told) and, where the
// converter runs (floe compactor, floe dev), the conversion.
type icebergFlags struct {
	enabled         bool
	namespace       string
	warehouse       string
	vendCredentials bool
	conv            iceberg.ConverterConfig
}

func defaultIcebergFlags() *icebergFlags {
	return &icebergFlags{enabled: true, namespace: "floe", warehouse: "iceberg", conv: iceberg.DefaultConverterConfig("")}
}

// devIcebergFlags are floe dev's: tables 5 s behind their topics, and
// maintenance often enough to watch.
func devIcebergFlags() *icebergFlags {
	f := defaultIcebergFlags()
	f.conv.Interval = 5 * time.Second
	// Conversion holds a row group of a quarter of a file, twice that
	// while its buffer grows (ConverterConfig.MemoryBytes): 32 MiB files
	// keep it small beside a laptop's other budgets (memlimit.go).
	f.conv.TargetFileSize = 32 << 20
	f.conv.Maintenance.Every = 10 * time.Minute
	f.conv.Maintenance.SnapshotAge = time.Hour
	f.conv.Maintenance.OrphanAge = time.Hour
	return f
}

// register adds the catalog flags, and the converter's when converter is
// set.
func (f *icebergFlags) register(fs *flag.FlagSet, converter bool) {
	fs.BoolVar(&f.enabled, "iceberg", f.enabled, "serve topics as Iceberg tables (false: no catalog, no conversion)")
	fs.StringVar(&f.namespace, "iceberg-namespace", f.namespace, "Iceberg `namespace` of the topic tables")
	fs.StringVar(&f.warehouse, "iceberg-warehouse", f.warehouse, "`folder` of the bucket that holds the tables' data and metadata files")
	fs.BoolVar(&f.vendCredentials, "iceberg-vend-credentials", f.vendCredentials, "hand engines the bucket's S3 credentials in the REST catalog's load results (off: engines bring their own)")
	if !converter {
		return
	}
	c := &f.conv
	fs.DurationVar(&c.Interval, "iceberg-interval", c.Interval, "pause between conversion cycles: how far tables may lag their topics")
	fs.BoolVar(&c.Default, "iceberg-default", c.Default, "convert every topic that does not set floe.iceberg.enabled")
	fs.Int64Var(&c.TargetFileSize, "iceberg-target-file-size", c.TargetFileSize, "Parquet data file size in `bytes` the converter and compaction aim at")
	fs.Int64Var(&c.CycleBytes, "iceberg-cycle-bytes", c.CycleBytes, "most stored record `bytes` one cycle reads from one topic (backfills go in steps)")
	fs.DurationVar(&c.Maintenance.Every, "iceberg-maintenance-interval", c.Maintenance.Every, "how often each table's small files are compacted, manifests rewritten, snapshots expired and orphans deleted (0: never)")
	fs.IntVar(&c.Maintenance.KeepSnapshots, "iceberg-keep-snapshots", c.Maintenance.KeepSnapshots, "snapshots always kept per table")
	fs.DurationVar(&c.Maintenance.SnapshotAge, "iceberg-snapshot-age", c.Maintenance.SnapshotAge, "older snapshots beyond the kept ones are expired")
	fs.DurationVar(&c.Maintenance.OrphanAge, "iceberg-orphan-age", c.Maintenance.OrphanAge, "files no snapshot references are deleted once this old (longer than any cycle)")
}

func (f *icebergFlags) check() error {
	if !f.enabled {
		return nil
	}
	c := f.conv
	if c.Interval <= 0 || c.TargetFileSize <= 0 || c.CycleBytes <= 0 || c.Maintenance.OrphanAge <= 0 {
		return errors.New("iceberg: interval, target file size, cycle bytes and orphan age must be positive")
	}
	if f.warehouse == "" || strings.Contains(f.warehouse, "..") {
		return fmt.Errorf("iceberg: warehouse folder %q", f.warehouse)
	}
	return nil
}

// openCatalog opens the Iceberg catalog in the metadata database, its
// tables under the warehouse folder of the bucket. It returns nil when
// Iceberg is off or the bucket is mem:// (which engines cannot read).
func (f *icebergFlags) openCatalog(ctx context.Context, metaURL, bucketURL string, log *slog.Logger) (*iceberg.Catalog, func(), error) {
	if !f.enabled {
		return nil, func() {}, nil
	}
	cfg := iceberg.CatalogConfig{Namespace: f.namespace, IO: map[string]string{}, ReaderConfig: map[string]string{}}
	u, err := url.Parse(bucketURL)
	if err != nil {
		return nil, nil, fmt.Errorf("bucket url: %w", err)
	}
	folder := strings.Trim(f.warehouse, "/")
	switch u.Scheme {
	case "mem":
		log.Info("Iceberg tables off: a mem:// bucket cannot be read by engines")
		return nil, func() {}, nil
	case "file":
		cfg.Warehouse = "file://" + strings.TrimSuffix(strings.TrimPrefix(bucketURL, "file://"), "/") + "/" + folder
	case "s3":
		sc, err := s3.ParseURL(bucketURL)
		if err != nil {
			return nil, nil, err
		}
		cfg.Warehouse = "s3://" + sc.Bucket + "/" + strings.Trim(sc.Prefix+"/"+folder, "/")
		region := sc.Region
		if region == "" {
			region = os.Getenv("AWS_REGION")
		}
		if region == "" && sc.Endpoint != "" {
			region = "us-east-1"
		}
		for _, m := range []map[string]string{cfg.IO, cfg.ReaderConfig} {
			if sc.Endpoint != "" {
				m["s3.endpoint"] = sc.Endpoint
				m["s3.path-style-access"] = "true"
			}
			if region != "" {
				m["s3.region"] = region
				m["client.region"] = region
			}
		}
		if key, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"); key != "" && secret != "" {
			cfg.IO["s3.access-key-id"], cfg.IO["s3.secret-access-key"] = key, secret
			if f.vendCredentials {
				cfg.ReaderConfig["s3.access-key-id"], cfg.ReaderConfig["s3.secret-access-key"] = key, secret
			}
		}
	default:
		return nil, nil, fmt.Errorf("bucket url %q: no Iceberg warehouse for scheme %q", bucketURL, u.Scheme)
	}
	db, dialect, err := storeurl.OpenSQL(metaURL)
	if err != nil {
		return nil, nil, err
	}
	cfg.DB, cfg.Dialect = db, dialect
	cat, err := iceberg.OpenCatalog(ctx, cfg)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return cat, func() { cat.Close(); db.Close() }, nil
}
