package agent

// DescribeCluster (key 60), versions 0–1: the live agents as brokers, the
// lowest node id as controller.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DescribeCluster), AdvertisedMin: 0, HandledMin: 0, Max: 1})
}

func (a *Agent) handleDescribeCluster(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	live := a.liveAgents()
	resp.ClusterID = clusterID
	resp.ControllerID = live[0].NodeID
	resp.ClusterAuthorizedOperations = -2147483648
	if req.IncludeClusterAuthorizedOperations { // none without DESCRIBE, as in Kafka
		resp.ClusterAuthorizedOperations = 0
		if a.authorizeCluster(r, opDescribe) {
			resp.ClusterAuthorizedOperations = a.authorizedOps(r, resCluster, clusterName)
		}
	}
	for _, l := range live {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID = l.NodeID
		b.Host, b.Port = brokerAddr(l, r.c.listenerName())
		if l.Zone != "" {
			z := l.Zone
			b.Rack = &z
		}
		resp.Brokers = append(resp.Brokers, b)
	}
	return resp, nil
}
