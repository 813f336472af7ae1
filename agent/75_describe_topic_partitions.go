package agent

// DescribeTopicPartitions (key 75), version 0 (KIP-966): Metadata's topic
// and partition view, paginated.
//
// Pagination is Kafka's: the topics asked for (every topic when none is
// named), deduplicated and sorted by name, from the cursor's topic on;
// the cursor's topic starts at its partition, the others at 0. At most
// ResponsePartitionLimit partitions (capped at 2000, Kafka's
// max.request.partition.size.limit, and at least 1) are answered; when a
// topic is cut short, or the limit is used up with topics left, NextCursor
// names where to go on. A cursor whose topic is not among the topics
// named, or whose partition is negative, is INVALID_REQUEST for every
// topic named. Named topics that do not exist are UNKNOWN_TOPIC_OR_PARTITION
// (INVALID_TOPIC_EXCEPTION for an illegal name); never auto-created.
//
// Partitions are reported exactly as Metadata reports them
// (Agent.metadataTopic: leader by hashing over the live agents in the
// client's zone, leader epoch 0); ELR and last known ELR are empty: a
// partition's leader is never ineligible.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DescribeTopicPartitions), AdvertisedMin: 0, HandledMin: 0, Max: 0})
}

// describeTopicPartitionsLimit is Kafka's max.request.partition.size.limit.
const describeTopicPartitionsLimit = 2000

func (a *Agent) handleDescribeTopicPartitions(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	refuse := func(e *kerr.Error) (kmsg.Response, error) {
		for _, rt := range req.Topics {
			st := kmsg.NewDescribeTopicPartitionsResponseTopic()
			name := rt.Topic
			st.Topic, st.ErrorCode = &name, e.Code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	all, err := a.topics.all(ctx)
	if err != nil {
		a.log.Warn("describe topic partitions: list topics failed", "err", err)
		return refuse(kerr.UnknownServerError)
	}
	cursorTopic, cursorPart := "", int32(0)
	if req.Cursor != nil {
		cursorTopic, cursorPart = req.Cursor.Topic, req.Cursor.Partition
	}
	fetchAll := len(req.Topics) == 0
	var names []string
	if fetchAll {
		for name := range all {
			names = append(names, name)
		}
	} else {
		for _, rt := range req.Topics {
			names = append(names, rt.Topic)
		}
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n < cursorTopic })
	slices.Sort(names)
	names = slices.Compact(names)
	if !fetchAll && req.Cursor != nil && !slices.Contains(names, cursorTopic) {
		return refuse(kerr.InvalidRequest)
	}
	if req.Cursor != nil && cursorPart < 0 {
		return refuse(kerr.InvalidRequest)
	}

	remaining := min(req.ResponsePartitionLimit, describeTopicPartitionsLimit)
	remaining = max(remaining, 1)
	live := a.liveAgents()
	look := newLookups()
	for _, name := range names {
		if !a.authorize(r, opDescribe, resTopic, name) {
			if !fetchAll { // named: refused; listed: left out
				st := kmsg.NewDescribeTopicPartitionsResponseTopic()
				n := name
				st.Topic, st.ErrorCode = &n, kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, st)
			}
			continue
		}
		if remaining == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		t, ok := all[name]
		if !ok && !fetchAll {
			if t, ok, err = a.topics.find(ctx, name, look); err != nil {
				a.log.Warn("describe topic partitions: look up topic failed", "topic", name, "err", err)
				return refuse(kerr.UnknownServerError)
			}
		}
		if !ok {
			if !fetchAll {
				st := kmsg.NewDescribeTopicPartitionsResponseTopic()
				n := name
				st.Topic, st.ErrorCode = &n, kerr.UnknownTopicOrPartition.Code
				if validTopicName(name) != nil {
					st.ErrorCode = kerr.InvalidTopicException.Code
				}
				st.IsInternal = isInternalTopic(name)
				resp.Topics = append(resp.Topics, st)
			}
			continue
		}
		start := int32(0)
		if name == cursorTopic {
			start = cursorPart
		}
		st, next := a.describeTopicPartitions(t, live, r.c.zone, start, remaining)
		resp.Topics = append(resp.Topics, st)
		if next >= 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: next}
			break
		}
		remaining -= int32(len(st.Partitions))
	}
	return resp, nil
}

// describeTopicPartitions answers at most limit partitions of t from
// start on, and the partition to continue from (-1 when none is left).
func (a *Agent) describeTopicPartitions(t metadata.Topic, live []metadata.Agent, zone string, start, limit int32) (kmsg.DescribeTopicPartitionsResponseTopic, int32) {
	mt := a.metadataTopic(t, live, zone)
	st := kmsg.NewDescribeTopicPartitionsResponseTopic()
	name := t.Name
	st.Topic, st.TopicID, st.IsInternal = &name, t.ID, mt.IsInternal
	end := min(int64(t.Partitions), int64(start)+int64(limit))
	next := int32(-1)
	if end < int64(t.Partitions) {
		next = int32(end)
	}
	for _, mp := range mt.Partitions {
		if mp.Partition < start || int64(mp.Partition) >= end {
			continue
		}
		sp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
		sp.ErrorCode, sp.Partition, sp.LeaderID, sp.LeaderEpoch = mp.ErrorCode, mp.Partition, mp.Leader, mp.LeaderEpoch
		sp.Replicas, sp.ISR, sp.OfflineReplicas = mp.Replicas, mp.ISR, mp.OfflineReplicas
		if sp.OfflineReplicas == nil {
			sp.OfflineReplicas = []int32{}
		}
		sp.EligibleLeaderReplicas, sp.LastKnownELR = []int32{}, []int32{}
		st.Partitions = append(st.Partitions, sp)
	}
	return st, next
}
