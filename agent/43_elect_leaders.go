package agent

// ElectLeaders (key 43), versions 0–2.
//
// A floe partition always has its preferred leader and that leader is
// alive: the leader is computed from the live agents (Agent.metadataTopic),
// so there is no election to hold. Each partition named is answered as
// Kafka's controller answers a partition already led by its preferred
// replica: ELECTION_NOT_NEEDED, for preferred and unclean elections alike
// (Kafka's unclean election is not needed while the partition has a
// leader). Unknown topics and partitions are UNKNOWN_TOPIC_OR_PARTITION.
// Topics null asks for every partition: as Kafka does, every topic is
// listed and the partitions that need no election are left out, so every
// topic's list is empty. An election type other than preferred (0) or
// unclean (1) is the request's INVALID_REQUEST (v1+).

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.ElectLeaders), AdvertisedMin: 0, HandledMin: 0, Max: 2})
}

func (a *Agent) handleElectLeaders(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if req.ElectionType != 0 && req.ElectionType != 1 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if !a.authorizeCluster(r, opAlter) {
		// Kafka: the request's error, and every partition named.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		for _, rt := range req.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	ctx, cancel := adminContext(ctx, req.TimeoutMillis)
	defer cancel()
	all, err := a.topics.all(ctx)
	if err != nil {
		a.log.Warn("elect leaders: list topics failed", "err", err)
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	if req.Topics == nil {
		names := make([]string, 0, len(all))
		for name := range all {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = name
			st.Partitions = []kmsg.ElectLeadersResponseTopicPartition{}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	look := newLookups()
	for _, rt := range req.Topics {
		st := kmsg.NewElectLeadersResponseTopic()
		st.Topic = rt.Topic
		t, ok := all[rt.Topic]
		var lookErr error
		if !ok {
			t, ok, lookErr = a.topics.find(ctx, rt.Topic, look)
		}
		for _, p := range rt.Partitions {
			sp := kmsg.NewElectLeadersResponseTopicPartition()
			sp.Partition = p
			var msg string
			switch {
			case lookErr != nil:
				sp.ErrorCode, msg = kerr.UnknownServerError.Code, kerr.UnknownServerError.Message
			case !ok:
				sp.ErrorCode, msg = kerr.UnknownTopicOrPartition.Code, "No such topic as "+rt.Topic
			case p < 0 || p >= t.Partitions:
				sp.ErrorCode, msg = kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("No such partition as %s-%d", rt.Topic, p)
			default:
				sp.ErrorCode, msg = kerr.ElectionNotNeeded.Code, kerr.ElectionNotNeeded.Message
			}
			sp.ErrorMessage = &msg
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
