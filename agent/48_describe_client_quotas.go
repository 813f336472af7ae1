package agent

// DescribeClientQuotas (key 48), versions 0–1 (KIP-546).
//
// Answers the stored quotas (quota.go enforces them) of the entities the
// filter matches, as Kafka's ClientQuotasImage matches them: an exact
// component keeps the entities that have that type with that name, a
// default component those with that type's default, an "any" (Kafka's
// MATCH_TYPE_SPECIFIED) component those with that type, named or default;
// strict keeps only entities with no other type, and an empty filter that
// is not strict matches every entity. The filter is checked as Kafka's
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
	"floe/metadata"
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

func (a *Agent) handleDescribeClientQuotas(ctx context.Context, r *request) (kmsg.Response, error) {
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
	qs, err := a.store.ClientQuotas(ctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr(err.Error())
		return resp, nil
	}
	resp.Entries = describeQuotas(qs, req.Components, req.Strict)
	return resp, nil
}

// describeQuotas answers the quotas (sorted by metadata.CompareQuotas, so
// an entity's keys are consecutive) of the entities a valid filter
// matches, one entry per entity.
func describeQuotas(qs []metadata.ClientQuota, filter []kmsg.DescribeClientQuotasRequestComponent, strict bool) []kmsg.DescribeClientQuotasResponseEntry {
	out := []kmsg.DescribeClientQuotasResponseEntry{}
	for i, q := range qs {
		if !quotaFilterMatches(q.Entity, filter, strict) {
			continue
		}
		if i == 0 || qs[i-1].Entity != q.Entity {
			e := kmsg.NewDescribeClientQuotasResponseEntry()
			for _, p := range quotaParts(q.Entity) {
				pe := kmsg.NewDescribeClientQuotasResponseEntryEntity()
				pe.Type = p.typ
				if p.name.Kind == metadata.QuotaNamed {
					pe.Name = kmsg.StringPtr(p.name.Name)
				}
				e.Entity = append(e.Entity, pe)
			}
			out = append(out, e)
		}
		v := kmsg.NewDescribeClientQuotasResponseEntryValue()
		v.Key, v.Value = q.Key, q.Value
		last := &out[len(out)-1]
		last.Values = append(last.Values, v)
	}
	return out
}

// quotaPart is one part of an entity that has it.
type quotaPart struct {
	typ  string
	name metadata.QuotaName
}

// quotaParts are the parts an entity has, in Kafka's type names.
func quotaParts(e metadata.QuotaEntity) []quotaPart {
	var ps []quotaPart
	for _, p := range []quotaPart{{quotaUser, e.User}, {quotaClientID, e.ClientID}, {quotaIP, e.IP}} {
		if p.name.Kind != metadata.QuotaAbsent {
			ps = append(ps, p)
		}
	}
	return ps
}

// quotaFilterMatches reports whether a checked filter selects e.
func quotaFilterMatches(e metadata.QuotaEntity, filter []kmsg.DescribeClientQuotasRequestComponent, strict bool) bool {
	parts := quotaParts(e)
	if len(filter) == 0 {
		return !strict
	}
	if strict && len(parts) != len(filter) {
		return false
	}
	for _, c := range filter {
		var n metadata.QuotaName
		for _, p := range parts {
			if p.typ == c.EntityType {
				n = p.name
			}
		}
		switch {
		case n.Kind == metadata.QuotaAbsent:
			return false
		case c.MatchType == kmsg.QuotasMatchTypeExact && (n.Kind != metadata.QuotaNamed || n.Name != *c.Match):
			return false
		case c.MatchType == kmsg.QuotasMatchTypeDefault && n.Kind != metadata.QuotaDefault:
			return false
		}
	}
	return true
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
