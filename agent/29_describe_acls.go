package agent

// DescribeAcls (key 29), versions 0–3.
//
// Lists the stored ACLs a filter matches (metadata.ACLFilter: ANY matches
// every value, MATCH every pattern that applies to the named resource),
// grouped by resource pattern. It needs DESCRIBE on the cluster
// (CLUSTER_AUTHORIZATION_FAILED); with authorization off it answers
// SECURITY_DISABLED, as a Kafka broker without an authorizer does. v0
// filters carry no pattern type and match literal patterns only.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DescribeACLs), AdvertisedMin: 0, HandledMin: 0, Max: 3})
}

func (a *Agent) handleDescribeACLs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(code *kerr.Error, msg string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = code.Code, &msg
		return resp, nil
	}
	if !a.authorizeCluster(r, opDescribe) {
		return fail(kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed.Message)
	}
	if !a.authzEnabled() {
		return fail(kerr.SecurityDisabled, noAuthorizer)
	}
	f, msg := aclFilter(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	if msg != "" {
		return fail(kerr.InvalidRequest, msg)
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	acls, err := a.store.ListACLs(ctx, f)
	if err != nil {
		a.log.Warn("describe acls failed", "err", err)
		return fail(kerr.UnknownServerError, "")
	}
	// ListACLs sorts by pattern first: one resource per run of a pattern.
	for _, x := range acls {
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != kmsg.ACLResourceType(x.ResourceType) ||
			resp.Resources[n-1].ResourceName != x.ResourceName || resp.Resources[n-1].ResourcePatternType != kmsg.ACLResourcePatternType(x.PatternType) {
			rr := kmsg.NewDescribeACLsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ResourcePatternType = kmsg.ACLResourceType(x.ResourceType), x.ResourceName, kmsg.ACLResourcePatternType(x.PatternType)
			resp.Resources = append(resp.Resources, rr)
			n++
		}
		ra := kmsg.NewDescribeACLsResponseResourceACL()
		ra.Principal, ra.Host = x.Principal, x.Host
		ra.Operation, ra.PermissionType = kmsg.ACLOperation(x.Operation), kmsg.ACLPermissionType(x.Permission)
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, ra)
	}
	return resp, nil
}

// noAuthorizer is Kafka's message when the ACL APIs are used without an
// authorizer.
const noAuthorizer = "No Authorizer is configured on the broker"

// aclFilter turns a DescribeAcls or DeleteAcls filter into the store's,
// or returns why it is invalid: a field UNKNOWN, as Kafka refuses them.
func aclFilter(typ kmsg.ACLResourceType, name *string, pattern kmsg.ACLResourcePatternType, principal, host *string,
	op kmsg.ACLOperation, perm kmsg.ACLPermissionType) (metadata.ACLFilter, string) {
	switch {
	case typ == kmsg.ACLResourceTypeUnknown || typ > kmsg.ACLResourceTypeUser:
		return metadata.ACLFilter{}, "Invalid resource type in ACL filter"
	case pattern == kmsg.ACLResourcePatternTypeUnknown || pattern > kmsg.ACLResourcePatternTypePrefixed:
		return metadata.ACLFilter{}, "Invalid pattern type in ACL filter"
	case op == kmsg.ACLOperationUnknown || op > kmsg.ACLOperationDescribeTokens:
		return metadata.ACLFilter{}, "Invalid operation in ACL filter"
	case perm == kmsg.ACLPermissionTypeUnknown || perm > kmsg.ACLPermissionTypeAllow:
		return metadata.ACLFilter{}, "Invalid permission type in ACL filter"
	}
	return metadata.ACLFilter{
		ResourceType: int8(typ), ResourceName: name, PatternType: int8(pattern),
		Principal: principal, Host: host, Operation: int8(op), Permission: int8(perm),
	}, ""
}
