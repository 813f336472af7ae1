package agent

// Share groups (KIP-932) on the record side: what ShareFetch and
// ShareAcknowledge share. Any agent serves any share-partition: the state
// (start offset, in-flight window, locks, delivery counts) is in the
// metadata store (metadata.ShareStore), and every ShareFetch or
// ShareAcknowledge reads it once and writes it in ONE transaction for all
// of its partitions (acknowledgements, releases and acquisitions
// together). What an agent keeps itself is soft: the share sessions of the
// members fetching from it (epochs and partition sets, as KIP-932 fetch
// sessions, ended with the connection that opened them; a member whose
// session is lost starts a new one) and the
// share groups' configs, read again after TopicCacheTTL.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

// maxShareSessions bounds the share sessions one agent keeps (Kafka's
// group.share.max.share.sessions default).
const maxShareSessions = 2000

// defaultShareMaxRecords is what a ShareFetch without MaxRecords (v0, or
// 0) acquires at most, Kafka's default.
const defaultShareMaxRecords = 500

type shareSessionKey struct{ group, member string }

// shareSession is one member's share session on this agent: the epoch its
// next request must carry and the partitions it fetches.
type shareSession struct {
	epoch int32
	parts []metadata.ShareKey
	c     *conn // the connection that opened it: its close ends the session
}

// shares is the agent's share sessions and cached share-group configs.
// mu guards both maps; no I/O happens under it.
type shares struct {
	a        *Agent
	mu       sync.Mutex
	sessions map[shareSessionKey]*shareSession
	configs  map[string]cachedShareConfigs
	// density is the bytes per offset of each partition's last share
	// fetch here: a ShareFetch reads about what its records need, not a
	// whole PartitionMaxBytes of which it acquires a sliver.
	density map[metadata.ShareKey]float64
}

type cachedShareConfigs struct {
	s    shareSettings
	read time.Time
}

func newShares(a *Agent) *shares {
	return &shares{a: a, sessions: map[shareSessionKey]*shareSession{}, configs: map[string]cachedShareConfigs{},
		density: map[metadata.ShareKey]float64{}}
}

// settings returns a share group's settings, and whether its id is
// another type of group's, read from the store when not cached or older
// than TopicCacheTTL.
func (s *shares) settings(ctx context.Context, group string) (shareSettings, error) {
	now := time.Now()
	s.mu.Lock()
	c, ok := s.configs[group]
	s.mu.Unlock()
	if ok && now.Sub(c.read) < s.a.cfg.TopicCacheTTL {
		return c.s, nil
	}
	cfgs, err := s.a.store.GroupConfigs(ctx, group)
	if err != nil {
		return shareSettings{}, err
	}
	st := newShareSettings(cfgs)
	// A classic or consumer group's id is no share group's (as Kafka).
	rec, err := s.a.store.LoadGroup(ctx, group)
	switch {
	case errors.Is(err, metadata.ErrNotFound):
	case err != nil:
		return shareSettings{}, err
	default:
		st.otherType = rec.ProtocolType != shareProtocolType && rec.ProtocolType != ""
	}
	s.mu.Lock()
	if len(s.configs) > 10000 {
		clear(s.configs) // many groups: start over rather than grow
	}
	s.configs[group] = cachedShareConfigs{s: st, read: now}
	s.mu.Unlock()
	return st, nil
}

// minShareRead is the least a share fetch reads of a partition.
const minShareRead = 64 << 10

// readLimit bounds what a share fetch of k reads for records offsets:
// a quarter more than they took last time, at least minShareRead, at most
// limit. With nothing known yet it is limit.
func (s *shares) readLimit(k metadata.ShareKey, records, limit int64) int64 {
	s.mu.Lock()
	d, ok := s.density[k]
	s.mu.Unlock()
	if !ok {
		return limit
	}
	return min(limit, max(minShareRead, int64(d*float64(records)*1.25)))
}

// observe records what a share fetch of k read: bytes over offsets.
// Reading nothing where there were records (a batch larger than the
// bound, not the answer's first) forgets the density: the next fetch
// reads up to its whole limit.
func (s *shares) observe(k metadata.ShareKey, bytes, offsets int64) {
	if offsets <= 0 {
		s.mu.Lock()
		delete(s.density, k)
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	if len(s.density) > 100000 {
		clear(s.density)
	}
	s.density[k] = float64(bytes) / float64(offsets)
	s.mu.Unlock()
}

// configsChanged drops a group's cached configs (altered through this
// agent).
func (s *shares) configsChanged(group string) {
	s.mu.Lock()
	delete(s.configs, group)
	s.mu.Unlock()
}

// openSession applies a ShareFetch's session fields: epoch 0 starts a new
// session with add, an epoch > 0 must be the session's next one and adds
// add and removes forget. The session's epoch moves on at once (as
// Kafka's share session cache does when it takes a request). It returns
// the session's partitions.
func (s *shares) openSession(c *conn, group, member string, epoch int32, add, forget []metadata.ShareKey) ([]metadata.ShareKey, *kerr.Error) {
	k := shareSessionKey{group, member}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[k]
	if epoch == 0 {
		delete(s.sessions, k)
		if len(s.sessions) >= maxShareSessions {
			return nil, kerr.ShareSessionLimitReached
		}
		sess = &shareSession{c: c}
		s.sessions[k] = sess
	} else {
		if sess == nil {
			return nil, kerr.ShareSessionNotFound
		}
		if sess.epoch != epoch {
			return nil, kerr.InvalidShareSessionEpoch
		}
	}
	for _, p := range add {
		if !slices.Contains(sess.parts, p) {
			sess.parts = append(sess.parts, p)
		}
	}
	for _, p := range forget {
		for i, q := range sess.parts {
			if q == p {
				sess.parts = append(sess.parts[:i], sess.parts[i+1:]...)
				break
			}
		}
	}
	sess.epoch++
	if sess.epoch < 1 {
		sess.epoch = 1
	}
	return append([]metadata.ShareKey(nil), sess.parts...), nil
}

// closeSession ends a member's session (epoch -1) and returns its
// partitions.
func (s *shares) closeSession(group, member string) ([]metadata.ShareKey, *kerr.Error) {
	k := shareSessionKey{group, member}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[k]
	if sess == nil {
		return nil, kerr.ShareSessionNotFound
	}
	delete(s.sessions, k)
	return sess.parts, nil
}

// checkSession validates a ShareAcknowledge's epoch (> 0) and moves the
// session on.
func (s *shares) checkSession(group, member string, epoch int32) *kerr.Error {
	if epoch == 0 {
		return kerr.InvalidShareSessionEpoch
	}
	_, err := s.openSession(nil, group, member, epoch, nil, nil)
	return err
}

// connClosed ends the share sessions c opened and releases the records
// their members hold in the sessions' partitions, as Kafka does when a
// share consumer's connection closes: another member gets them without
// waiting for the locks to expire. One store transaction per session; a
// failure leaves the locks to expire.
func (s *shares) connClosed(c *conn) {
	type ended struct {
		k     shareSessionKey
		parts []metadata.ShareKey
	}
	var gone []ended
	s.mu.Lock()
	for k, sess := range s.sessions {
		if sess.c == c {
			gone = append(gone, ended{k, sess.parts})
			delete(s.sessions, k)
		}
	}
	s.mu.Unlock()
	for _, e := range gone {
		if len(e.parts) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		set, err := s.settings(ctx, e.k.group)
		if err == nil {
			err = s.a.store.UpdateShares(ctx, e.k.group, e.parts, func(_ time.Time, states map[metadata.ShareKey]*metadata.SharePartitionState) error {
				for _, st := range states {
					if st != nil {
						st.ReleaseMember(e.k.member, set.limits)
					}
				}
				return nil
			})
		}
		cancel()
		if err != nil {
			s.a.log.Warn("release records of a closed share session failed", "group", e.k.group, "err", err)
		}
	}
}

// shareAcks are one request's acknowledgements by partition.
type shareAcks map[metadata.ShareKey][]metadata.ShareAck

func ackBatches[B any](batches []B, get func(B) (int64, int64, []int8)) []metadata.ShareAck {
	out := make([]metadata.ShareAck, 0, len(batches))
	for _, b := range batches {
		first, last, types := get(b)
		out = append(out, metadata.ShareAck{First: first, Last: last, Types: types})
	}
	return out
}

// sharePart is one partition of a ShareFetch or ShareAcknowledge: what the
// transaction does to it and what it answers.
type sharePart struct {
	key   metadata.ShareKey
	topic metadata.Topic
	acks  []metadata.ShareAck
	// release: the member's session closed, its records go back.
	release bool
	// fetch: spans of fetched data to acquire from, init the start of a
	// share-partition without state, logStart the partition's log start.
	fetch    bool
	spans    []metadata.ShareSpan
	init     int64
	logStart int64

	ackCode  int16
	acquired []metadata.AcquiredRange
}

// applyShares runs one share request's changes in ONE store transaction:
// expired locks are released, then the acknowledgements are checked and
// applied, a closing member's records released, and records acquired, at
// most maxRecords in all. Each part's ackCode and acquired are set.
func (a *Agent) applyShares(ctx context.Context, group, member string, set shareSettings, parts []*sharePart,
	maxAckType int8, maxRecords int64) error {
	keys := make([]metadata.ShareKey, 0, len(parts))
	for _, p := range parts {
		keys = append(keys, p.key)
	}
	lim := set.limits
	return a.store.UpdateShares(ctx, group, keys, func(now time.Time, states map[metadata.ShareKey]*metadata.SharePartitionState) error {
		left := maxRecords
		for _, p := range parts {
			p.ackCode, p.acquired = 0, nil
			st := states[p.key]
			if st == nil && p.fetch {
				st = &metadata.SharePartitionState{ShareKey: p.key}
				st.Reset(p.init)
				states[p.key] = st
			}
			if st == nil {
				if len(p.acks) > 0 {
					p.ackCode = kerr.InvalidRecordState.Code
				}
				continue
			}
			if p.fetch {
				st.TrimTo(p.logStart)
			}
			st.Expire(now, lim)
			if len(p.acks) > 0 {
				if p.ackCode = st.ValidateAcks(member, p.acks, maxAckType); p.ackCode == 0 {
					st.ApplyAcks(now, p.acks, lim)
				}
			}
			if p.release {
				st.ReleaseMember(member, lim)
			}
			if p.fetch && left > 0 && len(p.spans) > 0 {
				p.acquired = st.Acquire(now, member, p.spans, left, lim)
				for _, r := range p.acquired {
					left -= r.Last - r.First + 1
				}
			}
		}
		return nil
	})
}

// shareSpans reads the batches of fetched data into the spans Acquire
// takes: control batches, and with readCommitted the batches of aborted
// transactions, are Skip.
func shareSpans(data []byte, aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction, readCommitted bool) []metadata.ShareSpan {
	var spans []metadata.ShareSpan
	open := map[int64]bool{} // producers inside an aborted transaction
	next := 0
	_, _ = kafkaproto.WalkBatches(data, 0, func(h kafkaproto.BatchHeader, _ []byte, _ int64) error {
		first, last := h.BaseOffset, h.BaseOffset+int64(h.LastOffsetDelta)
		for readCommitted && next < len(aborted) && aborted[next].FirstOffset <= last {
			open[aborted[next].ProducerID] = true
			next++
		}
		control := h.Attributes&0x20 != 0
		skip := control || (readCommitted && h.IsTransactional() && open[h.ProducerID])
		if control {
			delete(open, h.ProducerID)
		}
		if n := len(spans); n > 0 && spans[n-1].Skip == skip && spans[n-1].Last+1 == first {
			spans[n-1].Last = last
		} else {
			spans = append(spans, metadata.ShareSpan{First: first, Last: last, Skip: skip})
		}
		return nil
	})
	return spans
}

// trimToAcquired cuts data after the last batch holding an acquired
// offset: the client would drop the rest.
func trimToAcquired(data []byte, last int64) []byte {
	cut := 0
	_, _ = kafkaproto.WalkBatches(data, 0, func(h kafkaproto.BatchHeader, b []byte, _ int64) error {
		if h.BaseOffset > last {
			return errAnswerFull
		}
		cut += len(b)
		return nil
	})
	return data[:cut]
}

// shareOpen makes the checks ShareFetch and ShareAcknowledge open with, in
// Kafka's order: READ on the group, a group and a member id (and no other
// refusal the caller found, bad: INVALID_REQUEST), the group's share
// settings (GROUP_ID_NOT_FOUND for another kind of group, whose settings
// it does not return) and the topics by id. code is nil when all pass.
func (a *Agent) shareOpen(ctx context.Context, r *request, group, member string, bad bool) (shareSettings, map[metadata.TopicID]metadata.Topic, *kerr.Error) {
	if !a.authorize(r, opRead, resGroup, group) {
		return shareSettings{}, nil, kerr.GroupAuthorizationFailed
	}
	if group == "" || member == "" || len(member) > 36 || bad {
		return shareSettings{}, nil, kerr.InvalidRequest
	}
	set, err := a.coord.shares.settings(ctx, group)
	if err != nil {
		return shareSettings{}, nil, kerr.CoordinatorNotAvailable
	}
	if set.otherType {
		return shareSettings{}, nil, kerr.GroupIDNotFound
	}
	_, byID, err := a.topics.snapshot(ctx)
	if err != nil {
		return set, nil, kerr.CoordinatorNotAvailable
	}
	return set, byID, nil
}

// resolveSharePart finds p's topic by id and checks READ on it and the
// partition: 0 with p.topic set, else the partition's error code.
func (a *Agent) resolveSharePart(r *request, byID map[metadata.TopicID]metadata.Topic, p *sharePart) int16 {
	t, ok := byID[p.key.Topic]
	switch {
	case !ok:
		return kerr.UnknownTopicID.Code
	case !a.authorize(r, opRead, resTopic, t.Name):
		return kerr.TopicAuthorizationFailed.Code
	case p.key.Partition < 0 || p.key.Partition >= t.Partitions:
		return kerr.UnknownTopicOrPartition.Code
	}
	p.topic = t
	return 0
}

// shareStoreError is the Kafka error of a failed share-state read or write.
func shareStoreError(ctx context.Context, err error) *kerr.Error {
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return kerr.RequestTimedOut
	}
	return kerr.KafkaStorageError
}
