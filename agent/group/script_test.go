package group

// The interpreters of the scripts in testdata/classic and testdata/consumer
// (see docs/architecture.md, Tests): each command is one call on the
// group, and prints what the call answered.

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"floe/internal/scripttest"
)

func TestScripts(t *testing.T) {
	t.Run("classic", func(t *testing.T) { scripttest.Walk(t, "testdata/classic", newClassicScript) })
	t.Run("consumer", func(t *testing.T) { scripttest.Walk(t, "testdata/consumer", newConsumerScript) })
}

// errName is Kafka's name of an error code, OK for none.
func errName(code int16) string {
	if code == 0 {
		return "OK"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return fmt.Sprint("error ", code)
}

var scriptEpoch = time.Unix(1000, 0)

// advance parses "advance 10s".
func advance(t *testing.T, d *datadriven.TestData, now time.Time) time.Time {
	t.Helper()
	by, err := time.ParseDuration(scripttest.Arg(d))
	if err != nil {
		d.Fatalf(t, "advance: %v", err)
	}
	return now.Add(by)
}

// classicScript drives one Group. Member ids are the client id and a
// count ("m1-1", then "m1-2" for the same client's next id). Replies are
// printed under the command during which they arrive (sorted: the group
// answers in map order), so a parked JoinGroup's answer shows under the
// call that completed the rebalance; the command's own answer comes last.
type classicScript struct {
	g       *Group
	cfg     Config
	now     time.Time
	ids     map[string]int
	out     strings.Builder // this command's own answer
	own     *bool           // whether this command's join or sync was answered
	replies []string
}

func newClassicScript(t *testing.T) func(*testing.T, *datadriven.TestData) string {
	s := &classicScript{now: scriptEpoch, ids: map[string]int{}}
	s.cfg = Config{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Hour,
		NewMemberID: func(c string) string { s.ids[c]++; return fmt.Sprintf("%s-%d", c, s.ids[c]) }}
	s.g = New("g", s.cfg)
	return s.run
}

func (s *classicScript) joinReply(who string) func(JoinResult) {
	answered := false
	s.own = &answered
	return func(r JoinResult) {
		answered = true
		var out strings.Builder
		defer s.reply(&out)
		fmt.Fprintf(&out, "%s: join %s", who, errName(r.Err))
		if r.MemberID != "" {
			fmt.Fprintf(&out, " member=%s", r.MemberID)
		}
		fmt.Fprintf(&out, " gen=%d", r.Generation)
		if r.Err == 0 {
			fmt.Fprintf(&out, " protocol=%s leader=%s", r.Protocol, r.Leader)
			if r.SkipAssignment {
				out.WriteString(" skip-assignment")
			}
			if r.MemberID == r.Leader {
				var ms []string
				for _, m := range r.Members {
					ms = append(ms, m.MemberID+":"+string(m.Metadata))
				}
				fmt.Fprintf(&out, " members=(%s)", strings.Join(ms, " "))
			}
		}
	}
}

func (s *classicScript) syncReply(who string) func(SyncResult) {
	answered := false
	s.own = &answered
	return func(r SyncResult) {
		answered = true
		var out strings.Builder
		defer s.reply(&out)
		fmt.Fprintf(&out, "%s: sync %s", who, errName(r.Err))
		if r.Err == 0 {
			fmt.Fprintf(&out, " assignment=%q", r.Assignment)
		}
	}
}

// reply records an answer to a join or sync.
func (s *classicScript) reply(out *strings.Builder) {
	s.replies = append(s.replies, out.String())
}

func (s *classicScript) run(t *testing.T, d *datadriven.TestData) string {
	s.out.Reset()
	s.replies, s.own = nil, nil
	member := scripttest.Str(t, d, "member", "")
	instance := scripttest.Str(t, d, "instance", "")
	gen := int32(scripttest.Int(t, d, "gen", -1))
	switch d.Cmd {
	case "config":
		// config delay=3s min-session=6s max-session=30m max-size=2
		scripttest.Known(t, d, "delay", "min-session", "max-session", "max-size")
		s.cfg.InitialRebalanceDelay = scripttest.Dur(t, d, "delay", s.cfg.InitialRebalanceDelay)
		s.cfg.MinSessionTimeout = scripttest.Dur(t, d, "min-session", s.cfg.MinSessionTimeout)
		s.cfg.MaxSessionTimeout = scripttest.Dur(t, d, "max-session", s.cfg.MaxSessionTimeout)
		s.cfg.MaxSize = int(scripttest.Int(t, d, "max-size", int64(s.cfg.MaxSize)))
		s.g.cfg = s.cfg
		return "ok"
	case "join":
		// join client=m1 [member=m1-1] [instance=i1] [protocols=(range, roundrobin)]
		//   [type=consumer] [session=10s] [rebalance=30s] [v3]
		scripttest.Known(t, d, "client", "member", "instance", "protocols", "type", "session", "rebalance", "v3")
		client := scripttest.Str(t, d, "client", "c")
		names, ok := scripttest.List(d, "protocols")
		if !ok {
			names = []string{"range"}
		}
		var ps []Protocol
		for _, n := range names {
			ps = append(ps, Protocol{Name: n, Metadata: []byte(client + "/" + n)})
		}
		who := member
		if who == "" {
			who = client
		}
		s.g.Join(s.now, JoinRequest{MemberID: member, InstanceID: instance, ClientID: client,
			SessionTimeout:   scripttest.Dur(t, d, "session", 10*time.Second),
			RebalanceTimeout: scripttest.Dur(t, d, "rebalance", 30*time.Second),
			ProtocolType:     scripttest.Str(t, d, "type", "consumer"), Protocols: ps,
			RequireKnownMemberID: !d.HasArg("v3")}, s.joinReply(who))
	case "sync":
		// sync member=m1-1 gen=1 [instance=i1] [assign=(m1-1:A, m2-1:B)] [protocol=range] [type=consumer]
		scripttest.Known(t, d, "member", "instance", "gen", "assign", "protocol", "type")
		var assign map[string][]byte
		if as, ok := scripttest.List(d, "assign"); ok {
			assign = map[string][]byte{}
			for _, a := range as {
				id, v, _ := strings.Cut(a, ":")
				assign[id] = []byte(v)
			}
		}
		s.g.Sync(s.now, SyncRequest{MemberID: member, InstanceID: instance, Generation: gen, Assignments: assign,
			Protocol: scripttest.Str(t, d, "protocol", ""), ProtocolType: scripttest.Str(t, d, "type", "")},
			s.syncReply(member))
	case "heartbeat":
		scripttest.Known(t, d, "member", "instance", "gen")
		fmt.Fprintf(&s.out, "%s: heartbeat %s\n", member, errName(s.g.Heartbeat(s.now, member, instance, gen)))
	case "commit":
		// commit [member=m1-1 gen=1] [instance=i1]: no member is an admin commit (generation -1)
		scripttest.Known(t, d, "member", "instance", "gen")
		fmt.Fprintf(&s.out, "%s: commit %s\n", member, errName(s.g.CommitCheck(s.now, member, instance, gen)))
	case "leave":
		scripttest.Known(t, d, "member", "instance")
		who := member
		if who == "" {
			who = instance
		}
		fmt.Fprintf(&s.out, "%s: leave %s\n", who, errName(s.g.Leave(s.now, member, instance)))
	case "advance":
		s.now = advance(t, d, s.now)
		fmt.Fprintf(&s.out, "next tick in %s\n", s.tick())
	case "tick":
		fmt.Fprintf(&s.out, "next tick in %s\n", s.tick())
	case "exists":
		s.g.MarkExists()
		return "ok"
	case "abandon":
		s.g.Abandon(kerr.NotCoordinator)
	case "restore":
		// A new coordinator takes the group over from its snapshot;
		// parked requests are lost with the old one.
		g, err := Restore("g", s.cfg, s.g.Snapshot(), s.now)
		if err != nil {
			d.Fatalf(t, "restore: %v", err)
		}
		s.g = g
	case "state":
		return s.state()
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	sort.Strings(s.replies)
	lines := s.replies
	if own := strings.TrimSuffix(s.out.String(), "\n"); own != "" {
		lines = append(lines, own)
	}
	if s.own != nil && !*s.own {
		lines = append(lines, "parked")
	}
	out := strings.TrimSpace(strings.Join(lines, "\n"))
	if out == "" {
		return "ok"
	}
	return out
}

// tick runs Tick and returns the wait until the next, "never" for none.
func (s *classicScript) tick() string {
	next := s.g.Tick(s.now)
	if next.IsZero() {
		return "never"
	}
	return next.Sub(s.now).String()
}

func (s *classicScript) state() string {
	g := s.g
	var b strings.Builder
	fmt.Fprintf(&b, "%s gen=%d", g.state, g.generation)
	if g.protocolType != "" {
		fmt.Fprintf(&b, " type=%s", g.protocolType)
	}
	if g.protocol != "" {
		fmt.Fprintf(&b, " protocol=%s", g.protocol)
	}
	if g.leader != "" {
		fmt.Fprintf(&b, " leader=%s", g.leader)
	}
	for _, id := range g.memberIDs() {
		m := g.members[id]
		fmt.Fprintf(&b, "\n%s", id)
		if m.InstanceID != "" {
			fmt.Fprintf(&b, " instance=%s", m.InstanceID)
		}
		var ps []string
		for _, p := range m.Protocols {
			ps = append(ps, p.Name)
		}
		fmt.Fprintf(&b, " protocols=(%s) session=%s", strings.Join(ps, " "), m.SessionTimeout)
		if g.state == Stable {
			fmt.Fprintf(&b, " assignment=%q", m.Assignment)
		}
		if m.joinReply != nil {
			b.WriteString(" joining")
		}
		if m.syncReply != nil {
			b.WriteString(" syncing")
		}
		if m.joinReply == nil && m.syncReply == nil {
			fmt.Fprintf(&b, " expires-in=%s", m.deadline.Sub(s.now))
		}
	}
	pending := make([]string, 0, len(g.pending))
	for id := range g.pending {
		pending = append(pending, id)
	}
	sort.Strings(pending)
	for _, id := range pending {
		fmt.Fprintf(&b, "\npending %s expires-in=%s", id, g.pending[id].Sub(s.now))
	}
	return b.String()
}
