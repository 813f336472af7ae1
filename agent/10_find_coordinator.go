package agent

// FindCoordinator (key 10), versions 0–4.
//
// Groups (type 0) and transactional ids (type 1) are placed on the live
// agents by rendezvous hashing (coordinator.go); the lease taken on first
// use makes the placement exclusive. v4+ batch several keys.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.FindCoordinator), AdvertisedMin: 0, HandledMin: 0, Max: 4})
}

func (a *Agent) handleFindCoordinator(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	find := func(key string) (int32, string, int32, *kerr.Error) {
		if req.CoordinatorType != 0 && req.CoordinatorType != 1 {
			return -1, "", -1, kerr.InvalidRequest
		}
		// DESCRIBE on the group or transactional id, before the key is
		// checked, as in Kafka.
		if req.CoordinatorType == 0 && !a.authorize(r, opDescribe, resGroup, key) {
			return -1, "", -1, kerr.GroupAuthorizationFailed
		}
		if req.CoordinatorType == 1 && !a.authorize(r, opDescribe, resTxnID, key) {
			return -1, "", -1, kerr.TransactionalIDAuthorizationFailed
		}
		if key == "" {
			if req.CoordinatorType == 0 {
				return -1, "", -1, kerr.InvalidGroupID
			}
			return -1, "", -1, kerr.InvalidRequest
		}
		o := a.coord.ownerOf(key)
		host, port := brokerAddr(o, r.c.listenerName())
		return o.NodeID, host, port, nil
	}
	if req.Version < 4 {
		node, host, port, err := find(req.CoordinatorKey)
		resp.NodeID, resp.Host, resp.Port = node, host, port
		if err != nil {
			resp.ErrorCode = err.Code
			msg := err.Message
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	for _, k := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = k
		var err *kerr.Error
		c.NodeID, c.Host, c.Port, err = find(k)
		if err != nil {
			c.ErrorCode = err.Code
			msg := err.Message
			c.ErrorMessage = &msg
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}
