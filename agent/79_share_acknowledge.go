package agent

// ShareAcknowledge (key 79), versions 0–2 (KIP-932; v2 IsRenewAck and the
// acquisition lock timeout, KIP-1222).
//
// Acknowledges records a member acquired through ShareFetch: accept,
// release (available again, or archived at the delivery-count limit),
// reject (archived), gap, and with IsRenewAck renew (the lock starts
// again). The session's epoch must be its next one (0 is
// INVALID_SHARE_SESSION_EPOCH); -1 closes the session and releases every
// record the member still holds in its partitions. All acknowledgements
// of one request are checked and applied in ONE store transaction; a
// partition whose batches are malformed answers INVALID_REQUEST, one whose
// records the member does not hold INVALID_RECORD_STATE, and none of its
// batches apply. A classic or consumer group's id answers
// GROUP_ID_NOT_FOUND. READ on the group and on every topic.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.ShareAcknowledge), AdvertisedMin: 0, HandledMin: 0, Max: 2})
}

func (a *Agent) handleShareAcknowledge(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	group, member := deref(req.GroupID), deref(req.MemberID)
	fail := func(e *kerr.Error) (kmsg.Response, error) {
		resp.ErrorCode = e.Code
		return resp, nil
	}
	maxAckType := metadata.ShareAckReject
	if req.Version >= 2 && req.IsRenewAck {
		maxAckType = metadata.ShareAckRenew
	}
	set, byID, code := a.shareOpen(ctx, r, group, member, false)
	resp.AcquisitionLockTimeoutMillis = int32(set.limits.LockDuration / time.Millisecond)
	if code != nil {
		return fail(code)
	}
	closing := req.ShareSessionEpoch == -1
	var session []metadata.ShareKey
	if closing {
		session, code = a.coord.shares.closeSession(group, member)
	} else {
		code = a.coord.shares.checkSession(group, member, req.ShareSessionEpoch)
	}
	if code != nil {
		return fail(code)
	}
	var parts []*sharePart
	byKey := map[metadata.ShareKey]*sharePart{}
	errs := map[metadata.ShareKey]int16{}
	var valid []*sharePart
	add := func(k metadata.ShareKey) *sharePart {
		if p := byKey[k]; p != nil {
			return p
		}
		p := &sharePart{key: k}
		byKey[k] = p
		parts = append(parts, p)
		if code := a.resolveSharePart(r, byID, p); code != 0 {
			errs[k] = code
		} else {
			valid = append(valid, p)
		}
		return p
	}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			p := add(metadata.ShareKey{Topic: metadata.TopicID(rt.TopicID), Partition: rp.Partition})
			p.acks = append(p.acks, ackBatches(rp.AcknowledgementBatches, func(b kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
				return b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
			})...)
		}
	}
	answered := len(parts)
	if closing {
		for _, k := range session {
			add(k).release = true
		}
	}
	if len(valid) > 0 {
		sctx, cancel := context.WithTimeout(ctx, storeTimeout)
		err := a.applyShares(sctx, group, member, set, valid, maxAckType, 0)
		cancel()
		if err != nil {
			a.log.Warn("share acknowledge: update share states failed", "group", group, "err", err)
			return fail(shareStoreError(ctx, err))
		}
	}
	// The answer: the partitions the request acknowledged.
	topicIdx := map[[16]byte]int{}
	for _, p := range parts[:answered] {
		i, ok := topicIdx[p.key.Topic]
		if !ok {
			i = len(resp.Topics)
			topicIdx[p.key.Topic] = i
			t := kmsg.NewShareAcknowledgeResponseTopic()
			t.TopicID = p.key.Topic
			resp.Topics = append(resp.Topics, t)
		}
		sp := kmsg.NewShareAcknowledgeResponseTopicPartition()
		sp.Partition = p.key.Partition
		sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = -1, -1
		sp.ErrorCode = p.ackCode
		if code, ok := errs[p.key]; ok {
			sp.ErrorCode = code
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, sp)
	}
	return resp, nil
}
