// Package authz is the authorizer: Kafka's ACL authorization (StandardAuthorizer's rules)
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
// Caching. The agent holds one immutable snapshot of every ACL (snapshot)
// and the store's ACL version it was read at. The heartbeat loop polls the
// version (every HeartbeatInterval, 1 s) and reloads the ACLs when it
// moved; an ACL change through this agent reloads at once. So an ACL
// change made through any agent is enforced everywhere within about one
// heartbeat interval plus a store read. Each connection caches its
// decisions (Cache) against the snapshot they were made with; a new
// snapshot, or a new principal (re-authentication), empties the cache.
//
// With authorization off (Config.Enabled false) every action is
// allowed and the ACL APIs answer SECURITY_DISABLED, as a Kafka broker
// without an authorizer does.
//
// The package sees the store through the two calls it makes (Store) and
// knows nothing of connections: the agent hands it a principal, a host
// and the connection's Cache.
package authz

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
)

// Config configures ACL authorization.
type Config struct {
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

// ClusterName is the name of the one CLUSTER resource.
const ClusterName = "kafka-cluster"

const (
	opAll             = kmsg.ACLOperationAll
	opRead            = kmsg.ACLOperationRead
	opWrite           = kmsg.ACLOperationWrite
	opDelete          = kmsg.ACLOperationDelete
	opAlter           = kmsg.ACLOperationAlter
	opDescribe        = kmsg.ACLOperationDescribe
	opDescribeConfigs = kmsg.ACLOperationDescribeConfigs
	opAlterConfigs    = kmsg.ACLOperationAlterConfigs
)

// Store is what the authorizer reads of the metadata store.
type Store interface {
	ACLVersion(ctx context.Context) (int64, error)
	ListACLs(ctx context.Context, f metadata.ACLFilter) ([]metadata.ACL, error)
}

// Authorizer decides actions for the agent's connections. snap is
// replaced whole (atomically) on reload; loadMu serializes reloads so an
// older read never replaces a newer one.
type Authorizer struct {
	cfg   Config
	super map[string]bool
	store Store
	log   *slog.Logger

	snap   atomic.Pointer[snapshot]
	loadMu sync.Mutex
}

// New returns an authorizer of cfg over store.
func New(cfg Config, store Store, log *slog.Logger) *Authorizer {
	z := &Authorizer{cfg: cfg, super: map[string]bool{}, store: store, log: log.With("component", "authorizer")}
	for _, u := range cfg.SuperUsers {
		z.super[u] = true
	}
	z.snap.Store(newSnapshot(-1, nil))
	return z
}

// Refresh reloads the ACLs if the store's version is not the snapshot's.
// A no-op with authorization off.
func (z *Authorizer) Refresh(ctx context.Context) error {
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
	z.snap.Store(newSnapshot(v, acls))
	z.log.Debug("acls loaded", "version", v, "acls", len(acls))
	return nil
}

// Poll is Refresh for the heartbeat loop: a failure keeps the ACLs it
// had (and is logged).
func (z *Authorizer) Poll(ctx context.Context) {
	if err := z.Refresh(ctx); err != nil {
		z.log.Warn("reload acls failed", "err", err)
	}
}

// Enabled reports whether actions are checked against the ACLs.
func (z *Authorizer) Enabled() bool { return z.cfg.Enabled }

// Allowed decides op on the resource (typ, name) for principal from host,
// through a connection's decision cache (nil: none, as for the HTTP
// endpoints).
func (z *Authorizer) Allowed(cache *Cache, principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	if !z.cfg.Enabled || z.super[principal] {
		return true
	}
	snap := z.snap.Load()
	key := decisionKey{op: op, typ: typ, name: name}
	if cache != nil {
		if ok, hit := cache.get(snap, principal, key); hit {
			return ok
		}
	}
	ok := snap.decide(principal, host, op, typ, name, z.cfg.AllowEveryoneIfNoACL)
	if cache != nil {
		cache.put(snap, principal, key, ok)
	}
	if !ok { // once per connection, snapshot and action: the cache answers repeats
		z.log.Debug("denied", "principal", principal, "host", host, "operation", op, "resource_type", typ, "resource", name)
	}
	return ok
}

// AllowedAny is Kafka's authorizeByResourceType: whether principal from
// host may do op on
// some resource of type typ — some ALLOW of its own (or its wildcard) that
// no DENY of the same or a wider pattern overrides. Idempotent producers
// need it for WRITE on some topic (KIP-679). Not cached: InitProducerId
// is rare.
func (z *Authorizer) AllowedAny(cache *Cache, principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	// A made-up name: what super users and allow-everyone-if-no-ACL give.
	if z.Allowed(cache, principal, host, op, typ, "hardcode") {
		return true
	}
	snap := z.snap.Load()
	p := principal
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

// snapshot is every ACL at one store version, indexed by resource
// type: literal ACLs by name ("*" included), prefixed ones in a list.
// Immutable.
type snapshot struct {
	version int64
	all     []metadata.ACL
	byType  map[int8]*typeACLs
}

type typeACLs struct {
	literal  map[string][]metadata.ACL
	prefixed []metadata.ACL
}

func newSnapshot(version int64, acls []metadata.ACL) *snapshot {
	s := &snapshot{version: version, all: acls, byType: map[int8]*typeACLs{}}
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

// decide applies Kafka's rules (see the package comment) to one action.
func (s *snapshot) decide(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string, allowIfNone bool) bool {
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

// NewACL is the stored form of an ACL given in Kafka's types (a
// CreateAcls creation).
func NewACL(typ kmsg.ACLResourceType, name string, pattern kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) metadata.ACL {
	return metadata.ACL{ResourceType: int8(typ), ResourceName: name, PatternType: int8(pattern),
		Principal: principal, Host: host, Operation: int8(op), Permission: int8(perm)}
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

// Cache is a connection's cache of decisions, valid for one snapshot
// and one principal. Requests of a connection run concurrently, so mu
// guards the fields.
type Cache struct {
	mu        sync.Mutex
	snap      *snapshot
	principal string
	m         map[decisionKey]bool
}

func (ca *Cache) get(snap *snapshot, principal string, k decisionKey) (ok, hit bool) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if ca.snap != snap || ca.principal != principal {
		return false, false
	}
	ok, hit = ca.m[k]
	return ok, hit
}

func (ca *Cache) put(snap *snapshot, principal string, k decisionKey, ok bool) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if ca.snap != snap || ca.principal != principal || len(ca.m) >= maxCachedDecisions {
		ca.snap, ca.principal, ca.m = snap, principal, map[decisionKey]bool{}
	}
	ca.m[k] = ok
}
