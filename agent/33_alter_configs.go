package agent

// AlterConfigs (key 33), versions 0–2: Kafka's legacy, non-incremental
// config change. Each resource's configs become exactly the ones given:
// on a topic or a group, configs not named are removed (reverting to their
// defaults), in one store transaction. The checks and answers are
// IncrementalAlterConfigs' (44_incremental_alter_configs.go) for a request
// of SETs, with Kafka's differences: a null value is INVALID_REQUEST,
// broker loggers are an unknown resource type (Kafka never served them
// here), and the cluster default broker resource given no configs clears
// the cluster's dynamic configs.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/topicconfig"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.AlterConfigs), AdvertisedMin: 0, HandledMin: 0, Max: 2})
}

func (a *Agent) handleAlterConfigs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	rs := make([]alterRequest, len(req.Resources))
	for i, rr := range req.Resources {
		rs[i] = alterRequest{key: resourceKey{rr.ResourceType, rr.ResourceName}}
		for _, c := range rr.Configs {
			rs[i].changes = append(rs[i].changes, topicconfig.Change{Name: c.Name, Op: kmsg.IncrementalAlterConfigOpSet, Value: c.Value})
		}
	}
	for i, err := range a.alterResources(ctx, r, rs, true, req.ValidateOnly) {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = req.Resources[i].ResourceType, req.Resources[i].ResourceName
		sr.ErrorCode, sr.ErrorMessage = err.answer()
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}
