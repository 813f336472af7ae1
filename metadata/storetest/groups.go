package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"floe/metadata"
)

func sameOffsets(t *testing.T, what string, got, want []metadata.GroupOffset) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d offsets, want %d:\ngot  %+v\nwant %+v", what, len(got), len(want), got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Topic != w.Topic || g.Partition != w.Partition || g.Offset != w.Offset ||
			g.LeaderEpoch != w.LeaderEpoch || g.Metadata != w.Metadata {
			t.Fatalf("%s: offset %d\ngot  %+v\nwant %+v", what, i, g, w)
		}
		if g.CommitTime.IsZero() || time.Since(g.CommitTime) > time.Minute || time.Until(g.CommitTime) > time.Minute {
			t.Fatalf("%s: offset %d has commit time %v", what, i, g.CommitTime)
		}
	}
}

func testGroupOffsets(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	got, err := s.FetchOffsets(ctx, "g")
	if err != nil || len(got) != 0 {
		t.Fatalf("FetchOffsets(unknown) = %v, %v", got, err)
	}
	in := []metadata.GroupOffset{
		{Topic: "b", Partition: 1, Offset: 10, LeaderEpoch: -1, Metadata: "m1"},
		{Topic: "a", Partition: 2, Offset: 0, LeaderEpoch: 3, Metadata: ""},
		{Topic: "a", Partition: 0, Offset: 7, LeaderEpoch: 0, Metadata: "é\x00x"},
	}
	if err := s.CommitOffsets(ctx, "g", in); err != nil {
		t.Fatal(err)
	}
	if err := s.CommitOffsets(ctx, "other", in[:1]); err != nil {
		t.Fatal(err)
	}
	want := []metadata.GroupOffset{in[2], in[1], in[0]}
	got, err = s.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	sameOffsets(t, "after commit", got, want)

	// Overwrite one, add one; a partition twice in one call: the last wins.
	if err := s.CommitOffsets(ctx, "g", []metadata.GroupOffset{
		{Topic: "a", Partition: 0, Offset: 8, LeaderEpoch: 1, Metadata: "x"},
		{Topic: "a", Partition: 0, Offset: 9, LeaderEpoch: 1, Metadata: "y"},
		{Topic: "c", Partition: 0, Offset: 1, LeaderEpoch: -1},
	}); err != nil {
		t.Fatal(err)
	}
	want = []metadata.GroupOffset{{Topic: "a", Partition: 0, Offset: 9, LeaderEpoch: 1, Metadata: "y"}, in[1], in[0],
		{Topic: "c", Partition: 0, Offset: 1, LeaderEpoch: -1}}
	got, _ = s.FetchOffsets(ctx, "g")
	sameOffsets(t, "after overwrite", got, want)

	if err := s.DeleteOffsets(ctx, "g", []metadata.TopicPartition{{Topic: "a", Partition: 2}, {Topic: "zz", Partition: 0}}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.FetchOffsets(ctx, "g")
	sameOffsets(t, "after delete", got, []metadata.GroupOffset{want[0], want[2], want[3]})
	got, _ = s.FetchOffsets(ctx, "other")
	sameOffsets(t, "other group", got, in[:1])
}

func testGroupRecords(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	if _, err := s.LoadGroup(ctx, "g1"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("LoadGroup(unknown): %v", err)
	}
	rec := metadata.GroupRecord{Group: "g1", ProtocolType: "consumer", StateName: "Stable", State: []byte{0, 1, 2, 255}}
	if err := s.SaveGroup(ctx, rec); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadGroup(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Group != "g1" || got.ProtocolType != "consumer" || got.StateName != "Stable" || got.Empty ||
		!slices.Equal(got.State, rec.State) || got.UpdatedAt.IsZero() {
		t.Fatalf("LoadGroup = %+v", got)
	}
	rec.StateName, rec.Empty, rec.State = "Empty", true, []byte("x")
	if err := s.SaveGroup(ctx, rec); err != nil {
		t.Fatal(err)
	}
	got, _ = s.LoadGroup(ctx, "g1")
	if got.StateName != "Empty" || !got.Empty || string(got.State) != "x" {
		t.Fatalf("LoadGroup after update = %+v", got)
	}
	// A group with offsets only is listed as Empty.
	if err := s.CommitOffsets(ctx, "g0", []metadata.GroupOffset{{Topic: "t", Offset: 1, LeaderEpoch: -1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.CommitOffsets(ctx, "g1", []metadata.GroupOffset{{Topic: "t", Offset: 1, LeaderEpoch: -1}}); err != nil {
		t.Fatal(err)
	}
	gs, err := s.Groups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[0].Group != "g0" || !gs[0].Empty || gs[0].StateName != "Empty" || gs[0].State != nil ||
		gs[1].Group != "g1" || string(gs[1].State) != "x" {
		t.Fatalf("Groups = %+v", gs)
	}
	if err := s.DeleteGroup(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteGroup(ctx, "g0"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteGroup(ctx, "g0"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("DeleteGroup twice: %v", err)
	}
	if gs, _ := s.Groups(ctx); len(gs) != 0 {
		t.Fatalf("Groups after delete = %+v", gs)
	}
	if o, _ := s.FetchOffsets(ctx, "g1"); len(o) != 0 {
		t.Fatalf("offsets after delete = %+v", o)
	}
}

func testExpireOffsets(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	off := []metadata.GroupOffset{{Topic: "t", Partition: 0, Offset: 5, LeaderEpoch: -1}}
	// "live" has members: never expires. "empty" has a record saying empty;
	// "bare" has offsets only; "fresh" is empty but committed recently;
	// "lately" committed long ago but only just became empty.
	for _, g := range []string{"live", "empty", "bare", "lately"} {
		if err := s.CommitOffsets(ctx, g, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveGroup(ctx, metadata.GroupRecord{Group: "live", ProtocolType: "consumer", StateName: "Stable"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveGroup(ctx, metadata.GroupRecord{Group: "empty", ProtocolType: "consumer", StateName: "Empty", Empty: true}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := s.CommitOffsets(ctx, "fresh", off); err != nil {
		t.Fatal(err)
	}
	// Kafka counts retention from the moment a group became empty.
	if err := s.SaveGroup(ctx, metadata.GroupRecord{Group: "lately", ProtocolType: "consumer", StateName: "Empty", Empty: true}); err != nil {
		t.Fatal(err)
	}
	names, err := s.ExpireOffsets(ctx, 150*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"bare", "empty"}) {
		t.Fatalf("ExpireOffsets = %v, want [bare empty]", names)
	}
	for g, n := range map[string]int{"live": 1, "empty": 0, "bare": 0, "fresh": 1, "lately": 1} {
		if o, _ := s.FetchOffsets(ctx, g); len(o) != n {
			t.Fatalf("group %s: %d offsets after expiry, want %d", g, len(o), n)
		}
	}
	if _, err := s.LoadGroup(ctx, "empty"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("empty group's record survived expiry: %v", err)
	}
	if _, err := s.LoadGroup(ctx, "live"); err != nil {
		t.Fatalf("live group's record: %v", err)
	}
	if names, err := s.ExpireOffsets(ctx, time.Hour); err != nil || len(names) != 0 {
		t.Fatalf("ExpireOffsets(1h) = %v, %v", names, err)
	}
}

func testCoordinatorLeases(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	l, err := s.AcquireCoordinatorLease(ctx, "group/a", "agent1", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l.Owner != "agent1" || l.Name != "group/a" || l.Epoch != 1 || time.Until(l.Expires) < time.Second || time.Until(l.Expires) > time.Minute {
		t.Fatalf("first lease = %+v", l)
	}
	l2, err := s.AcquireCoordinatorLease(ctx, "group/a", "agent2", 2*time.Second)
	if !errors.Is(err, metadata.ErrLeaseHeld) || l2.Owner != "agent1" {
		t.Fatalf("second owner: %+v, %v", l2, err)
	}
	l3, err := s.AcquireCoordinatorLease(ctx, "group/a", "agent1", 2*time.Second)
	if err != nil || l3.Epoch != 1 {
		t.Fatalf("re-acquire by owner: %+v, %v", l3, err)
	}
	if _, err := s.AcquireCoordinatorLease(ctx, "group/b", "agent1", 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Renew returns both; after b expires only a is renewed and agent2 takes b.
	ls, err := s.RenewCoordinatorLeases(ctx, "agent1", 2*time.Second)
	if err != nil || len(ls) != 2 {
		t.Fatalf("renew = %+v, %v", ls, err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := s.AcquireCoordinatorLease(ctx, "group/b", "agent1", 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	ls, err = s.RenewCoordinatorLeases(ctx, "agent1", 2*time.Second)
	if err != nil || len(ls) != 1 || ls[0].Name != "group/a" {
		t.Fatalf("renew after expiry = %+v, %v", ls, err)
	}
	lb, err := s.AcquireCoordinatorLease(ctx, "group/b", "agent2", 2*time.Second)
	if err != nil || lb.Owner != "agent2" || lb.Epoch != 2 {
		t.Fatalf("take expired lease = %+v, %v", lb, err)
	}
	// Release by a non-owner does nothing; by the owner frees it at once.
	if err := s.ReleaseCoordinatorLease(ctx, "group/a", "agent2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireCoordinatorLease(ctx, "group/a", "agent2", time.Second); !errors.Is(err, metadata.ErrLeaseHeld) {
		t.Fatalf("acquire after foreign release: %v", err)
	}
	if err := s.ReleaseCoordinatorLease(ctx, "group/a", "agent1"); err != nil {
		t.Fatal(err)
	}
	la, err := s.AcquireCoordinatorLease(ctx, "group/a", "agent2", time.Second)
	if err != nil || la.Epoch != 2 {
		t.Fatalf("acquire after release = %+v, %v", la, err)
	}
	if ls, _ := s.RenewCoordinatorLeases(ctx, "agent1", time.Second); len(ls) != 0 {
		t.Fatalf("agent1 still renews %+v", ls)
	}
}

// testLeaseRace: many owners acquire one lease at once; exactly one wins.
func testLeaseRace(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins []string
	)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := string(rune('a' + i))
			_, err := s.AcquireCoordinatorLease(ctx, "group/race", owner, 5*time.Second)
			if err == nil {
				mu.Lock()
				wins = append(wins, owner)
				mu.Unlock()
			} else if !errors.Is(err, metadata.ErrLeaseHeld) {
				t.Errorf("acquire: %v", err)
			}
		}()
	}
	wg.Wait()
	if len(wins) != 1 {
		t.Fatalf("winners %v, want exactly one", wins)
	}
}

// chunkedOffsets returns n offsets over three topics, more than fit in one
// metadata.OffsetChunk, with partition 0 of topic "a" named in the first
// and in the last chunk (the last occurrence wins), and the offsets sorted
// as FetchOffsets returns them.
func chunkedOffsets(n int) (in, want []metadata.GroupOffset) {
	for i := range n {
		in = append(in, metadata.GroupOffset{Topic: string(rune('a' + i%3)), Partition: int32(i / 3),
			Offset: int64(i) * 7, LeaderEpoch: int32(i % 5), Metadata: fmt.Sprint("m", i)})
	}
	last := metadata.GroupOffset{Topic: "a", Partition: 0, Offset: 424242, LeaderEpoch: 9, Metadata: "last"}
	in = append(in, last)
	want = slices.Clone(in[1 : len(in)-1])
	want = append(want, last)
	slices.SortFunc(want, func(x, y metadata.GroupOffset) int {
		if c := strings.Compare(x.Topic, y.Topic); c != 0 {
			return c
		}
		return int(x.Partition - y.Partition)
	})
	return in, want
}

// testGroupOffsetsChunked commits more offsets than one chunk holds: every
// one is stored, a partition named twice keeps its last offset, and
// another group's commit can interleave with the chunks.
func testGroupOffsetsChunked(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	in, want := chunkedOffsets(2*metadata.OffsetChunk + 500)
	errs := make(chan error, 1)
	go func() {
		errs <- s.CommitOffsets(ctx, "small", []metadata.GroupOffset{{Topic: "x", Partition: 0, Offset: 1, LeaderEpoch: -1}})
	}()
	if err := s.CommitOffsets(ctx, "big", in); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	got, err := s.FetchOffsets(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	sameOffsets(t, "chunked commit", got, want)
	got, err = s.FetchOffsets(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	sameOffsets(t, "interleaved commit", got, []metadata.GroupOffset{{Topic: "x", Partition: 0, Offset: 1, LeaderEpoch: -1}})
}

// testGroupConfigs: a group's configs are empty until set, the update sees
// what is stored and what it returns is stored, its error stores nothing,
// returning none removes them, they belong to the name alone (set before
// any record, kept by DeleteGroup), and concurrent read-modify-write
// updates, the very first ones of a group included, lose none of each
// other's changes.
func testGroupConfigs(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	configsOf := func(group string) map[string]string {
		t.Helper()
		c, err := s.GroupConfigs(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		if c == nil {
			t.Fatalf("GroupConfigs(%s) is nil", group)
		}
		return c
	}
	if c := configsOf("g"); len(c) != 0 {
		t.Fatalf("configs of a group never configured: %v", c)
	}
	err := s.UpdateGroupConfigs(ctx, "g", func(c map[string]string) (map[string]string, error) {
		if c == nil || len(c) != 0 {
			t.Errorf("first update saw %#v, want an empty map", c)
		}
		c["consumer.session.timeout.ms"] = "50000"
		c["quote"] = "\" ü"
		return c, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"consumer.session.timeout.ms": "50000", "quote": "\" ü"}
	if got := configsOf("g"); !maps.Equal(got, want) {
		t.Fatalf("configs after update: %v, want %v", got, want)
	}
	if got := configsOf("other"); len(got) != 0 {
		t.Fatalf("another group's configs: %v", got)
	}
	err = s.UpdateGroupConfigs(ctx, "g", func(c map[string]string) (map[string]string, error) {
		if !maps.Equal(c, want) {
			t.Errorf("update saw %v, want %v", c, want)
		}
		delete(c, "quote")
		c["consumer.heartbeat.interval.ms"] = "6000"
		return c, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"}
	if got := configsOf("g"); !maps.Equal(got, want) {
		t.Fatalf("configs after the second update: %v, want %v", got, want)
	}

	// A failing update stores nothing and its error comes back, on a
	// group with configs and on one without.
	refuse := errors.New("refused")
	for _, g := range []string{"g", "new"} {
		before := configsOf(g)
		err = s.UpdateGroupConfigs(ctx, g, func(c map[string]string) (map[string]string, error) {
			c["consumer.session.timeout.ms"] = "1"
			return c, refuse
		})
		wantErr(t, "failing update of "+g, err, refuse)
		if got := configsOf(g); !maps.Equal(got, before) {
			t.Fatalf("configs of %s after a failed update: %v, want %v", g, got, before)
		}
	}

	// The configs are the name's: the group's record and offsets come and
	// go without them.
	if err := s.SaveGroup(ctx, metadata.GroupRecord{Group: "g", ProtocolType: "consumer", StateName: "Empty", Empty: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if got := configsOf("g"); !maps.Equal(got, want) {
		t.Fatalf("configs after DeleteGroup: %v, want %v", got, want)
	}

	// Returning nil (or an empty map) removes them.
	if err := s.UpdateGroupConfigs(ctx, "g", func(map[string]string) (map[string]string, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if got := configsOf("g"); len(got) != 0 {
		t.Fatalf("configs after clearing: %v", got)
	}
	if err := s.UpdateGroupConfigs(ctx, "g", func(c map[string]string) (map[string]string, error) { return c, nil }); err != nil {
		t.Fatal(err)
	}
	if got := configsOf("g"); len(got) != 0 {
		t.Fatalf("configs after an empty update: %v", got)
	}

	// Concurrent updates of a group that has no configs yet: every key
	// lands. Then of one whose row comes and goes: each updater adds and
	// removes its key a few times (the last removal of all removes the
	// group's configs) before adding it for good.
	const n = 8
	for _, round := range []struct {
		group string
		churn int
	}{{"race", 0}, {"churn", 4}} {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := fmt.Sprint("k", i)
				set := func(c map[string]string) (map[string]string, error) { c[key] = fmt.Sprint(i); return c, nil }
				unset := func(c map[string]string) (map[string]string, error) { delete(c, key); return c, nil }
				for range round.churn {
					if err := s.UpdateGroupConfigs(ctx, round.group, set); err != nil {
						errs <- err
						return
					}
					if err := s.UpdateGroupConfigs(ctx, round.group, unset); err != nil {
						errs <- err
						return
					}
				}
				errs <- s.UpdateGroupConfigs(ctx, round.group, set)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		got := configsOf(round.group)
		if len(got) != n {
			t.Fatalf("concurrent updates of %s: %v, want %d keys", round.group, got, n)
		}
		for i := range n {
			if got[fmt.Sprint("k", i)] != fmt.Sprint(i) {
				t.Fatalf("concurrent updates of %s lost k%d: %v", round.group, i, got)
			}
		}
	}
}
