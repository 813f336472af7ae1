package agent

// CreateAcls (key 30), versions 0–3.
//
// Stores ACLs, all valid ones of a request in one store transaction, and
// reloads this agent's ACLs at once (other agents within a heartbeat
// interval, authz.go). Creating an ACL that exists is no error. It needs
// ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED for every creation);
// with authorization off every creation is SECURITY_DISABLED, as Kafka
// answers without an authorizer. Each creation is checked as Kafka's
// AclControlManager checks it (INVALID_REQUEST): a concrete resource type,
// pattern type LITERAL or PREFIXED, a concrete operation and permission,
// a non-empty resource name ("kafka-cluster" for CLUSTER), and a principal
// of the form Type:name.

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/internal/authz"
	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.CreateACLs), AdvertisedMin: 0, HandledMin: 0, Max: 3})
}

func (a *Agent) handleCreateACLs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	if code, msg := a.aclChangeRefused(r); code != nil {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code.Code, &msg
		}
		return resp, nil
	}
	var acls []metadata.ACL
	var valid []int
	for i, c := range req.Creations {
		if msg := checkNewACL(c); msg != "" {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, &msg
			continue
		}
		acls = append(acls, authz.NewACL(c.ResourceType, c.ResourceName, c.ResourcePatternType, c.Principal, c.Host, c.Operation, c.PermissionType))
		valid = append(valid, i)
	}
	if len(acls) == 0 {
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := a.store.CreateACLs(ctx, acls); err != nil {
		a.log.Warn("create acls failed", "err", err)
		for _, i := range valid {
			resp.Results[i].ErrorCode = kerr.UnknownServerError.Code
		}
		return resp, nil
	}
	a.authz.Poll(ctx)
	return resp, nil
}

// checkNewACL returns why a creation is refused, or "".
func checkNewACL(c kmsg.CreateACLsRequestCreation) string {
	switch {
	case c.ResourceType <= kmsg.ACLResourceTypeAny || c.ResourceType > kmsg.ACLResourceTypeUser:
		return "Invalid resourceType " + c.ResourceType.String()
	case c.ResourcePatternType != kmsg.ACLResourcePatternTypeLiteral && c.ResourcePatternType != kmsg.ACLResourcePatternTypePrefixed:
		return "Invalid patternType " + c.ResourcePatternType.String()
	case c.Operation <= kmsg.ACLOperationAny || c.Operation > kmsg.ACLOperationDescribeTokens:
		return "Invalid operation " + c.Operation.String()
	case c.PermissionType != kmsg.ACLPermissionTypeAllow && c.PermissionType != kmsg.ACLPermissionTypeDeny:
		return "Invalid permissionType " + c.PermissionType.String()
	case c.ResourceName == "":
		return "Resource name should not be empty"
	case c.ResourceType == kmsg.ACLResourceTypeCluster && c.ResourceName != clusterName:
		return "The only valid name for the CLUSTER resource is " + clusterName
	}
	if typ, name, ok := strings.Cut(c.Principal, ":"); !ok || typ == "" || name == "" {
		return "Invalid principal " + c.Principal + ": expected a string in format principalType:principalName"
	}
	return ""
}

// aclChangeRefused is why CreateAcls and DeleteAcls refuse a whole
// request, as Kafka refuses them: no ALTER on the cluster, or no
// authorizer to keep ACLs for (nil when neither).
func (a *Agent) aclChangeRefused(r *request) (*kerr.Error, string) {
	if !a.authorizeCluster(r, opAlter) {
		return kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed.Message
	}
	if !a.authzEnabled() {
		return kerr.SecurityDisabled, noAuthorizer
	}
	return nil, ""
}
