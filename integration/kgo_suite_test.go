package integration

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// franz-go's own pkg/kgo integration tests, run against floe: a suite we did
// not write, covering producing, consuming, groups (classic and KIP-848),
// transactions and admin requests. `make kgo-test` builds the test binary
// from the module cache at the pinned franz-go version; the Makefile passes
// its path (FLOE_KGO_TEST_BIN), its source directory (FLOE_KGO_SRC: the
// suite's TestOptValuesCoversEveryOption reads config.go from the working
// directory) and the tests allowed to skip themselves, each with its reason
// written next to it (FLOE_KGO_ALLOWED_SKIPS).

// kgoSuite returns the binary and source directory, skipping (or failing,
// under FLOE_REQUIRE_SERVERS=1) when they were not built.
func kgoSuite(t *testing.T) (bin, src string) {
	bin, src = os.Getenv("FLOE_KGO_TEST_BIN"), os.Getenv("FLOE_KGO_SRC")
	missing := ""
	switch {
	case bin == "":
		missing = "FLOE_KGO_TEST_BIN is not set"
	case src == "":
		missing = "FLOE_KGO_SRC is not set"
	default:
		if _, err := os.Stat(bin); err != nil {
			missing = err.Error()
		} else if _, err := os.Stat(filepath.Join(src, "config.go")); err != nil {
			missing = err.Error()
		}
	}
	if missing != "" {
		missingTool(t, "franz-go kgo suite", missing, "kgo-test")
	}
	return bin, src
}

var kgoResult = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+)`)

// runKgoSuite runs the whole kgo test binary against seeds and checks that
// every test passed and only the allowed tests skipped.
func runKgoSuite(t *testing.T, seeds []string) {
	bin, src := kgoSuite(t)
	records := os.Getenv("FLOE_KGO_RECORDS")
	if records == "" {
		records = "20000"
	}
	ctx := testContext(t, 20*time.Minute)
	out := filepath.Join(t.TempDir(), "kgo.out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "-test.v", "-test.count=1", "-test.timeout=18m")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "KGO_SEEDS="+strings.Join(seeds, ","), "KGO_TEST_RF=1",
		"KGO_TEST_RECORDS="+records, "KGO_LOG_LEVEL=none")
	cmd.Stdout, cmd.Stderr = f, f
	start := time.Now()
	runErr := cmd.Run()
	f.Close()

	allowed := map[string]bool{}
	for _, n := range strings.Fields(os.Getenv("FLOE_KGO_ALLOWED_SKIPS")) {
		allowed[n] = true
	}
	rf, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	var lines []string
	counts := map[string]int{}
	var failed, badSkips []string
	sc := bufio.NewScanner(rf)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		m := kgoResult.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		counts[m[1]]++
		switch {
		case m[1] == "FAIL":
			failed = append(failed, m[2])
		case m[1] == "SKIP" && !allowed[m[2]]:
			reason := ""
			if len(lines) > 1 {
				reason = strings.TrimSpace(lines[len(lines)-2])
			}
			badSkips = append(badSkips, fmt.Sprintf("%s (%s)", m[2], reason))
		}
	}
	sort.Strings(failed)
	t.Logf("kgo suite against %v: %d passed, %d failed, %d skipped in %s",
		seeds, counts["PASS"], counts["FAIL"], counts["SKIP"], time.Since(start).Round(time.Second))
	if len(failed) > 0 || runErr != nil {
		// The lines around each failure, then the end of the output.
		var ctxLines []string
		for i, l := range lines {
			if strings.Contains(l, "--- FAIL") || strings.Contains(l, "panic:") {
				ctxLines = append(ctxLines, lines[max(0, i-15):i+1]...)
				ctxLines = append(ctxLines, "…")
			}
		}
		tail := lines[max(0, len(lines)-40):]
		t.Fatalf("kgo suite failed (%v): %v\n%s\n--- last lines:\n%s", runErr, failed,
			strings.Join(ctxLines, "\n"), strings.Join(tail, "\n"))
	}
	if len(badSkips) > 0 {
		t.Fatalf("kgo tests skipped without a reason in the Makefile (FLOE_KGO_ALLOWED_SKIPS):\n%s", strings.Join(badSkips, "\n"))
	}
	if counts["PASS"] < 100 {
		t.Fatalf("only %d kgo tests passed: the suite did not really run", counts["PASS"])
	}
}

// TestFranzGoSuiteDev runs franz-go's kgo suite against `floe dev`.
func TestFranzGoSuiteDev(t *testing.T) {
	kgoSuite(t)
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	runKgoSuite(t, []string{p.Addr})
}

// TestFranzGoSuiteAgents runs it against two agents on PostgreSQL and MinIO.
func TestFranzGoSuiteAgents(t *testing.T) {
	kgoSuite(t)
	c := newClusterTB(t, "kgo_suite")
	ab := c.startAgents(t, 2)
	runKgoSuite(t, []string{ab[0].Addr, ab[1].Addr})
}
