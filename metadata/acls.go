package metadata

import (
	"context"
	"strings"
)

// The numbers of Kafka's ACL enums (org.apache.kafka.common.acl and
// .resource), as the wire protocol and the store carry them. metadata
// stores and filters ACLs; what they allow is the agent's business.
const (
	// ACLAny is ANY in every enum: a filter value that matches all.
	ACLAny int8 = 1

	// Resource types.
	ACLResourceTopic           int8 = 2
	ACLResourceGroup           int8 = 3
	ACLResourceCluster         int8 = 4
	ACLResourceTransactionalID int8 = 5

	// Pattern types. PatternMatch is a filter's "every pattern that
	// matches this resource name"; stored ACLs are literal or prefixed.
	ACLPatternMatch    int8 = 2
	ACLPatternLiteral  int8 = 3
	ACLPatternPrefixed int8 = 4

	// Permission types.
	ACLDeny  int8 = 2
	ACLAllow int8 = 3
)

// ACLWildcard is the literal resource name, principal name and host that
// match every name, principal and host.
const ACLWildcard = "*"

// ACL is one stored access control entry bound to a resource pattern
// (Kafka's AclBinding). Two ACLs with every field equal are one ACL.
type ACL struct {
	ResourceType int8
	ResourceName string
	PatternType  int8 // ACLPatternLiteral or ACLPatternPrefixed
	Principal    string
	Host         string
	Operation    int8
	Permission   int8
}

// ACLFilter selects ACLs as Kafka's AclBindingFilter does: ACLAny (or a
// nil string) matches every value; PatternType ACLPatternMatch with a
// name selects the literal ACLs of that name, the literal wildcard and
// the prefixed ACLs whose prefix the name starts with.
type ACLFilter struct {
	ResourceType int8
	ResourceName *string
	PatternType  int8
	Principal    *string
	Host         *string
	Operation    int8
	Permission   int8
}

// AllACLs is the filter that matches every ACL.
var AllACLs = ACLFilter{ResourceType: ACLAny, PatternType: ACLAny, Operation: ACLAny, Permission: ACLAny}

// Matches reports whether the filter selects acl.
func (f ACLFilter) Matches(acl ACL) bool {
	if f.ResourceType != ACLAny && f.ResourceType != acl.ResourceType {
		return false
	}
	if f.PatternType != ACLAny && f.PatternType != ACLPatternMatch && f.PatternType != acl.PatternType {
		return false
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		switch {
		case f.PatternType != ACLPatternMatch:
			if name != acl.ResourceName {
				return false
			}
		case acl.PatternType == ACLPatternLiteral:
			if name != acl.ResourceName && acl.ResourceName != ACLWildcard {
				return false
			}
		case acl.PatternType == ACLPatternPrefixed:
			if !strings.HasPrefix(name, acl.ResourceName) {
				return false
			}
		default:
			return false
		}
	}
	if f.Principal != nil && *f.Principal != acl.Principal {
		return false
	}
	if f.Host != nil && *f.Host != acl.Host {
		return false
	}
	if f.Operation != ACLAny && f.Operation != acl.Operation {
		return false
	}
	return f.Permission == ACLAny || f.Permission == acl.Permission
}

// ACLStore is the part of the Store that holds ACLs. Every change bumps
// the ACL version in the same transaction, so an agent that caches ACLs
// reloads them when ACLVersion moves.
type ACLStore interface {
	// CreateACLs stores acls in one transaction; ACLs already stored are
	// left as they are (creating an ACL twice is no error, as in Kafka).
	CreateACLs(ctx context.Context, acls []ACL) error
	// ListACLs returns the ACLs f matches, sorted by resource type, name,
	// pattern type, principal, host, operation and permission.
	ListACLs(ctx context.Context, f ACLFilter) ([]ACL, error)
	// DeleteACLs deletes, in one transaction, the ACLs any of filters
	// matches, and returns for each filter the ACLs it matched (sorted as
	// ListACLs; an ACL two filters match is listed under both).
	DeleteACLs(ctx context.Context, filters []ACLFilter) ([][]ACL, error)
	// ACLVersion is a number that changes whenever ACLs are created or
	// deleted (0 before any change).
	ACLVersion(ctx context.Context) (int64, error)
}
