package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// segmentio/kafka-go's own tests, run against floe: the tests of the
// packages that talk to a broker (kafka-go itself, compress, topics, sasl),
// built from the module cache at the version floe's go.mod pins by
// `make kafka-go-test`. The Makefile passes:
//
//   - FLOE_KAFKAGO_TEST_DIR, the directory of the test binaries;
//   - FLOE_KAFKAGO_SRC, the module's source (tests read fixtures/ from the
//     working directory);
//   - FLOE_KAFKAGO_KAFKA_VERSION, given to the suite as KAFKA_VERSION, which
//     its version gates compare against (unset, gated tests return early
//     and pass without testing anything);
//   - the lists, each entry with its reason written next to it:
//     FLOE_KAFKAGO_ALLOWED_FAILURES and FLOE_KAFKAGO_ALLOWED_SKIPS (a listed
//     test must still fail, or skip: when it passes, take it off),
//     FLOE_KAFKAGO_NOT_RUN (kafka-go tests that cannot pass or fail on the
//     broker's merit, left out with -test.skip) and FLOE_KAFKAGO_KAFKA2_TESTS
//     (tests kafka-go skips on Kafka 3, run once more as on Kafka 2.8.1,
//     where they must pass).
//
// The suite hard-codes localhost:9092 (and localhost:9093 for SASL), so
// floe dev listens on 127.0.0.1:9092 and advertises localhost:9092. Each
// top-level test runs in a process of its own: a panic then costs that test,
// not the rest of the binary, and the subtests it left without a result run
// again one by one. A fresh process also starts with an empty kafka-go
// Transport metadata cache, which the suite's waitForTopic otherwise waits
// out (up to 6 s) for every topic it creates.

// kafkaGoSuitePkgs are the suite's binaries (as `go test -c -o DIR/` names
// them) and their package directories inside the module.
var kafkaGoSuitePkgs = []struct{ bin, dir string }{
	{"kafka-go.test", "."},
	{"compress.test", "compress"},
	{"topics.test", "topics"},
	{"sasl.test", "sasl"},
}

// kafkaGoAddr is where the suite expects a broker.
const kafkaGoAddr = "127.0.0.1:9092"

// kafkaGoSASLAddr is where the suite's SASL tests look for a SASL listener
// (PLAIN and SCRAM, with the users kafkaGoUsers).
const kafkaGoSASLAddr = "127.0.0.1:9093"

// kafkaGoUsers are the SASL users of kafka-go's test environment (its
// docker-compose files): user, mechanism, password.
var kafkaGoUsers = [][3]string{
	{"adminplain", "SCRAM-SHA-512", "admin-secret"}, // PLAIN checks the SCRAM keys
	{"adminscram", "SCRAM-SHA-256", "admin-secret-256"},
	{"adminscram", "SCRAM-SHA-512", "admin-secret-512"},
	{"adminscram256", "SCRAM-SHA-256", "admin-secret-256"},
	{"adminscram512", "SCRAM-SHA-512", "admin-secret-512"},
}

// kafka2Version is the KAFKA_VERSION of the second run of the tests in
// FLOE_KAFKAGO_KAFKA2_TESTS: the last Kafka 2 kafka-go's CI runs.
const kafka2Version = "2.8.1"

// kafkaGoSuite returns the binaries' directory and the module source,
// skipping (or failing, under FLOE_REQUIRE_SERVERS=1) when they were not
// built.
func kafkaGoSuite(t *testing.T) (dir, src string) {
	dir, src = os.Getenv("FLOE_KAFKAGO_TEST_DIR"), os.Getenv("FLOE_KAFKAGO_SRC")
	missing := ""
	switch {
	case dir == "":
		missing = "FLOE_KAFKAGO_TEST_DIR is not set"
	case src == "":
		missing = "FLOE_KAFKAGO_SRC is not set"
	case os.Getenv("FLOE_KAFKAGO_KAFKA_VERSION") == "":
		missing = "FLOE_KAFKAGO_KAFKA_VERSION is not set"
	default:
		for _, p := range kafkaGoSuitePkgs {
			if _, err := os.Stat(filepath.Join(dir, p.bin)); err != nil {
				missing = err.Error()
				break
			}
		}
		if _, err := os.Stat(filepath.Join(src, "fixtures")); err != nil && missing == "" {
			missing = err.Error()
		}
	}
	if missing != "" {
		missingTool(t, "kafka-go suite", missing, "kafka-go-test")
	}
	return dir, src
}

// checkKafkaGoPort fails the test when something already listens where the
// suite will connect: on 127.0.0.1:9092, or on [::1]:9092, which kafka-go
// tries first on hosts that resolve localhost to ::1.
func checkKafkaGoPort(t *testing.T) {
	for _, addr := range []string{kafkaGoAddr, "[::1]:9092", kafkaGoSASLAddr, "[::1]:9093"} {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			ln.Close()
			continue
		}
		if addr != kafkaGoAddr && addr != kafkaGoSASLAddr && !errors.Is(err, syscall.EADDRINUSE) {
			continue // no IPv6 loopback here: nothing can listen on it either
		}
		t.Fatalf("kafka-go suite: its tests hard-code localhost:9092 and :9093, but %s cannot be used: %v\n"+
			"(is `make run` or another broker running? stop it and run the test again)", addr, err)
	}
}

// kafkaGoResult is a result line of `go test -v` output, subtests included.
var kafkaGoResult = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)`)

// kafkaGoRun is a `=== RUN` line.
var kafkaGoRun = regexp.MustCompile(`^=== RUN\s+(\S+)`)

// kafkaGoTest is what one test (or subtest) came to.
type kafkaGoTest struct {
	status string // PASS, FAIL, SKIP, or "" when its process ended without saying
	took   time.Duration
	run    int // the process that ran it: an index into kafkaGoSuiteRun.outs
}

// kafkaGoSuiteRun collects the results of the suite's processes.
type kafkaGoSuiteRun struct {
	results map[string]*kafkaGoTest
	outs    [][]byte // each process's output
}

// run runs the test name of bin ("Parent/sub" for a subtest) in a process
// of its own, with KAFKA_VERSION=version and -test.skip=skip, and records
// the results of name and of its subtests under their names followed by
// suffix. It returns the subtests that started but never reported because
// the process panicked; a process that ran out of time has its unfinished
// tests recorded without a result instead.
func (s *kafkaGoSuiteRun) run(ctx context.Context, t *testing.T, bin, dir, name, skip, version, suffix string) (again []string) {
	args := []string{"-test.v", "-test.count=1", "-test.timeout=4m", "-test.run", kafkaGoPattern(name)}
	if skip != "" {
		args = append(args, "-test.skip", skip)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(kafkaGoEnv(), "KAFKA_VERSION="+version)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("kafka-go suite: %s %v: %v", filepath.Base(bin), args, err)
	}
	s.outs = append(s.outs, out)
	idx := len(s.outs) - 1
	mine := func(n string) bool { return n == name || strings.HasPrefix(n, name+"/") }
	started := map[string]bool{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := kafkaGoRun.FindStringSubmatch(line); m != nil && mine(m[1]) && !started[m[1]] {
			started[m[1]] = true
			order = append(order, m[1])
			continue
		}
		if m := kafkaGoResult.FindStringSubmatch(line); m != nil && mine(m[2]) {
			var secs float64
			fmt.Sscan(m[3], &secs)
			s.results[m[2]+suffix] = &kafkaGoTest{status: m[1], took: time.Duration(secs * float64(time.Second)), run: idx}
		}
	}
	timedOut := bytes.Contains(out, []byte("panic: test timed out"))
	if s.results[name+suffix] == nil {
		s.results[name+suffix] = &kafkaGoTest{run: idx}
	}
	for _, n := range order {
		if s.results[n+suffix] != nil {
			continue
		}
		if timedOut {
			s.results[n+suffix] = &kafkaGoTest{run: idx}
		} else {
			again = append(again, n)
		}
	}
	return again
}

// kafkaGoEnv is the environment without variables that change what the
// suite runs (KAFKA_SKIP_NETTEST would skip TestConn/nettest).
func kafkaGoEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KAFKA_") {
			env = append(env, kv)
		}
	}
	return env
}

// kafkaGoPattern is the -test.run pattern that selects exactly name.
func kafkaGoPattern(name string) string {
	elems := strings.Split(name, "/")
	for i, e := range elems {
		elems[i] = "^" + regexp.QuoteMeta(e) + "$"
	}
	return strings.Join(elems, "/")
}

// kafkaGoSkips turns FLOE_KAFKAGO_NOT_RUN into what to leave out: whole
// top-level tests, and a -test.skip pattern per top-level test for
// subtests. -test.skip takes one pattern, so the subtests left out of one
// top-level test must have the same parent.
func kafkaGoSkips(t *testing.T, notRun []string) (whole map[string]bool, skip map[string]string) {
	whole, skip = map[string]bool{}, map[string]string{}
	parents, leaves := map[string]string{}, map[string][]string{}
	for _, n := range notRun {
		i := strings.LastIndexByte(n, '/')
		if i < 0 {
			whole[n] = true
			continue
		}
		top, _, _ := strings.Cut(n, "/")
		if p, ok := parents[top]; ok && p != n[:i] {
			t.Fatalf("kafka-go suite: FLOE_KAFKAGO_NOT_RUN leaves out subtests of %s and %s; one -test.skip cannot say both", p, n[:i])
		}
		parents[top] = n[:i]
		leaves[top] = append(leaves[top], regexp.QuoteMeta(n[i+1:]))
	}
	for top, p := range parents {
		skip[top] = kafkaGoPattern(p) + "/^(" + strings.Join(leaves[top], "|") + ")$"
	}
	return whole, skip
}

// TestKafkaGoSuite runs kafka-go's own tests against `floe dev` on
// 127.0.0.1:9092 and checks each result against the Makefile's lists: a
// failure or skip not listed fails the test, and so does a listed test that
// passes now (take it off the list) or did not run.
func TestKafkaGoSuite(t *testing.T) {
	binDir, src := kafkaGoSuite(t)
	checkKafkaGoPort(t)
	p := &proc{t: t, Addr: kafkaGoAddr, HTTPAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	dir := t.TempDir()
	for _, u := range kafkaGoUsers {
		out, err := exec.Command(floeBin, "user", "add", u[0], "--metadata", "sqlite://"+filepath.Join(dir, "meta.db"),
			"--mechanism", u[1], "--password", u[2]).CombinedOutput()
		if err != nil {
			t.Fatalf("floe user add %s: %v\n%s", u[0], err, out)
		}
	}
	// A plaintext listener on :9092 and the SASL one on :9093, as the
	// suite's environment has them; an authorizer with every principal
	// the suite uses as a super user, so that its ACL tests have ACLs to
	// manage and nothing is refused.
	p.args = []string{"dev", "--data-dir", dir,
		"--listeners", "PLAINTEXT://" + kafkaGoAddr + ",SASL_PLAINTEXT://" + kafkaGoSASLAddr,
		"--advertised-listeners", "PLAINTEXT://localhost:9092,SASL_PLAINTEXT://localhost:9093",
		"--sasl-mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"--authorizer", "--super-users", "User:ANONYMOUS;User:adminplain;User:adminscram;User:adminscram256;User:adminscram512",
		"--http-addr", p.HTTPAddr}
	p.start()
	t.Cleanup(p.Stop)

	ctx := testContext(t, 25*time.Minute)
	start := time.Now()
	version := os.Getenv("FLOE_KAFKAGO_KAFKA_VERSION")
	notRun := strings.Fields(os.Getenv("FLOE_KAFKAGO_NOT_RUN"))
	whole, skip := kafkaGoSkips(t, notRun)
	kafka2 := map[string]bool{}
	for _, n := range strings.Fields(os.Getenv("FLOE_KAFKAGO_KAFKA2_TESTS")) {
		kafka2[n] = true
	}
	s := &kafkaGoSuiteRun{results: map[string]*kafkaGoTest{}}
	var top []string
	listed := map[string]bool{}
	for _, pkg := range kafkaGoSuitePkgs {
		bin, dir := filepath.Join(binDir, pkg.bin), filepath.Join(src, pkg.dir)
		list, err := exec.CommandContext(ctx, bin, "-test.list", "^Test").Output()
		if err != nil {
			t.Fatalf("kafka-go suite: %s -test.list: %v", pkg.bin, err)
		}
		for _, name := range strings.Fields(string(list)) {
			if listed[name] {
				t.Fatalf("kafka-go suite: two packages have a test %s; the Makefile's lists could not tell them apart", name)
			}
			listed[name] = true
			if whole[name] {
				continue
			}
			top = append(top, name)
			for queue := []string{name}; len(queue) > 0 && ctx.Err() == nil; queue = queue[1:] {
				queue = append(queue, s.run(ctx, t, bin, dir, queue[0], skip[name], version, "")...)
			}
			if kafka2[name] {
				s.run(ctx, t, bin, dir, name, "", kafka2Version, "@"+kafka2Version)
				top = append(top, name+"@"+kafka2Version)
			}
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("kafka-go suite: out of time after %s", time.Since(start).Round(time.Second))
	}
	var bad []string
	for _, n := range notRun {
		first, _, _ := strings.Cut(n, "/")
		switch {
		case !listed[first]:
			bad = append(bad, n+" is in FLOE_KAFKAGO_NOT_RUN but kafka-go has no test "+first)
		case s.results[n] != nil:
			bad = append(bad, n+" is in FLOE_KAFKAGO_NOT_RUN but ran")
		}
	}
	for n := range kafka2 {
		if s.results[n+"@"+kafka2Version] == nil {
			bad = append(bad, n+" is in FLOE_KAFKAGO_KAFKA2_TESTS but did not run")
		}
	}
	s.check(t, p, top, bad, time.Since(start))
}

// check compares the results with the Makefile's lists, adding to bad; a
// failure tells what floe dev (p) logged and counted.
func (s *kafkaGoSuiteRun) check(t *testing.T, p *proc, top, bad []string, took time.Duration) {
	allowedFail, allowedSkip := map[string]bool{}, map[string]bool{}
	for _, n := range strings.Fields(os.Getenv("FLOE_KAFKAGO_ALLOWED_FAILURES")) {
		allowedFail[n] = true
	}
	for _, n := range strings.Fields(os.Getenv("FLOE_KAFKAGO_ALLOWED_SKIPS")) {
		allowedSkip[n] = true
	}
	// covered reports whether name or one of its parents is listed.
	covered := func(list map[string]bool, name string) bool {
		for n := name; ; {
			if list[n] {
				return true
			}
			i := strings.LastIndexByte(n, '/')
			if i < 0 {
				return false
			}
			n = n[:i]
		}
	}
	// failedBelow reports whether a subtest of name failed: a parent fails
	// with its subtests, and each of them is judged on its own.
	failedBelow := func(name string) bool {
		for n, r := range s.results {
			if r.status != "PASS" && r.status != "SKIP" && strings.HasPrefix(n, name+"/") {
				return true
			}
		}
		return false
	}
	counts := map[string]int{}
	var explain []int // processes whose output explains a bad result
	names := make([]string, 0, len(s.results))
	for n := range s.results {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := s.results[n]
		status := r.status
		if status == "" {
			status = "NO RESULT"
		}
		counts[status]++
		switch {
		case status == "PASS" && (allowedFail[n] || allowedSkip[n]):
			bad = append(bad, n+" passes now: take it off the Makefile's list")
		case status == "SKIP" && !covered(allowedSkip, n):
			bad = append(bad, n+" skipped, and FLOE_KAFKAGO_ALLOWED_SKIPS does not list it")
			explain = append(explain, r.run)
		case status != "PASS" && status != "SKIP" && !covered(allowedFail, n) && !failedBelow(n):
			bad = append(bad, n+" "+status+", and FLOE_KAFKAGO_ALLOWED_FAILURES does not list it")
			explain = append(explain, r.run)
		}
	}
	for _, list := range []map[string]bool{allowedFail, allowedSkip} {
		for n := range list {
			if s.results[n] == nil {
				bad = append(bad, n+" is listed in the Makefile but did not run")
			}
		}
	}
	// The slowest tests and subtests, for whoever wonders where the time goes.
	sort.Slice(names, func(i, j int) bool { return s.results[names[i]].took > s.results[names[j]].took })
	var slow []string
	for _, n := range names[:min(10, len(names))] {
		slow = append(slow, fmt.Sprintf("%s %s", n, s.results[n].took.Round(100*time.Millisecond)))
	}
	t.Logf("kafka-go suite against floe dev: %d top-level tests, %d results: %d passed, %d failed, %d skipped, %d without result, in %s; slowest: %s",
		len(top), len(s.results), counts["PASS"], counts["FAIL"], counts["SKIP"], counts["NO RESULT"],
		took.Round(time.Second), strings.Join(slow, ", "))
	if len(bad) > 0 {
		sort.Strings(bad)
		var sb strings.Builder
		seen := map[int]bool{}
		for _, i := range explain {
			if seen[i] {
				continue
			}
			seen[i] = true
			lines := strings.Split(strings.TrimSpace(string(s.outs[i])), "\n")
			sb.WriteString("--- output:\n" + strings.Join(lines[max(0, len(lines)-60):], "\n") + "\n")
		}
		t.Fatalf("kafka-go suite:\n%s\n%s\n%s", strings.Join(bad, "\n"), sb.String(), brokerState(t, p))
	}
	if counts["PASS"] < 400 {
		t.Fatalf("only %d kafka-go tests and subtests passed: the suite did not really run", counts["PASS"])
	}
}

// brokerState is what floe dev said and counted while the suite ran: its
// last warnings and errors, and its compactor's counters (a compacted-topic
// test that times out waits for them).
func brokerState(t *testing.T, p *proc) string {
	var warn []string
	for _, l := range strings.Split(p.Log(), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			warn = append(warn, l)
		}
	}
	var counters []string
	for _, l := range strings.Split(p.metricsText(t), "\n") {
		if strings.HasPrefix(l, "floe_compactor_") && strings.Contains(l, "_total") {
			counters = append(counters, l)
		}
	}
	return fmt.Sprintf("--- floe dev: %d warnings and errors, the last 40:\n%s\n--- floe dev's compactor counters:\n%s",
		len(warn), strings.Join(warn[max(0, len(warn)-40):], "\n"), strings.Join(counters, "\n"))
}
