package agent

// DescribeClientQuotas (key 48), versions 0–1 (KIP-546).
//
// floe enforces no client quotas yet, and stores none
// (49_alter_client_quotas.go refuses to set them), so the truthful answer
// to any valid filter is no entries. The filter is checked as Kafka's
// broker checks it, with its codes and messages: an empty entity type, a
// type twice, an exact match without a name, a default or "specified"
// match with one, an unknown match type, and ip combined with user or
// client-id are INVALID_REQUEST; an entity type other than user,
// client-id and ip is UNSUPPORTED_VERSION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DescribeClientQuotas), AdvertisedMin: 0, HandledMin: 0, Max: 1})
}

// Kafka's quota entity types.
const (
	quotaUser     = "user"
	quotaClientID = "client-id"
	quotaIP       = "ip"
)

func (a *Agent) handleDescribeClientQuotas(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !a.authorizeCluster(r, opDescribeConfigs) {
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
		return resp, nil
	}
	if code, msg := checkQuotaFilter(req.Components); code != nil {
		resp.ErrorCode, resp.ErrorMessage = code.Code, &msg
		return resp, nil
	}
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	return resp, nil
}

// checkQuotaFilter applies Kafka's checks to a DescribeClientQuotas filter.
func checkQuotaFilter(components []kmsg.DescribeClientQuotasRequestComponent) (*kerr.Error, string) {
	seen := map[string]bool{}
	for _, c := range components {
		switch {
		case c.EntityType == "":
			return kerr.InvalidRequest, "Invalid empty entity type."
		case seen[c.EntityType]:
			return kerr.InvalidRequest, "Entity type " + c.EntityType + " cannot appear more than once in the filter."
		case c.EntityType != quotaUser && c.EntityType != quotaClientID && c.EntityType != quotaIP:
			return kerr.UnsupportedVersion, "Unsupported entity type " + c.EntityType
		}
		seen[c.EntityType] = true
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return kerr.InvalidRequest, "Request specified MATCH_TYPE_EXACT, but set match string to null."
			}
		case kmsg.QuotasMatchTypeDefault:
			if c.Match != nil {
				return kerr.InvalidRequest, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
			}
		case kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return kerr.InvalidRequest, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
			}
		default:
			return kerr.InvalidRequest, "Unknown match type " + c.MatchType.String()
		}
	}
	if seen[quotaIP] && (seen[quotaUser] || seen[quotaClientID]) {
		return kerr.InvalidRequest, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."
	}
	return nil, ""
}
