package miniotest_test

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"floe/storage/miniotest"
	"floe/storage/s3"
)

func TestStartStop(t *testing.T) {
	srv := miniotest.Start(t)
	if !strings.HasPrefix(srv.Endpoint, "http://127.0.0.1:") {
		t.Fatalf("endpoint %q is not on 127.0.0.1", srv.Endpoint)
	}
	if os.Getenv("AWS_EC2_METADATA_DISABLED") != "true" {
		t.Fatal("Start did not disable EC2 metadata lookups")
	}
	name := srv.NewBucket(t, "harness")
	u := srv.URL(name)
	cfg, err := s3.ParseURL(u)
	if err != nil {
		t.Fatalf("ParseURL(%q): %v", u, err)
	}
	if cfg.Bucket != name || cfg.Endpoint != srv.Endpoint || cfg.Region != "us-east-1" || !cfg.PathStyle {
		t.Fatalf("URL %q parses to %+v", u, cfg)
	}
	cfg.AccessKey, cfg.SecretKey = srv.AccessKey, srv.SecretKey
	b, err := s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatalf("Put into the new bucket: %v", err)
	}
	if err := srv.CreateBucket(t.Context(), name); err == nil {
		t.Fatal("creating the bucket twice succeeded")
	}

	srv.Stop()
	if resp, err := http.Get(srv.Endpoint + "/minio/health/live"); err == nil {
		resp.Body.Close()
		t.Fatalf("server still answers after Stop: %s", resp.Status)
	}
	srv.Stop() // again, as t.Cleanup will
}

func TestTwoServers(t *testing.T) {
	a, b := miniotest.Start(t), miniotest.Start(t)
	if a.Endpoint == b.Endpoint {
		t.Fatalf("two servers share %s", a.Endpoint)
	}
	a.NewBucket(t, "same-name")
	b.NewBucket(t, "same-name")
}
