package storetest

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"

	"floe/metadata"
)

// testClusterConfigs: the cluster's dynamic configs are empty until set,
// an update sees what is stored and stores what it returns, its error
// stores nothing, returning none clears them, group configs are another
// table's, and concurrent read-modify-write updates lose none of each
// other's changes.
func testClusterConfigs(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	configs := func() map[string]string {
		t.Helper()
		c, err := s.ClusterConfigs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c == nil {
			t.Fatal("ClusterConfigs is nil")
		}
		return c
	}
	if c := configs(); len(c) != 0 {
		t.Fatalf("configs of a fresh cluster: %v", c)
	}
	set := func(kv map[string]string) error {
		return s.UpdateClusterConfigs(ctx, func(c map[string]string) (map[string]string, error) {
			maps.Copy(c, kv)
			return c, nil
		})
	}
	if err := set(map[string]string{"log.retention.ms": "60000", "quote": "\" ü"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"log.retention.ms": "60000", "quote": "\" ü"}
	if got := configs(); !maps.Equal(got, want) {
		t.Fatalf("configs after update: %v, want %v", got, want)
	}
	if got, err := s.GroupConfigs(ctx, ""); err != nil || len(got) != 0 {
		t.Fatalf("group \"\" configs after a cluster update: %v, %v", got, err)
	}
	err := s.UpdateClusterConfigs(ctx, func(c map[string]string) (map[string]string, error) {
		if !maps.Equal(c, want) {
			t.Errorf("update saw %v, want %v", c, want)
		}
		delete(c, "quote")
		c["message.max.bytes"] = "2000000"
		return c, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"log.retention.ms": "60000", "message.max.bytes": "2000000"}
	if got := configs(); !maps.Equal(got, want) {
		t.Fatalf("configs after the second update: %v, want %v", got, want)
	}

	refuse := errors.New("refused")
	err = s.UpdateClusterConfigs(ctx, func(c map[string]string) (map[string]string, error) {
		c["log.retention.ms"] = "1"
		return c, refuse
	})
	wantErr(t, "failing update", err, refuse)
	if got := configs(); !maps.Equal(got, want) {
		t.Fatalf("configs after a failed update: %v, want %v", got, want)
	}

	if err := s.UpdateClusterConfigs(ctx, func(map[string]string) (map[string]string, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if got := configs(); len(got) != 0 {
		t.Fatalf("configs after clearing: %v", got)
	}

	// Concurrent updates from none: each adds and removes its key twice
	// (the row comes and goes), then adds it for good; every key lands.
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprint("k", i)
			add := func(c map[string]string) (map[string]string, error) { c[key] = fmt.Sprint(i); return c, nil }
			remove := func(c map[string]string) (map[string]string, error) { delete(c, key); return c, nil }
			for range 2 {
				if err := s.UpdateClusterConfigs(ctx, add); err != nil {
					errs <- err
					return
				}
				if err := s.UpdateClusterConfigs(ctx, remove); err != nil {
					errs <- err
					return
				}
			}
			errs <- s.UpdateClusterConfigs(ctx, add)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := configs(); len(got) != n {
		t.Fatalf("concurrent updates: %v, want %d keys", got, n)
	}
}
