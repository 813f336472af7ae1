package integration

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"floe/metadata/pgtest"
	"floe/storage/miniotest"
)

// httpStatus returns the status of GET url, or 0 when nothing answers.
func httpStatus(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAgentWaitsForItsBucket: an agent started before its bucket exists
// waits instead of exiting — alive (/healthz 200), not ready (/readyz 503)
// — and serves once the bucket is created.
func TestAgentWaitsForItsBucket(t *testing.T) {
	pg := pgtest.Start(t)
	mi := miniotest.Start(t)
	meta := pg.CreateDatabase(t, "waits")
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	kafkaAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(floeBin, "agent", "--metadata", meta, "--bucket", mi.URL("late"),
		"--kafka-addr", kafkaAddr, "--http-addr", httpAddr)
	cmd.Env = append(os.Environ(), mi.Env()...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })

	deadline := time.Now().Add(20 * time.Second)
	for httpStatus("http://"+httpAddr+"/healthz") != 200 {
		if time.Now().After(deadline) {
			t.Fatal("no /healthz while waiting for the bucket")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	select {
	case err := <-exited:
		t.Fatalf("agent exited without its bucket: %v", err)
	default:
	}
	if s := httpStatus("http://" + httpAddr + "/readyz"); s != http.StatusServiceUnavailable {
		t.Fatalf("/readyz %d while the bucket is missing, want 503", s)
	}
	mi.NewBucket(t, "late")
	for httpStatus("http://"+httpAddr+"/readyz") != 200 {
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatal("not ready after the bucket was created")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// And it serves Kafka.
	ids := nodeIDs(t, testContext(t, 10*time.Second), []string{kafkaAddr})
	if len(ids) != 1 {
		t.Fatalf("brokers %v", ids)
	}
}
