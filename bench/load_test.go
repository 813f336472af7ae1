package bench

import (
	"context"
	"testing"
	"time"

	"floe/storage"
	"floe/storage/mem"
)

// The load generator against kfake: every record sent is acknowledged and
// read back once, each with one latency.
func TestRunAgainstKfake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"e2e closed loop", Config{Mode: ModeE2E, Records: 3000, Partitions: 4, RecordSize: 100, Producers: 3}},
		{"e2e fixed rate", Config{Mode: ModeE2E, Records: 500, Rate: 5000, Partitions: 2, RecordSize: 10}},
		{"produce", Config{Mode: ModeProduce, Records: 1000, Partitions: 3, RecordSize: 0, Compression: "zstd"}},
		{"consume", Config{Mode: ModeConsume, Records: 1000, Partitions: 3, RecordSize: 50}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Kfake(ctx, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			n := c.cfg.Records
			if res.Errors != 0 || res.Sent != n || res.Produced.Records != n ||
				res.Produced.Bytes != n*int64(c.cfg.RecordSize) {
				t.Fatalf("sent %d produced %+v errors %d (%s), want %d", res.Sent, res.Produced, res.Errors, res.FirstError, n)
			}
			if c.cfg.Mode != ModeConsume && res.ProduceLatency.Count != n {
				t.Errorf("produce latencies %d, want %d", res.ProduceLatency.Count, n)
			}
			if c.cfg.Mode == ModeProduce {
				if res.Consumed != nil || res.E2ELatency != nil {
					t.Errorf("produce mode consumed: %+v", res)
				}
				return
			}
			if res.Consumed.Records != n || res.Consumed.Bytes != n*int64(c.cfg.RecordSize) {
				t.Errorf("consumed %+v, want %d", res.Consumed, n)
			}
			if c.cfg.Mode == ModeE2E && (res.E2ELatency.Count != n || res.E2ELatency.P50 < 0 || res.E2ELatency.Max < res.E2ELatency.P99) {
				t.Errorf("e2e latency %+v", res.E2ELatency)
			}
			if res.Label != "kfake" || res.Kind != "kafka" {
				t.Errorf("label %q kind %q", res.Label, res.Kind)
			}
		})
	}
}

// TestWarmupLeftOutOfLatencies: a fixed-rate run of 1 s after a 1 s
// warm-up sends both seconds' records, consumes them all, and has latencies
// of the second second's records only.
func TestWarmupLeftOutOfLatencies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Kfake(ctx, Config{Mode: ModeE2E, Rate: 1000, Duration: time.Second, Warmup: time.Second, Partitions: 2, RecordSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.Sent != 2000 || res.Produced.Records != 2000 || res.Consumed.Records != 2000 {
		t.Fatalf("sent %d produced %d consumed %d errors %d (%s), want 2000", res.Sent, res.Produced.Records, res.Consumed.Records, res.Errors, res.FirstError)
	}
	if res.ProduceLatency.Count != 1000 || res.E2ELatency.Count != 1000 {
		t.Fatalf("latencies of %d produced and %d consumed records, want the 1000 after the warm-up", res.ProduceLatency.Count, res.E2ELatency.Count)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []Config{{Mode: "nope"}, {Compression: "brotli"}, {Rate: -1}, {RecordSize: -1}} {
		if _, err := Run(ctx, cfg); err == nil {
			t.Errorf("Run(%+v) succeeded", cfg)
		}
	}
	if _, err := RawPut(ctx, RawPutConfig{}); err == nil {
		t.Error("RawPut without a bucket succeeded")
	}
}

func TestRawPutLeavesBucketEmpty(t *testing.T) {
	b := mem.New()
	res, err := RawPut(context.Background(), RawPutConfig{Bucket: b, ObjectSize: 1000, Concurrency: 2, Duration: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.RawPut.Puts == 0 || res.Produced.Bytes != res.RawPut.Puts*1000 || res.RawPut.Latency.Count != res.RawPut.Puts || res.RawPut.CPUSeconds <= 0 {
		t.Fatalf("raw put result %+v %+v", res, res.RawPut)
	}
	n := 0
	b.List(context.Background(), "", func(storage.ObjectInfo) error { n++; return nil })
	if n != 0 {
		t.Errorf("%d objects left behind", n)
	}
}
