package agent

// AlterClientQuotas (key 49), versions 0–1 (KIP-546).
//
// Each entry is checked as Kafka's controller checks it
// (INVALID_REQUEST, with Kafka's messages, for an empty entity, a type
// twice, an unknown type, an empty name, ip with user or client-id, an ip
// that is not an address, a key that is no quota of the entity, a value
// that is not above 0 or not whole for an integral quota); the changes of
// every valid entry are then stored in one transaction, which bumps the
// quota version, and this agent reloads its quotas at once (the others
// within a heartbeat interval; quota.go). A removal of a key the entity
// does not have succeeds, as in Kafka. ValidateOnly checks and stores
// nothing. controller_mutation_rate is stored and described but not
// enforced: floe has no controller whose mutations it would pace.

import (
	"context"
	"math"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
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

func (a *Agent) handleAlterClientQuotas(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	clusterOK := a.authorizeCluster(r, opAlterConfigs)
	var changes []metadata.QuotaChange
	var stored []int // the entries whose changes are in changes
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
		} else if !req.ValidateOnly {
			changes = append(changes, quotaChanges(e)...)
			stored = append(stored, len(resp.Entries))
		}
		resp.Entries = append(resp.Entries, se)
	}
	if len(changes) == 0 {
		return resp, nil
	}
	if err := a.store.AlterClientQuotas(ctx, changes); err != nil {
		for _, i := range stored {
			resp.Entries[i].ErrorCode, resp.Entries[i].ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr(err.Error())
		}
		return resp, nil
	}
	a.refreshQuotas(ctx)
	return resp, nil
}

// quotaChanges are a valid entry's changes for the store.
func quotaChanges(e kmsg.AlterClientQuotasRequestEntry) []metadata.QuotaChange {
	var ent metadata.QuotaEntity
	for _, en := range e.Entity {
		n := metadata.DefaultName
		if en.Name != nil {
			n = metadata.Named(*en.Name)
		}
		switch en.Type {
		case quotaUser:
			ent.User = n
		case quotaClientID:
			ent.ClientID = n
		case quotaIP:
			ent.IP = n
		}
	}
	var cs []metadata.QuotaChange
	for _, op := range e.Ops {
		cs = append(cs, metadata.QuotaChange{Entity: ent, Key: op.Key, Value: op.Value, Remove: op.Remove})
	}
	return cs
}

// checkQuotaEntry checks one entry: nil when it is valid.
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
		for _, en := range e.Entity {
			if en.Name != nil && net.ParseIP(*en.Name) == nil {
				// Kafka also takes host names it can resolve; floe
				// matches the addresses connections come from, and
				// resolves nothing.
				return kerr.InvalidRequest, *en.Name + " is not a valid IP or resolvable host."
			}
		}
	}
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
	}
	return nil, ""
}
