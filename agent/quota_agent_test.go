package agent

import (
	"context"
	"crypto/rand"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/internal/quota"
)

// throttleHook records the throttle times a client is told.
type throttleHook struct {
	mu sync.Mutex
	ds []time.Duration
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.mu.Lock()
	h.ds = append(h.ds, d)
	h.mu.Unlock()
}

func (h *throttleHook) got() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ds)
}

func sumDurations(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s
}

// setQuota sets one quota through kadm, as an operator would.
func setQuota(t *testing.T, cl *kgo.Client, typ string, name *string, key string, v float64) {
	t.Helper()
	res, err := kadm.NewClient(cl).AlterClientQuotas(context.Background(), []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: typ, Name: name}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: key, Value: v}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Err != nil {
		t.Fatalf("AlterClientQuotas: %+v", res)
	}
}

// produceMiB produces n MiB to topic in 64 KiB records, 1 MiB per call.
func produceMiB(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	for range n {
		recs := make([]*kgo.Record, 16)
		for i := range recs {
			// Incompressible: the quota is on the bytes sent.
			value := make([]byte, 64<<10)
			_, _ = rand.Read(value)
			recs[i] = &kgo.Record{Topic: topic, Value: value}
		}
		if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Error(err)
			return
		}
	}
}

// TestQuotaThrottlesProducer: a producer whose client id has a 1 MiB/s
// producer_byte_rate (set through kadm) is told throttle times, and gets
// no more through over the run than the quota allows (its ten seconds of
// credit, then the rate); another client id producing beside it is never
// throttled. Nothing is asserted about how long the run takes.
func TestQuotaThrottlesProducer(t *testing.T) {
	ta := newParallelAgent(t)
	admin := ta.client(t)
	ta.createTopic(t, admin, "quota", 1)
	const quota = 1 << 20
	setQuota(t, admin, quotaClientID, kmsg.StringPtr("slow"), "producer_byte_rate", quota)

	slowHook, fastHook := &throttleHook{}, &throttleHook{}
	slow := ta.client(t, kgo.ClientID("slow"), kgo.WithHooks(slowHook))
	fast := ta.client(t, kgo.ClientID("fast"), kgo.WithHooks(fastHook))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); produceMiB(t, fast, "quota", 6) }()
	const mib = 16
	start := time.Now()
	produceMiB(t, slow, "quota", mib)
	elapsed := time.Since(start)
	wg.Wait()

	throttles := slowHook.got()
	total := sumDurations(throttles)
	t.Logf("slow: %d MiB in %v (%.2f MiB/s against a 1 MiB/s quota after 10 s of credit), %d throttles, %v in all",
		mib, elapsed.Round(time.Millisecond), float64(mib)/elapsed.Seconds(), len(throttles), total)
	if len(throttles) == 0 {
		t.Fatal("a producer 6 MiB over its ten seconds of credit was never throttled")
	}
	for _, d := range throttles {
		if d <= 0 || d > 11*time.Second {
			t.Fatalf("throttle time %v outside (0, 11 s]: %v", d, throttles)
		}
	}
	// The rate is measured over at most 11 windows: what got through is
	// at most the quota over the run and one such span, plus the request
	// that crossed it.
	if limit := quota*(elapsed.Seconds()+11) + 1<<20; float64(mib<<20) > limit {
		t.Fatalf("%d MiB got through in %v: more than the quota allows (%.0f bytes)", mib, elapsed, limit)
	}
	// The agent counted what it told.
	told := counterValue(t, ta.quotas.throttleSeconds.WithLabelValues("produce"))
	if diff := told - total.Seconds(); math.Abs(diff) > float64(len(throttles))*0.001 {
		t.Fatalf("floe_agent_quota_throttle_seconds_total{quota=produce} = %v, the client was told %v", told, total)
	}
	if ds := fastHook.got(); len(ds) != 0 {
		t.Fatalf("a client id without a quota was throttled: %v", ds)
	}
}

// TestQuotaThrottlesConsumer: consumer_byte_rate throttles a consumer's
// fetches by the record bytes it is sent; a consumer with another client
// id reading the same records is never throttled.
func TestQuotaThrottlesConsumer(t *testing.T) {
	ta := newParallelAgent(t)
	admin := ta.client(t)
	ta.createTopic(t, admin, "quota", 1)
	const mib = 12
	produceMiB(t, admin, "quota", mib)
	const quota = 1 << 20
	setQuota(t, admin, quotaClientID, kmsg.StringPtr("reader"), "consumer_byte_rate", quota)

	consume := func(id string, h *throttleHook) time.Duration {
		cl := ta.client(t, kgo.ClientID(id), kgo.WithHooks(h), kgo.ConsumeTopics("quota"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(1<<20), kgo.FetchMaxPartitionBytes(1<<20))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		for n := 0; n < mib*16; {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("%s: %v after %d records", id, err, n)
			}
			n += fs.NumRecords()
		}
		return time.Since(start)
	}
	readerHook, freeHook := &throttleHook{}, &throttleHook{}
	elapsed := consume("reader", readerHook)
	throttles := readerHook.got()
	t.Logf("reader: %d MiB in %v (%.2f MiB/s against a 1 MiB/s quota after 10 s of credit), %d throttles, %v in all",
		mib, elapsed.Round(time.Millisecond), float64(mib)/elapsed.Seconds(), len(throttles), sumDurations(throttles))
	if len(throttles) == 0 {
		t.Fatal("a consumer 2 MiB over its ten seconds of credit was never throttled")
	}
	if limit := quota*(elapsed.Seconds()+11) + 1<<20; float64(mib<<20) > limit {
		t.Fatalf("%d MiB read in %v: more than the quota allows (%.0f bytes)", mib, elapsed, limit)
	}
	if got := counterValue(t, ta.quotas.throttles.WithLabelValues("fetch")); got < float64(len(throttles)) {
		t.Fatalf("floe_agent_quota_throttles_total{quota=fetch} = %v, the client was told %d", got, len(throttles))
	}
	consume("free", freeHook)
	if ds := freeHook.got(); len(ds) != 0 {
		t.Fatalf("a client id without a quota was throttled: %v", ds)
	}
}

// TestQuotaSharedByAgents: two agents over one store each enforce half of
// a byte rate. The agent that stored the quota enforces it at once, the
// other after a heartbeat; a producer of 6 MiB, which a whole 1 MiB/s
// quota lets through unthrottled (ten seconds of credit), is throttled at
// the share, by no more than the share's arithmetic allows.
func TestQuotaSharedByAgents(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	agents := twoAgents(t, ctx)
	admin, err := kgo.NewClient(kgo.SeedBrokers(agents[0].KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const rate = 1 << 20
	setQuota(t, admin, quotaClientID, kmsg.StringPtr("half"), "producer_byte_rate", rate)
	for _, a := range agents {
		for {
			if bound, _, ok := a.quotaConfig().Resolve(quota.Produce, "ANONYMOUS", "half"); ok && bound == rate/2 {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("agent %d never enforced half the quota", a.NodeID())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}

	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "shared", 1, 1
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(ctx, admin); err != nil || kerr.ErrorForCode(resp.Topics[0].ErrorCode) != nil {
		t.Fatalf("create topic: %v %+v", err, resp)
	}
	charged := func() float64 {
		n := 0.0
		for _, a := range agents {
			n += counterValue(t, a.metrics.producedBytes)
		}
		return n
	}
	before := charged()
	h := &throttleHook{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(agents[1].KafkaAddr()), kgo.ClientID("half"), kgo.WithHooks(h))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produceMiB(t, cl, "shared", 6)
	bytes := charged() - before
	throttles := h.got()
	t.Logf("6 MiB (%.0f bytes charged) at a 512 KiB/s share: throttles %v", bytes, throttles)
	if len(throttles) == 0 {
		t.Fatal("never throttled at half the quota")
	}
	// A throttle is B/share - W for B bytes measured over W >= 10 s.
	if most := time.Duration((bytes/(rate/2) - 10) * float64(time.Second)); slices.Max(throttles) > most+time.Millisecond {
		t.Fatalf("throttle %v above what %.0f bytes at the share allow (%v)", slices.Max(throttles), bytes, most)
	}
}

// TestClientQuotasStored: AlterClientQuotas stores what DescribeClientQuotas
// then answers, by Kafka's filter rules (exact, default, any; strict);
// ValidateOnly stores nothing; removals remove; invalid entries are
// refused with Kafka's codes and stored nothing.
func TestClientQuotasStored(t *testing.T) {
	ta := newParallelAgent(t)
	cl := ta.client(t)
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	alice, app := kmsg.StringPtr("alice"), kmsg.StringPtr("app")
	user := func(n *string) kadm.ClientQuotaEntityComponent {
		return kadm.ClientQuotaEntityComponent{Type: quotaUser, Name: n}
	}
	client := func(n *string) kadm.ClientQuotaEntityComponent {
		return kadm.ClientQuotaEntityComponent{Type: quotaClientID, Name: n}
	}
	set := func(k string, v float64) kadm.AlterClientQuotaOp { return kadm.AlterClientQuotaOp{Key: k, Value: v} }
	entries := []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{user(alice), client(app)}, Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1024), set("request_percentage", 12.5)}},
		{Entity: kadm.ClientQuotaEntity{user(alice)}, Ops: []kadm.AlterClientQuotaOp{set("consumer_byte_rate", 2048)}},
		{Entity: kadm.ClientQuotaEntity{user(nil)}, Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 4096)}},
		{Entity: kadm.ClientQuotaEntity{client(nil)}, Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 8192)}},
		{Entity: kadm.ClientQuotaEntity{{Type: quotaIP, Name: kmsg.StringPtr("10.0.0.1")}}, Ops: []kadm.AlterClientQuotaOp{set("connection_creation_rate", 5)}},
	}
	if res, err := adm.ValidateAlterClientQuotas(ctx, entries); err != nil || slices.ContainsFunc(res, func(r kadm.AlteredClientQuota) bool { return r.Err != nil }) {
		t.Fatalf("validate: %+v %v", res, err)
	}
	if qs, _ := ta.store.ClientQuotas(ctx); len(qs) != 0 {
		t.Fatalf("ValidateOnly stored %v", qs)
	}
	if res, err := adm.AlterClientQuotas(ctx, entries); err != nil || slices.ContainsFunc(res, func(r kadm.AlteredClientQuota) bool { return r.Err != nil }) {
		t.Fatalf("alter: %+v %v", res, err)
	}

	describe := func(strict bool, cs ...kadm.DescribeClientQuotaComponent) []string {
		t.Helper()
		d, err := adm.DescribeClientQuotas(ctx, strict, cs)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, q := range d {
			out = append(out, q.Entity.String()+" "+kadmValues(q.Values))
		}
		slices.Sort(out)
		return out
	}
	exact := func(typ, name string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchName: &name, MatchType: kmsg.QuotasMatchTypeExact}
	}
	def := func(typ string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchType: kmsg.QuotasMatchTypeDefault}
	}
	anyOf := func(typ string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchType: kmsg.QuotasMatchTypeAny}
	}
	const (
		aliceApp = "{user=alice, client-id=app} producer_byte_rate=1024,request_percentage=12.5"
		aliceQ   = "{user=alice} consumer_byte_rate=2048"
		defUser  = "{user=<default>} producer_byte_rate=4096"
		defCli   = "{client-id=<default>} producer_byte_rate=8192"
		ipQ      = "{ip=10.0.0.1} connection_creation_rate=5"
	)
	for _, tc := range []struct {
		name   string
		strict bool
		cs     []kadm.DescribeClientQuotaComponent
		want   []string
	}{
		{"everything", false, nil, []string{aliceQ, aliceApp, defCli, ipQ, defUser}},
		{"empty strict", true, nil, nil},
		{"user alice", false, []kadm.DescribeClientQuotaComponent{exact(quotaUser, "alice")}, []string{aliceQ, aliceApp}},
		{"user alice strict", true, []kadm.DescribeClientQuotaComponent{exact(quotaUser, "alice")}, []string{aliceQ}},
		{"default user", false, []kadm.DescribeClientQuotaComponent{def(quotaUser)}, []string{defUser}},
		{"any user", false, []kadm.DescribeClientQuotaComponent{anyOf(quotaUser)}, []string{aliceQ, aliceApp, defUser}},
		{"any user strict", true, []kadm.DescribeClientQuotaComponent{anyOf(quotaUser)}, []string{aliceQ, defUser}},
		{"any user and client", false, []kadm.DescribeClientQuotaComponent{anyOf(quotaUser), anyOf(quotaClientID)}, []string{aliceApp}},
		{"client app", false, []kadm.DescribeClientQuotaComponent{exact(quotaClientID, "app")}, []string{aliceApp}},
		{"default client strict", true, []kadm.DescribeClientQuotaComponent{def(quotaClientID)}, []string{defCli}},
		{"any ip", false, []kadm.DescribeClientQuotaComponent{anyOf(quotaIP)}, []string{ipQ}},
		{"unknown user", false, []kadm.DescribeClientQuotaComponent{exact(quotaUser, "bob")}, nil},
	} {
		slices.Sort(tc.want)
		if got := describe(tc.strict, tc.cs...); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}

	// Removing a key removes it; removing what is absent is no error.
	rm := []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{user(alice), client(app)}, Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Remove: true}}},
		{Entity: kadm.ClientQuotaEntity{user(alice)}, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Remove: true}, {Key: "producer_byte_rate", Remove: true}}},
	}
	if res, err := adm.AlterClientQuotas(ctx, rm); err != nil || slices.ContainsFunc(res, func(r kadm.AlteredClientQuota) bool { return r.Err != nil }) {
		t.Fatalf("remove: %+v %v", res, err)
	}
	if got := describe(false, exact(quotaUser, "alice")); !slices.Equal(got, []string{"{user=alice, client-id=app} producer_byte_rate=1024"}) {
		t.Fatalf("after removing: %q", got)
	}
	// The agent enforces what it stored at once.
	if bound, _, ok := ta.quotaConfig().Resolve(quota.Produce, "alice", "app"); !ok || bound != 1024 {
		t.Fatalf("enforced producer_byte_rate of alice/app = %v %v, want 1024", bound, ok)
	}

	// Invalid entries: Kafka's codes, nothing stored.
	op := func(key string, v float64) kmsg.AlterClientQuotasRequestEntryOp {
		return kmsg.AlterClientQuotasRequestEntryOp{Key: key, Value: v}
	}
	named := func(typ, name string) kmsg.AlterClientQuotasRequestEntryEntity {
		return kmsg.AlterClientQuotasRequestEntryEntity{Type: typ, Name: kmsg.StringPtr(name)}
	}
	for _, tc := range []struct {
		name string
		e    kmsg.AlterClientQuotasRequestEntry
		code *kerr.Error
	}{
		{"no entity", kmsg.AlterClientQuotasRequestEntry{}, kerr.InvalidRequest},
		{"unknown type", kmsg.AlterClientQuotasRequestEntry{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "group"}}}, kerr.InvalidRequest},
		{"ip and user", kmsg.AlterClientQuotasRequestEntry{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: quotaIP}, {Type: quotaUser}}}, kerr.InvalidRequest},
		{"ip not an address", kmsg.AlterClientQuotasRequestEntry{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{named(quotaIP, "not an ip")},
			Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 5)}}, kerr.InvalidRequest},
		{"unknown key", kmsg.AlterClientQuotasRequestEntry{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{named(quotaUser, "bob")},
			Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("bytes_per_fortnight", 1)}}, kerr.InvalidRequest},
		{"fraction", kmsg.AlterClientQuotasRequestEntry{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{named(quotaUser, "bob")},
			Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("consumer_byte_rate", 1.5)}}, kerr.InvalidRequest},
		{"zero", kmsg.AlterClientQuotasRequestEntry{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{named(quotaUser, "bob")},
			Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("request_percentage", 0)}}, kerr.InvalidRequest},
		{"ip rate for a user", kmsg.AlterClientQuotasRequestEntry{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{named(quotaUser, "bob")},
			Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1)}}, kerr.InvalidRequest},
	} {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.Entries = append(req.Entries, tc.e)
		wantCode(t, tc.name, direct[*kmsg.AlterClientQuotasResponse](t, cl, req).Entries[0].ErrorCode, tc.code)
	}
	if got := describe(false, exact(quotaUser, "bob")); len(got) != 0 {
		t.Fatalf("invalid entries stored %q", got)
	}
	dreq := kmsg.NewPtrDescribeClientQuotasRequest()
	dreq.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: quotaUser}}
	wantCode(t, "exact without a name", direct[*kmsg.DescribeClientQuotasResponse](t, cl, dreq).ErrorCode, kerr.InvalidRequest)
	dreq.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "group", MatchType: kmsg.QuotasMatchTypeAny}}
	wantCode(t, "unknown entity type", direct[*kmsg.DescribeClientQuotasResponse](t, cl, dreq).ErrorCode, kerr.UnsupportedVersion)
	dreq.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: quotaIP, MatchType: kmsg.QuotasMatchTypeAny},
		{EntityType: quotaUser, MatchType: kmsg.QuotasMatchTypeDefault}}
	wantCode(t, "ip with user", direct[*kmsg.DescribeClientQuotasResponse](t, cl, dreq).ErrorCode, kerr.InvalidRequest)
}

// kadmValues renders quota values sorted by key.
func kadmValues(vs kadm.ClientQuotaValues) string {
	var ss []string
	for _, v := range vs {
		ss = append(ss, v.Key+"="+strconv.FormatFloat(v.Value, 'f', -1, 64))
	}
	slices.Sort(ss)
	return strings.Join(ss, ",")
}

// TestQuotaRequestPercentage: request_percentage charges handler time; a
// client over it is told a throttle time of at most one window (Kafka's
// bound for request quotas).
func TestQuotaRequestPercentage(t *testing.T) {
	ta := newParallelAgent(t)
	admin := ta.client(t)
	// 0.0001 % is 1 µs of handler time per second: over the ten seconds
	// the rate is measured over at least, the first request or two pass it.
	setQuota(t, admin, quotaClientID, kmsg.StringPtr("raw"), "request_percentage", 0.0001)
	rc := dialRaw(t, ta)
	var throttle int32
	for i := 0; i < 200 && throttle == 0; i++ {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		throttle = rc.roundTrip(req).(*kmsg.MetadataResponse).ThrottleMillis
	}
	if throttle <= 0 || throttle > int32(quota.Window/time.Millisecond) {
		t.Fatalf("throttle_time_ms = %d, want within (0, %v]", throttle, quota.Window)
	}
	if got := counterValue(t, ta.quotas.throttles.WithLabelValues("request")); got < 1 {
		t.Fatalf("floe_agent_quota_throttles_total{quota=request} = %v", got)
	}
}

// TestQuotaConnectionRate: a connection_creation_rate of 1/s on 127.0.0.1
// admits ten connections (1/s over the ten windows the rate is measured
// over at least), and closes the next after its throttle time, unanswered.
func TestQuotaConnectionRate(t *testing.T) {
	ta := newParallelAgent(t)
	admin := ta.client(t)
	setQuota(t, admin, quotaIP, kmsg.StringPtr("127.0.0.1"), "connection_creation_rate", 1)
	answered := 0
	for range 12 {
		rc := dialRaw(t, ta)
		if _, err := rc.try(kmsg.NewPtrApiVersionsRequest()); err != nil {
			break
		}
		answered++
	}
	if answered < 9 || answered > 10 {
		t.Fatalf("%d connections answered before one was refused, want 10 (9 if the admin client connected again)", answered)
	}
	if got := counterValue(t, ta.quotas.throttles.WithLabelValues("connection")); got != 1 {
		t.Fatalf("floe_agent_quota_throttles_total{quota=connection} = %v, want 1", got)
	}
}
