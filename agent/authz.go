package agent

// The authorizer: Kafka's ACL authorization (StandardAuthorizer's rules)
// over the ACLs in the metadata store.
//
// An action is an operation on a resource (TOPIC, GROUP, CLUSTER named
// "kafka-cluster", TRANSACTIONAL_ID) by a connection's principal from its
// host. Super users may do anything. Otherwise the ACLs on the resource
// are those bound to its name literally, to the literal wildcard "*", and
// to every prefix of its name (PREFIXED); of these, the ones whose
// principal is the connection's or "Type:*" and whose host is the
// connection's or "*" decide: any DENY of the operation (or ALL) denies;
// else any ALLOW of the operation allows, where READ, WRITE, DELETE and
// ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS and ALL
// implies everything; else the action is denied. A resource with no ACL
// at all, for anyone, is allowed only with AllowEveryoneIfNoACL (Kafka's
// allow.everyone.if.no.acl.found).
//
// Caching. The agent holds one immutable snapshot of every ACL (aclSnapshot)
// and the store's ACL version it was read at. The heartbeat loop polls the
// version (every HeartbeatInterval, 1 s) and reloads the ACLs when it
// moved; an ACL change through this agent reloads at once. So an ACL
// change made through any agent is enforced everywhere within about one
// heartbeat interval plus a store read. Each connection caches its
// decisions (connAuthz) against the snapshot they were made with; a new
// snapshot, or a new principal (re-authentication), empties the cache.
//
// With authorization off (AuthzConfig.Enabled false) every action is
// allowed and the ACL APIs answer SECURITY_DISABLED, as a Kafka broker
// without an authorizer does.

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
)

// AuthzConfig configures ACL authorization.
type AuthzConfig struct {
	// Enabled turns authorization on (floe's --authorizer): every request
	// is checked against the ACLs, and the ACL APIs work.
	Enabled bool
	// SuperUsers are principals ("User:admin") allowed everything,
	// whatever the ACLs say (Kafka's super.users).
	SuperUsers []string
	// AllowEveryoneIfNoACL allows an action on a resource no ACL names
	// (allow.everyone.if.no.acl.found; false, as in Kafka).
	AllowEveryoneIfNoACL bool
}

// clusterName is the name of the one CLUSTER resource.
const clusterName = "kafka-cluster"

// ACL enum values the checks use, as kmsg names them.
const (
	opAll             = kmsg.ACLOperationAll
	opRead            = kmsg.ACLOperationRead
	opWrite           = kmsg.ACLOperationWrite
	opCreate          = kmsg.ACLOperationCreate
	opDelete          = kmsg.ACLOperationDelete
	opAlter           = kmsg.ACLOperationAlter
	opDescribe        = kmsg.ACLOperationDescribe
	opClusterAction   = kmsg.ACLOperationClusterAction
	opDescribeConfigs = kmsg.ACLOperationDescribeConfigs
	opAlterConfigs    = kmsg.ACLOperationAlterConfigs
	opIdempotentWrite = kmsg.ACLOperationIdempotentWrite

	resTopic   = kmsg.ACLResourceTypeTopic
	resGroup   = kmsg.ACLResourceTypeGroup
	resCluster = kmsg.ACLResourceTypeCluster
	resTxnID   = kmsg.ACLResourceTypeTransactionalId
)

// authorizer decides actions for the agent's connections. snap is
// replaced whole (atomically) on reload; loadMu serializes reloads so an
// older read never replaces a newer one.
type authorizer struct {
	cfg   AuthzConfig
	super map[string]bool
	store metadata.ACLStore
	log   *slog.Logger

	snap   atomic.Pointer[aclSnapshot]
	loadMu sync.Mutex
}

func newAuthorizer(cfg AuthzConfig, store metadata.ACLStore, log *slog.Logger) *authorizer {
	z := &authorizer{cfg: cfg, super: map[string]bool{}, store: store, log: log.With("component", "authorizer")}
	for _, u := range cfg.SuperUsers {
		z.super[u] = true
	}
	z.snap.Store(newACLSnapshot(-1, nil))
	return z
}

// refresh reloads the ACLs if the store's version is not the snapshot's.
// A no-op with authorization off.
func (z *authorizer) refresh(ctx context.Context) error {
	if !z.cfg.Enabled {
		return nil
	}
	z.loadMu.Lock()
	defer z.loadMu.Unlock()
	v, err := z.store.ACLVersion(ctx)
	if err != nil {
		return err
	}
	if v == z.snap.Load().version {
		return nil
	}
	// The version is read before the ACLs: a change between the two reads
	// leaves newer ACLs under an older version, reloaded at the next poll.
	acls, err := z.store.ListACLs(ctx, metadata.AllACLs)
	if err != nil {
		return err
	}
	z.snap.Store(newACLSnapshot(v, acls))
	z.log.Debug("acls loaded", "version", v, "acls", len(acls))
	return nil
}

// poll is refresh for the heartbeat loop: a failure keeps the ACLs it
// had (and is logged).
func (z *authorizer) poll(ctx context.Context) {
	if err := z.refresh(ctx); err != nil {
		z.log.Warn("reload acls failed", "err", err)
	}
}

// allowed decides op on the resource (typ, name) for c, through c's
// decision cache.
func (z *authorizer) allowed(c *conn, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	if !z.cfg.Enabled {
		return true
	}
	p := c.principal()
	if z.super[p] {
		return true
	}
	snap := z.snap.Load()
	key := decisionKey{op: op, typ: typ, name: name}
	if ok, hit := c.authz.get(snap, p, key); hit {
		return ok
	}
	ok := snap.decide(p, c.host(), op, typ, name, z.cfg.AllowEveryoneIfNoACL)
	c.authz.put(snap, p, key, ok)
	if !ok { // once per connection, snapshot and action: the cache answers repeats
		z.log.Debug("denied", "principal", p, "host", c.host(), "operation", op, "resource_type", typ, "resource", name)
	}
	return ok
}

// allowedPrincipal decides op on (typ, name) for a principal from host
// with no connection (the HTTP endpoints): no decision cache.
func (z *authorizer) allowedPrincipal(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	if !z.cfg.Enabled || z.super[principal] {
		return true
	}
	return z.snap.Load().decide(principal, host, op, typ, name, z.cfg.AllowEveryoneIfNoACL)
}

// allowedAny is Kafka's authorizeByResourceType: whether c may do op on
// some resource of type typ — some ALLOW of its own (or its wildcard) that
// no DENY of the same or a wider pattern overrides. Idempotent producers
// need it for WRITE on some topic (KIP-679). Not cached: InitProducerId
// is rare.
func (z *authorizer) allowedAny(c *conn, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	// A made-up name: what super users and allow-everyone-if-no-ACL give.
	if z.allowed(c, op, typ, "hardcode") {
		return true
	}
	snap := z.snap.Load()
	p, host := c.principal(), c.host()
	denyLiteral, denyPrefix := map[string]bool{}, map[string]bool{}
	var allows []metadata.ACL
	for _, a := range snap.all {
		if int8(typ) != a.ResourceType || !hostMatches(a.Host, host) ||
			(a.Principal != p && a.Principal != "User:*") ||
			(a.Operation != int8(op) && a.Operation != int8(opAll)) {
			continue
		}
		switch {
		case a.Permission == metadata.ACLDeny && a.PatternType == metadata.ACLPatternLiteral:
			if a.ResourceName == metadata.ACLWildcard {
				return false
			}
			denyLiteral[a.ResourceName] = true
		case a.Permission == metadata.ACLDeny:
			denyPrefix[a.ResourceName] = true
		case a.PatternType == metadata.ACLPatternLiteral && a.ResourceName == metadata.ACLWildcard:
			return true
		default:
			allows = append(allows, a)
		}
	}
next:
	for _, a := range allows {
		if a.PatternType == metadata.ACLPatternLiteral && denyLiteral[a.ResourceName] {
			continue
		}
		for i := 1; i <= len(a.ResourceName); i++ {
			if denyPrefix[a.ResourceName[:i]] {
				continue next
			}
		}
		return true
	}
	return false
}

// aclSnapshot is every ACL at one store version, indexed by resource
// type: literal ACLs by name ("*" included), prefixed ones in a list.
// Immutable.
type aclSnapshot struct {
	version int64
	all     []metadata.ACL
	byType  map[int8]*typeACLs
}

type typeACLs struct {
	literal  map[string][]metadata.ACL
	prefixed []metadata.ACL
}

func newACLSnapshot(version int64, acls []metadata.ACL) *aclSnapshot {
	s := &aclSnapshot{version: version, all: acls, byType: map[int8]*typeACLs{}}
	for _, a := range acls {
		t := s.byType[a.ResourceType]
		if t == nil {
			t = &typeACLs{literal: map[string][]metadata.ACL{}}
			s.byType[a.ResourceType] = t
		}
		if a.PatternType == metadata.ACLPatternPrefixed {
			t.prefixed = append(t.prefixed, a)
		} else {
			t.literal[a.ResourceName] = append(t.literal[a.ResourceName], a)
		}
	}
	return s
}

// decide applies Kafka's rules (see the file comment) to one action.
func (s *aclSnapshot) decide(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string, allowIfNone bool) bool {
	t := s.byType[int8(typ)]
	if t == nil {
		return allowIfNone
	}
	found, allow := false, false
	wild := principalWildcard(principal)
	check := func(a metadata.ACL) bool { // true: denied
		found = true
		if (a.Principal != principal && a.Principal != wild) || !hostMatches(a.Host, host) {
			return false
		}
		if a.Permission == metadata.ACLDeny {
			return a.Operation == int8(opAll) || a.Operation == int8(op)
		}
		if a.Permission == metadata.ACLAllow && implies(kmsg.ACLOperation(a.Operation), op) {
			allow = true
		}
		return false
	}
	for _, a := range t.literal[name] {
		if check(a) {
			return false
		}
	}
	if name != metadata.ACLWildcard {
		for _, a := range t.literal[metadata.ACLWildcard] {
			if check(a) {
				return false
			}
		}
	}
	for _, a := range t.prefixed {
		if strings.HasPrefix(name, a.ResourceName) && check(a) {
			return false
		}
	}
	if !found {
		return allowIfNone
	}
	return allow
}

// implies reports whether an ALLOW of granted allows op.
func implies(granted, op kmsg.ACLOperation) bool {
	if granted == op || granted == opAll {
		return true
	}
	switch op {
	case opDescribe:
		return granted == opRead || granted == opWrite || granted == opDelete || granted == opAlter
	case opDescribeConfigs:
		return granted == opAlterConfigs
	}
	return false
}

func hostMatches(aclHost, host string) bool {
	return aclHost == metadata.ACLWildcard || aclHost == host
}

// principalWildcard is "Type:*" for a "Type:name" principal.
func principalWildcard(p string) string {
	if i := strings.IndexByte(p, ':'); i >= 0 {
		return p[:i+1] + metadata.ACLWildcard
	}
	return metadata.ACLWildcard
}

// decisionKey is one action of a connection's principal.
type decisionKey struct {
	op   kmsg.ACLOperation
	typ  kmsg.ACLResourceType
	name string
}

// maxCachedDecisions bounds a connection's decision cache; a full cache
// starts over (a client naming more resources than this gains little from
// caching).
const maxCachedDecisions = 4096

// connAuthz is a connection's cache of decisions, valid for one snapshot
// and one principal. Requests of a connection run concurrently, so mu
// guards the fields.
type connAuthz struct {
	mu        sync.Mutex
	snap      *aclSnapshot
	principal string
	m         map[decisionKey]bool
}

func (ca *connAuthz) get(snap *aclSnapshot, principal string, k decisionKey) (ok, hit bool) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if ca.snap != snap || ca.principal != principal {
		return false, false
	}
	ok, hit = ca.m[k]
	return ok, hit
}

func (ca *connAuthz) put(snap *aclSnapshot, principal string, k decisionKey, ok bool) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if ca.snap != snap || ca.principal != principal || len(ca.m) >= maxCachedDecisions {
		ca.snap, ca.principal, ca.m = snap, principal, map[decisionKey]bool{}
	}
	ca.m[k] = ok
}

// Helpers the API handlers call.

// authorize decides op on the resource (typ, name) for the request's
// connection.
func (a *Agent) authorize(r *request, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	return a.authz.allowed(r.c, op, typ, name)
}

// authorizeCluster decides op on the cluster.
func (a *Agent) authorizeCluster(r *request, op kmsg.ACLOperation) bool {
	return a.authz.allowed(r.c, op, resCluster, clusterName)
}

// authzEnabled reports whether requests are checked against ACLs.
func (a *Agent) authzEnabled() bool { return a.authz.cfg.Enabled }

// configAuthz checks op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a config
// resource as Kafka maps it: a topic's own, a group's own, the cluster's
// for brokers, broker loggers and client metrics. nil when allowed, or for
// types the handler refuses anyway.
func (a *Agent) configAuthz(r *request, op kmsg.ACLOperation, typ kmsg.ConfigResourceType, name string) *kerr.Error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !a.authorize(r, op, resTopic, name) {
			return kerr.TopicAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !a.authorize(r, op, resGroup, name) {
			return kerr.GroupAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		if !a.authorizeCluster(r, op) {
			return kerr.ClusterAuthorizationFailed
		}
	}
	return nil
}

// The operations Kafka reports as authorized for each resource type
// (AclEntry.supportedOperations), in the bit fields of Metadata,
// DescribeCluster, DescribeGroups and ConsumerGroupDescribe.
var supportedOps = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	resTopic:   {opRead, opWrite, opCreate, opDelete, opAlter, opDescribe, opDescribeConfigs, opAlterConfigs},
	resGroup:   {opRead, opDescribe, opDelete, opDescribeConfigs, opAlterConfigs},
	resCluster: {opCreate, opClusterAction, opDescribeConfigs, opAlterConfigs, opIdempotentWrite, opAlter, opDescribe},
	resTxnID:   {opDescribe, opWrite},
}

// describeGroupAccess is how a group describe (DescribeGroups,
// ConsumerGroupDescribe, ShareGroupDescribe) starts on each group: the
// error to answer it with (0: describe it) and the authorized operations
// to report (Kafka's "not asked" when the client did not ask, or when
// DESCRIBE is denied).
func (a *Agent) describeGroupAccess(r *request, group string, includeOps bool) (errCode int16, ops int32) {
	const notAsked = -2147483648
	if !a.authorize(r, opDescribe, resGroup, group) {
		return kerr.GroupAuthorizationFailed.Code, notAsked
	}
	if !includeOps {
		return 0, notAsked
	}
	return 0, a.authorizedOps(r, resGroup, group)
}

// authorizedOps is the bit field (1<<operation) of the operations r may do
// on a resource; every supported one with authorization off, as Kafka
// reports without an authorizer.
func (a *Agent) authorizedOps(r *request, typ kmsg.ACLResourceType, name string) int32 {
	var bits int32
	for _, op := range supportedOps[typ] {
		if a.authorize(r, op, typ, name) {
			bits |= 1 << op
		}
	}
	return bits
}
