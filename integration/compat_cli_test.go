package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The kcat and kafkajs half of the client compatibility matrix. Each client
// runs every feature it supports (produce with each codec and consume back,
// a committing consumer group that resumes, idempotent and transactional
// produce) against two targets: `floe dev`, and two `floe agent`s on real
// PostgreSQL and MinIO where records are produced through one agent and
// consumed through the other (forEachCompatTarget, shared with the Go
// clients). Every subtest ends with a compatResult line, from which
// docs/compatibility.md is built.

// cliGroupRec is one record a group member printed.
type cliGroupRec struct {
	partition int32
	offset    int64
	value     string
}

// cliCheckGroupFirstRun asserts that a member that stopped after the records
// in got read each partition from offset 0 without gaps and committed
// exactly what it read: partitions it read nothing from have no commit.
func cliCheckGroupFirstRun(t *testing.T, ctx context.Context, admin *kgo.Client, group, topic string, partitions int32, got []cliGroupRec) {
	t.Helper()
	next := map[int32]int64{}
	for _, r := range got {
		if r.offset != next[r.partition] {
			t.Fatalf("first run: partition %d read offset %d, want %d", r.partition, r.offset, next[r.partition])
		}
		next[r.partition]++
	}
	var last string
	for range 50 { // a commit sent while leaving may land a moment later
		offs, err := kadm.NewClient(admin).FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		last = ""
		for p := range partitions {
			o, ok := offs.Lookup(topic, p)
			if ok && o.Err != nil {
				t.Fatalf("OffsetFetch %s/%d: %v", topic, p, o.Err)
			}
			at := int64(-1)
			if ok {
				at = o.At
			}
			want := int64(-1)
			if n, read := next[p]; read {
				want = n
			}
			if at != want {
				last += fmt.Sprintf(" partition %d committed %d, want %d;", p, at, want)
			}
		}
		if last == "" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("group %s after the first run:%s", group, last)
}

// cliCheckGroupResumed asserts that the second run started at the first run's
// commits: together they read every record of topic exactly once.
func cliCheckGroupResumed(t *testing.T, topic string, n int, first, second []cliGroupRec) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range append(append([]cliGroupRec(nil), first...), second...) {
		seen[r.value]++
	}
	for i := range n {
		v := fmt.Sprintf("%s/%d", topic, i)
		if seen[v] != 1 {
			t.Fatalf("record %s read %d times over both runs (first run %d records, second %d)", v, seen[v], len(first), len(second))
		}
	}
	if len(first)+len(second) != n {
		t.Fatalf("runs read %d+%d records, want %d", len(first), len(second), n)
	}
}

// cliCodecIDs are the batch attribute codec numbers.
var cliCodecIDs = map[string]int8{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// --- kcat ---

// cliKcatVersion is "kcat 1.7.1 (librdkafka 2.0.2)" from `kcat -V`.
func cliKcatVersion(t *testing.T) string {
	out, err := exec.Command("kcat", "-V").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -V: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Version (\S+) .*librdkafka (\S+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("kcat -V: no version in\n%s", out)
	}
	return fmt.Sprintf("kcat %s (librdkafka %s)", m[1], m[2])
}

// cliKcat runs kcat with stdin and returns its standard output; it fails
// the test with kcat's stderr and the floe logs when kcat fails.
func cliKcat(t *testing.T, ctx context.Context, tg *compatTarget, stdin string, args ...string) string {
	t.Helper()
	out, stderr, ok := kcatRun(t, ctx, stdin, args...)
	if !ok {
		t.Fatalf("kcat %v failed\nstdout:\n%s\nstderr:\n%s", args, out, stderr)
	}
	return out
}

// kcatRun runs kcat with stdin and returns its output, its stderr and
// whether it succeeded.
func kcatRun(t *testing.T, ctx context.Context, stdin string, args ...string) (string, string, bool) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "kcat", args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return string(out), stderr.String(), err == nil
}

// cliKcatProduce and cliKcatConsume run kcat -P and -C through the target's
// producing and consuming agents.
func cliKcatProduce(t *testing.T, ctx context.Context, tg *compatTarget, stdin string, args ...string) {
	t.Helper()
	cliKcat(t, ctx, tg, stdin, append([]string{"-P", "-b", tg.produce, "-X", "client.id=" + tg.produceID}, args...)...)
}

func cliKcatConsume(t *testing.T, ctx context.Context, tg *compatTarget, args ...string) string {
	t.Helper()
	return cliKcat(t, ctx, tg, "", append([]string{"-C", "-b", tg.consumers(), "-X", "client.id=" + tg.consumeID}, args...)...)
}

// cliKcatInput returns n "key:value" lines for kcat -K: and the lines kcat -C
// -f '%o %k=%s %h\n' must print for them with header h=hdr.
func cliKcatInput(prefix string, n int, hdr string) (in, want string) {
	var i, w strings.Builder
	for k := range n {
		v := fmt.Sprintf("%s-v%d-%s", prefix, k, strings.Repeat("abcdefgh", 8))
		fmt.Fprintf(&i, "%s-k%d:%s\n", prefix, k, v)
		fmt.Fprintf(&w, "%d %s-k%d=%s h=%s\n", k, prefix, k, v, hdr)
	}
	return i.String(), w.String()
}

// cliCheckKcatRead compares kcat -C output in the format '%o %k=%s %h %T\n'
// with want ('%o %k=%s %h\n'); every timestamp must lie within
// [from, now] since kcat stamps records when it produces them.
func cliCheckKcatRead(t *testing.T, got, want string, from time.Time) {
	t.Helper()
	var rest strings.Builder
	now := time.Now().UnixMilli()
	for l := range strings.Lines(got) {
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			t.Fatalf("kcat -C printed %q", l)
		}
		ts, err := strconv.ParseInt(strings.TrimSpace(l[i+1:]), 10, 64)
		if err != nil || ts < from.UnixMilli() || ts > now {
			t.Fatalf("kcat -C: timestamp of %q outside [%d, %d]", l, from.UnixMilli(), now)
		}
		rest.WriteString(l[:i] + "\n")
	}
	if rest.String() != want {
		t.Fatalf("kcat -C read:\n%s\nwant:\n%s", rest.String(), want)
	}
}

// TestCompatKcat: kcat (librdkafka) against dev and against two agents:
// produce with each codec, consume exactly, a -G group that commits and
// resumes, idempotent and transactional produce read at read_committed.
func TestCompatKcat(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat not installed (make kcat)")
	}
	client := cliKcatVersion(t)
	forEachCompatTarget(t, "floe_compat_kcat", func(t *testing.T, tg *compatTarget) {
		ctx := testContext(t, 2*time.Minute)
		const fmtRec = "%o %k=%s %h %T\n"

		for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
			t.Run("codec-"+codec, func(t *testing.T) {
				compatResult(t, client, tg.name, codec+" produce+consume")
				topic := "kcat-" + codec
				createTopic(t, ctx, tg.admin, topic, 1, nil)
				const n = 40
				in, want := cliKcatInput(codec, n, codec+"-hdr")
				from := time.Now().Add(-time.Millisecond)
				cliKcatProduce(t, ctx, tg, in, "-t", topic, "-p", "0", "-K:", "-z", codec, "-H", "h="+codec+"-hdr")
				checkStoredCodec(t, ctx, tg, topic, cliCodecIDs[codec], n)
				got := cliKcatConsume(t, ctx, tg, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", fmtRec)
				cliCheckKcatRead(t, got, want, from)
			})
		}

		t.Run("group", func(t *testing.T) {
			compatResult(t, client, tg.name, "consumer group commit+resume")
			const n, first = 60, 25
			topic, group := "kcat-grp", "kcat-grp-"+tg.name
			groupTopic(t, ctx, tg.produce, topic, 3, n)
			run := func(brokers, id string, stop ...string) []cliGroupRec {
				args := append([]string{"-b", brokers, "-X", "client.id=" + id, "-G", group, topic,
					"-X", "auto.offset.reset=earliest", "-X", "auto.commit.interval.ms=100", "-q", "-f", "%p %o %s\n"}, stop...)
				var recs []cliGroupRec
				for _, l := range strings.Split(strings.TrimSpace(cliKcat(t, ctx, tg, "", args...)), "\n") {
					var r cliGroupRec
					if l == "" {
						continue
					}
					if _, err := fmt.Sscanf(l, "%d %d %s", &r.partition, &r.offset, &r.value); err != nil {
						t.Fatalf("kcat -G printed %q: %v", l, err)
					}
					recs = append(recs, r)
				}
				sort.Slice(recs, func(i, j int) bool {
					if recs[i].partition != recs[j].partition {
						return recs[i].partition < recs[j].partition
					}
					return recs[i].offset < recs[j].offset
				})
				return recs
			}
			// The first member stops after `first` records; closing commits
			// what it consumed (enable.auto.commit).
			got1 := run(tg.produce, tg.produceID, "-c", strconv.Itoa(first))
			if len(got1) != first {
				t.Fatalf("first kcat -G run read %d records, want %d", len(got1), first)
			}
			cliCheckGroupFirstRun(t, ctx, tg.admin, group, topic, 3, got1)
			got2 := run(tg.consumers(), tg.consumeID, "-e")
			cliCheckGroupResumed(t, topic, n, got1, got2)
			checkCommittedAtEnd(t, ctx, tg.admin, group, topic, n)
		})

		t.Run("idempotent", func(t *testing.T) {
			compatResult(t, client, tg.name, "idempotent produce")
			topic := "kcat-idem"
			createTopic(t, ctx, tg.admin, topic, 1, nil)
			const n = 30
			in, want := cliKcatInput("idem", n, "idem-hdr")
			from := time.Now().Add(-time.Millisecond)
			cliKcatProduce(t, ctx, tg, in, "-t", topic, "-p", "0", "-K:", "-H", "h=idem-hdr", "-X", "enable.idempotence=true")
			seq := int32(0)
			for _, h := range rawBatches(t, ctx, tg.admin, topic) {
				if h.ProducerID < 0 || h.BaseSequence != seq {
					t.Fatalf("batch at %d: producer id %d, base sequence %d, want an id and sequence %d", h.BaseOffset, h.ProducerID, h.BaseSequence, seq)
				}
				seq += h.NumRecords
			}
			if seq != n {
				t.Fatalf("%d records stored, want %d", seq, n)
			}
			cliCheckKcatRead(t, cliKcatConsume(t, ctx, tg, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", fmtRec), want, from)
		})

		t.Run("transactional", func(t *testing.T) {
			compatResult(t, client, tg.name, "transactional produce (commit) + read_committed")
			topic := "kcat-txn"
			createTopic(t, ctx, tg.admin, topic, 1, nil)
			const n = 30
			in, want := cliKcatInput("txn", n, "txn-hdr")
			from := time.Now().Add(-time.Millisecond)
			// kcat begins a transaction at start and commits it at EOF.
			cliKcatProduce(t, ctx, tg, in, "-t", topic, "-p", "0", "-K:", "-H", "h=txn-hdr", "-X", "transactional.id=kcat-txn-"+tg.name)
			hs := rawBatches(t, ctx, tg.admin, topic)
			data := int32(0)
			for i, h := range hs {
				last := i == len(hs)-1
				switch {
				case last && (!h.IsControl() || h.BaseOffset != int64(n)):
					t.Fatalf("last batch: control %v at offset %d, want the commit marker at %d", h.IsControl(), h.BaseOffset, n)
				case !last && (h.IsControl() || !h.IsTransactional()):
					t.Fatalf("batch at %d: control %v transactional %v, want a transactional data batch", h.BaseOffset, h.IsControl(), h.IsTransactional())
				case !last:
					data += h.NumRecords
				}
			}
			if data != n {
				t.Fatalf("%d transactional records stored, want %d", data, n)
			}
			got := cliKcatConsume(t, ctx, tg, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", fmtRec,
				"-X", "isolation.level=read_committed")
			cliCheckKcatRead(t, got, want, from)
		})
	})
}

// --- kafkajs ---

// cliKafkajsSetup installs integration/js with npm ci and returns node's path,
// the js directory and "kafkajs VERSION".
func cliKafkajsSetup(t *testing.T) (node, dir, client string) {
	node, dir = npmInstall(t, "js")
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", "kafkajs", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	return node, dir, "kafkajs " + pkg.Version
}

// cliMatrixJS runs `node matrix.js CASE` against tg and returns its output
// lines; it fails the test with stderr and the floe logs when node fails.
// FLOE_KAFKAJS_DEBUG=1 turns on kafkajs's debug log (on stderr).
func cliMatrixJS(t *testing.T, ctx context.Context, node, dir string, tg *compatTarget, kase string, args ...string) []string {
	t.Helper()
	return runNode(t, ctx, node, dir, append([]string{"matrix.js", kase, "--produce=" + tg.produce, "--produce-id=" + tg.produceID,
		"--consume=" + tg.consumers(), "--consume-id=" + tg.consumeID}, args...)...)
}

// runNode runs node with args in dir and returns its output lines; it
// fails the test with stderr when node fails.
func runNode(t *testing.T, ctx context.Context, node, dir string, args ...string) []string {
	t.Helper()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, stderr.String())
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}

// cliJSRecord is the line matrix.js prints for a record it produced with
// message(prefix, i) at offset.
func cliJSRecord(topic, prefix string, i, offset int) string {
	return fmt.Sprintf("%s 0 %d %s-k%d=%s-v%d-%s h=%s-h%d ts=%d", topic, offset, prefix, i, prefix, i,
		strings.Repeat("abcdefgh", 8), prefix, i, 1700000000000+i)
}

// cliCheckLines compares printed lines with want, all of them, in order.
func cliCheckLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s printed:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCompatKafkajs: kafkajs against dev and against two agents: produce
// with every codec (none, gzip natively; snappy, lz4, zstd through the
// pure-JS codecs of js/matrix-codecs.js), consume exactly, a group with
// explicit commits that a second run resumes, an idempotent producer and a
// transactional producer (commit, abort, commit) read at read_committed.
func TestCompatKafkajs(t *testing.T) {
	node, dir, client := cliKafkajsSetup(t)
	forEachCompatTarget(t, "floe_compat_kafkajs", func(t *testing.T, tg *compatTarget) {
		ctx := testContext(t, 2*time.Minute)

		t.Run("codecs", func(t *testing.T) {
			codecs := []string{"gzip", "lz4", "none", "snappy", "zstd"} // matrix.js prints topics sorted
			const n = 20
			for _, c := range codecs {
				createTopic(t, ctx, tg.admin, "js-codec-"+c, 1, nil)
			}
			out := cliMatrixJS(t, ctx, node, dir, tg, "codecs", "--topic=js-codec", fmt.Sprintf("--n=%d", n))
			sent := map[string]bool{}
			for _, l := range out {
				if s, ok := strings.CutPrefix(l, "sent "); ok {
					sent[s] = true
				}
			}
			// Per codec below; nothing else may have been printed.
			if len(out) != len(codecs)*(n+1) {
				t.Errorf("matrix.js codecs printed %d lines, want %d:\n%s", len(out), len(codecs)*(n+1), strings.Join(out, "\n"))
			}
			for _, c := range codecs {
				t.Run(c, func(t *testing.T) {
					compatResult(t, client, tg.name, c+" produce+consume")
					topic := "js-codec-" + c
					if !sent[topic+" 0@0"] {
						t.Fatalf("matrix.js did not report %s sent at 0@0:\n%s", topic, strings.Join(out, "\n"))
					}
					var got, want []string
					for _, l := range out {
						if strings.HasPrefix(l, topic+" ") {
							got = append(got, l)
						}
					}
					for i := range n {
						want = append(want, cliJSRecord(topic, c, i, i))
					}
					cliCheckLines(t, "kafkajs consumer of "+topic, got, want)
					checkStoredCodec(t, ctx, tg, topic, cliCodecIDs[c], n)
				})
			}
		})

		t.Run("group", func(t *testing.T) {
			compatResult(t, client, tg.name, "consumer group commit+resume")
			const n, first = 60, 25
			topic, group := "js-grp", "js-grp-"+tg.name
			groupTopic(t, ctx, tg.produce, topic, 3, n, kgo.ProducerBatchCompression(kgo.NoCompression()))
			parse := func(lines []string) []cliGroupRec {
				var recs []cliGroupRec
				for _, l := range lines {
					f := strings.Fields(l)
					if len(f) != 6 || f[0] != topic || !strings.HasPrefix(f[3], "<nil>=") {
						t.Fatalf("matrix.js group printed %q", l)
					}
					p, _ := strconv.Atoi(f[1])
					o, _ := strconv.ParseInt(f[2], 10, 64)
					recs = append(recs, cliGroupRec{partition: int32(p), offset: o, value: strings.TrimPrefix(f[3], "<nil>=")})
				}
				return recs
			}
			// Run 1 through agent A, run 2 through agent B: the commits
			// the first member made are what the second resumes from.
			got1 := parse(cliMatrixJS(t, ctx, node, dir, tg, "group", "--topic="+topic, "--group="+group, fmt.Sprintf("--count=%d", first),
				"--consume="+tg.produce, "--consume-id="+tg.produceID))
			if len(got1) != first {
				t.Fatalf("first run read %d records, want %d", len(got1), first)
			}
			cliCheckGroupFirstRun(t, ctx, tg.admin, group, topic, 3, got1)
			got2 := parse(cliMatrixJS(t, ctx, node, dir, tg, "group", "--topic="+topic, "--group="+group, fmt.Sprintf("--count=%d", n-first)))
			cliCheckGroupResumed(t, topic, n, got1, got2)
			checkCommittedAtEnd(t, ctx, tg.admin, group, topic, n)
		})

		t.Run("idempotent", func(t *testing.T) {
			compatResult(t, client, tg.name, "idempotent produce")
			topic := "js-idem"
			createTopic(t, ctx, tg.admin, topic, 1, nil)
			const n = 30
			out := cliMatrixJS(t, ctx, node, dir, tg, "idempotent", "--topic="+topic, fmt.Sprintf("--n=%d", n))
			want := []string{"sent js-idem 0@0", "sent js-idem 0@10", "sent js-idem 0@20"}
			for i := range n {
				want = append(want, cliJSRecord(topic, "idem", i, i))
			}
			cliCheckLines(t, "matrix.js idempotent", out, want)
			hs := rawBatches(t, ctx, tg.admin, topic)
			if len(hs) != 3 {
				t.Fatalf("%d batches stored, want 3 (one per send)", len(hs))
			}
			for i, h := range hs {
				if h.ProducerID < 0 || h.ProducerID != hs[0].ProducerID || h.BaseSequence != int32(10*i) || h.BaseOffset != int64(10*i) {
					t.Fatalf("batch %d: producer id %d (first %d), base sequence %d, offset %d; want one producer id, sequence and offset %d",
						i, h.ProducerID, hs[0].ProducerID, h.BaseSequence, h.BaseOffset, 10*i)
				}
			}
		})

		t.Run("transactional", func(t *testing.T) {
			compatResult(t, client, tg.name, "transactional produce (commit+abort) + read_committed")
			topic := "js-txn"
			createTopic(t, ctx, tg.admin, topic, 1, nil)
			out := cliMatrixJS(t, ctx, node, dir, tg, "txn", "--topic="+topic, "--txn-id=js-txn-"+tg.name)
			// Layout: commit1 at 0-9, its marker at 10, abort at 11-20,
			// marker 21, commit2 at 22-26, marker 27.
			want := []string{"committed commit1", "aborted abort", "committed commit2"}
			var committed, all []string
			for i := range 10 {
				committed = append(committed, cliJSRecord(topic, "commit1", i, i))
			}
			all = append(all, committed...)
			for i := range 10 {
				all = append(all, cliJSRecord(topic, "abort", i, 11+i))
			}
			for i := range 5 {
				r := cliJSRecord(topic, "commit2", i, 22+i)
				committed = append(committed, r)
				all = append(all, r)
			}
			for _, r := range committed {
				want = append(want, "committed-read "+r)
			}
			for _, r := range all {
				want = append(want, "uncommitted-read "+r)
			}
			cliCheckLines(t, "matrix.js txn", out, want)
			var got []string
			for _, h := range rawBatches(t, ctx, tg.admin, topic) {
				got = append(got, fmt.Sprintf("%d+%d txn=%v control=%v", h.BaseOffset, h.NumRecords, h.IsTransactional(), h.IsControl()))
			}
			cliCheckLines(t, "stored batches of "+topic, got, []string{
				"0+10 txn=true control=false", "10+1 txn=true control=true",
				"11+10 txn=true control=false", "21+1 txn=true control=true",
				"22+5 txn=true control=false", "27+1 txn=true control=true"})
		})
	})
}
