package agent

// ShareFetch (key 78), versions 0–2 (KIP-932; v1 MaxRecords, BatchSize
// and the acquisition lock timeout, KIP-1206; v2 ShareAcquireMode and
// IsRenewAck, KIP-1222).
//
// A share session (epoch 0 opens one with the request's partitions, > 0
// adds and forgets partitions, -1 closes it and releases the member's
// records: share.go) names the partitions to fetch. Each ShareFetch then
// reads the partitions' share states once, reads record batches from each
// one's first available offset (released or expired records first, then
// new ones up to the high watermark, or the last stable offset under
// share.isolation.level=read_committed), and in ONE store transaction
// applies the piggybacked acknowledgements and acquires records for the
// member, at most MaxRecords (500 when unset) within MaxBytes. The answer
// holds the batches and the AcquiredRecords ranges with their delivery
// counts; control batches and aborted transactions' batches are archived,
// never acquired. With nothing acquired, it waits up to MaxWaitMillis as a
// Fetch does. Acquired ranges are cut at BatchSize offsets in the
// batch-optimized acquire mode (KIP-1206). Any agent serves any partition:
// no NOT_LEADER answers.
// A classic or consumer group's id answers GROUP_ID_NOT_FOUND. READ on the
// group and on every topic.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.ShareFetch), AdvertisedMin: 0, HandledMin: 0, Max: 2})
}

func (a *Agent) handleShareFetch(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	start := time.Now()
	group, member := deref(req.GroupID), deref(req.MemberID)
	fail := func(e *kerr.Error) (kmsg.Response, error) {
		resp.ErrorCode = e.Code
		return resp, nil
	}
	renew := req.Version >= 2 && req.IsRenewAck
	maxAckType := metadata.ShareAckReject
	if renew {
		maxAckType = metadata.ShareAckRenew
	}
	set, byID, code := a.shareOpen(ctx, r, group, member,
		renew && (req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0))
	resp.AcquisitionLockTimeoutMillis = int32(set.limits.LockDuration / time.Millisecond)
	if code != nil {
		return fail(code)
	}

	// The request's partitions and acknowledgements.
	var add, forget []metadata.ShareKey
	acks := shareAcks{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			k := metadata.ShareKey{Topic: metadata.TopicID(rt.TopicID), Partition: rp.Partition}
			if len(rp.AcknowledgementBatches) > 0 {
				if req.ShareSessionEpoch == 0 {
					return fail(kerr.InvalidRequest) // a new session has nothing to acknowledge
				}
				acks[k] = append(acks[k], ackBatches(rp.AcknowledgementBatches, func(b kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
					return b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
				})...)
			}
			if !renew {
				add = append(add, k)
			}
		}
	}
	for _, ft := range req.ForgottenTopicsData {
		for _, p := range ft.Partitions {
			forget = append(forget, metadata.ShareKey{Topic: metadata.TopicID(ft.TopicID), Partition: p})
		}
	}
	var (
		session []metadata.ShareKey
		closing = req.ShareSessionEpoch == -1
	)
	if closing {
		session, code = a.coord.shares.closeSession(group, member)
	} else {
		session, code = a.coord.shares.openSession(r.c, group, member, req.ShareSessionEpoch, add, forget)
	}
	if code != nil {
		return fail(code)
	}

	// Every partition of the answer, in order: the session's (fetched
	// unless closing or renewing), then those only acknowledged.
	var parts []*sharePart
	byKey := map[metadata.ShareKey]*sharePart{}
	part := func(k metadata.ShareKey) *sharePart {
		if p := byKey[k]; p != nil {
			return p
		}
		p := &sharePart{key: k}
		byKey[k] = p
		parts = append(parts, p)
		return p
	}
	for _, k := range session {
		p := part(k)
		p.fetch = !closing && !renew
		p.release = closing
	}
	for k, as := range acks {
		part(k).acks = as
	}
	errs := map[metadata.ShareKey]int16{}
	var valid []*sharePart
	for _, p := range parts {
		if code := a.resolveSharePart(r, byID, p); code != 0 {
			errs[p.key] = code
		} else {
			valid = append(valid, p)
		}
	}

	maxRecords := int64(req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = defaultShareMaxRecords
	}
	maxBytes := int64(req.MaxBytes)
	if maxBytes <= 0 || maxBytes > int64(a.cfg.FetchMaxBytes) {
		maxBytes = int64(a.cfg.FetchMaxBytes)
	}
	if q := r.c.fetchQuotaCap(r); q > 0 && q < maxBytes {
		maxBytes = q
	}
	deadline := start.Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	records := map[metadata.ShareKey][]byte{}
	for {
		wake := a.commits.wait()
		got, code := a.shareFetchOnce(ctx, r, group, member, set, valid, maxAckType, maxRecords, maxBytes, records)
		for _, p := range valid {
			p.acks, p.release = nil, false // applied once
		}
		if code != nil {
			a.releaseShareRecords(r, records)
			return fail(code)
		}
		now := time.Now()
		if got > 0 || closing || renew || !now.Before(deadline) || len(valid) == 0 {
			break
		}
		if !a.waitForRecords(ctx, wake, min(a.cfg.RemotePollInterval, deadline.Sub(now))) {
			break
		}
	}

	// The answer: every partition of the request and the session.
	topicIdx := map[[16]byte]int{}
	for _, p := range parts {
		i, ok := topicIdx[p.key.Topic]
		if !ok {
			i = len(resp.Topics)
			topicIdx[p.key.Topic] = i
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = p.key.Topic
			resp.Topics = append(resp.Topics, t)
		}
		sp := kmsg.NewShareFetchResponseTopicPartition()
		sp.Partition = p.key.Partition
		sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = -1, -1
		if code, ok := errs[p.key]; ok {
			sp.ErrorCode = code
			if len(p.acks) > 0 || acks[p.key] != nil {
				sp.AcknowledgeErrorCode = code
			}
		} else {
			sp.AcknowledgeErrorCode = p.ackCode
			sp.Records = records[p.key]
			for _, ar := range p.acquired {
				// KIP-1206's batch-optimized mode: ranges of at most
				// BatchSize offsets.
				step := ar.Last - ar.First + 1
				if req.ShareAcquireMode == 0 && req.BatchSize > 0 {
					step = int64(req.BatchSize)
				}
				for f := ar.First; f <= ar.Last; f += step {
					rec := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
					rec.FirstOffset, rec.LastOffset, rec.DeliveryCount = f, min(f+step-1, ar.Last), ar.Deliveries
					sp.AcquiredRecords = append(sp.AcquiredRecords, rec)
				}
			}
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, sp)
	}
	r.answer = shareFetchAnswer{a}
	return resp, nil
}

// shareFetchOnce reads the share states of parts, the record batches
// from each fetched part's first available offset, then applies the
// acknowledgements and acquires records in one transaction (applyShares).
// It keeps the batches of the parts that acquired records in records
// (charged to r.fetchHeld) and returns how many offsets were acquired.
func (a *Agent) shareFetchOnce(ctx context.Context, r *request, group, member string, set shareSettings, parts []*sharePart,
	maxAckType int8, maxRecords, maxBytes int64, records map[metadata.ShareKey][]byte) (int64, *kerr.Error) {
	a.releaseShareRecords(r, records)
	var fetchKeys []metadata.ShareKey
	for _, p := range parts {
		if p.fetch {
			fetchKeys = append(fetchKeys, p.key)
		}
	}
	var states map[metadata.ShareKey]*metadata.SharePartitionState
	if len(fetchKeys) > 0 {
		sts, err := a.store.ShareStates(ctx, group, fetchKeys)
		if err != nil {
			a.log.Warn("share fetch: share states failed", "group", group, "err", err)
			return 0, shareStoreError(ctx, err)
		}
		states = make(map[metadata.ShareKey]*metadata.SharePartitionState, len(sts))
		for i := range sts {
			states[sts[i].ShareKey] = &sts[i]
		}
	}
	now := time.Now()
	remaining := maxBytes
	partStates := map[metadata.TopicID][]metadata.PartitionState{}
	opens := map[metadata.TopicID]map[int32]int64{}
	held := map[metadata.ShareKey]int64{}
	work := false
	for _, p := range parts {
		p.spans = nil
		if !p.fetch || remaining <= 0 {
			if len(p.acks) > 0 || p.release {
				work = true
			}
			continue
		}
		if len(p.acks) > 0 {
			work = true
		}
		pss, ok := partStates[p.key.Topic]
		if !ok {
			var err error
			if pss, err = a.store.Partitions(ctx, p.key.Topic); err != nil {
				a.log.Warn("share fetch: partition states failed", "topic", p.topic.Name, "err", err)
				return 0, shareStoreError(ctx, err)
			}
			partStates[p.key.Topic] = pss
			if set.readCommitted {
				if opens[p.key.Topic], err = a.store.FirstOpenOffsets(ctx, p.key.Topic); err != nil {
					return 0, shareStoreError(ctx, err)
				}
			}
		}
		if int(p.key.Partition) >= len(pss) {
			continue
		}
		ps := pss[p.key.Partition]
		p.logStart = ps.LogStartOffset
		end := ps.NextOffset
		if o, ok := opens[p.key.Topic][p.key.Partition]; ok {
			end = min(end, o)
		}
		st := states[p.key]
		var from int64
		if st == nil {
			init, err := a.shareStart(ctx, p.key, ps, set)
			if err != nil {
				return 0, kerr.KafkaStorageError
			}
			p.init, from = init, init
			work = true // the new share-partition's start is written now
		} else {
			from = st.FirstAvailable(now)
			if from == st.End() && st.End()-st.StartOffset >= set.limits.MaxInFlight {
				continue // the window is full of other members' records
			}
		}
		from = max(from, ps.LogStartOffset)
		if from >= end {
			continue
		}
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition = p.key.Partition
		var h int64
		pf := partitionFetch{topic: p.key.Topic, state: ps, lso: end, committed: set.readCommitted, offset: from,
			limit: a.coord.shares.readLimit(p.key, maxRecords, remaining), first: len(records) == 0}
		got, code := a.fetchPartition(ctx, pf, &sp, &h)
		a.coord.shares.observe(p.key, got.bytes, got.records)
		r.fetchHeld += h
		if code != nil || got.bytes == 0 {
			a.batcher.bufs.Put(sp.RecordBatches)
			a.fetchBudget.Release(h)
			r.fetchHeld -= h
			continue
		}
		records[p.key], held[p.key] = sp.RecordBatches, h
		remaining -= got.bytes
		p.spans = shareSpans(sp.RecordBatches, sp.AbortedTransactions, set.readCommitted)
		work = true
	}
	if !work {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := a.applyShares(ctx, group, member, set, parts, maxAckType, maxRecords); err != nil {
		a.log.Warn("share fetch: update share states failed", "group", group, "err", err)
		return 0, shareStoreError(ctx, err)
	}
	var total int64
	for _, p := range parts {
		data, ok := records[p.key]
		if !ok {
			continue
		}
		if len(p.acquired) == 0 {
			a.batcher.bufs.Put(data)
			a.fetchBudget.Release(held[p.key])
			r.fetchHeld -= held[p.key]
			delete(records, p.key)
			continue
		}
		records[p.key] = trimToAcquired(data, p.acquired[len(p.acquired)-1].Last)
		for _, ar := range p.acquired {
			total += ar.Last - ar.First + 1
		}
	}
	return total, nil
}

// shareStart is where a share-partition without state starts, by
// share.auto.offset.reset: the high watermark (latest), the log start
// (earliest), or the first offset with a timestamp at or after now minus
// the duration (by_duration; the high watermark when there is none).
func (a *Agent) shareStart(ctx context.Context, k metadata.ShareKey, ps metadata.PartitionState, set shareSettings) (int64, error) {
	switch set.reset {
	case "earliest":
		return ps.LogStartOffset, nil
	case "by_duration":
		sp := kmsg.NewListOffsetsResponseTopicPartition()
		sp.Partition = k.Partition
		if code := a.listOffset(ctx, 10, 0, k.Topic, time.Now().Add(-set.resetAgo).UnixMilli(), &sp); code != nil {
			return 0, code
		}
		if sp.Offset >= 0 {
			return max(sp.Offset, ps.LogStartOffset), nil
		}
	}
	return ps.NextOffset, nil
}

// releaseShareRecords frees the batches an unsent answer holds.
func (a *Agent) releaseShareRecords(r *request, records map[metadata.ShareKey][]byte) {
	for k, b := range records {
		a.batcher.bufs.Put(b)
		delete(records, k)
	}
	if r.fetchHeld > 0 {
		a.fetchBudget.Release(r.fetchHeld)
	}
	r.fetchHeld = 0
}

// shareFetchAnswer frees a ShareFetch answer's record buffers once it is
// written, with what they held of the fetch budget.
type shareFetchAnswer struct{ a *Agent }

func (sa shareFetchAnswer) appendParts(buf []byte, parts [][]byte, hdr kafkaproto.RequestHeader, resp kmsg.Response) ([]byte, [][]byte) {
	buf = kafkaproto.AppendResponse(buf[:0], hdr, resp)
	return buf, append(parts[:0], buf)
}

func (sa shareFetchAnswer) release(resp kmsg.Response, held int64) {
	if sr, ok := resp.(*kmsg.ShareFetchResponse); ok {
		for i := range sr.Topics {
			for j := range sr.Topics[i].Partitions {
				p := &sr.Topics[i].Partitions[j]
				if p.Records != nil {
					sa.a.batcher.bufs.Put(p.Records)
					p.Records = nil
				}
			}
		}
	}
	if held > 0 {
		sa.a.fetchBudget.Release(held)
	}
}
