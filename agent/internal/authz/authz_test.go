package authz

import (
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
)

const (
	resTopic    = kmsg.ACLResourceTypeTopic
	resGroup    = kmsg.ACLResourceTypeGroup
	resCluster  = kmsg.ACLResourceTypeCluster
	resTxnID    = kmsg.ACLResourceTypeTransactionalId
	clusterName = ClusterName
	anonymous   = "User:ANONYMOUS"

	lit   = kmsg.ACLResourcePatternTypeLiteral
	pre   = kmsg.ACLResourcePatternTypePrefixed
	allow = kmsg.ACLPermissionTypeAllow
	deny  = kmsg.ACLPermissionTypeDeny
)

// TestACLDecide: Kafka's StandardAuthorizer rules, one action at a time.
func TestACLDecide(t *testing.T) {
	alice, bob := "User:alice", "User:bob"
	for _, tc := range []struct {
		name        string
		acls        []metadata.ACL
		principal   string
		host        string
		op          kmsg.ACLOperation
		typ         kmsg.ACLResourceType
		res         string
		allowIfNone bool
		want        bool
	}{
		{"no acls: denied", nil, alice, "10.0.0.1", opRead, resTopic, "orders", false, false},
		{"no acls, allow everyone", nil, alice, "10.0.0.1", opRead, resTopic, "orders", true, true},
		{"literal allow", []metadata.ACL{NewACL(resTopic, "orders", lit, alice, "*", opRead, allow)},
			alice, "10.0.0.1", opRead, resTopic, "orders", false, true},
		{"literal allow of another name", []metadata.ACL{NewACL(resTopic, "orders", lit, alice, "*", opRead, allow)},
			alice, "10.0.0.1", opRead, resTopic, "orders2", false, false},
		{"another name's acl is no acl for this one", []metadata.ACL{NewACL(resTopic, "orders", lit, alice, "*", opRead, allow)},
			alice, "10.0.0.1", opRead, resTopic, "orders2", true, true},
		{"acl of another principal: resource found, denied", []metadata.ACL{NewACL(resTopic, "orders", lit, bob, "*", opRead, allow)},
			alice, "10.0.0.1", opRead, resTopic, "orders", true, false},
		{"other operation not allowed", []metadata.ACL{NewACL(resTopic, "orders", lit, alice, "*", opRead, allow)},
			alice, "10.0.0.1", opWrite, resTopic, "orders", false, false},
		{"wildcard resource", []metadata.ACL{NewACL(resTopic, "*", lit, alice, "*", opWrite, allow)},
			alice, "10.0.0.1", opWrite, resTopic, "anything", false, true},
		{"prefixed", []metadata.ACL{NewACL(resTopic, "ord", pre, alice, "*", opRead, allow)},
			alice, "10.0.0.1", opRead, resTopic, "orders", false, true},
		{"prefixed not a prefix", []metadata.ACL{NewACL(resTopic, "ord", pre, alice, "*", opRead, allow)},
			alice, "10.0.0.1", opRead, resTopic, "or", false, false},
		{"prefixed is not a wildcard literal", []metadata.ACL{NewACL(resTopic, "orders", lit, alice, "*", opRead, allow)},
			alice, "10.0.0.1", opRead, resTopic, "ord", false, false},
		{"principal wildcard", []metadata.ACL{NewACL(resTopic, "orders", lit, "User:*", "*", opRead, allow)},
			alice, "10.0.0.1", opRead, resTopic, "orders", false, true},
		{"principal wildcard of another type", []metadata.ACL{NewACL(resTopic, "orders", lit, "Group:*", "*", opRead, allow)},
			alice, "10.0.0.1", opRead, resTopic, "orders", false, false},
		{"host exact", []metadata.ACL{NewACL(resTopic, "orders", lit, alice, "10.0.0.1", opRead, allow)},
			alice, "10.0.0.1", opRead, resTopic, "orders", false, true},
		{"host other", []metadata.ACL{NewACL(resTopic, "orders", lit, alice, "10.0.0.2", opRead, allow)},
			alice, "10.0.0.1", opRead, resTopic, "orders", false, false},
		{"deny wins over allow", []metadata.ACL{
			NewACL(resTopic, "ord", pre, alice, "*", opRead, allow),
			NewACL(resTopic, "orders", lit, alice, "*", opRead, deny),
		}, alice, "10.0.0.1", opRead, resTopic, "orders", false, false},
		{"wildcard deny wins over literal allow", []metadata.ACL{
			NewACL(resTopic, "orders", lit, alice, "*", opAll, allow),
			NewACL(resTopic, "*", lit, "User:*", "*", opWrite, deny),
		}, alice, "10.0.0.1", opWrite, resTopic, "orders", false, false},
		{"deny from one host only", []metadata.ACL{
			NewACL(resTopic, "orders", lit, alice, "*", opRead, allow),
			NewACL(resTopic, "orders", lit, alice, "10.0.0.9", opRead, deny),
		}, alice, "10.0.0.1", opRead, resTopic, "orders", false, true},
		{"deny all denies read", []metadata.ACL{
			NewACL(resTopic, "orders", lit, alice, "*", opRead, allow),
			NewACL(resTopic, "orders", lit, alice, "*", opAll, deny),
		}, alice, "10.0.0.1", opRead, resTopic, "orders", false, false},
		{"deny of another operation", []metadata.ACL{
			NewACL(resTopic, "orders", lit, alice, "*", opRead, allow),
			NewACL(resTopic, "orders", lit, alice, "*", opWrite, deny),
		}, alice, "10.0.0.1", opRead, resTopic, "orders", false, true},
		{"deny read does not deny describe", []metadata.ACL{
			NewACL(resTopic, "orders", lit, alice, "*", opDescribe, allow),
			NewACL(resTopic, "orders", lit, alice, "*", opRead, deny),
		}, alice, "10.0.0.1", opDescribe, resTopic, "orders", false, true},
		{"read implies describe", []metadata.ACL{NewACL(resTopic, "orders", lit, alice, "*", opRead, allow)},
			alice, "10.0.0.1", opDescribe, resTopic, "orders", false, true},
		{"write implies describe", []metadata.ACL{NewACL(resTopic, "orders", lit, alice, "*", opWrite, allow)},
			alice, "10.0.0.1", opDescribe, resTopic, "orders", false, true},
		{"delete implies describe", []metadata.ACL{NewACL(resTopic, "orders", lit, alice, "*", opDelete, allow)},
			alice, "10.0.0.1", opDescribe, resTopic, "orders", false, true},
		{"alter implies describe", []metadata.ACL{NewACL(resTopic, "orders", lit, alice, "*", opAlter, allow)},
			alice, "10.0.0.1", opDescribe, resTopic, "orders", false, true},
		{"describe implies nothing", []metadata.ACL{NewACL(resTopic, "orders", lit, alice, "*", opDescribe, allow)},
			alice, "10.0.0.1", opRead, resTopic, "orders", false, false},
		{"alter_configs implies describe_configs", []metadata.ACL{NewACL(resTopic, "orders", lit, alice, "*", opAlterConfigs, allow)},
			alice, "10.0.0.1", opDescribeConfigs, resTopic, "orders", false, true},
		{"alter_configs does not imply describe", []metadata.ACL{NewACL(resTopic, "orders", lit, alice, "*", opAlterConfigs, allow)},
			alice, "10.0.0.1", opDescribe, resTopic, "orders", false, false},
		{"all implies write", []metadata.ACL{NewACL(resTopic, "orders", lit, alice, "*", opAll, allow)},
			alice, "10.0.0.1", opWrite, resTopic, "orders", false, true},
		{"resource types apart", []metadata.ACL{NewACL(resGroup, "orders", lit, alice, "*", opRead, allow)},
			alice, "10.0.0.1", opRead, resTopic, "orders", false, false},
		{"cluster", []metadata.ACL{NewACL(resCluster, clusterName, lit, alice, "*", opAlter, allow)},
			alice, "10.0.0.1", opAlter, resCluster, clusterName, false, true},
		{"transactional id prefixed", []metadata.ACL{NewACL(resTxnID, "app-", pre, alice, "*", opWrite, allow)},
			alice, "10.0.0.1", opWrite, resTxnID, "app-1", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSnapshot(1, tc.acls)
			if got := s.decide(tc.principal, tc.host, tc.op, tc.typ, tc.res, tc.allowIfNone); got != tc.want {
				t.Fatalf("decide(%s %s %s %q from %s) = %v, want %v", tc.principal, tc.op, tc.typ, tc.res, tc.host, got, tc.want)
			}
		})
	}
}

// TestACLAllowedAny: authorizeByResourceType (KIP-679) as Kafka's
// Authorizer default computes it, for WRITE on some topic.
func TestACLAllowedAny(t *testing.T) {
	anon := anonymous
	for _, tc := range []struct {
		name string
		acls []metadata.ACL
		want bool
	}{
		{"none", nil, false},
		{"literal allow", []metadata.ACL{NewACL(resTopic, "t", lit, anon, "*", opWrite, allow)}, true},
		{"all allow", []metadata.ACL{NewACL(resTopic, "t", lit, anon, "*", opAll, allow)}, true},
		{"read is not write", []metadata.ACL{NewACL(resTopic, "t", lit, anon, "*", opRead, allow)}, false},
		{"someone else's", []metadata.ACL{NewACL(resTopic, "t", lit, "User:bob", "*", opWrite, allow)}, false},
		{"other host", []metadata.ACL{NewACL(resTopic, "t", lit, anon, "10.9.9.9", opWrite, allow)}, false},
		{"group is not topic", []metadata.ACL{NewACL(resGroup, "t", lit, anon, "*", opWrite, allow)}, false},
		{"denied same literal", []metadata.ACL{
			NewACL(resTopic, "t", lit, anon, "*", opWrite, allow), NewACL(resTopic, "t", lit, anon, "*", opWrite, deny),
		}, false},
		{"denied by a wider prefix", []metadata.ACL{
			NewACL(resTopic, "team-a", pre, anon, "*", opWrite, allow), NewACL(resTopic, "team", pre, anon, "*", opWrite, deny),
		}, false},
		{"a narrower deny leaves the prefix", []metadata.ACL{
			NewACL(resTopic, "team", pre, anon, "*", opWrite, allow), NewACL(resTopic, "team-a", pre, anon, "*", opWrite, deny),
		}, true},
		{"wildcard deny", []metadata.ACL{
			NewACL(resTopic, "t", lit, anon, "*", opWrite, allow), NewACL(resTopic, "*", lit, anon, "*", opWrite, deny),
		}, false},
		{"one of two survives", []metadata.ACL{
			NewACL(resTopic, "a", lit, anon, "*", opWrite, allow), NewACL(resTopic, "b", lit, anon, "*", opWrite, allow),
			NewACL(resTopic, "a", lit, anon, "*", opWrite, deny),
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := New(Config{Enabled: true}, nil, slog.New(slog.DiscardHandler))
			z.snap.Store(newSnapshot(1, tc.acls))
			if got := z.AllowedAny(nil, anonymous, "127.0.0.1", opWrite, resTopic); got != tc.want {
				t.Fatalf("allowedAny = %v, want %v", got, tc.want)
			}
		})
	}
	// Super users need no ACL.
	z := New(Config{Enabled: true, SuperUsers: []string{anon}}, nil, slog.New(slog.DiscardHandler))
	if !z.AllowedAny(nil, anonymous, "127.0.0.1", opWrite, resTopic) {
		t.Fatal("a super user is refused")
	}
}

// TestACLConnCache: a connection's cached decision is used while the
// snapshot and principal stay, and dropped when either changes.
func TestACLConnCache(t *testing.T) {
	z := New(Config{Enabled: true}, nil, slog.New(slog.DiscardHandler))
	var c Cache
	grant := newSnapshot(1, []metadata.ACL{NewACL(resTopic, "t", lit, anonymous, "*", opRead, allow)})
	z.snap.Store(grant)
	if !z.Allowed(&c, anonymous, "127.0.0.1", opRead, resTopic, "t") {
		t.Fatal("refused with a grant")
	}
	z.snap.Store(newSnapshot(2, nil))
	if z.Allowed(&c, anonymous, "127.0.0.1", opRead, resTopic, "t") {
		t.Fatal("a new snapshot without the grant still allows: the cache outlived it")
	}
	z.snap.Store(grant)
	if !z.Allowed(&c, anonymous, "127.0.0.1", opRead, resTopic, "t") {
		t.Fatal("refused after the grant came back")
	}
	if z.Allowed(&c, "User:mallory", "127.0.0.1", opRead, resTopic, "t") {
		t.Fatal("a new principal got the anonymous principal's cached decision")
	}
}
