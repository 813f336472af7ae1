package storetest

import (
	"fmt"
	"testing"

	"floe/metadata"
)

// lookupFixture commits six objects to partition 0 of a two-partition
// topic, each also carrying a run of partition 1 so that the partitions'
// entries interleave in the index. Partition 0 gets offsets
// [0,5) [5,6) [6,16) [16,19) [19,26) [26,30).
func lookupFixture(t *testing.T, s metadata.Store) (metadata.Topic, []metadata.IndexEntry) {
	tp := mustCreate(t, s, "look", 2)
	records := []int64{5, 1, 10, 3, 7, 4}
	lengths := []int64{100, 200, 50, 400, 100, 100}
	maxTS := []int64{10, 30, 20, 30, 25, 5}
	var want []metadata.IndexEntry
	var next int64
	for i := range records {
		key := fmt.Sprintf("look-%d", i)
		r := run(tp.ID, 0, records[i], 64, lengths[i], maxTS[i]-3, maxTS[i])
		res := commit(t, s, key, run(tp.ID, 1, 2, 0, 64, 1000, 2000), r)
		if res[1].Err != nil || res[1].BaseOffset != next {
			t.Fatalf("fixture commit %d: %+v", i, res[1])
		}
		want = append(want, entryOf(key, r, next))
		next += records[i]
	}
	return tp, want
}

func testLookup(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp, e := lookupFixture(t, s)
	const all = 1 << 40
	for _, c := range []struct {
		offset, maxBytes int64
		limit            int
		want             []metadata.IndexEntry
	}{
		{0, all, 0, e},
		{0, 1, 0, e[:1]},
		{0, 0, 0, e[:1]},
		{0, -5, 0, e[:1]},
		{4, all, 0, e},
		{5, all, 0, e[1:]},
		{7, all, 0, e[2:]},
		{15, all, 0, e[2:]},
		{16, all, 0, e[3:]},
		{29, all, 0, e[5:]},
		{30, all, 0, nil}, // the high watermark: nothing yet, no error
		{0, 300, 0, e[:2]},
		{0, 301, 0, e[:3]},
		{6, 450, 0, e[2:4]},
		{6, 449, 0, e[2:4]},
		{6, 451, 0, e[2:5]},
		{0, all, 2, e[:2]},
		{18, all, 1, e[3:4]},
		{18, all, 100, e[3:]},
		{0, 300, 1, e[:1]},
	} {
		got, err := s.Lookup(ctx, tp.ID, 0, c.offset, c.maxBytes, c.limit)
		if err != nil {
			t.Fatalf("Lookup(%d, %d, %d): %v", c.offset, c.maxBytes, c.limit, err)
		}
		sameEntries(t, fmt.Sprintf("Lookup(%d, %d, %d)", c.offset, c.maxBytes, c.limit), got, c.want)
	}
}

func testLookupErrors(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp, _ := lookupFixture(t, s)
	for _, off := range []int64{31, 1 << 62, -1, -1 << 62} {
		_, err := s.Lookup(ctx, tp.ID, 0, off, 1<<20, 10)
		wantErr(t, fmt.Sprintf("Lookup(%d)", off), err, metadata.ErrOffsetOutOfRange)
	}
	_, err := s.Lookup(ctx, tp.ID, 2, 0, 1<<20, 10)
	wantErr(t, "Lookup of unknown partition", err, metadata.ErrUnknownTopic)
	_, err = s.Lookup(ctx, metadata.TopicID{7}, 0, 0, 1<<20, 10)
	wantErr(t, "Lookup of unknown topic", err, metadata.ErrUnknownTopic)

	empty := mustCreate(t, s, "empty", 1)
	got, err := s.Lookup(ctx, empty.ID, 0, 0, 1<<20, 10)
	if err != nil || len(got) != 0 {
		t.Fatalf("Lookup(0) of an empty partition: %v, %v", got, err)
	}
	_, err = s.Lookup(ctx, empty.ID, 0, 1, 1<<20, 10)
	wantErr(t, "Lookup(1) of an empty partition", err, metadata.ErrOffsetOutOfRange)
}

func testLookupTimestamp(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp, e := lookupFixture(t, s) // max timestamps 10, 30, 20, 30, 25, 5
	for _, c := range []struct {
		ts   int64
		want int
	}{
		{-1 << 62, 0}, {-1, 0}, {0, 0}, {10, 0}, {11, 1}, {21, 1}, {30, 1},
	} {
		got, err := s.LookupTimestamp(ctx, tp.ID, 0, c.ts)
		if err != nil {
			t.Fatalf("LookupTimestamp(%d): %v", c.ts, err)
		}
		if got != e[c.want] {
			t.Fatalf("LookupTimestamp(%d)\ngot  %+v\nwant %+v", c.ts, got, e[c.want])
		}
	}
	_, err := s.LookupTimestamp(ctx, tp.ID, 0, 31)
	wantErr(t, "LookupTimestamp past every timestamp", err, metadata.ErrNotFound)
	// Partition 1's runs carry timestamps up to 2000; they must not leak.
	got, err := s.LookupTimestamp(ctx, tp.ID, 1, 1500)
	if err != nil || got.Partition != 1 || got.BaseOffset != 0 || got.ObjectKey != "look-0" {
		t.Fatalf("LookupTimestamp on partition 1: %+v, %v", got, err)
	}

	empty := mustCreate(t, s, "empty", 1)
	_, err = s.LookupTimestamp(ctx, empty.ID, 0, 0)
	wantErr(t, "LookupTimestamp of an empty partition", err, metadata.ErrNotFound)
	_, err = s.LookupTimestamp(ctx, tp.ID, 5, 0)
	wantErr(t, "LookupTimestamp of an unknown partition", err, metadata.ErrUnknownTopic)
}

func testLookupMaxTimestamp(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp, e := lookupFixture(t, s) // max timestamps 10, 30, 20, 30, 25, 5
	got, err := s.LookupMaxTimestamp(ctx, tp.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got != e[1] {
		t.Fatalf("LookupMaxTimestamp\ngot  %+v\nwant %+v (the earliest of the two entries with ts 30)", got, e[1])
	}
	if st := partition(t, s, tp.ID, 0); st.MaxTimestamp != 30 {
		t.Fatalf("partition max timestamp %d, want 30", st.MaxTimestamp)
	}
	// A later, larger timestamp takes over.
	r := run(tp.ID, 0, 1, 0, 10, 40, 41)
	commit(t, s, "later", r)
	got, err = s.LookupMaxTimestamp(ctx, tp.ID, 0)
	if err != nil || got != entryOf("later", r, 30) {
		t.Fatalf("LookupMaxTimestamp after a later commit: %+v, %v", got, err)
	}

	empty := mustCreate(t, s, "empty", 1)
	_, err = s.LookupMaxTimestamp(ctx, empty.ID, 0)
	wantErr(t, "LookupMaxTimestamp of an empty partition", err, metadata.ErrNotFound)
	_, err = s.LookupMaxTimestamp(ctx, tp.ID, 9)
	wantErr(t, "LookupMaxTimestamp of an unknown partition", err, metadata.ErrUnknownTopic)
}
