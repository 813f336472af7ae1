package storetest

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"floe/metadata"
)

// testUpdateTopicConfigs: the update sees what is stored, what it returns
// is stored, its error stores nothing, and concurrent read-modify-write
// updates of one topic lose none of each other's changes.
func testUpdateTopicConfigs(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp, err := s.CreateTopic(ctx, "u", 1, map[string]string{"retention.ms": "1000", "keep": "me"})
	if err != nil {
		t.Fatal(err)
	}
	err = s.UpdateTopicConfigs(ctx, "u", func(c map[string]string) (map[string]string, error) {
		if !maps.Equal(c, tp.Configs) {
			t.Errorf("update saw %v, want %v", c, tp.Configs)
		}
		c["retention.ms"] = "5"
		c["new"] = "quote\" ü"
		return c, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"retention.ms": "5", "keep": "me", "new": "quote\" ü"}
	got, err := s.TopicByID(ctx, tp.ID)
	if err != nil || !maps.Equal(got.Configs, want) {
		t.Fatalf("configs after update: %v %v, want %v", got.Configs, err, want)
	}
	// A failing update stores nothing and its error comes back.
	refuse := errors.New("refused")
	err = s.UpdateTopicConfigs(ctx, "u", func(c map[string]string) (map[string]string, error) {
		c["retention.ms"] = "6"
		return c, refuse
	})
	wantErr(t, "failing update", err, refuse)
	if got, _ := s.Topic(ctx, "u"); !maps.Equal(got.Configs, want) {
		t.Fatalf("configs after a failed update: %v, want %v", got.Configs, want)
	}
	// Returning nil clears them.
	if err := s.UpdateTopicConfigs(ctx, "u", func(map[string]string) (map[string]string, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Topic(ctx, "u"); got.Configs == nil || len(got.Configs) != 0 {
		t.Fatalf("configs after clearing: %#v", got.Configs)
	}
	called := false
	err = s.UpdateTopicConfigs(ctx, "nope", func(c map[string]string) (map[string]string, error) { called = true; return c, nil })
	wantErr(t, "UpdateTopicConfigs of unknown topic", err, metadata.ErrUnknownTopic)
	if called {
		t.Fatal("update called for an unknown topic")
	}

	// Concurrent appends to one list: every element lands.
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.UpdateTopicConfigs(ctx, "u", func(c map[string]string) (map[string]string, error) {
				v := c["list"]
				if v != "" {
					v += ","
				}
				c["list"] = v + fmt.Sprint(i)
				return c, nil
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err = s.Topic(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range strings.Split(got.Configs["list"], ",") {
		seen[e] = true
	}
	for i := range n {
		if !seen[fmt.Sprint(i)] {
			t.Fatalf("concurrent appends lost %d: %q", i, got.Configs["list"])
		}
	}
}

// testPartitionSizes: the bytes of the rows at or above the log start,
// per partition; a row straddling the log start counts whole.
func testPartitionSizes(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := mustCreate(t, s, "sizes", 3)
	other := mustCreate(t, s, "other", 1)
	commit(t, s, "o1", run(tp.ID, 0, 2, 0, 100, 1, 2), run(tp.ID, 1, 4, 100, 40, 1, 2), run(other.ID, 0, 1, 140, 7, 1, 2))
	commit(t, s, "o2", run(tp.ID, 0, 3, 0, 50, 3, 4))
	sizes, err := s.PartitionSizes(ctx, tp.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int32]int64{0: 150, 1: 40}; !maps.Equal(sizes, want) {
		t.Fatalf("sizes %v, want %v", sizes, want)
	}
	// Offsets 0-1 of partition 0 retained away: its first row goes; offset
	// 3 is inside the second row [2,5), which counts whole.
	if _, err := s.AdvanceLogStart(ctx, tp.ID, 0, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AdvanceLogStart(ctx, tp.ID, 1, 4); err != nil {
		t.Fatal(err)
	}
	sizes, err = s.PartitionSizes(ctx, tp.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int32]int64{0: 50}; !maps.Equal(sizes, want) {
		t.Fatalf("sizes after retention %v, want %v", sizes, want)
	}
	sizes, err = s.PartitionSizes(ctx, metadata.TopicID{9})
	if err != nil || len(sizes) != 0 {
		t.Fatalf("sizes of an unknown topic: %v, %v", sizes, err)
	}
}

// testPartitionProducers: each producer's epoch and last sequence in the
// partition, and its open transaction's first offset.
func testPartitionProducers(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	tp := mustCreate(t, s, "producers", 2)
	before := time.Now().Add(-time.Minute)
	commit(t, s, "o1", idemRun(tp.ID, 0, 0, 7, 0, [2]int32{0, 3}, [2]int32{3, 2}))
	commit(t, s, "o2", idemRun(tp.ID, 0, 0, 5, 2, [2]int32{10, 1}), idemRun(tp.ID, 1, 10, 7, 0, [2]int32{0, 1}))
	commit(t, s, "o3", idemRun(tp.ID, 0, 0, -1, -1, [2]int32{-1, 4}))
	if err := s.AddTxnPartitions(ctx, 9, 1, []metadata.TopicIDPartition{{Topic: tp.ID, Partition: 0}}); err != nil {
		t.Fatal(err)
	}
	commit(t, s, "o4", txnRun(tp.ID, 0, 9, 1, [2]int32{0, 2})) // offsets 10-11
	ps, err := s.PartitionProducers(ctx, tp.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []metadata.ProducerInfo{
		{ProducerID: 5, Epoch: 2, LastSequence: 10, TxnStartOffset: -1},
		{ProducerID: 7, Epoch: 0, LastSequence: 4, TxnStartOffset: -1},
		{ProducerID: 9, Epoch: 1, LastSequence: 1, TxnStartOffset: 10},
	}
	if len(ps) != len(want) {
		t.Fatalf("producers %+v, want %+v", ps, want)
	}
	for i, p := range ps {
		if p.LastCommit.Before(before) || p.LastCommit.After(time.Now().Add(time.Minute)) {
			t.Fatalf("producer %d committed at %v", p.ProducerID, p.LastCommit)
		}
		p.LastCommit = time.Time{}
		if p != want[i] {
			t.Fatalf("producer %d: %+v, want %+v", i, p, want[i])
		}
	}
	ps, err = s.PartitionProducers(ctx, tp.ID, 1)
	if err != nil || len(ps) != 1 || ps[0].ProducerID != 7 || ps[0].LastSequence != 0 {
		t.Fatalf("producers of partition 1: %+v, %v", ps, err)
	}
	ps, err = s.PartitionProducers(ctx, tp.ID, 5)
	if err != nil || len(ps) != 0 {
		t.Fatalf("producers of an unknown partition: %+v, %v", ps, err)
	}
}
