package s3_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"floe/storage"
	"floe/storage/miniotest"
	"floe/storage/s3"
	"floe/storage/storagetest"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		in   string
		want s3.Config
	}{
		{"s3://b", s3.Config{Bucket: "b"}},
		{"s3://b/floe/objs", s3.Config{Bucket: "b", Prefix: "floe/objs"}},
		{"s3://b/floe/", s3.Config{Bucket: "b", Prefix: "floe/"}},
		{"s3://b?region=eu-west-1", s3.Config{Bucket: "b", Region: "eu-west-1"}},
		{
			"s3://bucket?endpoint=http://127.0.0.1:9000&region=us-east-1",
			s3.Config{Bucket: "bucket", Endpoint: "http://127.0.0.1:9000", Region: "us-east-1", PathStyle: true},
		},
		{
			"s3://bucket/p?endpoint=http%3A%2F%2F127.0.0.1%3A9000",
			s3.Config{Bucket: "bucket", Prefix: "p", Endpoint: "http://127.0.0.1:9000", PathStyle: true},
		},
	} {
		got, err := s3.ParseURL(c.in)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseURL(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
	for _, bad := range []string{
		"", "s3://", "file:///tmp/x", "http://b", "s3://key:secret@b",
		"s3://b?endpoint=127.0.0.1:9000", "s3://b?endpoint=ftp://x", "s3://b?regoin=x",
		"s3://b?region=a&region=b", "s3://b\x00",
	} {
		if cfg, err := s3.ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) = %+v, want an error", bad, cfg)
		}
	}
}

func TestNewNeedsBucket(t *testing.T) {
	if _, err := s3.New(t.Context(), s3.Config{}); err == nil {
		t.Fatal("New without a bucket succeeded")
	}
	if _, err := s3.New(t.Context(), s3.Config{Bucket: "b", AccessKey: "only-access"}); err == nil {
		t.Fatal("New with an access key but no secret succeeded")
	}
}

// newBucket returns a Bucket on a fresh MinIO bucket of srv.
func newBucket(t testing.TB, srv *miniotest.Server, name, prefix string) *s3.Bucket {
	t.Helper()
	cfg, err := s3.ParseURL(srv.URL(srv.NewBucket(t, name)))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix = prefix
	cfg.AccessKey, cfg.SecretKey = srv.AccessKey, srv.SecretKey
	b, err := s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBucket(t *testing.T) {
	srv := miniotest.Start(t)
	var n atomic.Int64
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		return newBucket(t, srv, fmt.Sprintf("suite-%d", n.Add(1)), "")
	})
	// The same suite through a prefix: keys, listings and sizes must not
	// show it.
	t.Run("Prefixed", func(t *testing.T) {
		storagetest.Run(t, func(t *testing.T) storage.Bucket {
			return newBucket(t, srv, fmt.Sprintf("prefixed-%d", n.Add(1)), "floe/data")
		})
	})
}

func TestPrefixIsolation(t *testing.T) {
	srv := miniotest.Start(t)
	name := srv.NewBucket(t, "shared")
	open := func(prefix string) *s3.Bucket {
		cfg, err := s3.ParseURL(srv.URL(name))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Prefix, cfg.AccessKey, cfg.SecretKey = prefix, srv.AccessKey, srv.SecretKey
		b, err := s3.New(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	root, a, b := open(""), open("a"), open("b/")
	ctx := t.Context()
	if err := a.Put(ctx, "k", []byte("from a")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetRange(ctx, "k", 0, -1); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("b sees a's key: %v", err)
	}
	if err := b.PutIfAbsent(ctx, "k", []byte("from b")); err != nil {
		t.Fatalf("PutIfAbsent in b: %v", err)
	}
	got, err := root.GetRange(ctx, "a/k", 0, -1)
	if err != nil || string(got) != "from a" {
		t.Fatalf("root a/k = %q, %v", got, err)
	}
	var keys []string
	err = root.List(ctx, "", func(info storage.ObjectInfo) error {
		keys = append(keys, info.Key)
		return nil
	})
	if err != nil || fmt.Sprint(keys) != "[a/k b/k]" {
		t.Fatalf("root List = %v, %v", keys, err)
	}
}

// TestMissingBucket checks that a missing bucket is reported as an error of
// its own, not as a missing object: floe must not treat a misconfigured
// bucket as "nothing there".
func TestMissingBucket(t *testing.T) {
	srv := miniotest.Start(t)
	b, err := s3.New(t.Context(), s3.Config{
		Bucket: "does-not-exist", Endpoint: srv.Endpoint, PathStyle: true,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetRange(t.Context(), "k", 0, 10); err == nil || errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetRange on a missing bucket = %v, want a non-ErrNotFound error", err)
	}
	if err := b.Put(t.Context(), "k", []byte("x")); err == nil {
		t.Fatal("Put into a missing bucket succeeded")
	}
}

func TestWrongCredentials(t *testing.T) {
	srv := miniotest.Start(t)
	name := srv.NewBucket(t, "creds")
	b, err := s3.New(t.Context(), s3.Config{
		Bucket: name, Endpoint: srv.Endpoint, PathStyle: true,
		AccessKey: srv.AccessKey, SecretKey: "wrong-secret",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(t.Context(), "k", []byte("x")); err == nil {
		t.Fatal("Put with a wrong secret succeeded")
	}
}

// TestNoMetadataProbeWithStaticCredentials points the SDK's EC2 metadata
// endpoint at a local server and checks that static credentials never reach
// it, while the default chain (the control) does.
func TestNoMetadataProbeWithStaticCredentials(t *testing.T) {
	srv := miniotest.Start(t)
	name := srv.NewBucket(t, "imds")
	var hits atomic.Int64
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "no", http.StatusNotFound)
	}))
	t.Cleanup(imds.Close)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "false")
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "")
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "")
	t.Setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "")

	cfg := s3.Config{Bucket: name, Endpoint: srv.Endpoint, PathStyle: true}
	static := cfg
	static.AccessKey, static.SecretKey = srv.AccessKey, srv.SecretKey
	b, err := s3.New(t.Context(), static)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(t.Context(), "k", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("static credentials: %d requests to the metadata endpoint", n)
	}

	// The same through the environment.
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	b, err = s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Size(t.Context(), "k"); err != nil {
		t.Fatal(err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("credentials from env: %d requests to the metadata endpoint", n)
	}

	// Control: with no credentials anywhere the default chain asks the
	// metadata endpoint, so the zero counts above mean something.
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	b, err = s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := b.Size(ctx, "k"); err == nil {
		t.Fatal("Size without credentials succeeded")
	}
	if hits.Load() == 0 {
		t.Fatal("the default chain never asked the metadata endpoint: the probe detector is broken")
	}
}
