package integration

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// floeCmd runs `floe args...` and returns its output; failing is an error,
// not a test failure, for the commands expected to refuse.
func floeCmd(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, floeBin, args...).CombinedOutput()
	return string(out), err
}

// TestGroupResetOffsetsCLI: `floe group reset-offsets --to-datetime` moves
// a group so that its next consumer reads exactly the records at or after
// the time; --dry-run commits nothing; a group with a live member is
// refused; `floe group describe` shows the lag kadm computes.
func TestGroupResetOffsetsCLI(t *testing.T) {
	dev := startFloe(t, "dev", "--data-dir", t.TempDir())
	ctx := testContext(t, 2*time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(dev.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createTopic(t, ctx, cl, "replay", 2, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	var recs []*kgo.Record
	for i := range 40 {
		recs = append(recs, &kgo.Record{Topic: "replay", Partition: int32(i % 2), Value: []byte{byte(i)},
			Timestamp: base.Add(time.Duration(i) * time.Minute)})
	}
	produceAll(t, ctx, cl, recs)

	// The group reads everything and commits.
	consume := func(n int) []*kgo.Record {
		t.Helper()
		gc, err := kgo.NewClient(kgo.SeedBrokers(dev.Addr), kgo.ConsumerGroup("replayers"), kgo.ConsumeTopics("replay"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond), kgo.DisableAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		defer gc.Close()
		var got []*kgo.Record
		for len(got) < n {
			fs := gc.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %d of %d", len(got), n)
			}
			got = append(got, fs.Records()...)
		}
		if err := gc.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		// Nothing more arrives within a short wait: exactly n.
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if extra := gc.PollFetches(wctx).Records(); len(extra) > 0 {
			t.Fatalf("%d records past the %d expected", len(extra), n)
		}
		return got
	}
	consume(40)

	args := []string{"group", "reset-offsets", "--bootstrap", dev.Addr, "--group", "replayers", "--topic", "replay",
		"--to-datetime", base.Add(30 * time.Minute).UTC().Format(time.RFC3339)}
	out, err := floeCmd(ctx, append(args, "--dry-run")...)
	if err != nil || !strings.Contains(out, "dry run") || !hasRow(out, "replay 0 15") || !hasRow(out, "replay 1 15") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	adm := kadm.NewClient(cl)
	lag := func() int64 {
		t.Helper()
		l, err := adm.Lag(ctx, "replayers")
		if err != nil || l.Error() != nil {
			t.Fatalf("lag: %v %v", err, l.Error())
		}
		return l["replayers"].Lag.Total()
	}
	if n := lag(); n != 0 {
		t.Fatalf("the dry run moved the group: lag %d", n)
	}

	// Refused while a member is in the group.
	member, err := kgo.NewClient(kgo.SeedBrokers(dev.Addr), kgo.ConsumerGroup("replayers"), kgo.ConsumeTopics("replay"))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the member to join", func() bool {
		member.PollFetches(ctxWithin(ctx, 200*time.Millisecond))
		d, err := adm.DescribeGroups(ctx, "replayers")
		return err == nil && len(d["replayers"].Members) == 1
	})
	if out, err := floeCmd(ctx, args...); err == nil || !strings.Contains(out, "member") {
		t.Fatalf("reset with a live member: %v\n%s", err, out)
	}
	member.Close()
	waitFor(t, 60*time.Second, "the group to empty", func() bool {
		d, err := adm.DescribeGroups(ctx, "replayers")
		return err == nil && len(d["replayers"].Members) == 0
	})

	if out, err := floeCmd(ctx, args...); err != nil {
		t.Fatalf("reset: %v\n%s", err, out)
	}
	if n := lag(); n != 10 {
		t.Fatalf("lag after the reset %d, want the 10 records from minute 30 on", n)
	}
	out, err = floeCmd(ctx, "group", "describe", "--bootstrap", dev.Addr, "--group", "replayers")
	if err != nil || !strings.Contains(out, "TOTAL LAG 10") {
		t.Fatalf("describe: %v\n%s", err, out)
	}
	got := consume(10)
	for _, r := range got {
		if r.Timestamp.Before(base.Add(30 * time.Minute)) {
			t.Fatalf("re-read a record from %v, before the reset time", r.Timestamp)
		}
	}
}

// ctxWithin is ctx bounded by d more.
func ctxWithin(ctx context.Context, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(ctx, d)
	time.AfterFunc(d, cancel)
	return c
}

// hasRow reports whether out has a line whose fields are row's.
func hasRow(out, row string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(l), " ") == row {
			return true
		}
	}
	return false
}
