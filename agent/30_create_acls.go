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
	var acls []metadata.ACL
	a.changeACLs(ctx, r, "create", len(req.Creations), func(i int, code int16, msg *string) {
		resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
	}, func(i int) string {
		c := req.Creations[i]
		msg := checkNewACL(c)
		if msg == "" {
			acls = append(acls, authz.NewACL(c.ResourceType, c.ResourceName, c.ResourcePatternType, c.Principal, c.Host, c.Operation, c.PermissionType))
		}
		return msg
	}, func(ctx context.Context, _ []int) error { return a.store.CreateACLs(ctx, acls) })
	return resp, nil
}

// changeACLs runs CreateAcls' or DeleteAcls' change of n items (creations,
// filters), each answered through answer: all refused as aclChangeRefused
// says, else an item refusal names is INVALID_REQUEST with its message,
// and change stores the valid ones in one store transaction (all
// UNKNOWN_SERVER_ERROR should it fail), after which this agent reloads
// its ACLs.
func (a *Agent) changeACLs(ctx context.Context, r *request, what string, n int, answer func(i int, code int16, msg *string),
	refusal func(i int) string, change func(ctx context.Context, valid []int) error) {
	if code, msg := a.aclChangeRefused(r); code != nil {
		for i := range n {
			answer(i, code.Code, &msg)
		}
		return
	}
	var valid []int
	for i := range n {
		if msg := refusal(i); msg != "" {
			answer(i, kerr.InvalidRequest.Code, &msg)
		} else {
			valid = append(valid, i)
		}
	}
	if len(valid) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := change(ctx, valid); err != nil {
		a.log.Warn(what+" acls failed", "err", err)
		for _, i := range valid {
			answer(i, kerr.UnknownServerError.Code, nil)
		}
		return
	}
	a.authz.Poll(ctx)
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
