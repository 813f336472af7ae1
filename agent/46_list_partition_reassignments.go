package agent

// ListPartitionReassignments (key 46), version 0 (KIP-455).
//
// floe never reassigns partitions (45_alter_partition_reassignments.go),
// so no reassignment is ever in progress: the answer lists none, for
// every topic or the ones named, as Kafka answers when none is under way
// (it leaves out topics it does not know, too).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.ListPartitionReassignments), AdvertisedMin: 0, HandledMin: 0, Max: 0})
}

func (a *Agent) handleListPartitionReassignments(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !a.authorizeCluster(r, opDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
	}
	return resp, nil
}
