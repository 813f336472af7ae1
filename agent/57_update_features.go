package agent

// UpdateFeatures (key 57), versions 0–2 (KIP-584).
//
// floe serves each feature at one level (agent/internal/features, which
// ApiVersions reports), so a feature can only be "updated" to the level it
// has. The answer is the KRaft controller's (this agent's node id as the
// local controller): the first update asking for another level, a
// negative one or an unknown upgrade type fails the whole request with
// INVALID_UPDATE_VERSION and Kafka's message ("The update failed for all
// features since the following feature had an error: Invalid update
// version 21 for feature metadata.version. Local controller 1 only
// supports versions 20"; "… does not support this feature." for features
// floe leaves at 0, transaction.version included), and no result per
// feature. Updates that all ask for the current levels change nothing and
// succeed, with a result per feature below v2 as Kafka gives.
// ValidateOnly (v1+) answers the same.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/internal/features"
	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.UpdateFeatures), AdvertisedMin: 0, HandledMin: 0, Max: 2})
}

func (a *Agent) handleUpdateFeatures(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	if !a.authorizeCluster(r, opAlter) {
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
		return resp, nil
	}
	updates := make([]features.Update, len(req.FeatureUpdates))
	for i, u := range req.FeatureUpdates {
		updates[i] = features.Update{Feature: u.Feature, Level: u.MaxVersionLevel, UpgradeType: u.UpgradeType}
		if req.Version == 0 { // v0 asks by AllowDowngrade
			updates[i].UpgradeType = features.Upgrade
			if u.AllowDowngrade {
				updates[i].UpgradeType = features.SafeDowngrade
			}
		}
	}
	if msg := features.Floe.Check(a.NodeID(), updates); msg != "" {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidUpdateVersion.Code, &msg
		return resp, nil
	}
	if req.Version <= 1 {
		for _, u := range req.FeatureUpdates {
			res := kmsg.NewUpdateFeaturesResponseResult()
			res.Feature = u.Feature
			resp.Results = append(resp.Results, res)
		}
	}
	return resp, nil
}
