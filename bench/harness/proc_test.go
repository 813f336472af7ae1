package harness

import (
	"os"
	"strings"
	"testing"
	"time"
)

// peakOf is Memory's peak alone.
func peakOf(pid int) (float64, error) {
	_, peak, err := Memory(pid)
	return float64(peak), err
}

func TestMemory(t *testing.T) {
	rss, err := peakOf(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// A Go test binary maps more than a megabyte and less than its machine.
	if rss < 1<<20 || rss > 1<<40 {
		t.Fatalf("peak RSS %v bytes", rss)
	}
}

func TestRedact(t *testing.T) {
	tmp := t.TempDir()
	got := Redact([]string{"--data-dir", tmp + "/x", "postgres://u@h/db", "s3://b?endpoint=x", "file://" + tmp, "--rate"})
	want := []string{"--data-dir", "DIR", "postgres://…", "s3://BUCKET?endpoint=…", "file://DIR", "--rate"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("redact = %v", got)
	}
}

func TestCPUSeconds(t *testing.T) {
	before, err := CPUSeconds(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// Burn some CPU; the figure must grow by about as much.
	start := time.Now()
	x := 0
	for time.Since(start) < 300*time.Millisecond {
		x++
	}
	after, err := CPUSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := after - before; d < 0.1 || d > 5 {
		t.Fatalf("CPU time grew by %.2f s over 0.3 s of spinning (%d loops)", d, x)
	}
}

func TestMachineCPUSeconds(t *testing.T) {
	busy0, total0, err := MachineCPUSeconds()
	if err != nil {
		t.Skipf("no /proc/stat: %v", err)
	}
	start := time.Now()
	x := 0
	for time.Since(start) < 300*time.Millisecond {
		x++
	}
	busy1, total1, err := MachineCPUSeconds()
	if err != nil {
		t.Fatal(err)
	}
	// This process alone kept one core busy for 0.3 s. The two counters
	// are read from ticks a moment apart: on a machine busy on every core
	// busy may run a tick or two ahead of total.
	if db, dt := busy1-busy0, total1-total0; db < 0.1 || db > dt+0.03 || dt < 0.25 {
		t.Fatalf("machine busy grew by %.2f s of %.2f s over 0.3 s of spinning (%d loops)", db, dt, x)
	}
}
