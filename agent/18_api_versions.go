package agent

// ApiVersions (key 18), versions 0–4.
//
// The answer is built from the registrations of every API file, so what is
// advertised is exactly what is handled. The response header is always v0
// (kafkaproto.AppendResponse). A request at a version above ours is answered
// by the connection with a v0 body carrying UNSUPPORTED_VERSION and our
// ranges (KIP-511). v3+ client software names and versions that are not
// valid get INVALID_REQUEST, as in Kafka, and clients fall back to v0.
// v3+ answers carry the features floe serves (agent/internal/features:
// metadata.version, group.version, share.version), supported and
// finalized at one level each, as Kafka's DescribeFeatures reads them.

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/internal/features"
	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.ApiVersions), AdvertisedMin: 0, HandledMin: 0, Max: 4})
}

var softwareNameRE = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (a *Agent) handleApiVersions(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = apis.ApiVersionsKeys()
	features.Floe.Fill(resp)
	if req.Version >= 3 && (!softwareNameRE.MatchString(req.ClientSoftwareName) || !softwareNameRE.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	return resp, nil
}
