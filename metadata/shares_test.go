package metadata

import (
	"reflect"
	"testing"
	"time"
)

func TestShareStateTransitions(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	lim := ShareLimits{LockDuration: time.Second, MaxDeliveries: 3, MaxInFlight: 8}
	s := &SharePartitionState{}
	s.Reset(100)
	// The window cap: at most 8 offsets in flight.
	got := s.Acquire(now, "a", []ShareSpan{{First: 100, Last: 119}}, 100, lim)
	if want := []AcquiredRange{{First: 100, Last: 107, Deliveries: 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("capped acquire = %+v, want %+v", got, want)
	}
	// Per-offset acknowledgements: accept, renew, release, reject, gap.
	acks := []ShareAck{{First: 100, Last: 104, Types: []int8{ShareAckAccept, ShareAckAccept, ShareAckRenew, ShareAckRelease, ShareAckReject}},
		{First: 106, Last: 107, Types: []int8{ShareAckGap}}}
	if code := s.ValidateAcks("a", acks, ShareAckReject); code != 42 {
		t.Fatalf("renew without renew allowed: code %d, want INVALID_REQUEST", code)
	}
	if code := s.ValidateAcks("a", acks, ShareAckRenew); code != 0 {
		t.Fatalf("validate: %d", code)
	}
	if code := s.ValidateAcks("a", []ShareAck{{First: 104, Last: 103, Types: []int8{1}}}, ShareAckRenew); code != 42 {
		t.Fatalf("first > last: code %d", code)
	}
	if code := s.ValidateAcks("a", []ShareAck{{First: 100, Last: 108, Types: []int8{1}}}, ShareAckRenew); code != 42 {
		t.Fatalf("past the window: code %d", code)
	}
	later := now.Add(500 * time.Millisecond)
	s.ApplyAcks(later, acks, lim)
	if s.StartOffset != 102 {
		t.Fatalf("start %d, want 102 after accepting 100 and 101", s.StartOffset)
	}
	// At 1.2 s the original locks (105) ended, the renewed one (102) not.
	s.Expire(now.Add(1200*time.Millisecond), lim)
	want := []ShareRange{
		{First: 102, Last: 102, State: ShareAcquired, Deliveries: 1, Member: "a", LockExpiry: later.Add(time.Second).UnixMilli()},
		{First: 103, Last: 103, State: ShareAvailable, Deliveries: 1},
		{First: 104, Last: 104, State: ShareArchived, Deliveries: 1},
		{First: 105, Last: 105, State: ShareAvailable, Deliveries: 1},
		{First: 106, Last: 107, State: ShareArchived, Deliveries: 1},
	}
	if !reflect.DeepEqual(s.Ranges, want) {
		t.Fatalf("ranges\n%+v\nwant\n%+v", s.Ranges, want)
	}
	if n := s.Done(); n != 3 {
		t.Fatalf("done %d, want 3", n)
	}
	// Redeliveries first, then new offsets up to the cap (102+8 = 110).
	got = s.Acquire(now, "b", []ShareSpan{{First: 103, Last: 119}}, 100, lim)
	if want := []AcquiredRange{{First: 103, Last: 103, Deliveries: 2}, {First: 105, Last: 105, Deliveries: 2},
		{First: 108, Last: 109, Deliveries: 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquire = %+v, want %+v", got, want)
	}
	// Retention removed offsets below 105: the window starts there.
	s.TrimTo(105)
	if s.StartOffset != 105 || s.Ranges[0].First != 105 {
		t.Fatalf("after trim: %d %+v", s.StartOffset, s.Ranges)
	}
	// b leaves: its records go back; encoding round-trips.
	s.ReleaseMember("b", lim)
	back, err := DecodeShareRanges(EncodeShareRanges(s.Ranges))
	if err != nil || !reflect.DeepEqual(back, s.Ranges) {
		t.Fatalf("round trip %+v, %v", back, err)
	}
	if s.FirstAvailable(now) != 105 {
		t.Fatalf("first available %d, want 105", s.FirstAvailable(now))
	}
}
