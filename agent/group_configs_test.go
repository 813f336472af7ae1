package agent

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shortGroupSessions lets groups set session timeouts down to 1 s, so that
// tests see one expire.
func shortGroupSessions(c *Config) { c.ConsumerGroupMinSessionTimeout = time.Second }

func groupResource(name string, cs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) incAlter {
	return incAlter{typ: kmsg.ConfigResourceTypeGroupConfig, name: name, configs: cs}
}

func storedGroupConfigs(t *testing.T, ta *testAgent, group string) map[string]string {
	t.Helper()
	c, err := ta.store.GroupConfigs(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// describeGroup is DescribeConfigs of one group, by config name.
func describeGroup(t *testing.T, cl *kgo.Client, group string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	r := describeConfigs(t, cl, 4, true, true, kmsg.ConfigResourceTypeGroupConfig, group)
	wantCode(t, "describe group "+group, r.ErrorCode, nil)
	return configsByName(r)
}

// TestGroupConfigsAlter: GROUP resources were refused (INVALID_CONFIG
// "floe does not support per-group configs"). SET and DELETE of Kafka's
// two consumer group configs are stored now; each refusal has the code and
// words of Kafka's GroupConfig checks, which look at the group's configs
// after the change with the agent's defaults filling in, and stores
// nothing; validate-only stores nothing; the legacy AlterConfigs replaces
// the group's configs.
func TestGroupConfigsAlter(t *testing.T) {
	ta := newParallelAgent(t, shortGroupSessions) // sessions 1 s–60 s, heartbeats 1 s–15 s
	cl := ta.client(t)
	const g = "cfg-group"

	res := incrementalAlter(t, cl, true, groupResource(g, setOp("consumer.session.timeout.ms", "50000")))
	wantCode(t, "validate-only SET", res[0].ErrorCode, nil)
	if got := storedGroupConfigs(t, ta, g); len(got) != 0 {
		t.Fatalf("validate-only stored %v", got)
	}
	res = incrementalAlter(t, cl, false, groupResource(g, setOp("consumer.session.timeout.ms", "50000"),
		setOp("consumer.heartbeat.interval.ms", " 6000 ")))
	wantCode(t, "SET both", res[0].ErrorCode, nil)
	want := map[string]string{"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": " 6000 "}
	if got := storedGroupConfigs(t, ta, g); !maps.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}

	del := func(name string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return opOf(kmsg.IncrementalAlterConfigOpDelete, name, nil)
	}
	for _, tc := range []struct {
		what string
		r    incAlter
		code *kerr.Error
		msg  string
	}{
		{"unknown name", groupResource(g, setOp("consumer.session.timeout", "50000")), kerr.InvalidConfig,
			"Unknown group config name: consumer.session.timeout"},
		{"share lock too short", groupResource(g, setOp("share.record.lock.duration.ms", "500")), kerr.InvalidConfig,
			"Invalid value 500 for configuration share.record.lock.duration.ms"},
		{"share reset", groupResource(g, setOp("share.auto.offset.reset", "by_duration:yesterday")), kerr.InvalidConfig,
			"Invalid value by_duration:yesterday for configuration share.auto.offset.reset"},
		{"share isolation", groupResource(g, setOp("share.isolation.level", "serializable")), kerr.InvalidConfig,
			"Invalid value serializable for configuration share.isolation.level"},
		{"share delivery limit", groupResource(g, setOp("group.share.delivery.count.limit", "11")), kerr.InvalidConfig,
			"Invalid value 11 for configuration group.share.delivery.count.limit"},
		{"share session under heartbeat", groupResource(g, setOp("share.session.timeout.ms", "1")), kerr.InvalidConfig,
			"share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"},
		{"topic key", groupResource(g, setOp("retention.ms", "1")), kerr.InvalidConfig, "Unknown group config name: retention.ms"},
		{"not a number", groupResource(g, setOp("consumer.session.timeout.ms", "soon")), kerr.InvalidConfig,
			"Invalid value soon for configuration consumer.session.timeout.ms: Not a number of type INT"},
		{"zero", groupResource(g, setOp("consumer.heartbeat.interval.ms", "0")), kerr.InvalidConfig,
			"Invalid value 0 for configuration consumer.heartbeat.interval.ms: Value must be at least 1"},
		{"below the heartbeat minimum", groupResource(g, setOp("consumer.heartbeat.interval.ms", "999")), kerr.InvalidConfig,
			"consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{"above the heartbeat maximum", groupResource(g, setOp("consumer.heartbeat.interval.ms", "15001")), kerr.InvalidConfig,
			"consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{"below the session minimum", groupResource(g, setOp("consumer.session.timeout.ms", "999")), kerr.InvalidConfig,
			"consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{"above the session maximum", groupResource(g, setOp("consumer.session.timeout.ms", "60001")), kerr.InvalidConfig,
			"consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"},
		{"session not above the stored heartbeat", groupResource(g, setOp("consumer.session.timeout.ms", "6000")), kerr.InvalidConfig,
			"consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"},
		{"session not above the default heartbeat", groupResource("fresh", setOp("consumer.session.timeout.ms", "1000")), kerr.InvalidConfig,
			"consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"},
		{"APPEND", groupResource(g, opOf(kmsg.IncrementalAlterConfigOpAppend, "consumer.session.timeout.ms", kmsg.StringPtr("1"))),
			kerr.InvalidConfig, "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."},
		{"SUBTRACT", groupResource(g, opOf(kmsg.IncrementalAlterConfigOpSubtract, "share.auto.offset.reset", kmsg.StringPtr("x"))),
			kerr.InvalidConfig, "Can't SUBTRACT to key share.auto.offset.reset because its type is not LIST."},
		{"null SET", groupResource(g, opOf(kmsg.IncrementalAlterConfigOpSet, "consumer.session.timeout.ms", nil)), kerr.InvalidRequest,
			"Null value not supported for : consumer.session.timeout.ms"},
		{"name twice", groupResource(g, setOp("consumer.session.timeout.ms", "50000"), setOp("consumer.session.timeout.ms", "51000")),
			kerr.InvalidRequest, "Error due to duplicate config keys"},
		{"empty group", groupResource("", setOp("consumer.session.timeout.ms", "50000")), kerr.InvalidRequest,
			"Default group resources are not allowed."},
	} {
		for _, validateOnly := range []bool{false, true} {
			res := incrementalAlter(t, cl, validateOnly, tc.r)
			wantCode(t, tc.what, res[0].ErrorCode, tc.code)
			if !strings.Contains(deref(res[0].ErrorMessage), tc.msg) {
				t.Fatalf("%s: message %q, want it to contain %q", tc.what, deref(res[0].ErrorMessage), tc.msg)
			}
			if got := storedGroupConfigs(t, ta, g); !maps.Equal(got, want) {
				t.Fatalf("%s: stored %v after a refusal, want %v", tc.what, got, want)
			}
		}
	}
	if got := storedGroupConfigs(t, ta, "fresh"); len(got) != 0 {
		t.Fatalf("a refused group stored %v", got)
	}

	// DELETE reverts a config to the agent's default; deleting one that is
	// not set does nothing, as in Kafka.
	res = incrementalAlter(t, cl, false, groupResource(g, del("consumer.heartbeat.interval.ms"), del("consumer.nothing")))
	wantCode(t, "DELETE", res[0].ErrorCode, nil)
	want = map[string]string{"consumer.session.timeout.ms": "50000"}
	if got := storedGroupConfigs(t, ta, g); !maps.Equal(got, want) {
		t.Fatalf("stored %v after DELETE, want %v", got, want)
	}

	// The legacy AlterConfigs makes the configs given the group's whole set.
	legacy := func(kv ...string) kmsg.AlterConfigsResponseResource {
		t.Helper()
		req := kmsg.NewPtrAlterConfigsRequest()
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, g
		for i := 0; i < len(kv); i += 2 {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0]
	}
	wantCode(t, "legacy SET", legacy("consumer.heartbeat.interval.ms", "2000").ErrorCode, nil)
	if got, want := storedGroupConfigs(t, ta, g), map[string]string{"consumer.heartbeat.interval.ms": "2000"}; !maps.Equal(got, want) {
		t.Fatalf("stored %v after the legacy AlterConfigs, want %v", got, want)
	}
	r := legacy("share.isolation.level", "serializable")
	wantCode(t, "legacy share key", r.ErrorCode, kerr.InvalidConfig)
	wantCode(t, "legacy clear", legacy().ErrorCode, nil)
	if got := storedGroupConfigs(t, ta, g); len(got) != 0 {
		t.Fatalf("stored %v after the legacy AlterConfigs cleared them", got)
	}
}

// TestGroupConfigsDescribe: DescribeConfigs of a group reported the agent's
// values, read-only, whatever the group set. It reports what is in effect:
// the group's own value with source GROUP_CONFIG (and itself as first
// synonym), else the agent's default with DEFAULT_CONFIG; the broker lists
// the bounds group configs are checked against.
func TestGroupConfigsDescribe(t *testing.T) {
	ta := newParallelAgent(t)
	cl := ta.client(t)
	session, heartbeat := millis(ta.coord.ccfg.SessionTimeout), millis(ta.coord.ccfg.HeartbeatInterval)
	res := incrementalAlter(t, cl, false, groupResource("described", setOp("consumer.session.timeout.ms", "50000")))
	wantCode(t, "SET", res[0].ErrorCode, nil)

	for _, tc := range []struct {
		group            string
		session          string
		sessionSource    kmsg.ConfigSource
		sessionSynonyms  []synonym
		heartbeatSynonym synonym
	}{
		{"described", "50000", kmsg.ConfigSourceGroupConfig,
			[]synonym{{"consumer.session.timeout.ms", "50000", kmsg.ConfigSourceGroupConfig},
				{"group.consumer.session.timeout.ms", session, kmsg.ConfigSourceDefaultConfig}},
			synonym{"group.consumer.heartbeat.interval.ms", heartbeat, kmsg.ConfigSourceDefaultConfig}},
		{"unconfigured", session, kmsg.ConfigSourceDefaultConfig,
			[]synonym{{"group.consumer.session.timeout.ms", session, kmsg.ConfigSourceDefaultConfig}},
			synonym{"group.consumer.heartbeat.interval.ms", heartbeat, kmsg.ConfigSourceDefaultConfig}},
	} {
		cs := describeGroup(t, cl, tc.group)
		if len(cs) != 8 {
			t.Fatalf("%s: %d configs, want 8 (2 consumer, 6 share): %+v", tc.group, len(cs), cs)
		}
		for name, def := range map[string]string{"share.auto.offset.reset": "latest", "share.isolation.level": "read_uncommitted",
			"share.record.lock.duration.ms": "30000", "group.share.delivery.count.limit": "5",
			"share.session.timeout.ms": session, "share.heartbeat.interval.ms": heartbeat} {
			if c := cs[name]; deref(c.Value) != def || c.Source != kmsg.ConfigSourceDefaultConfig || c.ReadOnly {
				t.Errorf("%s: %s = %+v, want the default %s", tc.group, name, c, def)
			}
		}
		s, h := cs["consumer.session.timeout.ms"], cs["consumer.heartbeat.interval.ms"]
		if deref(s.Value) != tc.session || s.Source != tc.sessionSource || s.ReadOnly || s.ConfigType != kmsg.ConfigTypeInt || s.Documentation == nil {
			t.Errorf("%s: session timeout %+v, want %s from %v, writable", tc.group, s, tc.session, tc.sessionSource)
		}
		if deref(h.Value) != heartbeat || h.Source != kmsg.ConfigSourceDefaultConfig || h.ReadOnly {
			t.Errorf("%s: heartbeat interval %+v, want the default %s", tc.group, h, heartbeat)
		}
		sameSynonyms(t, tc.group+" session timeout", synonymsOf(s), tc.sessionSynonyms)
		sameSynonyms(t, tc.group+" heartbeat interval", synonymsOf(h), []synonym{tc.heartbeatSynonym})
	}
	wantCode(t, "empty group", describeConfigs(t, cl, 4, false, false, kmsg.ConfigResourceTypeGroupConfig, "").ErrorCode, kerr.InvalidRequest)

	// The bounds, widened to take in floe dev's 1 s heartbeat interval.
	bs := configsByName(describeConfigs(t, cl, 4, false, false, kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(ta.self.NodeID))))
	for name, want := range map[string]string{
		"group.consumer.min.session.timeout.ms":    "45000",
		"group.consumer.max.session.timeout.ms":    "60000",
		"group.consumer.min.heartbeat.interval.ms": heartbeat,
		"group.consumer.max.heartbeat.interval.ms": "15000",
	} {
		if c, ok := bs[name]; !ok || deref(c.Value) != want || !c.ReadOnly {
			t.Errorf("broker %s: %+v (present %v), want %s, read-only", name, c, ok, want)
		}
	}
}

// cgHeartbeat sends one KIP-848 heartbeat: a join (epoch 0, subscribing to
// topic) or a plain one.
func cgHeartbeat(t *testing.T, ctx context.Context, cl *kgo.Client, group, member string, epoch int32, topic string) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = group, member, epoch, 30_000
	if epoch == 0 {
		req.SubscribedTopicNames, req.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("heartbeat of %s in %s: %v", member, group, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp
}

// cgMembers is how many members ConsumerGroupDescribe lists in group.
func cgMembers(t *testing.T, ctx context.Context, cl *kgo.Client, group string) int {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("describe %s: %+v", group, resp.Groups)
	}
	return len(resp.Groups[0].Members)
}

// waitMemberGone waits until group has no members, at most limit after
// since, and returns how long after since that was.
func waitMemberGone(t *testing.T, ctx context.Context, cl *kgo.Client, group string, since time.Time, limit time.Duration) time.Duration {
	t.Helper()
	for cgMembers(t, ctx, cl, group) != 0 {
		if time.Since(since) > limit {
			t.Fatalf("%s: member still there %v after its last heartbeat", group, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(since)
}

// TestGroupSessionTimeoutConfigTakesEffect: a KIP-848 group's
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms, set
// through IncrementalAlterConfigs, are what its coordinator applies
// instead of the agent's 45 s and 1 s: the member is told the group's
// interval and removed once the group's session passes without a
// heartbeat. Set before the member joins, or after (applied from its next
// heartbeat); a group without configs keeps the agent's session.
func TestGroupSessionTimeoutConfigTakesEffect(t *testing.T) {
	ta := newParallelAgent(t, shortGroupSessions)
	cl := ta.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ta.createTopic(t, cl, "sessions", 2)
	short := func(group string) {
		t.Helper()
		res := incrementalAlter(t, cl, false, groupResource(group, setOp("consumer.session.timeout.ms", "2000"),
			setOp("consumer.heartbeat.interval.ms", "1500")))
		wantCode(t, "SET "+group, res[0].ErrorCode, nil)
	}

	last := map[string]time.Time{}
	short("before")
	if r := cgHeartbeat(t, ctx, cl, "before", "m-before", 0, "sessions"); r.HeartbeatIntervalMillis != 1500 {
		t.Errorf("join: told to heartbeat every %d ms, want the group's 1500", r.HeartbeatIntervalMillis)
	}
	last["before"] = time.Now()
	r := cgHeartbeat(t, ctx, cl, "after", "m-after", 0, "sessions")
	if r.HeartbeatIntervalMillis != 1000 {
		t.Errorf("join of an unconfigured group: told %d ms, want the agent's 1000", r.HeartbeatIntervalMillis)
	}
	cgHeartbeat(t, ctx, cl, "default", "m-default", 0, "sessions")

	short("after")
	r = cgHeartbeat(t, ctx, cl, "after", "m-after", r.MemberEpoch, "")
	if r.HeartbeatIntervalMillis != 1500 {
		t.Errorf("heartbeat after the change: told %d ms, want the group's 1500", r.HeartbeatIntervalMillis)
	}
	last["after"] = time.Now()
	for _, g := range []string{"before", "after"} {
		if d := waitMemberGone(t, ctx, cl, g, last[g], 10*time.Second); d < 1900*time.Millisecond {
			t.Errorf("%s: member removed %v after its last heartbeat, before its 2 s session", g, d)
		}
	}
	if n := cgMembers(t, ctx, cl, "default"); n != 1 {
		t.Errorf("a group without configs lost its member within the agent's 45 s session: %d members", n)
	}
}

// TestGroupConfigsAcrossAgents: a group's configs changed through an agent
// that does not coordinate it reach its coordinator within TopicCacheTTL,
// and a coordinator taking over a KIP-848 group restores its members'
// sessions with the group's session timeout, not the agent's.
func TestGroupConfigsAcrossAgents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Kafka's defaults (45 s sessions, 5 s heartbeats), and groups may set
	// sessions from 1 s and heartbeats from 500 ms.
	agents := twoAgents(t, ctx, shortGroupSessions, func(c *Config) { c.ConsumerGroupMinHeartbeatInterval = 500 * time.Millisecond })
	const g = "spread"
	owner, other := agents[0], agents[1]
	if owner.coord.ownerOf(g).ID != owner.id {
		owner, other = other, owner
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(owner.KafkaAddr(), other.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	toOther, err := kgo.NewClient(kgo.SeedBrokers(other.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer toOther.Close()
	if _, err := owner.store.CreateTopic(ctx, "spread-topic", 1, nil); err != nil {
		t.Fatal(err)
	}
	r := cgHeartbeat(t, ctx, cl, g, "m1", 0, "spread-topic")
	if r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: told %d ms, want the agent's 5000", r.HeartbeatIntervalMillis)
	}
	alter := func(cs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) {
		t.Helper()
		res := incrementalAlter(t, toOther, false, groupResource(g, cs...))
		wantCode(t, "alter through the other agent", res[0].ErrorCode, nil)
	}
	alter(setOp("consumer.heartbeat.interval.ms", "1500"), setOp("consumer.session.timeout.ms", "2000"))
	start := time.Now()
	for {
		r = cgHeartbeat(t, ctx, cl, g, "m1", r.MemberEpoch, "")
		if r.HeartbeatIntervalMillis == 1500 {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("the coordinator still tells %d ms %v after the change", r.HeartbeatIntervalMillis, time.Since(start))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if d := time.Since(start); d > owner.cfg.TopicCacheTTL+time.Second {
		t.Errorf("the change took %v to reach the coordinator, TopicCacheTTL is %v", d, owner.cfg.TopicCacheTTL)
	}

	// The coordinator leaves; the other agent takes the group over and
	// gives the member the group's 2 s session, not the agent's 45 s.
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	if err := owner.Close(cctx); err != nil {
		t.Fatal(err)
	}
	for other.coord.ownerOf(g).ID != other.id {
		if ctx.Err() != nil {
			t.Fatal("the other agent never took the group over")
		}
		time.Sleep(50 * time.Millisecond)
	}
	restored := time.Now()
	if n := cgMembers(t, ctx, toOther, g); n != 1 {
		t.Fatalf("restored group has %d members, want 1", n)
	}
	if d := waitMemberGone(t, ctx, toOther, g, restored, 10*time.Second); d < 1500*time.Millisecond {
		t.Errorf("restored member removed %v after the take-over, before its 2 s session", d)
	}
}
