// Package miniotest starts a real MinIO server for tests: the S3 bucket
// tests and the integration tests run against it rather than against a
// fake. The binary comes from FLOE_MINIO_BIN (built by `make minio`).
//
// The server runs on free 127.0.0.1 ports in a throwaway directory, with
// the browser, update checks and call-home off: tests never reach beyond
// the machine.
package miniotest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"floe/internal/freeport"
)

// EnvBinary names the environment variable holding the MinIO binary path.
const EnvBinary = "FLOE_MINIO_BIN"

// EnvRequire, when "1", turns a missing MinIO binary from a skip into a
// failure, so CI cannot pass by skipping.
const EnvRequire = "FLOE_REQUIRE_SERVERS"

// Default credentials of the test server (MinIO wants at least 8 chars).
const (
	defaultAccessKey = "floetest"
	defaultSecretKey = "floetest-secret"
)

// startTimeout bounds the wait for the server to answer its health check.
const startTimeout = 60 * time.Second

// Server is a running MinIO server.
type Server struct {
	// Endpoint is the S3 API URL, "http://127.0.0.1:PORT".
	Endpoint string
	// AccessKey and SecretKey are the root credentials.
	AccessKey string
	SecretKey string

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	log    *syncBuffer
	stop   sync.Once
}

// Start starts a MinIO server for the test and stops it in t.Cleanup. If
// FLOE_MINIO_BIN is unset it skips the test (fails it when
// FLOE_REQUIRE_SERVERS=1). It works for tests and benchmarks alike.
func Start(t testing.TB) *Server {
	t.Helper()
	if os.Getenv(EnvBinary) == "" {
		msg := fmt.Sprintf("%s not set: run `make minio` and set %s to the binary to run MinIO tests", EnvBinary, EnvBinary)
		if os.Getenv(EnvRequire) == "1" {
			t.Fatal(msg + " (" + EnvRequire + "=1)")
		}
		t.Skip(msg)
	}
	// The SDK must never wait on the EC2 metadata address in tests, even
	// when a test builds a client without static credentials.
	if err := os.Setenv("AWS_EC2_METADATA_DISABLED", "true"); err != nil {
		t.Fatal(err)
	}
	s, stop, err := StartProcess(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return s
}

// ErrNoBinary is returned by StartProcess when FLOE_MINIO_BIN is unset.
var ErrNoBinary = errors.New("miniotest: " + EnvBinary + " not set (run `make minio`)")

// StartProcess starts the MinIO binary named by FLOE_MINIO_BIN with its data
// in dir, waits until it is healthy and returns it with a function that
// stops it (SIGTERM, then SIGKILL) and waits for it to exit. It is Start for
// code that is not a test, such as a harness that runs its own processes.
func StartProcess(dir string) (*Server, func(), error) {
	bin := os.Getenv(EnvBinary)
	if bin == "" {
		return nil, nil, ErrNoBinary
	}
	// The free ports are found by binding and releasing them, so another
	// process may take one before MinIO binds it; MinIO then exits, and a
	// second try with fresh ports succeeds.
	var lastErr error
	for range 3 {
		s, err := startOnce(bin, dir)
		if err == nil {
			return s, s.Stop, nil
		}
		lastErr = err
	}
	return nil, nil, lastErr
}

func startOnce(bin, dir string) (*Server, error) {
	apiPort, err := freeport.Get()
	if err != nil {
		return nil, err
	}
	consolePort, err := freeport.Get()
	if err != nil {
		return nil, err
	}
	s := &Server{
		Endpoint:  fmt.Sprintf("http://127.0.0.1:%d", apiPort),
		AccessKey: defaultAccessKey,
		SecretKey: defaultSecretKey,
		exited:    make(chan struct{}),
		log:       &syncBuffer{},
	}
	s.cmd = exec.Command(bin, "server", dir,
		"--address", fmt.Sprintf("127.0.0.1:%d", apiPort),
		"--console-address", fmt.Sprintf("127.0.0.1:%d", consolePort),
		"--quiet")
	s.cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+s.AccessKey,
		"MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
		"MINIO_CALLHOME_ENABLE=off",
		// The background scanner only competes with the tests for CPU.
		"MINIO_SCANNER_SPEED=slowest",
	)
	s.cmd.Stdout = s.log
	s.cmd.Stderr = s.log
	s.cmd.SysProcAttr = sysProcAttr()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start minio %s: %w", bin, err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitHealthy(); err != nil {
		s.Stop()
		return nil, fmt.Errorf("minio %s: %w\n--- minio log ---\n%s", s.Endpoint, err, s.log.String())
	}
	return s, nil
}

func (s *Server) waitHealthy() error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := client.Get(s.Endpoint + "/minio/health/live")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("exited before becoming healthy (%v)", s.cmd.ProcessState)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not healthy after %v (last: %v)", startTimeout, err)
		}
	}
}

// Stop stops the server (SIGTERM, SIGKILL after 10s) and waits for it to
// exit. It is safe to call more than once.
func (s *Server) Stop() {
	s.stop.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
}

// Log returns what the server has printed so far.
func (s *Server) Log() string { return s.log.String() }

// NewBucket creates a bucket named name and returns the name. Bucket names
// follow S3 rules: 3-63 lowercase letters, digits, '-' and '.'.
func (s *Server) NewBucket(t testing.TB, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.CreateBucket(ctx, name); err != nil {
		t.Fatal(err)
	}
	return name
}

// CreateBucket creates a bucket named name.
func (s *Server) CreateBucket(ctx context.Context, name string) error {
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, "")),
		config.WithEC2IMDSClientEnableState(imds.ClientDisabled),
	)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	client := awss3.NewFromConfig(cfg, func(o *awss3.Options) {
		o.BaseEndpoint = aws.String(s.Endpoint)
		o.UsePathStyle = true
	})
	if _, err := client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	return nil
}

// URL returns the floe bucket URL of bucket on this server,
// "s3://BUCKET?endpoint=...&region=us-east-1". The credentials are not in
// it: pass AccessKey and SecretKey as AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY (see Env).
func (s *Server) URL(bucket string) string {
	return "s3://" + bucket + "?endpoint=" + url.QueryEscape(s.Endpoint) + "&region=us-east-1"
}

// Env returns the environment a floe process needs to use this server's
// buckets: credentials, and no EC2 metadata lookups.
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// syncBuffer collects the server's output, written by the exec package's
// copying goroutines while the test may read it.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Keep the log bounded: a chatty server must not eat the test's
	// memory. The start is kept; it holds the startup errors.
	if b.buf.Len() > 1<<20 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
