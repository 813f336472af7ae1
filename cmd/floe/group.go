package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

func init() {
	commands["group"] = runGroup
}

const groupUsage = `Usage:
  floe group list     [--bootstrap host:port] [client flags]
  floe group describe --group G [client flags]
  floe group reset-offsets --group G (--topic T[:P,...] ... | --all-topics)
        (--to-earliest | --to-latest | --to-datetime 2026-11-28T00:00:00Z | --by-duration 1h |
         --to-offset N | --shift-by N) [--dry-run] [client flags]

Consumer groups through the Kafka admin API, as kafka-consumer-groups.sh has
them: list; describe shows each partition's committed offset, end offset, lag
and owner; reset-offsets moves a group's committed offsets (refused while the
group has members, as Kafka refuses it), printing the plan, and with
--dry-run only the plan. Share groups (KIP-932), as kafka-share-groups.sh has
them: describe shows each share-partition's start offset, end offset and lag
and the members with their assignments; reset-offsets moves the start
offsets (AlterShareGroupOffsets). Client flags: --bootstrap, --sasl-mechanism,
--sasl-username, --sasl-password, --sasl-token, --tls, --tls-ca, --tls-cert,
--tls-key (see 'floe group list --help').
`

// runGroup is `floe group list|describe|reset-offsets`.
func runGroup(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Print(groupUsage)
		return nil
	}
	verb, rest := args[0], args[1:]
	fs := newFlagSet("group "+verb, "Consumer groups through the Kafka admin API.")
	var cf adminClientFlags
	cf.register(fs)
	group := fs.String("group", "", "the consumer `group`")
	var topics []string
	fs.Func("topic", "`topic` or topic:p1,p2 to reset (repeatable)", func(s string) error { topics = append(topics, s); return nil })
	allTopics := fs.Bool("all-topics", false, "reset every topic the group has committed offsets for")
	toEarliest := fs.Bool("to-earliest", false, "reset to each partition's log start")
	toLatest := fs.Bool("to-latest", false, "reset to each partition's end")
	toDatetime := fs.String("to-datetime", "", "reset to the first offset at or after this RFC 3339 `time`")
	byDuration := fs.Duration("by-duration", 0, "reset to the first offset at or after this long ago")
	toOffset := fs.Int64("to-offset", -1, "reset to this `offset` (clamped to the log's range)")
	shiftBy := fs.Int64("shift-by", 0, "move each committed offset by `n` (clamped to the log's range)")
	dryRun := fs.Bool("dry-run", false, "print the new offsets without committing them")
	if err := parse(fs, rest); err != nil {
		return err
	}
	adm, closeClient, err := cf.client()
	if err != nil {
		return err
	}
	defer closeClient()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tw := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', 0)
	defer tw.Flush()

	switch verb {
	case "list":
		gs, err := adm.ListGroups(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL TYPE")
		for _, g := range gs.Sorted() {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", g.Group, g.State, g.ProtocolType)
		}
		return nil
	case "describe":
		if *group == "" {
			return errors.New("--group is required")
		}
		share, err := describeShareGroup(ctx, adm, *group)
		if err != nil {
			return err
		}
		if share != nil {
			return printShareGroup(ctx, tw, adm, *share)
		}
		lags, err := adm.Lag(ctx, *group)
		if err != nil {
			return err
		}
		l := lags[*group]
		if err := l.Error(); err != nil {
			return err
		}
		fmt.Fprintf(tw, "GROUP %s  STATE %s  MEMBERS %d  TOTAL LAG %d\n\n", l.Group, l.State, len(l.Members), l.Lag.Total())
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\tHOST\tCLIENT-ID")
		for _, m := range l.Lag.Sorted() {
			member, host, client := "-", "-", "-"
			if m.Member != nil {
				member, host, client = m.Member.MemberID, m.Member.ClientHost, m.Member.ClientID
			}
			cur, lag := "-", "-"
			if m.Commit.At >= 0 {
				cur = strconv.FormatInt(m.Commit.At, 10)
			}
			if m.Lag >= 0 {
				lag = strconv.FormatInt(m.Lag, 10)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\n", m.Topic, m.Partition, cur, m.End.Offset, lag, member, host, client)
		}
		return nil
	case "reset-offsets":
		if *group == "" {
			return errors.New("--group is required")
		}
		share, err := describeShareGroup(ctx, adm, *group)
		if err != nil {
			return err
		}
		var current kadm.Offsets
		if share != nil {
			current, err = shareGroupPositions(ctx, adm, *share)
		} else {
			current, err = consumerGroupPositions(ctx, adm, *group)
		}
		if err != nil {
			return err
		}
		plan, err := resetPlan(ctx, adm, *group, current, topics, *allTopics, resetTarget{
			earliest: *toEarliest, latest: *toLatest, datetime: *toDatetime, duration: *byDuration,
			offset: *toOffset, shift: *shiftBy, shiftSet: isSet(fs, "shift-by"), offsetSet: isSet(fs, "to-offset"),
		})
		if err != nil {
			return err
		}
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tNEW-OFFSET")
		plan.Each(func(o kadm.Offset) { fmt.Fprintf(tw, "%s\t%d\t%d\n", o.Topic, o.Partition, o.At) })
		if *dryRun {
			fmt.Fprintln(tw, "\n(dry run: nothing committed)")
			return nil
		}
		if share != nil {
			resps, err := adm.AlterShareGroupOffsets(ctx, *group, plan)
			if err != nil {
				return err
			}
			if err := resps.Error(); err != nil {
				return fmt.Errorf("alter share group offsets: %w (a share group with members refuses it: stop its consumers first)", err)
			}
			return nil
		}
		resps, err := adm.CommitOffsets(ctx, *group, plan)
		if err != nil {
			return err
		}
		if err := resps.Error(); err != nil {
			return fmt.Errorf("commit: %w (a group with members refuses offsets from outside it: stop its consumers first)", err)
		}
		return nil
	}
	return fmt.Errorf("floe group: unknown verb %q\n\n%s", verb, groupUsage)
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// resetTarget is where reset-offsets moves each partition: exactly one of
// its choices is set.
type resetTarget struct {
	earliest, latest    bool
	datetime            string
	duration            time.Duration
	offset, shift       int64
	offsetSet, shiftSet bool
}

// describeShareGroup returns the share group named group, or nil when it is
// no share group (a consumer group, or none yet).
func describeShareGroup(ctx context.Context, adm *kadm.Client, group string) (*kadm.DescribedShareGroup, error) {
	ds, err := adm.DescribeShareGroups(ctx, group)
	if err != nil {
		return nil, err
	}
	d, ok := ds[group]
	if !ok || d.Err != nil || d.GroupState == "Dead" {
		return nil, nil // GROUP_ID_NOT_FOUND: not a share group
	}
	return &d, nil
}

// printShareGroup prints what kafka-share-groups.sh --describe and
// --members print: each share-partition's start offset, end offset and
// lag, then the members and what each is assigned.
func printShareGroup(ctx context.Context, tw *tabwriter.Writer, adm *kadm.Client, g kadm.DescribedShareGroup) error {
	offs, err := adm.DescribeShareGroupOffsets(ctx, g.GroupID)
	if err != nil {
		return err
	}
	o := offs[g.GroupID]
	if o.Err != nil {
		return o.Err
	}
	topics := g.AssignedPartitions().Topics()
	o.Offsets.Each(func(so kadm.ShareOffset) {
		if !slices.Contains(topics, so.Topic) {
			topics = append(topics, so.Topic)
		}
	})
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil && len(topics) > 0 {
		return err
	}
	fmt.Fprintf(tw, "GROUP %s  TYPE share  STATE %s  MEMBERS %d\n\n", g.GroupID, g.GroupState, len(g.Members))
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tSTART-OFFSET\tLOG-END-OFFSET\tLAG")
	for _, so := range o.Offsets.Sorted() {
		start, end, lag := "-", "-", "-"
		if so.Err == nil && so.StartOffset >= 0 {
			start = strconv.FormatInt(so.StartOffset, 10)
		}
		if e, ok := ends.Lookup(so.Topic, so.Partition); ok && e.Err == nil {
			end = strconv.FormatInt(e.Offset, 10)
		}
		if so.Lag >= 0 {
			lag = strconv.FormatInt(so.Lag, 10)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", so.Topic, so.Partition, start, end, lag)
	}
	fmt.Fprintln(tw, "\nCONSUMER-ID\tHOST\tCLIENT-ID\tASSIGNMENT")
	for _, m := range g.Members {
		var parts []string
		for _, tp := range m.Assignment.Sorted() {
			for _, p := range tp.Partitions {
				parts = append(parts, fmt.Sprintf("%s:%d", tp.Topic, p))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.MemberID, m.ClientHost, m.ClientID, strings.Join(parts, ","))
	}
	return nil
}

// consumerGroupPositions returns a consumer group's committed offsets,
// after checking that the group has no members (as
// kafka-consumer-groups.sh does: a live member would commit over a reset).
func consumerGroupPositions(ctx context.Context, adm *kadm.Client, group string) (kadm.Offsets, error) {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, err
	}
	if d, ok := described[group]; ok {
		if d.Err != nil {
			return nil, d.Err
		}
		if len(d.Members) > 0 || (d.State != "Empty" && d.State != "Dead") {
			return nil, fmt.Errorf("group %s is %s with %d member(s): offsets can only be reset while it has none", group, d.State, len(d.Members))
		}
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	if err := committed.Error(); err != nil {
		return nil, err
	}
	return committed.Offsets(), nil
}

// shareGroupPositions returns a share group's share-partition start
// offsets, after checking that it has no members (kafka-share-groups.sh
// refuses a reset then, and so does AlterShareGroupOffsets).
func shareGroupPositions(ctx context.Context, adm *kadm.Client, g kadm.DescribedShareGroup) (kadm.Offsets, error) {
	if len(g.Members) > 0 {
		return nil, fmt.Errorf("share group %s is %s with %d member(s): offsets can only be reset while it has none", g.GroupID, g.GroupState, len(g.Members))
	}
	offs, err := adm.DescribeShareGroupOffsets(ctx, g.GroupID)
	if err != nil {
		return nil, err
	}
	o := offs[g.GroupID]
	if o.Err != nil {
		return nil, o.Err
	}
	current := kadm.Offsets{}
	o.Offsets.Each(func(so kadm.ShareOffset) {
		if so.Err == nil && so.StartOffset >= 0 {
			current.Add(kadm.Offset{Topic: so.Topic, Partition: so.Partition, At: so.StartOffset, LeaderEpoch: -1})
		}
	})
	return current, nil
}

// resetPlan computes the new offsets of a reset from the group's current
// ones (committed offsets, or share-partition start offsets).
func resetPlan(ctx context.Context, adm *kadm.Client, group string, current kadm.Offsets, topicArgs []string, all bool, to resetTarget) (kadm.Offsets, error) {
	n := 0
	for _, b := range []bool{to.earliest, to.latest, to.datetime != "", to.duration > 0, to.offsetSet, to.shiftSet} {
		if b {
			n++
		}
	}
	if n != 1 {
		return nil, errors.New("give exactly one of --to-earliest, --to-latest, --to-datetime, --by-duration, --to-offset, --shift-by")
	}
	if (len(topicArgs) > 0) == all {
		return nil, errors.New("give --topic (one or more) or --all-topics")
	}
	// The partitions to reset.
	want := map[string][]int32{} // nil: every partition
	if all {
		current.Each(func(o kadm.Offset) { want[o.Topic] = nil })
	}
	for _, arg := range topicArgs {
		topic, parts, hasParts := strings.Cut(arg, ":")
		if !hasParts {
			want[topic] = nil
			continue
		}
		for _, p := range strings.Split(parts, ",") {
			v, err := strconv.ParseInt(p, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("--topic %s: partition %q", arg, p)
			}
			want[topic] = append(want[topic], int32(v))
		}
	}
	names := make([]string, 0, len(want))
	for t := range want {
		names = append(names, t)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("group %s has no committed offsets", group)
	}
	starts, err := adm.ListStartOffsets(ctx, names...)
	if err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err != nil {
		return nil, err
	}
	if err := ends.Error(); err != nil {
		return nil, err
	}
	var at kadm.ListedOffsets
	if to.datetime != "" || to.duration > 0 {
		ts := time.Now().Add(-to.duration)
		if to.datetime != "" {
			if ts, err = time.Parse(time.RFC3339, to.datetime); err != nil {
				return nil, fmt.Errorf("--to-datetime: %w", err)
			}
		}
		if at, err = adm.ListOffsetsAfterMilli(ctx, ts.UnixMilli(), names...); err != nil {
			return nil, err
		}
	}
	plan := kadm.Offsets{}
	var perr error
	ends.Each(func(e kadm.ListedOffset) {
		if ps := want[e.Topic]; ps != nil && !slices.Contains(ps, e.Partition) {
			return
		}
		start, _ := starts.Lookup(e.Topic, e.Partition)
		clamp := func(o int64) int64 { return max(start.Offset, min(o, e.Offset)) }
		var o int64
		switch {
		case to.earliest:
			o = start.Offset
		case to.latest:
			o = e.Offset
		case at != nil:
			l, ok := at.Lookup(e.Topic, e.Partition)
			if !ok || l.Err != nil || l.Offset < 0 {
				o = e.Offset // nothing at or after the time: the end, as Kafka
			} else {
				o = clamp(l.Offset)
			}
		case to.offsetSet:
			o = clamp(to.offset)
		case to.shiftSet:
			c, ok := current.Lookup(e.Topic, e.Partition)
			if !ok {
				perr = fmt.Errorf("%s/%d has no committed offset to shift", e.Topic, e.Partition)
				return
			}
			o = clamp(c.At + to.shift)
		}
		plan.Add(kadm.Offset{Topic: e.Topic, Partition: e.Partition, At: o, LeaderEpoch: -1})
	})
	if perr != nil {
		return nil, perr
	}
	for t, ps := range want {
		for _, p := range ps {
			if _, ok := plan.Lookup(t, p); !ok {
				return nil, fmt.Errorf("%s/%d does not exist", t, p)
			}
		}
	}
	return plan, nil
}
