package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"floe/agent/internal/authz"
	"floe/metadata"
	"floe/metadata/sqlite"
	"floe/storage/mem"
)

const (
	lit   = kmsg.ACLResourcePatternTypeLiteral
	pre   = kmsg.ACLResourcePatternTypePrefixed
	allow = kmsg.ACLPermissionTypeAllow
	deny  = kmsg.ACLPermissionTypeDeny
)

// aclCluster is two agents with authorization on over one SQLite file
// and one bucket. ACLs are created through a (the lower node id, which
// Metadata names controller) with requests pinned to a, and checked with
// requests pinned to b: what b enforces it can only know from the store.
type aclCluster struct {
	a, b   *Agent
	store  metadata.Store // a's store handle
	ca, cb *kgo.Client    // seeded with a only, b only
}

// newACLCluster starts the agents with the anonymous principal allowed
// to manage ACLs (ALTER and DESCRIBE on the cluster), put into the store
// before they start, and nothing else.
func newACLCluster(t *testing.T, opts ...func(*Config)) *aclCluster {
	t.Helper()
	ctx := context.Background()
	dir, bucket := t.TempDir(), mem.New()
	var agents []*Agent
	var stores []metadata.Store
	for i := range 2 {
		store, err := sqlite.Open(ctx, filepath.Join(dir, "meta.db"))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := store.CreateACLs(ctx, []metadata.ACL{
				authz.NewACL(resCluster, clusterName, lit, anonymous, "*", opAlter, allow),
				authz.NewACL(resCluster, clusterName, lit, anonymous, "*", opDescribe, allow),
			}); err != nil {
				t.Fatal(err)
			}
		}
		cfg := DevConfig()
		cfg.KafkaAddr, cfg.HTTPAddr = "127.0.0.1:0", ""
		cfg.HeartbeatInterval = 50 * time.Millisecond
		cfg.DrainDelay = 0
		cfg.Authz = AuthzConfig{Enabled: true}
		for _, o := range opts {
			o(&cfg)
		}
		a := startAgent(t, cfg, store, bucket, nil, func() { store.Close() })
		agents, stores = append(agents, a), append(stores, store)
	}
	for _, a := range agents {
		if err := a.refreshLive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c := &aclCluster{a: agents[0], b: agents[1], store: stores[0]}
	if c.a.NodeID() > c.b.NodeID() {
		t.Fatalf("node ids %d, %d: the first agent is expected to be the controller", c.a.NodeID(), c.b.NodeID())
	}
	c.ca = aclClient(t, c.a)
	c.cb = aclClient(t, c.b)
	return c
}

func aclClient(t *testing.T, a *Agent, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(a.KafkaAddr())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func aclCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// on sends req to the agent cl is seeded with, and to no other.
func on[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	resp, err := cl.SeedBrokers()[0].Request(aclCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(R)
}

// grant creates ACLs through a, failing on any refusal.
func (c *aclCluster) grant(t *testing.T, acls ...metadata.ACL) {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, x := range acls {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceType(x.ResourceType), x.ResourceName, kmsg.ACLResourcePatternType(x.PatternType)
		cr.Principal, cr.Host = x.Principal, x.Host
		cr.Operation, cr.PermissionType = kmsg.ACLOperation(x.Operation), kmsg.ACLPermissionType(x.Permission)
		req.Creations = append(req.Creations, cr)
	}
	for i, r := range on[*kmsg.CreateACLsResponse](t, c.ca, req).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("create acl %+v: %v %s", acls[i], kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
		}
	}
}

// eventually retries f until it returns nil: an ACL change through a is
// seen by b within a heartbeat interval (50 ms here), so 10 s is ample.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func codeIs(got int16, want *kerr.Error) error {
	if got != codeOf(want) {
		return fmt.Errorf("error %v, want %v", kerr.ErrorForCode(got), want)
	}
	return nil
}

func codeOf(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}

// ownedKey is a group or transactional id whose coordinator is a.
func ownedKey(t *testing.T, a *Agent, prefix string) string {
	t.Helper()
	for i := range 1000 {
		k := fmt.Sprintf("%s%d", prefix, i)
		if a.coord.ownerOf(k).NodeID == a.NodeID() {
			return k
		}
	}
	t.Fatal("no key placed on the agent")
	return ""
}

// allowAnon and denyAnon are ACLs of the anonymous principal from any host.
func allowAnon(typ kmsg.ACLResourceType, name string, pattern kmsg.ACLResourcePatternType, op kmsg.ACLOperation) metadata.ACL {
	return authz.NewACL(typ, name, pattern, anonymous, "*", op, allow)
}

func denyAnon(typ kmsg.ACLResourceType, name string, op kmsg.ACLOperation) metadata.ACL {
	return authz.NewACL(typ, name, lit, anonymous, "*", op, deny)
}

// produceReq is a Produce of one test batch to each of parts of topic.
func produceReq(t *testing.T, topic string, parts ...int32) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, testBatch(t, 2)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func produceCodes(resp *kmsg.ProduceResponse, want *kerr.Error) error {
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := codeIs(rp.ErrorCode, want); err != nil {
				return fmt.Errorf("produce %s/%d: %w", rt.Topic, rp.Partition, err)
			}
		}
	}
	return nil
}

// fetchReq fetches parts of topic t from offset 0, naming the topic by id
// and name (kgo sends the highest version both sides speak).
func fetchReq(t metadata.Topic, parts ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes, req.MaxWaitMillis = 1<<20, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = t.Name, t.ID
	for _, p := range parts {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = p, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestACLSecurityDisabled: without an authorizer every request is served
// and the ACL APIs answer SECURITY_DISABLED, as Kafka's do.
func TestACLSecurityDisabled(t *testing.T) {
	ta := newParallelAgent(t)
	cl := ta.client(t)
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.Principal, c.Host = resTopic, "t", anonymous, "*"
	c.Operation, c.PermissionType = opRead, allow
	creq := kmsg.NewPtrCreateACLsRequest()
	creq.Creations = append(creq.Creations, c)
	cr := on[*kmsg.CreateACLsResponse](t, cl, creq)
	if err := codeIs(cr.Results[0].ErrorCode, kerr.SecurityDisabled); err != nil {
		t.Fatal("create:", err)
	}
	dr := on[*kmsg.DescribeACLsResponse](t, cl, describeAllReq())
	if err := codeIs(dr.ErrorCode, kerr.SecurityDisabled); err != nil {
		t.Fatal("describe:", err)
	}
	xreq := kmsg.NewPtrDeleteACLsRequest()
	xreq.Filters = append(xreq.Filters, deleteAllFilter())
	xr := on[*kmsg.DeleteACLsResponse](t, cl, xreq)
	if err := codeIs(xr.Results[0].ErrorCode, kerr.SecurityDisabled); err != nil {
		t.Fatal("delete:", err)
	}
	// Every operation is authorized: the cluster's as Kafka lists them.
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	want := int32(1<<opCreate | 1<<opClusterAction | 1<<opDescribeConfigs | 1<<opAlterConfigs | 1<<opIdempotentWrite | 1<<opAlter | 1<<opDescribe)
	if ops := on[*kmsg.DescribeClusterResponse](t, cl, dc).ClusterAuthorizedOperations; ops != want {
		t.Fatalf("cluster's authorized operations %b, want %b", ops, want)
	}
	if acls, err := ta.store.ListACLs(context.Background(), metadata.AllACLs); err != nil || len(acls) != 0 {
		t.Fatalf("acls stored without an authorizer: %v, %v", acls, err)
	}
}

func describeAllReq() *kmsg.DescribeACLsRequest {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	return req
}

func deleteAllFilter() kmsg.DeleteACLsRequestFilter {
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	return f
}

// described flattens a DescribeAcls answer into stored ACLs.
func described(resp *kmsg.DescribeACLsResponse) []metadata.ACL {
	var out []metadata.ACL
	for _, r := range resp.Resources {
		for _, x := range r.ACLs {
			out = append(out, authz.NewACL(r.ResourceType, r.ResourceName, r.ResourcePatternType, x.Principal, x.Host, x.Operation, x.PermissionType))
		}
	}
	return out
}

// TestACLAPIsAcrossAgents: ACLs created through one agent are listed and
// enforced by the other, the ACL APIs need ALTER and DESCRIBE on the
// cluster there, creations are checked as Kafka checks them, and deletes
// return what they removed.
func TestACLAPIsAcrossAgents(t *testing.T) {
	t.Parallel()
	c := newACLCluster(t)
	ctx := aclCtx(t)
	c.grant(t, allowAnon(resTopic, "orders", lit, opRead))
	want := []metadata.ACL{
		authz.NewACL(resTopic, "orders", lit, anonymous, "*", opRead, allow),
		authz.NewACL(resCluster, clusterName, lit, anonymous, "*", opAlter, allow),
		authz.NewACL(resCluster, clusterName, lit, anonymous, "*", opDescribe, allow),
	}
	dr := on[*kmsg.DescribeACLsResponse](t, c.cb, describeAllReq())
	if dr.ErrorCode != 0 || !slices.Equal(described(dr), want) {
		t.Fatalf("describe on b: %v %v, want %v", kerr.ErrorForCode(dr.ErrorCode), described(dr), want)
	}
	// A MATCH filter names every pattern that applies to a resource.
	mreq := describeAllReq()
	mreq.ResourceType, mreq.ResourcePatternType, mreq.ResourceName = resTopic, kmsg.ACLResourcePatternTypeMatch, kmsg.StringPtr("orders")
	if got := described(on[*kmsg.DescribeACLsResponse](t, c.cb, mreq)); !slices.Equal(got, want[:1]) {
		t.Fatalf("describe MATCH orders: %v", got)
	}

	// Creations are checked one by one; the valid one is stored.
	creq := kmsg.NewPtrCreateACLsRequest()
	for _, tc := range []struct {
		typ     kmsg.ACLResourceType
		name    string
		pattern kmsg.ACLResourcePatternType
		princ   string
	}{
		{resCluster, "other", lit, anonymous},
		{resTopic, "", lit, anonymous},
		{resTopic, "t", kmsg.ACLResourcePatternTypeMatch, anonymous},
		{resTopic, "t", lit, "alice"},
		{kmsg.ACLResourceTypeAny, "t", lit, anonymous},
		{resGroup, "g", pre, anonymous},
	} {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType, cr.Principal, cr.Host = tc.typ, tc.name, tc.pattern, tc.princ, "*"
		cr.Operation, cr.PermissionType = opRead, allow
		creq.Creations = append(creq.Creations, cr)
	}
	cresp := on[*kmsg.CreateACLsResponse](t, c.cb, creq)
	for i, r := range cresp.Results {
		want := kerr.InvalidRequest
		if i == len(cresp.Results)-1 {
			want = nil
		}
		if err := codeIs(r.ErrorCode, want); err != nil {
			t.Errorf("creation %d: %v (%s)", i, err, deref(r.ErrorMessage))
		}
	}

	// DENY ALTER on the cluster through a: b refuses creates and deletes,
	// and still describes (a deny of ALTER is no deny of DESCRIBE).
	c.grant(t, denyAnon(resCluster, clusterName, opAlter))
	one := kmsg.NewCreateACLsRequestCreation()
	one.ResourceType, one.ResourceName, one.Principal, one.Host = resTopic, "x", anonymous, "*"
	one.Operation, one.PermissionType = opRead, allow
	createOne := &kmsg.CreateACLsRequest{Creations: []kmsg.CreateACLsRequestCreation{one}}
	eventually(t, "b refuses CreateAcls", func() error {
		return codeIs(on[*kmsg.CreateACLsResponse](t, c.cb, createOne).Results[0].ErrorCode, kerr.ClusterAuthorizationFailed)
	})
	xreq := &kmsg.DeleteACLsRequest{Filters: []kmsg.DeleteACLsRequestFilter{deleteAllFilter()}}
	if err := codeIs(on[*kmsg.DeleteACLsResponse](t, c.cb, xreq).Results[0].ErrorCode, kerr.ClusterAuthorizationFailed); err != nil {
		t.Fatal("delete on b:", err)
	}
	if err := codeIs(on[*kmsg.DescribeACLsResponse](t, c.cb, describeAllReq()).ErrorCode, nil); err != nil {
		t.Fatal("describe on b:", err)
	}
	// SCRAM users are cluster ALTER too.
	scram := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	del.Name, del.Mechanism = "alice", 2
	scram.Deletions = append(scram.Deletions, del)
	if err := codeIs(on[*kmsg.AlterUserSCRAMCredentialsResponse](t, c.cb, scram).Results[0].ErrorCode, kerr.ClusterAuthorizationFailed); err != nil {
		t.Fatal("alter scram on b:", err)
	}
	// The deny removed behind the agents' backs: b sees the change.
	f := metadata.AllACLs
	f.Permission = metadata.ACLDeny
	if _, err := c.store.DeleteACLs(ctx, []metadata.ACLFilter{f}); err != nil {
		t.Fatal(err)
	}
	for _, cl := range []*kgo.Client{c.cb, c.ca} {
		eventually(t, "CreateAcls taken again", func() error {
			return codeIs(on[*kmsg.CreateACLsResponse](t, cl, createOne).Results[0].ErrorCode, nil)
		})
	}

	// Delete through b: the topic ACLs of the principal, exactly.
	df := deleteAllFilter()
	df.ResourceType, df.Principal = resTopic, kmsg.StringPtr(anonymous)
	xr := on[*kmsg.DeleteACLsResponse](t, c.cb, &kmsg.DeleteACLsRequest{Filters: []kmsg.DeleteACLsRequestFilter{df}})
	var gone []metadata.ACL
	for _, m := range xr.Results[0].MatchingACLs {
		gone = append(gone, authz.NewACL(m.ResourceType, m.ResourceName, m.ResourcePatternType, m.Principal, m.Host, m.Operation, m.PermissionType))
	}
	wantGone := []metadata.ACL{
		authz.NewACL(resTopic, "orders", lit, anonymous, "*", opRead, allow),
		authz.NewACL(resTopic, "x", lit, anonymous, "*", opRead, allow),
	}
	if xr.Results[0].ErrorCode != 0 || !slices.Equal(gone, wantGone) {
		t.Fatalf("delete on b: %v %v, want %v", kerr.ErrorForCode(xr.Results[0].ErrorCode), gone, wantGone)
	}
	// DENY DESCRIBE on the cluster: b refuses DescribeAcls too.
	c.grant(t, denyAnon(resCluster, clusterName, opDescribe))
	eventually(t, "b refuses DescribeAcls", func() error {
		return codeIs(on[*kmsg.DescribeACLsResponse](t, c.cb, describeAllReq()).ErrorCode, kerr.ClusterAuthorizationFailed)
	})
	if err := codeIs(on[*kmsg.DescribeUserSCRAMCredentialsResponse](t, c.cb, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()).ErrorCode,
		kerr.ClusterAuthorizationFailed); err != nil {
		t.Fatal("describe scram on b:", err)
	}
}

// TestACLProduceFetch: WRITE and READ on topics, literal and prefixed,
// deny winning, enforced by b for grants made through a; idempotent
// producers need WRITE on some topic; real clients produce and consume
// once allowed.
func TestACLProduceFetch(t *testing.T) {
	t.Parallel()
	c := newACLCluster(t)
	ctx := aclCtx(t)
	orders, err := c.store.CreateTopic(ctx, "orders", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := produceCodes(on[*kmsg.ProduceResponse](t, c.cb, produceReq(t, "orders", 0, 1)), kerr.TopicAuthorizationFailed); err != nil {
		t.Fatal("before any grant:", err)
	}
	ipid := kmsg.NewPtrInitProducerIDRequest()
	ipid.TransactionTimeoutMillis = 60000
	if err := codeIs(on[*kmsg.InitProducerIDResponse](t, c.cb, ipid).ErrorCode, kerr.ClusterAuthorizationFailed); err != nil {
		t.Fatal("idempotent InitProducerId before any grant:", err)
	}

	c.grant(t, allowAnon(resTopic, "orders", lit, opWrite))
	eventually(t, "b takes the produce", func() error {
		return produceCodes(on[*kmsg.ProduceResponse](t, c.cb, produceReq(t, "orders", 0, 1)), nil)
	})
	if err := codeIs(on[*kmsg.InitProducerIDResponse](t, c.cb, ipid).ErrorCode, nil); err != nil {
		t.Fatal("idempotent InitProducerId with WRITE on a topic:", err)
	}
	// Fetch needs READ: WRITE is not READ.
	if err := codeIs(on[*kmsg.FetchResponse](t, c.cb, fetchReq(orders, 0)).Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed); err != nil {
		t.Fatal("fetch without READ:", err)
	}

	// A real producer, idempotent, to both partitions (led by different
	// agents: leaders alternate over partitions).
	p := aclClient(t, c.b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 4 {
		r := &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte(fmt.Sprintf("v%d", i))}
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	c.grant(t, allowAnon(resTopic, "ord", pre, opRead))
	eventually(t, "b serves the fetch", func() error {
		return codeIs(on[*kmsg.FetchResponse](t, c.cb, fetchReq(orders, 0)).Topics[0].Partitions[0].ErrorCode, nil)
	})
	cons := aclClient(t, c.b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"orders": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()},
	}))
	got := map[int32][]string{}
	for n := 0; n < 8; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			n++
		})
	}
	// Each partition: the two raw records (values 0 and 1), then the client's.
	if !slices.Equal(got[0], []string{"\x00", "\x01", "v0", "v2"}) || !slices.Equal(got[1], []string{"\x00", "\x01", "v1", "v3"}) {
		t.Fatalf("consumed %q", got)
	}

	// DENY READ on the literal name wins over the prefixed ALLOW.
	c.grant(t, denyAnon(resTopic, "orders", opRead))
	eventually(t, "b refuses the fetch again", func() error {
		return codeIs(on[*kmsg.FetchResponse](t, c.cb, fetchReq(orders, 0, 1)).Topics[0].Partitions[1].ErrorCode, kerr.TopicAuthorizationFailed)
	})
	lreq := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "orders"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lreq.Topics = append(lreq.Topics, lt)
	if err := codeIs(on[*kmsg.ListOffsetsResponse](t, c.cb, lreq).Topics[0].Partitions[0].ErrorCode, nil); err != nil {
		t.Fatal("ListOffsets with WRITE (implies DESCRIBE) and READ denied:", err)
	}
}

// TestACLGroups: JoinGroup, OffsetCommit and OffsetFetch of a group b
// coordinates need READ (DESCRIBE to fetch) on the group, granted through a;
// a real group consumer then consumes and commits; a deny stops it again.
func TestACLGroups(t *testing.T) {
	t.Parallel()
	c := newACLCluster(t)
	ctx := aclCtx(t)
	if _, err := c.store.CreateTopic(ctx, "orders", 1, nil); err != nil {
		t.Fatal(err)
	}
	group := ownedKey(t, c.b, "g")
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = group, 10000, 10000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	if err := codeIs(on[*kmsg.JoinGroupResponse](t, c.cb, join).ErrorCode, kerr.GroupAuthorizationFailed); err != nil {
		t.Fatal("join:", err)
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = group, -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "orders"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Offset = 1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	commitCode := func() int16 {
		return on[*kmsg.OffsetCommitResponse](t, c.cb, commit).Topics[0].Partitions[0].ErrorCode
	}
	if err := codeIs(commitCode(), kerr.GroupAuthorizationFailed); err != nil {
		t.Fatal("commit:", err)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = group
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group}} // v8+
	if err := codeIs(on[*kmsg.OffsetFetchResponse](t, c.cb, fetch).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed); err != nil {
		t.Fatal("offset fetch:", err)
	}
	c.grant(t, allowAnon(resGroup, group, lit, opRead))
	eventually(t, "b lets the group commit", func() error { return codeIs(commitCode(), kerr.TopicAuthorizationFailed) })
	c.grant(t, allowAnon(resTopic, "orders", lit, opRead), allowAnon(resTopic, "orders", lit, opWrite))
	eventually(t, "b commits", func() error { return codeIs(commitCode(), nil) })

	p := aclClient(t, c.b)
	for i := range 3 {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons := aclClient(t, c.a, kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	var n int
	for n < 2 { // from the committed offset 1
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(1+n) || r.Value[0] != byte(1+n) {
				t.Fatalf("record %d: offset %d value %v", n, r.Offset, r.Value)
			}
			n++
		})
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	offs, err := kadm.NewClient(c.cb).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("orders", 0); !ok || o.Err != nil || o.At != 3 {
		t.Fatalf("committed offset %+v, %v; want 3", o, ok)
	}
	cons.Close()

	c.grant(t, denyAnon(resGroup, group, opAll))
	eventually(t, "b refuses the group again", func() error {
		return codeIs(on[*kmsg.JoinGroupResponse](t, c.cb, join).ErrorCode, kerr.GroupAuthorizationFailed)
	})
	if err := codeIs(commitCode(), kerr.GroupAuthorizationFailed); err != nil {
		t.Fatal("commit after the deny:", err)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{group}
	if err := codeIs(on[*kmsg.DescribeGroupsResponse](t, c.cb, dg).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed); err != nil {
		t.Fatal("describe groups after the deny:", err)
	}
}

// TestACLTransactions: a transactional id b coordinates needs WRITE,
// granted through a: FindCoordinator, InitProducerId and EndTxn refuse it
// before, a real transactional producer commits after, and a deny of the
// id fences it again.
func TestACLTransactions(t *testing.T) {
	t.Parallel()
	c := newACLCluster(t)
	ctx := aclCtx(t)
	if _, err := c.store.CreateTopic(ctx, "orders", 1, nil); err != nil {
		t.Fatal(err)
	}
	txid := ownedKey(t, c.b, "tx-")
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{txid} // v4+
	if err := codeIs(on[*kmsg.FindCoordinatorResponse](t, c.cb, fc).Coordinators[0].ErrorCode, kerr.TransactionalIDAuthorizationFailed); err != nil {
		t.Fatal("find coordinator:", err)
	}
	ipid := kmsg.NewPtrInitProducerIDRequest()
	ipid.TransactionalID, ipid.TransactionTimeoutMillis = &txid, 60000
	ipidCode := func() int16 { return on[*kmsg.InitProducerIDResponse](t, c.cb, ipid).ErrorCode }
	if err := codeIs(ipidCode(), kerr.TransactionalIDAuthorizationFailed); err != nil {
		t.Fatal("init producer id:", err)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = txid, 1, 0, true
	if err := codeIs(on[*kmsg.EndTxnResponse](t, c.cb, end).ErrorCode, kerr.TransactionalIDAuthorizationFailed); err != nil {
		t.Fatal("end txn:", err)
	}
	c.grant(t, allowAnon(resTxnID, "tx-", pre, opWrite))
	c.grant(t, allowAnon(resTopic, "orders", lit, opWrite), allowAnon(resTopic, "orders", lit, opRead))
	eventually(t, "b initializes the transactional producer", func() error { return codeIs(ipidCode(), nil) })

	p := aclClient(t, c.b, kgo.TransactionalID(txid))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("in txn")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	cons := aclClient(t, c.a, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var got []string
	for len(got) == 0 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, []string{"in txn"}) {
		t.Fatalf("read committed %q", got)
	}
	p.Close()

	c.grant(t, denyAnon(resTxnID, txid, opWrite))
	eventually(t, "b refuses the transactional id again", func() error {
		return codeIs(ipidCode(), kerr.TransactionalIDAuthorizationFailed)
	})
	// A transactional produce is refused on every partition.
	preq := produceReq(t, "orders", 0)
	preq.TransactionID = &txid
	if err := produceCodes(on[*kmsg.ProduceResponse](t, c.cb, preq), kerr.TransactionalIDAuthorizationFailed); err != nil {
		t.Fatal(err)
	}
}

// TestACLTopicAdmin: CreateTopics needs CREATE on the cluster or the topic,
// DeleteTopics DELETE, DescribeConfigs DESCRIBE_CONFIGS (implied by
// ALTER_CONFIGS); Metadata leaves out topics without DESCRIBE, refuses
// those named, and refuses auto-creation without CREATE.
func TestACLTopicAdmin(t *testing.T) {
	t.Parallel()
	c := newACLCluster(t)
	ctx := aclCtx(t)
	if _, err := c.store.CreateTopic(ctx, "orders", 1, nil); err != nil {
		t.Fatal(err)
	}
	create := func(names ...string) []int16 {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10000
		for _, n := range names {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = n, 1, 1
			req.Topics = append(req.Topics, rt)
		}
		var codes []int16
		for _, st := range on[*kmsg.CreateTopicsResponse](t, c.cb, req).Topics {
			codes = append(codes, st.ErrorCode)
		}
		return codes
	}
	if err := codeIs(create("new-a")[0], kerr.TopicAuthorizationFailed); err != nil {
		t.Fatal("create without CREATE:", err)
	}
	c.grant(t, allowAnon(resTopic, "new-", pre, opCreate))
	eventually(t, "b creates new-a", func() error { return codeIs(create("new-a")[0], nil) })
	if codes := create("other", "new-b"); codeIs(codes[0], kerr.TopicAuthorizationFailed) != nil || codes[1] != 0 {
		t.Fatalf("create other, new-b: %v", codes)
	}

	metadataNames := func(topics ...string) map[string]int16 {
		req := kmsg.NewPtrMetadataRequest()
		if topics != nil {
			for _, n := range topics {
				mt := kmsg.NewMetadataRequestTopic()
				mt.Topic = kmsg.StringPtr(n)
				req.Topics = append(req.Topics, mt)
			}
			req.AllowAutoTopicCreation = true
		}
		out := map[string]int16{}
		for _, mt := range on[*kmsg.MetadataResponse](t, c.cb, req).Topics {
			out[*mt.Topic] = mt.ErrorCode
		}
		return out
	}
	// CREATE does not imply DESCRIBE: Metadata lists nothing yet.
	if got := metadataNames(); len(got) != 0 {
		t.Fatalf("all-topics metadata without DESCRIBE lists %v", got)
	}
	c.grant(t, allowAnon(resTopic, "new-", pre, opDescribe))
	eventually(t, "b lists the new- topics only", func() error {
		got := metadataNames()
		if len(got) != 2 || got["new-a"] != 0 || got["new-b"] != 0 {
			return fmt.Errorf("metadata lists %v", got)
		}
		return nil
	})
	// Authorized operations: CREATE and DESCRIBE (prefixed new-) on new-a.
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.IncludeTopicAuthorizedOperations = true
	mreq.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("new-a")}}
	if ops := on[*kmsg.MetadataResponse](t, c.cb, mreq).Topics[0].AuthorizedOperations; ops != 1<<opCreate|1<<opDescribe {
		t.Fatalf("new-a's authorized operations %b, want CREATE and DESCRIBE %b", ops, 1<<opCreate|1<<opDescribe)
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	if ops := on[*kmsg.DescribeClusterResponse](t, c.cb, dc).ClusterAuthorizedOperations; ops != 1<<opAlter|1<<opDescribe {
		t.Fatalf("cluster's authorized operations %b, want ALTER and DESCRIBE %b", ops, 1<<opAlter|1<<opDescribe)
	}
	named := metadataNames("orders", "new-a", "new-auto", "nope")
	if err := errors.Join(codeIs(named["orders"], kerr.TopicAuthorizationFailed), codeIs(named["new-a"], nil),
		codeIs(named["new-auto"], kerr.LeaderNotAvailable), codeIs(named["nope"], kerr.TopicAuthorizationFailed)); err != nil {
		t.Fatalf("named metadata %v: %v", named, err)
	}
	// DESCRIBE without CREATE: auto-creation refused, nothing created.
	// (DESCRIBE on orders, granted with it, shows when b has the grant.)
	c.grant(t, allowAnon(resTopic, "auto-x", lit, opDescribe), allowAnon(resTopic, "orders", lit, opDescribe))
	eventually(t, "b sees the grant", func() error { return codeIs(metadataNames("orders")["orders"], nil) })
	if err := codeIs(metadataNames("auto-x")["auto-x"], kerr.TopicAuthorizationFailed); err != nil {
		t.Fatal("auto-creating auto-x without CREATE:", err)
	}
	if _, err := c.store.Topic(ctx, "auto-x"); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Fatalf("auto-x: %v, want it not created", err)
	}

	describeConfigs := func() int16 {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "new-a"
		req.Resources = append(req.Resources, rr)
		return on[*kmsg.DescribeConfigsResponse](t, c.cb, req).Resources[0].ErrorCode
	}
	if err := codeIs(describeConfigs(), kerr.TopicAuthorizationFailed); err != nil {
		t.Fatal("describe configs:", err)
	}
	c.grant(t, allowAnon(resTopic, "new-a", lit, opAlterConfigs))
	eventually(t, "b describes new-a's configs", func() error { return codeIs(describeConfigs(), nil) })

	del := func(name string) int16 {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics, req.TopicNames = append(req.Topics, rt), []string{name}
		return on[*kmsg.DeleteTopicsResponse](t, c.cb, req).Topics[0].ErrorCode
	}
	if err := codeIs(del("new-a"), kerr.TopicAuthorizationFailed); err != nil {
		t.Fatal("delete without DELETE:", err)
	}
	c.grant(t, allowAnon(resTopic, "new-a", lit, opDelete))
	eventually(t, "b deletes new-a", func() error { return codeIs(del("new-a"), nil) })
	if _, err := c.store.Topic(ctx, "new-a"); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Fatalf("new-a after delete: %v", err)
	}
}

// TestACLSuperUser: a super user is allowed everything a DENY would
// refuse anyone else; the flag is per agent, the ACLs shared.
func TestACLSuperUser(t *testing.T) {
	t.Parallel()
	c := newACLCluster(t, func(cfg *Config) { cfg.Authz.SuperUsers = []string{"User:admin", anonymous} })
	ctx := aclCtx(t)
	if _, err := c.store.CreateTopic(ctx, "orders", 1, nil); err != nil {
		t.Fatal(err)
	}
	c.grant(t, authz.NewACL(resTopic, "*", lit, "User:*", "*", opAll, deny))
	c.grant(t, authz.NewACL(resCluster, clusterName, lit, "User:*", "*", opAll, deny))
	if err := produceCodes(on[*kmsg.ProduceResponse](t, c.cb, produceReq(t, "orders", 0)), nil); err != nil {
		t.Fatal(err)
	}
	if err := codeIs(on[*kmsg.DescribeACLsResponse](t, c.cb, describeAllReq()).ErrorCode, nil); err != nil {
		t.Fatal(err)
	}
}

// TestACLAuthenticatedPrincipals: ACLs match the principal SASL
// authenticated (and User:* every User principal, the anonymous one too)
// and the client's host; a super user from the flag manages them.
func TestACLAuthenticatedPrincipals(t *testing.T) {
	t.Parallel()
	sa := newSecureAgent(t, func(c *Config) { c.Authz = AuthzConfig{Enabled: true, SuperUsers: []string{"User:alice"}} })
	ctx := aclCtx(t)
	topics := map[string]metadata.Topic{}
	for _, n := range []string{"orders", "shared", "hosty", "hosty2"} {
		tp, err := sa.store.CreateTopic(ctx, n, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		topics[n] = tp
	}
	sasl := func(user string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(sa.addr(t, "SASL_PLAINTEXT")),
			kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha512Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	alice, bob := sasl("alice"), sasl("bob")
	anonCl := aclClient(t, sa.Agent) // KafkaAddr: the first listener, PLAINTEXT
	creq := kmsg.NewPtrCreateACLsRequest()
	for _, x := range []metadata.ACL{
		authz.NewACL(resTopic, "orders", lit, "User:bob", "*", opRead, allow),
		authz.NewACL(resTopic, "shared", lit, "User:*", "*", opWrite, allow),
		authz.NewACL(resTopic, "hosty", lit, "User:bob", "10.9.9.9", opRead, allow),
		authz.NewACL(resTopic, "hosty2", lit, "User:bob", "127.0.0.1", opRead, allow),
	} {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceType(x.ResourceType), x.ResourceName, kmsg.ACLResourcePatternType(x.PatternType)
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = x.Principal, x.Host, kmsg.ACLOperation(x.Operation), kmsg.ACLPermissionType(x.Permission)
		creq.Creations = append(creq.Creations, cr)
	}
	// bob may not manage ACLs; alice, a super user, may.
	if err := codeIs(on[*kmsg.CreateACLsResponse](t, bob, creq).Results[0].ErrorCode, kerr.ClusterAuthorizationFailed); err != nil {
		t.Fatal("bob creates acls:", err)
	}
	for i, r := range on[*kmsg.CreateACLsResponse](t, alice, creq).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("alice creates acl %d: %v", i, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	fetchCode := func(cl *kgo.Client, topic string) int16 {
		return on[*kmsg.FetchResponse](t, cl, fetchReq(topics[topic], 0)).Topics[0].Partitions[0].ErrorCode
	}
	produceCode := func(cl *kgo.Client, topic string) error {
		return produceCodes(on[*kmsg.ProduceResponse](t, cl, produceReq(t, topic, 0)), nil)
	}
	for _, tc := range []struct {
		what string
		err  error
	}{
		{"bob fetches orders", codeIs(fetchCode(bob, "orders"), nil)},
		{"anonymous fetches orders", codeIs(fetchCode(anonCl, "orders"), kerr.TopicAuthorizationFailed)},
		{"bob fetches hosty (another host's grant)", codeIs(fetchCode(bob, "hosty"), kerr.TopicAuthorizationFailed)},
		{"bob fetches hosty2 (his host's grant)", codeIs(fetchCode(bob, "hosty2"), nil)},
		{"bob produces to shared (User:*)", produceCode(bob, "shared")},
		{"anonymous produces to shared (User:*)", produceCode(anonCl, "shared")},
		{"bob produces to orders", produceCodes(on[*kmsg.ProduceResponse](t, bob, produceReq(t, "orders", 0)), kerr.TopicAuthorizationFailed)},
		{"alice (super user) fetches hosty", codeIs(fetchCode(alice, "hosty"), nil)},
	} {
		if tc.err != nil {
			t.Errorf("%s: %v", tc.what, tc.err)
		}
	}
}

// TestACLConsumerGroupKIP848: ConsumerGroupHeartbeat needs READ on the
// group and DESCRIBE on the topics subscribed; ConsumerGroupDescribe
// refuses a group whose assignments name a topic the client may not
// DESCRIBE, as Kafka does.
func TestACLConsumerGroupKIP848(t *testing.T) {
	t.Parallel()
	c := newACLCluster(t)
	ctx := aclCtx(t)
	if _, err := c.store.CreateTopic(ctx, "orders", 2, nil); err != nil {
		t.Fatal(err)
	}
	group := ownedKey(t, c.b, "cg")
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = group, "member-1", 0, 10000
	hb.SubscribedTopicNames, hb.Topics = []string{"orders"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	hbCode := func() int16 { return on[*kmsg.ConsumerGroupHeartbeatResponse](t, c.cb, hb).ErrorCode }
	if err := codeIs(hbCode(), kerr.GroupAuthorizationFailed); err != nil {
		t.Fatal("heartbeat without READ on the group:", err)
	}
	c.grant(t, allowAnon(resGroup, group, lit, opRead))
	eventually(t, "b asks for DESCRIBE on the subscribed topic", func() error { return codeIs(hbCode(), kerr.TopicAuthorizationFailed) })
	c.grant(t, allowAnon(resTopic, "orders", lit, opDescribe))
	eventually(t, "b takes the member", func() error { return codeIs(hbCode(), nil) })

	describe := func() kmsg.ConsumerGroupDescribeResponseGroup {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		return on[*kmsg.ConsumerGroupDescribeResponse](t, c.cb, req).Groups[0]
	}
	g := describe()
	if g.ErrorCode != 0 || len(g.Members) != 1 || len(g.Members[0].TargetAssignment.TopicPartitions) != 1 ||
		g.Members[0].TargetAssignment.TopicPartitions[0].Topic != "orders" {
		t.Fatalf("describe: %v %+v", kerr.ErrorForCode(g.ErrorCode), g.Members)
	}
	c.grant(t, denyAnon(resTopic, "orders", opDescribe))
	eventually(t, "b refuses to describe the group", func() error {
		g := describe()
		if len(g.Members) != 0 {
			return fmt.Errorf("members described: %+v", g.Members)
		}
		return codeIs(g.ErrorCode, kerr.TopicAuthorizationFailed)
	})
}
