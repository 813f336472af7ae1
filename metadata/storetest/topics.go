package storetest

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"floe/metadata"
)

func testCreateTopic(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	cfg := map[string]string{"retention.ms": "60000", "cleanup.policy": "delete"}
	before := time.Now()
	tp, err := s.CreateTopic(ctx, "orders", 3, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tp.ID == (metadata.TopicID{}) {
		t.Fatal("topic id is all zero")
	}
	if tp.Name != "orders" || tp.Partitions != 3 || !maps.Equal(tp.Configs, cfg) {
		t.Fatalf("CreateTopic returned %+v", tp)
	}
	// The store's clock may differ from ours by a little, not by minutes.
	if d := tp.CreatedAt.Sub(before); d < -time.Minute || d > time.Minute {
		t.Fatalf("CreatedAt %v, now %v", tp.CreatedAt, before)
	}
	byName, err := s.Topic(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	sameTopic(t, "Topic", byName, tp)
	byID, err := s.TopicByID(ctx, tp.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameTopic(t, "TopicByID", byID, tp)

	ps, err := s.Partitions(ctx, tp.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("Partitions: %d, want 3", len(ps))
	}
	for i, p := range ps {
		want := metadata.PartitionState{Partition: int32(i), LogStartOffset: 0, NextOffset: 0, MaxTimestamp: -1}
		if p != want {
			t.Fatalf("partition %d: %+v, want %+v", i, p, want)
		}
		if one := partition(t, s, tp.ID, int32(i)); one != want {
			t.Fatalf("Partition(%d): %+v, want %+v", i, one, want)
		}
	}

	other := mustCreate(t, s, "payments", 1)
	if other.ID == tp.ID {
		t.Fatal("two topics share an id")
	}
	if other.Configs == nil || len(other.Configs) != 0 {
		t.Fatalf("nil configs came back as %#v, want an empty map", other.Configs)
	}
	got, err := s.Topic(ctx, "payments")
	if err != nil {
		t.Fatal(err)
	}
	if got.Configs == nil || len(got.Configs) != 0 {
		t.Fatalf("stored nil configs read back as %#v, want an empty map", got.Configs)
	}
}

func testCreateTopicErrors(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := mustCreate(t, s, "t", 2)
	_, err := s.CreateTopic(ctx, "t", 5, map[string]string{"a": "b"})
	wantErr(t, "duplicate CreateTopic", err, metadata.ErrTopicExists)
	for _, n := range []int32{0, -1} {
		_, err := s.CreateTopic(ctx, fmt.Sprintf("bad%d", n), n, nil)
		wantErr(t, fmt.Sprintf("CreateTopic with %d partitions", n), err, metadata.ErrInvalidPartitions)
		_, err = s.Topic(ctx, fmt.Sprintf("bad%d", n))
		wantErr(t, "Topic after invalid create", err, metadata.ErrUnknownTopic)
	}
	// The failed duplicate must not have changed the original.
	got, err := s.Topic(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	sameTopic(t, "after duplicate", got, tp)
	ps, err := s.Partitions(ctx, tp.ID)
	if err != nil || len(ps) != 2 {
		t.Fatalf("Partitions after duplicate: %v, %v", ps, err)
	}
}

func testTopics(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	ts, err := s.Topics(ctx)
	if err != nil || len(ts) != 0 {
		t.Fatalf("Topics of an empty store: %v, %v", ts, err)
	}
	// Bytewise order: upper case before '_' before lower case.
	names := []string{"zeta", "Alpha", "_internal", "alpha", "beta.v2", "beta"}
	created := map[string]metadata.Topic{}
	for i, n := range names {
		created[n] = mustCreate(t, s, n, int32(i+1))
	}
	ts, err = s.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Alpha", "_internal", "alpha", "beta", "beta.v2", "zeta"}
	if len(ts) != len(want) {
		t.Fatalf("Topics: %d, want %d", len(ts), len(want))
	}
	for i, tp := range ts {
		if tp.Name != want[i] {
			t.Fatalf("Topics[%d] = %s, want %s (all: %v)", i, tp.Name, want[i], ts)
		}
		sameTopic(t, "Topics entry", tp, created[tp.Name])
	}
}

func testDeleteTopic(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := mustCreate(t, s, "doomed", 2)
	keep := mustCreate(t, s, "kept", 1)
	commit(t, s, "obj-1", run(tp.ID, 0, 5, 0, 100, 1, 2), run(tp.ID, 1, 3, 100, 50, 1, 2), run(keep.ID, 0, 4, 150, 10, 1, 2))

	if err := s.DeleteTopic(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	_, err := s.Topic(ctx, "doomed")
	wantErr(t, "Topic after delete", err, metadata.ErrUnknownTopic)
	_, err = s.TopicByID(ctx, tp.ID)
	wantErr(t, "TopicByID after delete", err, metadata.ErrUnknownTopic)
	_, err = s.Partitions(ctx, tp.ID)
	wantErr(t, "Partitions after delete", err, metadata.ErrUnknownTopic)
	_, err = s.Partition(ctx, tp.ID, 0)
	wantErr(t, "Partition after delete", err, metadata.ErrUnknownTopic)
	_, err = s.Lookup(ctx, tp.ID, 0, 0, 1<<20, 10)
	wantErr(t, "Lookup after delete", err, metadata.ErrUnknownTopic)
	wantErr(t, "second DeleteTopic", s.DeleteTopic(ctx, "doomed"), metadata.ErrUnknownTopic)
	wantErr(t, "DeleteTopic of a never created topic", s.DeleteTopic(ctx, "never"), metadata.ErrUnknownTopic)

	// Commits to the deleted topic fail per run.
	res := commit(t, s, "obj-2", run(tp.ID, 0, 1, 0, 10, 1, 1), run(keep.ID, 0, 1, 10, 10, 1, 1))
	wantErr(t, "run of deleted topic", res[0].Err, metadata.ErrUnknownTopic)
	if res[1].Err != nil || res[1].BaseOffset != 4 {
		t.Fatalf("run of kept topic: %+v, want base 4", res[1])
	}

	// A topic re-created under the same name is new: new id, offsets from 0,
	// none of the old index entries.
	again := mustCreate(t, s, "doomed", 1)
	if again.ID == tp.ID {
		t.Fatal("re-created topic reuses the deleted id")
	}
	if p := partition(t, s, again.ID, 0); p.NextOffset != 0 || p.MaxTimestamp != -1 {
		t.Fatalf("re-created partition: %+v", p)
	}
	es, err := s.Lookup(ctx, again.ID, 0, 0, 1<<20, 0)
	if err != nil || len(es) != 0 {
		t.Fatalf("Lookup of re-created topic: %v, %v", es, err)
	}
	// The other topic is untouched.
	es, err = s.Lookup(ctx, keep.ID, 0, 0, 1<<20, 0)
	if err != nil || len(es) != 2 {
		t.Fatalf("Lookup of kept topic: %v, %v", es, err)
	}
	ts, err := s.Topics(ctx)
	if err != nil || len(ts) != 2 {
		t.Fatalf("Topics: %v, %v", ts, err)
	}
}

func testTopicConfigs(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp, err := s.CreateTopic(ctx, "c", 1, map[string]string{"a": "1", "b": "2", "quote\"d": "line\nbreak ü"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Topic(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	sameTopic(t, "configs with odd characters", got, tp)

	next := map[string]string{"b": "3", "c": ""}
	if err := s.SetTopicConfigs(ctx, "c", next); err != nil {
		t.Fatal(err)
	}
	got, err = s.TopicByID(ctx, tp.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got.Configs, next) {
		t.Fatalf("configs after replace: %v, want %v", got.Configs, next)
	}
	if err := s.SetTopicConfigs(ctx, "c", nil); err != nil {
		t.Fatal(err)
	}
	got, err = s.Topic(ctx, "c")
	if err != nil || got.Configs == nil || len(got.Configs) != 0 {
		t.Fatalf("configs after clearing: %#v, %v", got.Configs, err)
	}
	wantErr(t, "SetTopicConfigs of unknown topic", s.SetTopicConfigs(ctx, "nope", next), metadata.ErrUnknownTopic)
}

func testCreatePartitions(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := mustCreate(t, s, "grow", 2)
	commit(t, s, "o1", run(tp.ID, 1, 7, 0, 70, 5, 9))
	if err := s.CreatePartitions(ctx, "grow", 5); err != nil {
		t.Fatal(err)
	}
	got, err := s.Topic(ctx, "grow")
	if err != nil || got.Partitions != 5 {
		t.Fatalf("Topic after CreatePartitions: %+v, %v", got, err)
	}
	ps, err := s.Partitions(ctx, tp.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := []metadata.PartitionState{
		{Partition: 0, NextOffset: 0, MaxTimestamp: -1},
		{Partition: 1, NextOffset: 7, MaxTimestamp: 9},
		{Partition: 2, NextOffset: 0, MaxTimestamp: -1},
		{Partition: 3, NextOffset: 0, MaxTimestamp: -1},
		{Partition: 4, NextOffset: 0, MaxTimestamp: -1},
	}
	if len(ps) != len(want) {
		t.Fatalf("Partitions: %+v", ps)
	}
	for i := range ps {
		if ps[i] != want[i] {
			t.Fatalf("partition %d: %+v, want %+v", i, ps[i], want[i])
		}
	}
	res := commit(t, s, "o2", run(tp.ID, 4, 2, 0, 10, 1, 1), run(tp.ID, 5, 2, 10, 10, 1, 1))
	if res[0].Err != nil || res[0].BaseOffset != 0 {
		t.Fatalf("run to new partition 4: %+v", res[0])
	}
	wantErr(t, "run to partition 5 of 5", res[1].Err, metadata.ErrUnknownTopic)

	for _, total := range []int32{5, 4, 0, -3} {
		wantErr(t, fmt.Sprintf("CreatePartitions to %d", total), s.CreatePartitions(ctx, "grow", total), metadata.ErrInvalidPartitions)
	}
	wantErr(t, "CreatePartitions of unknown topic", s.CreatePartitions(ctx, "nope", 9), metadata.ErrUnknownTopic)
	got, err = s.Topic(ctx, "grow")
	if err != nil || got.Partitions != 5 {
		t.Fatalf("Topic after failed CreatePartitions: %+v, %v", got, err)
	}
}

func testPartitionUnknown(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := mustCreate(t, s, "p", 2)
	for _, p := range []int32{2, -1, 1 << 30} {
		_, err := s.Partition(ctx, tp.ID, p)
		wantErr(t, fmt.Sprintf("Partition(%d)", p), err, metadata.ErrUnknownTopic)
	}
	_, err := s.Partition(ctx, metadata.TopicID{1}, 0)
	wantErr(t, "Partition of unknown topic", err, metadata.ErrUnknownTopic)
	_, err = s.Partitions(ctx, metadata.TopicID{1})
	wantErr(t, "Partitions of unknown topic", err, metadata.ErrUnknownTopic)
	_, err = s.Topic(ctx, "")
	wantErr(t, "Topic(\"\")", err, metadata.ErrUnknownTopic)
}

func testTopicTotals(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	check := func(what string, topics int, partitions int64) {
		t.Helper()
		n, p, err := s.TopicTotals(ctx)
		if err != nil || n != topics || p != partitions {
			t.Fatalf("%s: TopicTotals = %d topics, %d partitions, %v; want %d, %d", what, n, p, err, topics, partitions)
		}
	}
	check("empty store", 0, 0)
	mustCreate(t, s, "a", 3)
	mustCreate(t, s, "b", 10_000)
	check("after two creations", 2, 10_003)
	if err := s.CreatePartitions(ctx, "a", 5); err != nil {
		t.Fatal(err)
	}
	check("after CreatePartitions", 2, 10_005)
	if err := s.DeleteTopic(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	check("after DeleteTopic", 1, 5)
}
