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
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.AlterConfigs), AdvertisedMin: 0, HandledMin: 0, Max: 2})
}

func (a *Agent) handleAlterConfigs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	sets := make([]kmsg.IncrementalAlterConfigsRequestResource, len(req.Resources))
	for i, rr := range req.Resources {
		sets[i].ResourceType, sets[i].ResourceName = rr.ResourceType, rr.ResourceName
		for _, c := range rr.Configs {
			sets[i].Configs = append(sets[i].Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{
				Name: c.Name, Op: kmsg.IncrementalAlterConfigOpSet, Value: c.Value})
		}
	}
	for _, sr := range a.alterResources(ctx, r, sets, true, req.ValidateOnly) {
		resp.Resources = append(resp.Resources, kmsg.AlterConfigsResponseResource(sr))
	}
	return resp, nil
}
