package agent

// Fetch (key 1), versions 4–16.
//
// Reads the index entries covering each requested offset, GETs their byte
// ranges through the read cache, rewrites each batch's base offset (outside
// the CRC) and returns whole batches up to the partition and response byte
// limits — but always at least one whole batch (KIP-74). A fetch at the high
// watermark returns nothing and is no error; outside [log start, high
// watermark] it is OFFSET_OUT_OF_RANGE. Below v10 a topic whose
// compression.type is zstd answers UNSUPPORTED_COMPRESSION_TYPE, as Kafka.
//
// Long polling: while fewer than MinBytes are ready and MaxWaitMillis has not
// passed, the fetch waits; a commit by this agent wakes it at once, commits
// by other agents are noticed within RemotePollInterval.
//
// Fetch sessions (KIP-227) are declined: every answer carries session id 0,
// so clients keep sending full fetches; a full fetch naming a session (epoch
// 0 or -1) is served, an incremental one answered FETCH_SESSION_ID_NOT_FOUND
// (see fetchSessionError). v13+ name topics by id.
//
// isolation_level=1 (read_committed) stops at the last stable offset (the
// first offset of the partition's oldest open transaction, else the high
// watermark) and lists the aborted transactions overlapping the answer, so
// the client drops their records. read_uncommitted answers report the high
// watermark as the last stable offset: computing it costs a query that
// only read_committed readers need.

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
	"floe/storage"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.Fetch), AdvertisedMin: 4, HandledMin: 4, Max: 16})
}

// lookupLimit bounds the index entries read per partition per fetch.
const lookupLimit = 64

func (a *Agent) handleFetch(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.FetchRequest)
	start := time.Now()
	r.answer = fetchAnswer{a}
	if code := fetchSessionError(req.SessionEpoch); code != nil {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = code.Code
		return resp, nil
	}
	deadline := start.Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	maxBytes := int64(req.MaxBytes)
	if req.Version < 3 || maxBytes <= 0 || maxBytes > int64(a.cfg.FetchMaxBytes) {
		if maxBytes > int64(a.cfg.FetchMaxBytes) {
			a.limitHit("fetch.max.bytes", "remote", r.c.nc.RemoteAddr().String(), "asked", maxBytes, "max", a.cfg.FetchMaxBytes)
		}
		maxBytes = int64(a.cfg.FetchMaxBytes)
	}
	if q := r.c.fetchQuotaCap(r); q > 0 && q < maxBytes {
		maxBytes = q // a client fetch quota's window (quota.go)
	}
	for {
		wake := a.commits.wait() // taken before reading so no commit is missed
		r.fetchHeld = 0
		resp, got, anyErr := a.fetchOnce(ctx, r, req, maxBytes, &r.fetchHeld)
		now := time.Now()
		if got.bytes >= int64(req.MinBytes) || anyErr || !now.Before(deadline) {
			a.metrics.fetchSeconds.Observe(time.Since(start).Seconds())
			a.metrics.fetchedBytes.Add(float64(got.bytes))
			a.metrics.fetchedRecords.Add(float64(got.records))
			return resp, nil
		}
		// Not enough yet: this answer's records are dropped, their buffers
		// with them (should the wait end early, it goes out without them).
		a.releaseFetchBuffers(resp)
		a.fetchBudget.Release(r.fetchHeld)
		r.fetchHeld = 0
		if !a.waitForRecords(ctx, wake, min(a.cfg.RemotePollInterval, deadline.Sub(now))) {
			return resp, nil
		}
	}
}

// waitForRecords waits for a commit by this agent (wake) or for d, as a
// fetch at the head of the log does, and reports false when the agent is
// stopping or ctx ended instead.
func (a *Agent) waitForRecords(ctx context.Context, wake <-chan struct{}, d time.Duration) bool {
	a.tailWaiting.Add(1)
	defer func() {
		a.tailWaiting.Add(-1)
		a.tailReadAt.Store(time.Now().UnixNano())
	}()
	poll := time.NewTimer(d)
	defer poll.Stop()
	select {
	case <-wake:
	case <-poll.C:
	case <-a.stopping:
		return false
	case <-ctx.Done():
		return false
	}
	return true
}

// fetched is what an answer, or one partition of it, holds: record bytes,
// and the offsets its batches span (lastOffsetDelta+1 each, gaps left by
// key compaction included).
type fetched struct {
	bytes, records int64
}

// fetchOnce builds one answer of at most maxBytes record bytes (but one
// batch at least) from what is committed now. It returns what the answer
// holds and whether any partition carries an error; what its buffers hold
// of the fetch budget is added to held.
func (a *Agent) fetchOnce(ctx context.Context, r *request, req *kmsg.FetchRequest, maxBytes int64, held *int64) (*kmsg.FetchResponse, fetched, bool) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	remaining := maxBytes
	var total fetched
	anyErr := false
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var topic metadata.Topic
		var ok bool
		var err error
		// READ on the topic, checked by name before the topic's existence
		// is disclosed; a topic id is resolved first (UNKNOWN_TOPIC_ID).
		denied := false
		if req.Version >= 13 {
			topic, ok, err = a.topics.getID(ctx, metadata.TopicID(rt.TopicID))
			denied = ok && err == nil && !a.authorize(r, opRead, resTopic, topic.Name)
		} else {
			denied = !a.authorize(r, opRead, resTopic, rt.Topic)
			if !denied {
				topic, ok, err = a.topics.get(ctx, rt.Topic)
			}
		}
		if denied {
			ok, err = false, nil
		}
		// One read of every partition's offsets per topic: an idle long
		// poll costs one query per topic, not one per partition.
		var states []metadata.PartitionState
		if ok && err == nil {
			states, err = a.store.Partitions(ctx, topic.ID)
			if errors.Is(err, metadata.ErrUnknownTopic) {
				ok, err = false, nil
			} else if err != nil {
				a.log.Warn("fetch: partition states failed", "topic", topic.Name, "err", err)
			}
		}
		// Read after the high watermarks: a transaction opened in between
		// starts at or above them, so min(open, high watermark) is safe.
		var open map[int32]int64
		if ok && err == nil && req.IsolationLevel == 1 {
			open, err = a.store.FirstOpenOffsets(ctx, topic.ID)
			if err != nil {
				a.log.Warn("fetch: open transactions failed", "topic", topic.Name, "err", err)
			}
		}
		var pre map[int32][]metadata.IndexEntry
		if ok && err == nil {
			pre = a.prefetch(ctx, topic.ID, rt.Partitions, states, open, req.IsolationLevel == 1, remaining)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			// Empty, never null: librdkafka rejects a null record set.
			sp.RecordBatches = []byte{}
			switch {
			case denied:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case err != nil:
				sp.ErrorCode = kerr.KafkaStorageError.Code
			case !ok && req.Version >= 13:
				sp.ErrorCode = kerr.UnknownTopicID.Code
			case !ok || rp.Partition < 0 || int(rp.Partition) >= len(states):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case req.Version < 10 && a.defaults.Get().ZstdTopic(topic.Configs):
				sp.ErrorCode = kerr.UnsupportedCompressionType.Code
			default:
				limit := min(int64(rp.PartitionMaxBytes), remaining)
				if rp.PartitionMaxBytes <= 0 {
					limit = remaining
				}
				pf := partitionFetch{
					topic: topic.ID, state: states[rp.Partition], committed: req.IsolationLevel == 1,
					offset: rp.FetchOffset, limit: limit, first: total.bytes == 0, entries: pre[rp.Partition],
				}
				pf.lso = pf.state.NextOffset
				if first, ok := open[rp.Partition]; ok {
					pf.lso = min(pf.lso, first)
				}
				got, code := a.fetchPartition(ctx, pf, &sp, held)
				if code != nil {
					sp.ErrorCode = code.Code
				}
				total.bytes += got.bytes
				total.records += got.records
				remaining -= got.bytes
			}
			anyErr = anyErr || sp.ErrorCode != 0
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, total, anyErr
}

// partitionFetch is what fetchPartition reads for one partition of a
// Fetch.
type partitionFetch struct {
	topic metadata.TopicID
	state metadata.PartitionState // the partition's offsets
	lso   int64                   // its last stable offset
	// committed: a read_committed fetch, which stops at lso and carries
	// the aborted transactions it overlaps.
	committed bool
	offset    int64 // the fetch offset
	limit     int64 // bytes the partition's answer may hold
	// first: no partition before this one in the answer holds records, so
	// one whole batch is returned even when it is larger than limit
	// (KIP-74).
	first bool
	// entries, when not nil, are the index entries prefetch already
	// looked up from offset on.
	entries []metadata.IndexEntry
}

// fetchPartition fills sp with the batches of pf's partition from pf.offset
// on, up to pf.limit bytes, and returns what they hold. The record buffer
// is charged to the fetch budget (added to held): the first partition with
// records waits for room, later ones are left out of an answer the budget
// has no room for.
func (a *Agent) fetchPartition(ctx context.Context, pf partitionFetch, sp *kmsg.FetchResponseTopicPartition, held *int64) (fetched, *kerr.Error) {
	st, offset, limit, entries := pf.state, pf.offset, pf.limit, pf.entries
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = st.NextOffset, pf.lso, st.LogStartOffset
	if offset < st.LogStartOffset || offset > st.NextOffset {
		return fetched{}, kerr.OffsetOutOfRange
	}
	end := st.NextOffset
	if pf.committed {
		end = pf.lso
	}
	if offset >= end {
		return fetched{}, nil
	}
	if entries == nil {
		entries = a.headEntries(pf.topic, sp.Partition, offset, st)
	}
	if entries == nil {
		var err error
		entries, err = a.store.Lookup(ctx, pf.topic, sp.Partition, offset, max(limit, 1), lookupLimit)
		if err != nil {
			if errors.Is(err, metadata.ErrOffsetOutOfRange) {
				return fetched{}, kerr.OffsetOutOfRange
			}
			a.log.Warn("fetch: index lookup failed", "err", err)
			return fetched{}, kerr.KafkaStorageError
		}
	}
	// One allocation of about the answer's size, not a doubling series of
	// copies: a tailing consumer's answer holds a whole flush's worth.
	var need int64
	for _, e := range entries {
		need += e.ByteLength
	}
	need = min(need, limit)
	if !a.takeFetchBudget(ctx, need, pf.first) {
		return fetched{}, nil
	}
	*held += need
	out := sp.RecordBatches
	if need > int64(cap(out)) {
		out = a.batcher.bufs.Get(int(need))[:0]
	}
	var records int64
	// behind: a range came from the object store or from read-ahead, so
	// the consumer is catching up; next is where what was read ends.
	behind, next := false, offset
	for _, e := range entries {
		data, src, err := a.cache.ReadSource(ctx, e.ObjectKey, e.ByteOffset, e.ByteLength)
		if err != nil {
			if len(out) > 0 {
				break // serve what we have; the client asks again
			}
			a.log.Warn("fetch: object read failed", "key", e.ObjectKey, "err", err)
			return fetched{}, kerr.KafkaStorageError
		}
		behind = behind || src != storage.FromCache
		next = e.EndOffset
		var n int64
		var full bool
		out, n, full = appendBatches(out, data, e.BaseOffset, offset, end, limit, pf.first)
		records += n
		if full {
			break
		}
	}
	if over := int64(len(out)) - need; over > 0 {
		// A first batch larger than the limit (KIP-74) is taken whole.
		a.fetchBudget.Force(over)
		*held += over
	}
	sp.RecordBatches = out
	if behind {
		a.ahead.After(pf.topic, sp.Partition, offset, next, end)
	}
	if pf.committed && len(out) > 0 {
		aborted, err := a.store.AbortedTxns(ctx, pf.topic, sp.Partition, offset, end)
		if err != nil {
			a.log.Warn("fetch: aborted transactions failed", "err", err)
			sp.RecordBatches = []byte{}
			return fetched{}, kerr.KafkaStorageError
		}
		for _, at := range aborted {
			t := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			t.ProducerID, t.FirstOffset = at.ProducerID, at.FirstOffset
			sp.AbortedTransactions = append(sp.AbortedTransactions, t)
		}
	}
	return fetched{bytes: int64(len(out)), records: records}, nil
}

// takeFetchBudget charges n bytes of a Fetch answer to the fetch budget. The
// answer's first partition with records waits for room (holding nothing
// else, it cannot stand in another's way); a later one only takes what is
// free now, else it is left out of this answer.
func (a *Agent) takeFetchBudget(ctx context.Context, n int64, first bool) bool {
	if n <= 0 {
		return true
	}
	if a.fetchBudget.TryTake(n) {
		return true
	}
	if !first {
		a.limitHit("fetch.buffer.bytes", "bytes", n, "max", a.cfg.FetchBufferBytes)
		return false
	}
	return a.fetchBudget.Take(n, func() error {
		if a.isClosing() {
			return errStopped
		}
		return ctx.Err()
	}) == nil
}

// fetchSessionError answers a Fetch's session fields (KIP-227). floe opens
// no sessions: every answer carries session id 0, so clients go on sending
// full fetches. A full fetch — epoch 0 (open a session: none is opened) or
// -1 (no session) — is served whatever session id it names, as Kafka serves
// it after closing that session; any other epoch is an incremental fetch in
// a session that cannot exist here.
func fetchSessionError(epoch int32) *kerr.Error {
	if epoch == 0 || epoch == -1 {
		return nil
	}
	return kerr.FetchSessionIDNotFound
}

// fetchAnswer writes Fetch answers (see answerParts): their record sets
// straight from the buffers fetchPartition built, which go back to the
// pool once written, with what they held of the fetch budget.
type fetchAnswer struct{ a *Agent }

func (fa fetchAnswer) appendParts(buf []byte, parts [][]byte, hdr kafkaproto.RequestHeader, resp kmsg.Response) ([]byte, [][]byte) {
	buf, parts, ok := kafkaproto.FetchResponseParts(buf, parts, hdr, resp.(*kmsg.FetchResponse))
	if !ok {
		buf = kafkaproto.AppendResponse(buf[:0], hdr, resp)
		parts = append(parts[:0], buf)
	}
	return buf, parts
}

func (fa fetchAnswer) release(resp kmsg.Response, held int64) {
	if fr, ok := resp.(*kmsg.FetchResponse); ok {
		fa.a.releaseFetchBuffers(fr)
	}
	if held > 0 {
		fa.a.fetchBudget.Release(held)
	}
}

// releaseFetchBuffers hands the record buffers of a Fetch answer back to
// the pool fetchPartition takes them from (the one produce frames come
// from: their idle buffers are one fixed overhead).
func (a *Agent) releaseFetchBuffers(resp *kmsg.FetchResponse) {
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			a.batcher.bufs.Put(p.RecordBatches)
			p.RecordBatches = []byte{} // empty, never null (see fetchOnce)
		}
	}
}

// errAnswerFull stops appendBatches' walk once the answer is full.
var errAnswerFull = errors.New("answer full")

// appendBatches copies the batches of one run (whose first batch has offset
// base) that end after offset and start before end into out, with their
// base offsets rewritten, until limit would be passed. The first batch of a
// fetch is taken whatever its size when first is set (KIP-74). It returns
// the offsets the copied batches span and whether limit or end was reached.
// A run that does not walk (never one an agent or the compactor wrote) ends
// the answer where it breaks.
func appendBatches(out, run []byte, base, offset, end, limit int64, first bool) ([]byte, int64, bool) {
	var records int64
	_, err := kafkaproto.WalkBatches(run, base, func(h kafkaproto.BatchHeader, b []byte, base int64) error {
		next := base + int64(h.LastOffsetDelta) + 1
		if next <= offset {
			return nil
		}
		if base >= end || int64(len(out)+len(b)) > limit && (len(out) > 0 || !first) {
			return errAnswerFull
		}
		at := len(out)
		out = append(out, b...)
		kafkaproto.SetBaseOffset(out[at:], base)
		// The partition leader epoch is outside the CRC; every floe batch
		// belongs to epoch 0, the epoch Metadata reports.
		binary.BigEndian.PutUint32(out[at+12:], 0)
		records += next - base
		return nil
	})
	return out, records, err != nil
}

// prefetchConcurrency bounds the object-store reads one fetch starts ahead,
// and the index look-ups it runs at once.
const prefetchConcurrency = 16

// prefetch looks up the index of every requested partition of one topic that
// has records to return and starts the reads of their byte ranges at once,
// so a fetch over many partitions waits about one metadata round trip and
// one object-store round trip instead of one of each per partition: the
// reads land in the read cache, where fetchPartition's own reads of the same
// ranges join them. It plans at most budget bytes, in request order, and
// returns the entries it looked up, by partition.
func (a *Agent) prefetch(ctx context.Context, topic metadata.TopicID, parts []kmsg.FetchRequestTopicPartition,
	states []metadata.PartitionState, open map[int32]int64, committed bool, budget int64) map[int32][]metadata.IndexEntry {
	if len(parts) < 2 {
		return nil // nothing to overlap
	}
	// The look-ups, concurrently; each may plan up to the whole budget.
	looked := make([][]metadata.IndexEntry, len(parts))
	sem := make(chan struct{}, prefetchConcurrency)
	var wg sync.WaitGroup
	for i, rp := range parts {
		if rp.Partition < 0 || int(rp.Partition) >= len(states) {
			continue
		}
		st := states[rp.Partition]
		end := st.NextOffset
		if first, ok := open[rp.Partition]; ok && committed {
			end = min(end, first)
		}
		if rp.FetchOffset < st.LogStartOffset || rp.FetchOffset >= end {
			continue
		}
		if hs := a.headEntries(topic, rp.Partition, rp.FetchOffset, st); hs != nil {
			looked[i] = hs
			continue
		}
		limit := budget
		if rp.PartitionMaxBytes > 0 {
			limit = min(limit, int64(rp.PartitionMaxBytes))
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			entries, err := a.store.Lookup(ctx, topic, rp.Partition, rp.FetchOffset, max(limit, 1), lookupLimit)
			if err == nil { // else fetchPartition looks again and reports the error
				looked[i] = entries
			}
		}()
	}
	wg.Wait()

	out := make(map[int32][]metadata.IndexEntry, len(parts))
	var planned int64
	for i, rp := range parts {
		if planned >= budget {
			break
		}
		if looked[i] == nil {
			continue
		}
		out[rp.Partition] = looked[i]
		for _, e := range looked[i] {
			planned += e.ByteLength
			if a.cache.Pending(e.ObjectKey, e.ByteOffset, e.ByteLength) {
				// Written through, read before, or on its way (read
				// ahead, or by another fetch): nothing to start. A read
				// ahead is left for fetchPartition to join, so that it
				// sees the read-ahead paid off and reads on ahead.
				continue
			}
			a.bgReads.Add(1)
			go func() {
				defer a.bgReads.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				// The agent's context, not the request's: a read that
				// outlives this fetch still warms the cache for the next.
				_, _ = a.cache.GetRange(a.ctx, e.ObjectKey, e.ByteOffset, e.ByteLength)
			}()
		}
	}
	return out
}
