package group

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"floe/internal/scripttest"
)

// consumerScript drives one KIP-848 ConsumerGroup over a set of topics.
// Member ids the group makes are m1, m2, ...; assignments are written
// "a:0,1;b:0" ("-" for none) both ways.
type consumerScript struct {
	g      *ConsumerGroup
	now    time.Time
	topics map[string]int32
	next   int
}

func newConsumerScript(t *testing.T) func(*testing.T, *datadriven.TestData) string {
	s := &consumerScript{now: scriptEpoch, topics: map[string]int32{}}
	s.g = NewConsumerGroup("g", ConsumerConfig{SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second,
		NewMemberID: func() string { s.next++; return fmt.Sprint("m", s.next) }})
	return s.run
}

func fmtAssignment(a Assignment) string {
	var parts []string
	topics := make([]string, 0, len(a))
	for t, ps := range a {
		if len(ps) > 0 {
			topics = append(topics, t)
		}
	}
	slices.Sort(topics)
	for _, t := range topics {
		ps := make([]string, len(a[t]))
		for i, p := range a[t] {
			ps[i] = fmt.Sprint(p)
		}
		parts = append(parts, t+":"+strings.Join(ps, ","))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ";")
}

func parseAssignment(t *testing.T, d *datadriven.TestData, s string) Assignment {
	a := Assignment{}
	if s == "-" {
		return a
	}
	for _, part := range strings.Split(s, ";") {
		topic, ps, ok := strings.Cut(part, ":")
		if !ok {
			d.Fatalf(t, "assignment %q: want topic:p,p;topic:p", s)
		}
		for _, p := range strings.Split(ps, ",") {
			n, err := strconv.ParseInt(p, 10, 32)
			if err != nil {
				d.Fatalf(t, "assignment %q: %v", s, err)
			}
			a.add(topic, int32(n))
		}
	}
	return a
}

// run runs a command, then checks that no partition has two owners
// (assigned to, or still being revoked from, two members).
func (s *consumerScript) run(t *testing.T, d *datadriven.TestData) string {
	out := s.command(t, d)
	owner := map[string]string{}
	for _, id := range s.g.memberIDs() {
		m := s.g.members[id]
		for _, a := range []Assignment{m.Assigned, m.Revoking} {
			for tp, ps := range a {
				for _, p := range ps {
					k := fmt.Sprintf("%s/%d", tp, p)
					if o, ok := owner[k]; ok {
						d.Fatalf(t, "%s owned by %s and %s", k, o, id)
					}
					owner[k] = id
				}
			}
		}
	}
	return out
}

func (s *consumerScript) command(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "topics":
		// topics a=4 b=2: the existing topics and their partition counts
		s.topics = map[string]int32{}
		for _, a := range d.CmdArgs {
			var n int64
			d.ScanArgs(t, a.Key, &n)
			s.topics[a.Key] = int32(n)
		}
		return "ok"
	case "config":
		scripttest.Known(t, d, "session", "heartbeat")
		cfg := s.g.Config()
		cfg.SessionTimeout = scripttest.Dur(t, d, "session", cfg.SessionTimeout)
		cfg.HeartbeatInterval = scripttest.Dur(t, d, "heartbeat", cfg.HeartbeatInterval)
		s.g.Configure(cfg)
		return "ok"
	case "heartbeat":
		// heartbeat [member=m1] epoch=0 [instance=i1] [subscribe=(a, b)] [regex=a.*]
		//   [assignor=range] [owned=a:0,1] [rebalance=30s]
		scripttest.Known(t, d, "member", "epoch", "instance", "subscribe", "regex", "assignor", "owned", "rebalance")
		r := HeartbeatRequest{MemberID: scripttest.Str(t, d, "member", ""), MemberEpoch: int32(scripttest.Int(t, d, "epoch", 0)),
			InstanceID: scripttest.Str(t, d, "instance", ""), Assignor: scripttest.Str(t, d, "assignor", ""),
			RebalanceTimeout: scripttest.Dur(t, d, "rebalance", -1)}
		if r.MemberEpoch == 0 && r.RebalanceTimeout < 0 {
			r.RebalanceTimeout = 30 * time.Second // a joining member sends its timeout
		}
		if subs, ok := scripttest.List(d, "subscribe"); ok {
			r.Subscribed = subs
		}
		if d.HasArg("regex") {
			re := scripttest.Str(t, d, "regex", "")
			r.Regex = &re
		}
		if d.HasArg("owned") {
			r.Owned = parseAssignment(t, d, scripttest.Str(t, d, "owned", ""))
		}
		res := s.g.Heartbeat(s.now, r, s.topics)
		if res.Err != 0 {
			return errName(res.Err)
		}
		out := fmt.Sprintf("%s epoch=%d", res.MemberID, res.MemberEpoch)
		if res.Assignment != nil {
			out += " assignment=" + fmtAssignment(res.Assignment)
		}
		return out
	case "commit":
		scripttest.Known(t, d, "member", "epoch")
		return errName(s.g.CommitCheck(scripttest.Str(t, d, "member", ""), int32(scripttest.Int(t, d, "epoch", -1))))
	case "advance":
		s.now = advance(t, d, s.now)
		before := s.g.memberIDs()
		s.g.Tick(s.now, s.topics)
		var gone []string
		for _, id := range before {
			if _, ok := s.g.members[id]; !ok {
				gone = append(gone, id)
			}
		}
		if len(gone) == 0 {
			return "ok"
		}
		return "removed " + strings.Join(gone, " ")
	case "restore":
		g, err := RestoreConsumerGroup("g", s.g.Config(), s.g.Snapshot(), s.now)
		if err != nil {
			d.Fatalf(t, "restore: %v", err)
		}
		s.g = g
		return "ok"
	case "state":
		var b strings.Builder
		desc := s.g.Describe()
		fmt.Fprintf(&b, "%s epoch=%d assignment-epoch=%d assignor=%s", desc.State, desc.Epoch, desc.AssignmentEpoch, desc.Assignor)
		var subscribed []string
		for tp := range s.g.Subscribed() {
			subscribed = append(subscribed, tp)
		}
		slices.Sort(subscribed)
		fmt.Fprintf(&b, " topics=(%s)", strings.Join(subscribed, " "))
		for _, m := range desc.Members {
			cm := s.g.members[m.MemberID]
			fmt.Fprintf(&b, "\n%s epoch=%d", m.MemberID, m.Epoch)
			if m.InstanceID != "" {
				fmt.Fprintf(&b, " instance=%s", m.InstanceID)
			}
			if len(m.Subscribed) > 0 {
				fmt.Fprintf(&b, " subscribed=(%s)", strings.Join(m.Subscribed, " "))
			}
			if m.Regex != "" {
				fmt.Fprintf(&b, " regex=%s matched=(%s)", m.Regex, strings.Join(cm.Matched, " "))
			}
			fmt.Fprintf(&b, " assigned=%s", fmtAssignment(m.Assignment))
			if cm.Revoking.size() > 0 {
				fmt.Fprintf(&b, " revoking=%s", fmtAssignment(cm.Revoking))
			}
			fmt.Fprintf(&b, " target=%s", fmtAssignment(m.Target))
		}
		return b.String()
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	}
}
