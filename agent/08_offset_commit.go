package agent

// OffsetCommit (key 8), versions 0–9.
//
// The group's coordinator validates the committer (generation, member id,
// instance id; an admin commit with generation -1 only to an empty group)
// and writes the offsets with their metadata strings to the store while it
// holds the group's lease. v0 commits are admin commits; v1's per-partition
// timestamp and v2–v4's retention time are ignored (retention is the
// agent's). v10 (topic ids) is not served.
//
// A request naming more than MaxOffsetCommitPartitions partitions is
// refused before anything is looked up or written: every partition is
// answered INVALID_COMMIT_OFFSET_SIZE, what a Kafka broker answers when a
// commit is too large for its offsets topic, and which its clients hand to
// the application instead of retrying. Allowed commits are written in
// chunks (metadata.OffsetChunk), within storeTimeout.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.OffsetCommit), AdvertisedMin: 0, HandledMin: 0, Max: 9})
}

// maxOffsetMetadata bounds a commit's metadata string
// (offset.metadata.max.bytes).
const maxOffsetMetadata = 4096

func (a *Agent) handleOffsetCommit(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	setAll := func(code int16) {
		resp.Topics = resp.Topics[:0]
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	gen, member := req.Generation, req.MemberID
	if req.Version == 0 {
		gen, member = -1, ""
	}
	if !a.authorize(r, opRead, resGroup, req.Group) {
		setAll(kerr.GroupAuthorizationFailed.Code)
		return resp, nil
	}
	if req.Group == "" {
		setAll(kerr.InvalidGroupID.Code)
		return resp, nil
	}
	if a.offsetCommitTooLarge(req.Group, offsetCommitPartitions(req.Topics, func(t kmsg.OffsetCommitRequestTopic) int { return len(t.Partitions) })) {
		setAll(kerr.InvalidCommitOffsetSize.Code)
		return resp, nil
	}
	// Per-partition checks first; only valid partitions are written.
	codes := make([][]int16, len(req.Topics))
	var offs []metadata.GroupOffset
	look := newLookups()
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
		tp, ok, err := a.topics.find(ctx, t.Topic, look)
		denied := !a.authorize(r, opRead, resTopic, t.Topic)
		for j, p := range t.Partitions {
			switch {
			case denied:
				codes[i][j] = kerr.TopicAuthorizationFailed.Code
			case err != nil:
				codes[i][j] = kerr.UnknownServerError.Code
			case !ok || p.Partition < 0 || p.Partition >= tp.Partitions:
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			case p.Metadata != nil && len(*p.Metadata) > maxOffsetMetadata:
				codes[i][j] = kerr.OffsetMetadataTooLarge.Code
			default:
				le := p.LeaderEpoch
				if req.Version < 6 {
					le = -1
				}
				offs = append(offs, metadata.GroupOffset{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset,
					LeaderEpoch: le, Metadata: deref(p.Metadata)})
			}
		}
	}
	var groupCode int16
	if code := a.coord.with(ctx, req.Group, func(e *groupEntry, now time.Time) {
		groupCode = a.coord.commitCheck(e, now, member, deref(req.InstanceID), gen)
		if groupCode != 0 || len(offs) == 0 {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, storeTimeout) // the group is locked meanwhile
		defer cancel()
		if err := a.store.CommitOffsets(cctx, req.Group, offs); err != nil {
			a.log.Warn("commit offsets failed", "group", req.Group, "err", err)
			groupCode = kerr.CoordinatorNotAvailable.Code
			return
		}
		e.exists = true
	}); code != nil {
		groupCode = code.Code
	}
	if groupCode != 0 {
		setAll(groupCode)
		return resp, nil
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// commitCheck validates a committer against the group: the generation is
// the member epoch in a KIP-848 group.
func (c *coordinator) commitCheck(e *groupEntry, now time.Time, member, instance string, gen int32) int16 {
	if e.cg != nil {
		return e.cg.CommitCheck(member, gen)
	}
	return e.g.CommitCheck(now, member, instance, gen)
}

// offsetCommitPartitions counts the partitions of an (Txn)OffsetCommit's topics.
func offsetCommitPartitions[T any](topics []T, partitions func(T) int) int {
	n := 0
	for _, t := range topics {
		n += partitions(t)
	}
	return n
}

// offsetCommitTooLarge reports (and counts) a commit of more partitions
// than MaxOffsetCommitPartitions allows (0: no limit).
func (a *Agent) offsetCommitTooLarge(group string, partitions int) bool {
	limit := a.cfg.MaxOffsetCommitPartitions
	if limit <= 0 || partitions <= limit {
		return false
	}
	a.limitHit("max.offset.commit.partitions", "group", group, "partitions", partitions, "max", limit)
	return true
}
