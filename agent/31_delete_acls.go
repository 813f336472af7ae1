package agent

// DeleteAcls (key 31), versions 0–3.
//
// Deletes the ACLs each filter matches (the rules of DescribeAcls'
// filter), all filters of a request in one store transaction, and answers
// each filter with the ACLs it removed; this agent reloads its ACLs at
// once, others within a heartbeat interval (authz.go). It needs ALTER on
// the cluster (CLUSTER_AUTHORIZATION_FAILED for every filter); with
// authorization off every filter is SECURITY_DISABLED. A filter with an
// UNKNOWN field is INVALID_REQUEST and deletes nothing.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DeleteACLs), AdvertisedMin: 0, HandledMin: 0, Max: 3})
}

func (a *Agent) handleDeleteACLs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	if code, msg := a.aclChangeRefused(r); code != nil {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code.Code, &msg
		}
		return resp, nil
	}
	var filters []metadata.ACLFilter
	var valid []int
	for i, f := range req.Filters {
		mf, msg := aclFilter(f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal, f.Host, f.Operation, f.PermissionType)
		if msg != "" {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, &msg
			continue
		}
		filters = append(filters, mf)
		valid = append(valid, i)
	}
	if len(filters) == 0 {
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	deleted, err := a.store.DeleteACLs(ctx, filters)
	if err != nil {
		a.log.Warn("delete acls failed", "err", err)
		for _, i := range valid {
			resp.Results[i].ErrorCode = kerr.UnknownServerError.Code
		}
		return resp, nil
	}
	for j, i := range valid {
		for _, x := range deleted[j] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(x.ResourceType), x.ResourceName, kmsg.ACLResourcePatternType(x.PatternType)
			m.Principal, m.Host = x.Principal, x.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(x.Operation), kmsg.ACLPermissionType(x.Permission)
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
		}
	}
	a.authz.Poll(ctx)
	return resp, nil
}
