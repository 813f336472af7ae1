package metadata

// Share groups (KIP-932): the durable state of every share-partition, the
// (group, topic, partition) triple a share group consumes. It is the
// share-partition start offset (SPSO) and the in-flight window after it:
// ranges of offsets, each available, acquired by a member until a lock
// expires, acknowledged, or archived (rejected, a gap, or delivered too many
// times). Every agent reads and writes it here, so any agent serves any
// share group and an agent that dies loses nothing: its consumers' locks
// expire by the store's clock and their records become available again.
//
// The decisions — acquire, acknowledge, expire, advance the SPSO — are
// methods of SharePartitionState, pure functions both stores share; the
// stores only load, lock and write the rows (UpdateShares), one write
// transaction for all partitions of one ShareFetch or ShareAcknowledge.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// ShareRecordState is the state of an offset in a share-partition's
// in-flight window.
type ShareRecordState int8

// The states of KIP-932's in-flight records.
const (
	ShareAvailable    ShareRecordState = 0 // may be acquired
	ShareAcquired     ShareRecordState = 1 // locked by Member until LockExpiry
	ShareAcknowledged ShareRecordState = 2 // accepted
	ShareArchived     ShareRecordState = 4 // rejected, a gap, or over the delivery limit
)

// Acknowledgement types of ShareFetch and ShareAcknowledge (KIP-932,
// KIP-1222's renew).
const (
	ShareAckGap     int8 = 0
	ShareAckAccept  int8 = 1
	ShareAckRelease int8 = 2
	ShareAckReject  int8 = 3
	ShareAckRenew   int8 = 4
)

// ShareRange is offsets [First, Last] of a window, all in one state.
type ShareRange struct {
	First      int64            `json:"f"`
	Last       int64            `json:"l"`
	State      ShareRecordState `json:"s"`
	Deliveries int16            `json:"d,omitempty"`
	Member     string           `json:"m,omitempty"` // the holder, when acquired
	// LockExpiry is when an acquired range's lock ends, in unix
	// milliseconds of the store's clock.
	LockExpiry int64 `json:"x,omitempty"`
}

// ShareKey names one partition of a share group.
type ShareKey struct {
	Topic     TopicID
	Partition int32
}

// SharePartitionState is a share-partition as stored: offsets below
// StartOffset are done; Ranges cover [StartOffset, End()) without holes.
type SharePartitionState struct {
	ShareKey
	StartOffset int64
	// StateEpoch counts resets of the partition (AlterShareGroupOffsets).
	StateEpoch int32
	Ranges     []ShareRange
}

// End is the first offset after the in-flight window.
func (s *SharePartitionState) End() int64 {
	if n := len(s.Ranges); n > 0 {
		return s.Ranges[n-1].Last + 1
	}
	return s.StartOffset
}

// ShareStore holds the share-partition states.
type ShareStore interface {
	// ShareStates returns the states of parts of group that exist, in no
	// particular order; a read, no lock.
	ShareStates(ctx context.Context, group string, parts []ShareKey) ([]SharePartitionState, error)
	// GroupShareStates returns every share-partition of group, sorted by
	// topic id and partition.
	GroupShareStates(ctx context.Context, group string) ([]SharePartitionState, error)
	// UpdateShares runs update in ONE write transaction over the rows of
	// parts of group, locked in sorted order: states holds one entry per
	// part (nil where the partition has no state yet), now is the store
	// clock's. update changes or creates entries (a nil entry stays
	// absent; one set to a state is written) and may set an entry's
	// StartOffset to -1 to delete it. Rows update did not change are not
	// written. An error from update is returned and nothing is stored.
	UpdateShares(ctx context.Context, group string, parts []ShareKey,
		update func(now time.Time, states map[ShareKey]*SharePartitionState) error) error
	// DeleteShareStates removes the states of group's partitions of
	// topics (every topic when topics is nil).
	DeleteShareStates(ctx context.Context, group string, topics []TopicID) error
}

// ShareLimits are a share group's settings that the state transitions use.
type ShareLimits struct {
	LockDuration  time.Duration // share.record.lock.duration.ms
	MaxDeliveries int16         // group.share.delivery.count.limit
	// MaxInFlight bounds the window (group.share.partition.max.record.locks).
	MaxInFlight int64
}

// ShareSpan is a run of offsets [First, Last] the fetched data holds: Skip
// marks offsets that are no records for a consumer (control batches,
// aborted transactions), archived on sight instead of acquired.
type ShareSpan struct {
	First, Last int64
	Skip        bool
}

// AcquiredRange is offsets [First, Last] acquired at one delivery count.
type AcquiredRange struct {
	First, Last int64
	Deliveries  int16
}

// Reset empties the window and starts it at offset (a new share-partition,
// or an offset reset).
func (s *SharePartitionState) Reset(offset int64) {
	s.StartOffset, s.Ranges = offset, nil
}

// Expire releases the acquired ranges whose lock ended at now.
func (s *SharePartitionState) Expire(now time.Time, lim ShareLimits) {
	ms := now.UnixMilli()
	for i := range s.Ranges {
		r := &s.Ranges[i]
		if r.State == ShareAcquired && r.LockExpiry <= ms {
			release(r, lim)
		}
	}
	s.normalize()
}

// TrimTo moves the start past offsets below logStart (deleted by
// retention or DeleteRecords): they can no longer be delivered.
func (s *SharePartitionState) TrimTo(logStart int64) {
	if logStart <= s.StartOffset {
		return
	}
	s.split(logStart)
	i := 0
	for i < len(s.Ranges) && s.Ranges[i].Last < logStart {
		i++
	}
	s.Ranges = s.Ranges[i:]
	s.StartOffset = logStart
}

// release makes an acquired range available again, or archived once it
// was delivered MaxDeliveries times.
func release(r *ShareRange, lim ShareLimits) {
	r.State, r.Member, r.LockExpiry = ShareAvailable, "", 0
	if lim.MaxDeliveries > 0 && r.Deliveries >= lim.MaxDeliveries {
		r.State = ShareArchived
	}
}

// ReleaseMember releases every range member holds (its share session
// closed, or it left the group).
func (s *SharePartitionState) ReleaseMember(member string, lim ShareLimits) bool {
	changed := false
	for i := range s.Ranges {
		r := &s.Ranges[i]
		if r.State == ShareAcquired && r.Member == member {
			release(r, lim)
			changed = true
		}
	}
	s.normalize()
	s.advance()
	return changed
}

// ShareAck is one acknowledgement batch: offsets [First, Last], one type
// for all of them or one per offset.
type ShareAck struct {
	First, Last int64
	Types       []int8
}

// ValidateAcks checks a partition's acknowledgement batches as Kafka does:
// well-formed (INVALID_REQUEST, code 42) and naming offsets member holds
// (INVALID_RECORD_STATE, code 121). It returns 0 when all may be applied.
func (s *SharePartitionState) ValidateAcks(member string, acks []ShareAck, maxType int8) int16 {
	const invalidRequest, invalidRecordState = 42, 121
	prev := int64(-1)
	for _, a := range acks {
		if a.First > a.Last || a.First <= prev || len(a.Types) == 0 ||
			(len(a.Types) > 1 && int64(len(a.Types)) != a.Last-a.First+1) {
			return invalidRequest
		}
		for _, t := range a.Types {
			if t < 0 || t > maxType {
				return invalidRequest
			}
		}
		prev = a.Last
		if a.Last >= s.End() {
			return invalidRequest
		}
		for _, r := range s.Ranges {
			if r.Last < a.First || r.First > a.Last {
				continue
			}
			if r.State != ShareAcquired || r.Member != member {
				return invalidRecordState
			}
		}
	}
	return 0
}

// ApplyAcks applies acknowledgement batches ValidateAcks accepted, at now
// (renewals lock again from now), and advances the start.
func (s *SharePartitionState) ApplyAcks(now time.Time, acks []ShareAck, lim ShareLimits) {
	for _, a := range acks {
		first := max(a.First, s.StartOffset)
		if first > a.Last {
			continue
		}
		if len(a.Types) == 1 {
			s.set(first, a.Last, func(r *ShareRange) { applyAck(r, a.Types[0], now, lim) })
			continue
		}
		// Per-offset types: runs of one type at a time.
		for o := first; o <= a.Last; {
			t := a.Types[o-a.First]
			e := o
			for e+1 <= a.Last && a.Types[e+1-a.First] == t {
				e++
			}
			s.set(o, e, func(r *ShareRange) { applyAck(r, t, now, lim) })
			o = e + 1
		}
	}
	s.normalize()
	s.advance()
}

func applyAck(r *ShareRange, t int8, now time.Time, lim ShareLimits) {
	switch t {
	case ShareAckAccept:
		r.State, r.Member, r.LockExpiry = ShareAcknowledged, "", 0
	case ShareAckRelease:
		release(r, lim)
	case ShareAckRenew:
		r.LockExpiry = now.Add(lim.LockDuration).UnixMilli()
	default: // gap, reject
		r.State, r.Member, r.LockExpiry = ShareArchived, "", 0
	}
}

// Acquire gives member the available offsets of spans (the fetched data,
// sorted, from the window's first available offset on), at most
// maxRecords, locked until now + LockDuration: first the released or
// expired offsets inside the window, then new offsets after it, as long as
// the window stays within MaxInFlight. Offsets between spans (none left
// by compaction) and Skip spans are archived rather than acquired.
func (s *SharePartitionState) Acquire(now time.Time, member string, spans []ShareSpan, maxRecords int64, lim ShareLimits) []AcquiredRange {
	var out []AcquiredRange
	expiry := now.Add(lim.LockDuration).UnixMilli()
	take := func(first, last int64, dc int16) {
		if n := len(out); n > 0 && out[n-1].Last+1 == first && out[n-1].Deliveries == dc {
			out[n-1].Last = last
			return
		}
		out = append(out, AcquiredRange{First: first, Last: last, Deliveries: dc})
	}
	count := int64(0)
	end := s.End()
	for _, sp := range spans {
		if count >= maxRecords {
			break
		}
		first := max(sp.First, s.StartOffset)
		// Inside the window: available offsets only.
		if first < end {
			last := min(sp.Last, end-1)
			for o := first; o <= last && count < maxRecords; {
				i := s.find(o)
				if i >= len(s.Ranges) {
					break // never for a window without holes
				}
				r := s.Ranges[i]
				e := min(r.Last, last)
				if r.State == ShareAvailable {
					if sp.Skip {
						s.set(o, e, func(r *ShareRange) { r.State = ShareArchived })
					} else {
						e = min(e, o+maxRecords-count-1)
						dc := r.Deliveries + 1
						s.set(o, e, func(r *ShareRange) {
							r.State, r.Member, r.LockExpiry, r.Deliveries = ShareAcquired, member, expiry, dc
						})
						take(o, e, dc)
						count += e - o + 1
					}
				}
				o = e + 1
			}
			first = end
		}
		// After the window: new offsets, holes before them archived.
		if sp.Last < first || count >= maxRecords {
			continue
		}
		end = s.End()
		if first > end {
			s.Ranges = append(s.Ranges, ShareRange{First: end, Last: first - 1, State: ShareArchived})
		}
		if sp.Skip {
			s.Ranges = append(s.Ranges, ShareRange{First: first, Last: sp.Last, State: ShareArchived})
			end = s.End()
			continue
		}
		room := lim.MaxInFlight - (first - s.StartOffset)
		if lim.MaxInFlight > 0 && room <= 0 {
			break
		}
		last := min(sp.Last, first+maxRecords-count-1)
		if lim.MaxInFlight > 0 {
			last = min(last, first+room-1)
		}
		s.Ranges = append(s.Ranges, ShareRange{First: first, Last: last, State: ShareAcquired, Deliveries: 1,
			Member: member, LockExpiry: expiry})
		take(first, last, 1)
		count += last - first + 1
		end = s.End()
		if last < sp.Last {
			break
		}
	}
	s.normalize()
	s.advance()
	return out
}

// FirstAvailable is the offset a fetch for this partition starts at: the
// first available (or, by now, expired) offset in the window, else its
// end.
func (s *SharePartitionState) FirstAvailable(now time.Time) int64 {
	ms := now.UnixMilli()
	for _, r := range s.Ranges {
		if r.State == ShareAvailable || (r.State == ShareAcquired && r.LockExpiry <= ms) {
			return r.First
		}
	}
	return s.End()
}

// Done counts the window's acknowledged and archived offsets (for lag).
func (s *SharePartitionState) Done() int64 {
	n := int64(0)
	for _, r := range s.Ranges {
		if r.State == ShareAcknowledged || r.State == ShareArchived {
			n += r.Last - r.First + 1
		}
	}
	return n
}

// advance moves the start over the finished prefix of the window.
func (s *SharePartitionState) advance() {
	i := 0
	for i < len(s.Ranges) && (s.Ranges[i].State == ShareAcknowledged || s.Ranges[i].State == ShareArchived) {
		i++
	}
	if i == 0 {
		return
	}
	s.StartOffset = s.Ranges[i-1].Last + 1
	s.Ranges = append(s.Ranges[:0], s.Ranges[i:]...)
}

// find returns the index of the range holding offset o (inside the window).
func (s *SharePartitionState) find(o int64) int {
	lo, hi := 0, len(s.Ranges)
	for lo < hi {
		m := (lo + hi) / 2
		if s.Ranges[m].Last < o {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// split makes o the first offset of a range, if o is inside the window.
func (s *SharePartitionState) split(o int64) {
	i := s.find(o)
	if i >= len(s.Ranges) || s.Ranges[i].First >= o {
		return
	}
	r := s.Ranges[i]
	left, right := r, r
	left.Last, right.First = o-1, o
	s.Ranges = append(s.Ranges[:i+1], s.Ranges[i:]...)
	s.Ranges[i], s.Ranges[i+1] = left, right
}

// set applies fn to every range of [first, last] (inside the window),
// splitting ranges at its bounds.
func (s *SharePartitionState) set(first, last int64, fn func(r *ShareRange)) {
	s.split(first)
	s.split(last + 1)
	for i := s.find(first); i < len(s.Ranges) && s.Ranges[i].Last <= last; i++ {
		fn(&s.Ranges[i])
	}
}

// normalize merges neighbouring ranges that are alike.
func (s *SharePartitionState) normalize() {
	out := s.Ranges[:0]
	for _, r := range s.Ranges {
		if n := len(out); n > 0 {
			p := &out[n-1]
			if p.State == r.State && p.Deliveries == r.Deliveries && p.Member == r.Member && p.LockExpiry == r.LockExpiry {
				p.Last = r.Last
				continue
			}
		}
		out = append(out, r)
	}
	s.Ranges = out
}

// EncodeShareRanges is the stored form of a window (JSON).
func EncodeShareRanges(rs []ShareRange) string {
	if len(rs) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(rs) // plain data: cannot fail
	return string(b)
}

// DecodeShareRanges reads EncodeShareRanges' form back.
func DecodeShareRanges(s string) ([]ShareRange, error) {
	var rs []ShareRange
	if err := json.Unmarshal([]byte(s), &rs); err != nil {
		return nil, fmt.Errorf("decode share ranges: %w", err)
	}
	return rs, nil
}
