package agent

// TxnOffsetCommit (key 28), versions 0–4.
//
// Offsets committed inside a transaction: they are kept aside in the
// metadata store and become the group's committed offsets only when the
// transaction commits (EndTxn), or are dropped when it aborts. The producer
// id and epoch must be the transactional id's current ones (a fenced
// producer gets PRODUCER_FENCED) and the group must have been added with
// AddOffsetsToTxn. From v3 on, the group's coordinator also checks the
// committer's member id and generation (KIP-447), as for OffsetCommit. v5 (KIP-890 part 2) and
// v6 (topic ids) are not served.
//
// As for OffsetCommit, a request naming more than MaxOffsetCommitPartitions
// partitions is answered INVALID_COMMIT_OFFSET_SIZE for every partition
// without touching the store, and the store calls are bounded by
// storeTimeout.

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.TxnOffsetCommit), AdvertisedMin: 0, HandledMin: 0, Max: 4})
}

func (a *Agent) handleTxnOffsetCommit(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	codes := map[metadata.TopicPartition]*kerr.Error{}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	code := func() *kerr.Error {
		// WRITE on the transactional id, READ on the group, then READ
		// on each topic (its partitions TOPIC_AUTHORIZATION_FAILED).
		if !a.authorize(r, opWrite, resTxnID, req.TransactionalID) {
			return kerr.TransactionalIDAuthorizationFailed
		}
		if !a.authorize(r, opRead, resGroup, req.Group) {
			return kerr.GroupAuthorizationFailed
		}
		if req.Group == "" {
			return kerr.InvalidGroupID
		}
		if a.offsetCommitTooLarge(req.Group, offsetCommitPartitions(req.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) int { return len(t.Partitions) })) {
			return kerr.InvalidCommitOffsetSize
		}
		t, err := a.store.LoadTxn(ctx, req.TransactionalID)
		if errors.Is(err, metadata.ErrNotFound) {
			return kerr.InvalidProducerIDMapping
		}
		if err != nil {
			a.log.Warn("txn offset commit: load transaction failed", "txn", req.TransactionalID, "err", err)
			return kerr.CoordinatorNotAvailable
		}
		e := txnEntry{t: t, exists: true}
		if err := e.checkProducer(req.ProducerID, req.ProducerEpoch); err != nil {
			return err
		}
		if t.State != metadata.TxnOngoing || !slices.Contains(t.Groups, req.Group) {
			return kerr.InvalidTxnState
		}
		var offs []metadata.GroupOffset
		look := newLookups()
		for _, rt := range req.Topics {
			topic, ok, err := a.topics.find(ctx, rt.Topic, look)
			if err != nil {
				return kerr.CoordinatorNotAvailable
			}
			readOK := a.authorize(r, opRead, resTopic, rt.Topic)
			for _, p := range rt.Partitions {
				if !readOK {
					codes[metadata.TopicPartition{Topic: rt.Topic, Partition: p.Partition}] = kerr.TopicAuthorizationFailed
					continue
				}
				if !ok || p.Partition < 0 || p.Partition >= topic.Partitions {
					codes[metadata.TopicPartition{Topic: rt.Topic, Partition: p.Partition}] = kerr.UnknownTopicOrPartition
					continue
				}
				o := metadata.GroupOffset{Topic: rt.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch}
				if req.Version < 2 {
					o.LeaderEpoch = -1
				}
				if p.Metadata != nil {
					o.Metadata = *p.Metadata
				}
				offs = append(offs, o)
			}
		}
		if len(offs) == 0 {
			return nil
		}
		put := func() *kerr.Error {
			if err := a.store.PutTxnOffsets(ctx, req.TransactionalID, req.Group, offs); err != nil {
				a.log.Warn("txn offset commit failed", "txn", req.TransactionalID, "err", err)
				return kerr.CoordinatorNotAvailable
			}
			return nil
		}
		if req.Version < 3 || (req.Generation < 0 && req.MemberID == "") {
			return put()
		}
		// KIP-447: the committer must still be a member of the group's
		// current generation, checked by the group's coordinator.
		var code *kerr.Error
		if err := a.coord.with(ctx, req.Group, func(e *groupEntry, now time.Time) {
			if c := a.coord.commitCheck(e, now, req.MemberID, deref(req.InstanceID), req.Generation); c != 0 {
				code = kerr.UnknownServerError
				errors.As(kerr.ErrorForCode(c), &code)
				return
			}
			code = put()
		}); err != nil {
			return err
		}
		return code
	}()
	for _, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition = p.Partition
			c := code
			if c == nil {
				c = codes[metadata.TopicPartition{Topic: rt.Topic, Partition: p.Partition}]
			}
			if c != nil {
				sp.ErrorCode = c.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
