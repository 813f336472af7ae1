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
//
// floe runs with a SASL_PLAINTEXT listener beside the PLAINTEXT one the
// suite uses, and a SCRAM-SHA-512 user made with `floe user add`: the
// suite's SCRAM tests (KGO_TEST_SCRAM, KGO_TEST_SCRAM_SEEDS) run against it
// instead of skipping themselves.

// kgoScramUser and kgoScramPass are the suite's SCRAM user.
const kgoScramUser, kgoScramPass = "kgo", "kgo-scram-secret"

// kgoListeners are the arguments of a floe with a PLAINTEXT and a
// SASL_PLAINTEXT listener on fresh ports, and their addresses.
func kgoListeners(t *testing.T) (args []string, plaintext, saslPlaintext string) {
	plaintext = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	saslPlaintext = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	return []string{"--listeners", "PLAINTEXT://" + plaintext + ",SASL_PLAINTEXT://" + saslPlaintext,
		"--sasl-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512"}, plaintext, saslPlaintext
}

// kgoAddScramUser runs `floe user add` for the suite's user.
func kgoAddScramUser(t *testing.T, metaURL string) {
	cmd := exec.Command(floeBin, "user", "add", kgoScramUser, "--metadata", metaURL, "--password-stdin")
	cmd.Stdin = strings.NewReader(kgoScramPass + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("floe user add: %v\n%s", err, out)
	}
}

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

// runKgoSuite runs the whole kgo test binary against seeds, with the SCRAM
// tests against scramSeeds, and checks that every test passed and only the
// allowed tests skipped.
func runKgoSuite(t *testing.T, seeds, scramSeeds []string) {
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
		"KGO_TEST_RECORDS="+records, "KGO_LOG_LEVEL=none",
		"KGO_TEST_SCRAM="+kgoScramUser+":"+kgoScramPass+":512", "KGO_TEST_SCRAM_SEEDS="+strings.Join(scramSeeds, ","))
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
	passed := map[string]bool{}
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
		case m[1] == "PASS":
			passed[m[2]] = true
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
	for _, name := range []string{"TestSCRAMAuth", "TestSCRAMAuthBadCredentials"} {
		if !passed[name] {
			t.Errorf("%s did not pass against the SASL_PLAINTEXT listener %v", name, scramSeeds)
		}
	}
	if counts["PASS"] < 100 {
		t.Fatalf("only %d kgo tests passed: the suite did not really run", counts["PASS"])
	}
}

// TestFranzGoSuiteDev runs franz-go's kgo suite against `floe dev`.
func TestFranzGoSuiteDev(t *testing.T) {
	kgoSuite(t)
	data := t.TempDir()
	kgoAddScramUser(t, "sqlite://"+filepath.Join(data, "meta.db"))
	args, plaintext, sasl := kgoListeners(t)
	startFloe(t, append([]string{"dev", "--data-dir", data}, args...)...)
	runKgoSuite(t, []string{plaintext}, []string{sasl})
}

// TestFranzGoSuiteAgents runs it against two agents on PostgreSQL and MinIO.
func TestFranzGoSuiteAgents(t *testing.T) {
	kgoSuite(t)
	c := newClusterTB(t, "kgo_suite")
	kgoAddScramUser(t, c.metaURL)
	var seeds, scramSeeds []string
	for range 2 {
		args, plaintext, sasl := kgoListeners(t)
		a := c.startAgent(t, args...)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("agent %s log:\n%s", plaintext, a.Log())
			}
		})
		seeds, scramSeeds = append(seeds, plaintext), append(scramSeeds, sasl)
	}
	// As startAgents does: the suite starts once each agent lists both.
	ctx := testContext(t, 30*time.Second)
	for _, s := range seeds {
		for len(nodeIDs(t, ctx, []string{s})) != len(seeds) {
			if ctx.Err() != nil {
				t.Fatalf("agent %s does not list both agents", s)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	runKgoSuite(t, seeds, scramSeeds)
}
