package agent

// AlterClientQuotas (key 49), versions 0–1 (KIP-546).
//
// floe enforces no client quotas yet (the security work adds them), and it
// must not store a quota that nothing enforces: a client would believe
// its producers throttled. So each entry is checked as Kafka's controller
// checks it (INVALID_REQUEST, with Kafka's messages, for an empty entity,
// a type twice, an unknown type, an empty name, ip with user or
// client-id, a key that is no quota of the entity, a value that is not
// above 0 or not whole for an integral quota), and then an entry that
// sets any quota is POLICY_VIOLATION, saying that floe enforces no client
// quotas and stored nothing: a code clients report as a refusal with its
// message (kafka-configs.sh, kadm), rather than as a malformed request. An
// entry that only removes quotas succeeds: there is none to remove, and
// none afterwards. ValidateOnly answers the same.

import (
	"context"
	"math"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.AlterClientQuotas), AdvertisedMin: 0, HandledMin: 0, Max: 1})
}

// quotaKeys are Kafka's quota configs per kind of entity, and whether
// their values must be whole numbers.
var (
	userClientQuotas = map[string]bool{"producer_byte_rate": true, "consumer_byte_rate": true,
		"request_percentage": false, "controller_mutation_rate": false}
	ipQuotas = map[string]bool{"connection_creation_rate": true}
)

func (a *Agent) handleAlterClientQuotas(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	clusterOK := a.authorizeCluster(r, opAlterConfigs)
	for _, e := range req.Entries {
		se := kmsg.NewAlterClientQuotasResponseEntry()
		for _, en := range e.Entity {
			re := kmsg.NewAlterClientQuotasResponseEntryEntity()
			re.Type, re.Name = en.Type, en.Name
			se.Entity = append(se.Entity, re)
		}
		if !clusterOK {
			se.ErrorCode, se.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
		} else if code, msg := checkQuotaEntry(e); code != nil {
			se.ErrorCode, se.ErrorMessage = code.Code, &msg
		}
		resp.Entries = append(resp.Entries, se)
	}
	return resp, nil
}

// checkQuotaEntry answers one entry: nil when it changes nothing.
func checkQuotaEntry(e kmsg.AlterClientQuotasRequestEntry) (*kerr.Error, string) {
	if len(e.Entity) == 0 {
		return kerr.InvalidRequest, "Invalid empty client quota entity"
	}
	types := map[string]bool{}
	for _, en := range e.Entity {
		if types[en.Type] {
			return kerr.InvalidRequest, "Invalid client quota entity, duplicate entity entry " + en.Type
		}
		if en.Type != quotaUser && en.Type != quotaClientID && en.Type != quotaIP {
			return kerr.InvalidRequest, "Unhandled client quota entity type: " + en.Type
		}
		if en.Name != nil && *en.Name == "" {
			return kerr.InvalidRequest, "Empty " + en.Type + " not supported"
		}
		types[en.Type] = true
	}
	keys := userClientQuotas
	if types[quotaIP] {
		if types[quotaUser] || types[quotaClientID] {
			return kerr.InvalidRequest, "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
		}
		keys = ipQuotas
	}
	var set []string
	for _, op := range e.Ops {
		integral, ok := keys[op.Key]
		if !ok {
			return kerr.InvalidRequest, "Invalid configuration key " + op.Key
		}
		if op.Remove {
			continue
		}
		if op.Value <= 0 || math.IsNaN(op.Value) {
			return kerr.InvalidRequest, "Quota " + op.Key + " must be greater than 0"
		}
		if integral && math.Abs(math.Mod(op.Value, 1)) > 1e-6 {
			return kerr.InvalidRequest, op.Key + " cannot be a fractional value."
		}
		set = append(set, op.Key)
	}
	if len(set) > 0 {
		return kerr.PolicyViolation, "floe does not enforce client quotas yet, so it stores none: " + strings.Join(set, ", ") + " not set"
	}
	return nil, ""
}
