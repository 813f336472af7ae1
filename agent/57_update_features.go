package agent

// UpdateFeatures (key 57), versions 0–2 (KIP-584).
//
// floe finalizes no feature: its ApiVersions answers list none, so every
// feature (metadata.version, transaction.version, group.version, …) is at
// level 0, and only level 0 can be asked for. The answer is the KRaft
// controller's for a feature it does not support: the first update asking
// for a level above 0, a negative level or an unknown upgrade type fails
// the whole request with INVALID_UPDATE_VERSION and Kafka's message
// ("The update failed for all features since the following feature had an
// error: Invalid update version …"), and no result per feature. Updates
// that all ask for level 0 change nothing and succeed, with a result per
// feature below v2 as Kafka gives. ValidateOnly (v1+) answers the same.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.UpdateFeatures), AdvertisedMin: 0, HandledMin: 0, Max: 2})
}

// Kafka's FeatureUpdate.UpgradeType codes.
const (
	upgradeTypeUpgrade         = 1
	upgradeTypeUnsafeDowngrade = 3
)

func (a *Agent) handleUpdateFeatures(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	if !a.authorizeCluster(r, opAlter) {
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
		return resp, nil
	}
	for _, u := range req.FeatureUpdates {
		if why := featureRefusal(req.Version, u); why != "" {
			resp.ErrorCode = kerr.InvalidUpdateVersion.Code
			msg := fmt.Sprintf("The update failed for all features since the following feature had an error: Invalid update version %d for feature %s. %s",
				u.MaxVersionLevel, u.Feature, why)
			resp.ErrorMessage = &msg
			return resp, nil
		}
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

// featureRefusal says why an update cannot be made, or "".
func featureRefusal(version int16, u kmsg.UpdateFeaturesRequestFeatureUpdate) string {
	upgradeType := u.UpgradeType
	if version == 0 {
		upgradeType = upgradeTypeUpgrade
		if u.AllowDowngrade {
			upgradeType = 2 // SAFE_DOWNGRADE
		}
	}
	switch {
	case upgradeType < upgradeTypeUpgrade || upgradeType > upgradeTypeUnsafeDowngrade:
		return "The controller does not support the given upgrade type."
	case u.MaxVersionLevel < 0:
		return "A feature version cannot be less than 0."
	case u.MaxVersionLevel > 0:
		return "floe does not support this feature: it finalizes no feature, so every feature stays at level 0."
	}
	return ""
}
