package storetest

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"floe/metadata"
)

var shareLimits = metadata.ShareLimits{LockDuration: time.Minute, MaxDeliveries: 2, MaxInFlight: 100}

// shareFetch acquires for member within spans in one UpdateShares,
// creating the partition at start if it has no state.
func shareFetch(t *testing.T, s metadata.Store, group string, k metadata.ShareKey, member string, start int64,
	spans []metadata.ShareSpan, max int64, lim metadata.ShareLimits) []metadata.AcquiredRange {
	t.Helper()
	var got []metadata.AcquiredRange
	err := s.UpdateShares(context.Background(), group, []metadata.ShareKey{k}, func(now time.Time, st map[metadata.ShareKey]*metadata.SharePartitionState) error {
		p := st[k]
		if p == nil {
			p = &metadata.SharePartitionState{ShareKey: k}
			p.Reset(start)
			st[k] = p
		}
		p.Expire(now, lim)
		got = p.Acquire(now, member, spans, max, lim)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func shareAck(t *testing.T, s metadata.Store, group string, k metadata.ShareKey, member string, acks []metadata.ShareAck) int16 {
	t.Helper()
	var code int16
	err := s.UpdateShares(context.Background(), group, []metadata.ShareKey{k}, func(now time.Time, st map[metadata.ShareKey]*metadata.SharePartitionState) error {
		p := st[k]
		if p == nil {
			code = -1
			return nil
		}
		if code = p.ValidateAcks(member, acks, metadata.ShareAckReject); code == 0 {
			p.ApplyAcks(now, acks, shareLimits)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func shareState(t *testing.T, s metadata.Store, group string, k metadata.ShareKey) *metadata.SharePartitionState {
	t.Helper()
	sts, err := s.ShareStates(context.Background(), group, []metadata.ShareKey{k})
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) == 0 {
		return nil
	}
	return &sts[0]
}

// testShareStates checks acquisition, acknowledgement, the start offset's
// advance, archiving and what is stored, through UpdateShares.
func testShareStates(t *testing.T, s metadata.Store) {
	ctx := context.Background()
	tp, err := s.CreateTopic(ctx, "shares", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := metadata.ShareKey{Topic: tp.ID, Partition: 1}
	if st := shareState(t, s, "g", k); st != nil {
		t.Fatalf("state before any fetch: %+v", st)
	}
	// Offsets 10..19 hold records, 20..21 a control batch, then 22..29.
	spans := []metadata.ShareSpan{{First: 10, Last: 19}, {First: 20, Last: 21, Skip: true}, {First: 22, Last: 29}}
	got := shareFetch(t, s, "g", k, "a", 10, spans, 5, shareLimits)
	if want := []metadata.AcquiredRange{{First: 10, Last: 14, Deliveries: 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("first acquire = %+v, want %+v", got, want)
	}
	// b gets the rest: the control batch is archived, never acquired.
	got = shareFetch(t, s, "g", k, "b", 10, spans, 100, shareLimits)
	if want := []metadata.AcquiredRange{{First: 15, Last: 19, Deliveries: 1}, {First: 22, Last: 29, Deliveries: 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("second acquire = %+v, want %+v", got, want)
	}
	// a may not acknowledge b's records; nothing changes.
	if code := shareAck(t, s, "g", k, "a", []metadata.ShareAck{{First: 15, Last: 15, Types: []int8{1}}}); code != 121 {
		t.Fatalf("ack of another member's record: code %d, want INVALID_RECORD_STATE", code)
	}
	// a accepts 10..12, releases 13, rejects 14.
	if code := shareAck(t, s, "g", k, "a", []metadata.ShareAck{{First: 10, Last: 14, Types: []int8{1, 1, 1, 2, 3}}}); code != 0 {
		t.Fatalf("ack: code %d", code)
	}
	st := shareState(t, s, "g", k)
	if st.StartOffset != 13 || st.End() != 30 {
		t.Fatalf("after acks: start %d end %d, want 13 and 30: %+v", st.StartOffset, st.End(), st.Ranges)
	}
	// The released offset goes out again, with its delivery count.
	got = shareFetch(t, s, "g", k, "c", 10, spans, 100, shareLimits)
	if want := []metadata.AcquiredRange{{First: 13, Last: 13, Deliveries: 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("redelivery = %+v, want %+v", got, want)
	}
	// Released at the delivery limit (2), it is archived instead.
	if code := shareAck(t, s, "g", k, "c", []metadata.ShareAck{{First: 13, Last: 13, Types: []int8{2}}}); code != 0 {
		t.Fatalf("release: code %d", code)
	}
	if code := shareAck(t, s, "g", k, "b", []metadata.ShareAck{{First: 15, Last: 29, Types: []int8{1}}}); code != 121 {
		t.Fatalf("ack over the archived control batch: code %d, want INVALID_RECORD_STATE", code)
	}
	if code := shareAck(t, s, "g", k, "b", []metadata.ShareAck{{First: 15, Last: 19, Types: []int8{1}}, {First: 22, Last: 29, Types: []int8{1}}}); code != 0 {
		t.Fatalf("ack of b's records: code %d", code)
	}
	st = shareState(t, s, "g", k)
	if st.StartOffset != 30 || len(st.Ranges) != 0 {
		t.Fatalf("all done: start %d ranges %+v, want 30 and none", st.StartOffset, st.Ranges)
	}
	// Another group's view of the partition is its own.
	if st := shareState(t, s, "other", k); st != nil {
		t.Fatalf("other group: %+v", st)
	}
	all, err := s.GroupShareStates(ctx, "g")
	if err != nil || len(all) != 1 || all[0].ShareKey != k {
		t.Fatalf("GroupShareStates = %+v, %v", all, err)
	}
	if err := s.DeleteShareStates(ctx, "g", []metadata.TopicID{tp.ID}); err != nil {
		t.Fatal(err)
	}
	if st := shareState(t, s, "g", k); st != nil {
		t.Fatalf("after delete: %+v", st)
	}
	// An error from update stores nothing.
	boom := errors.New("boom")
	err = s.UpdateShares(ctx, "g", []metadata.ShareKey{k}, func(_ time.Time, st map[metadata.ShareKey]*metadata.SharePartitionState) error {
		st[k] = &metadata.SharePartitionState{ShareKey: k, StartOffset: 5}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("UpdateShares error = %v, want boom", err)
	}
	if st := shareState(t, s, "g", k); st != nil {
		t.Fatalf("after a failed update: %+v", st)
	}
}

// testShareLockExpiry checks that locks end by the store's clock: an
// expired record is acquired again, its delivery count kept.
func testShareLockExpiry(t *testing.T, s metadata.Store) {
	ctx := context.Background()
	tp, err := s.CreateTopic(ctx, "shares-expiry", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := metadata.ShareKey{Topic: tp.ID}
	short := shareLimits
	short.LockDuration = 50 * time.Millisecond
	spans := []metadata.ShareSpan{{First: 0, Last: 3}}
	if got := shareFetch(t, s, "g", k, "dead", 0, spans, 10, short); len(got) != 1 || got[0].Last != 3 {
		t.Fatalf("acquire = %+v", got)
	}
	// Before the lock ends nobody else gets the records.
	if got := shareFetch(t, s, "g", k, "live", 0, spans, 10, shareLimits); len(got) != 0 {
		t.Fatalf("acquired under a live lock: %+v", got)
	}
	time.Sleep(100 * time.Millisecond)
	got := shareFetch(t, s, "g", k, "live", 0, spans, 10, shareLimits)
	if want := []metadata.AcquiredRange{{First: 0, Last: 3, Deliveries: 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after expiry = %+v, want %+v", got, want)
	}
	// The dead member's late acknowledgement is refused.
	if code := shareAck(t, s, "g", k, "dead", []metadata.ShareAck{{First: 0, Last: 3, Types: []int8{1}}}); code != 121 {
		t.Fatalf("late ack: code %d, want INVALID_RECORD_STATE", code)
	}
	// Deleting the topic deletes its share state.
	if err := s.DeleteTopic(ctx, "shares-expiry"); err != nil {
		t.Fatal(err)
	}
	if all, err := s.GroupShareStates(ctx, "g"); err != nil || len(all) != 0 {
		t.Fatalf("after topic delete: %+v, %v", all, err)
	}
}

// testShareConcurrentAcquire races members over one partition: every
// offset is acquired exactly once.
func testShareConcurrentAcquire(t *testing.T, s metadata.Store) {
	ctx := context.Background()
	tp, err := s.CreateTopic(ctx, "shares-race", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := metadata.ShareKey{Topic: tp.ID}
	const total, members = 200, 4
	spans := []metadata.ShareSpan{{First: 0, Last: total - 1}}
	lim := shareLimits
	lim.MaxInFlight = total
	var (
		mu   sync.Mutex
		seen = map[int64]string{}
		wg   sync.WaitGroup
	)
	for m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			member := string(rune('a' + m))
			for range total / 10 {
				var got []metadata.AcquiredRange
				err := s.UpdateShares(ctx, "g", []metadata.ShareKey{k}, func(now time.Time, st map[metadata.ShareKey]*metadata.SharePartitionState) error {
					p := st[k]
					if p == nil {
						p = &metadata.SharePartitionState{ShareKey: k}
						st[k] = p
					}
					got = p.Acquire(now, member, spans, 7, lim)
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, r := range got {
					for o := r.First; o <= r.Last; o++ {
						if prev, ok := seen[o]; ok {
							t.Errorf("offset %d acquired by %s and %s", o, prev, member)
						}
						seen[o] = member
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != total {
		t.Fatalf("acquired %d offsets, want %d", len(seen), total)
	}
}
