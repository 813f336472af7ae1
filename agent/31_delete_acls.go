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
	var filters []metadata.ACLFilter
	a.changeACLs(ctx, r, "delete", len(req.Filters), func(i int, code int16, msg *string) {
		resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
	}, func(i int) string {
		f := req.Filters[i]
		mf, msg := aclFilter(f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal, f.Host, f.Operation, f.PermissionType)
		if msg == "" {
			filters = append(filters, mf)
		}
		return msg
	}, func(ctx context.Context, valid []int) error {
		deleted, err := a.store.DeleteACLs(ctx, filters)
		if err != nil {
			return err
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
		return nil
	})
	return resp, nil
}
