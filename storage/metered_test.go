package storage_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"floe/storage"
	"floe/storage/mem"
	"floe/storage/storagetest"
)

type observed struct {
	mu  sync.Mutex
	ops map[string]int64 // bytes by op
	n   map[string]int
}

func (o *observed) observe(op string, bytes int64, _ time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		op += "_error"
	}
	o.ops[op] += bytes
	o.n[op]++
}

func newObserved() *observed { return &observed{ops: map[string]int64{}, n: map[string]int{}} }

func TestMeteredPassesTheSuite(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Bucket { return storage.NewMetered(mem.New(), newObserved().observe) })
}

func TestMeteredKeepsCapabilities(t *testing.T) {
	storagetest.Capabilities(t, func(b storage.Bucket) storage.Bucket { return storage.NewMetered(b, newObserved().observe) })
}

// TestMeteredReportsEveryRequest: every request is reported once, with
// its bytes, and a failed one as failed.
func TestMeteredReportsEveryRequest(t *testing.T) {
	ctx := context.Background()
	o := newObserved()
	b := storage.NewMetered(mem.New(), o.observe)
	if err := b.Put(ctx, "a", []byte("12345"), []byte("678")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetRange(ctx, "a", 2, 3); err != nil {
		t.Fatal(err)
	}
	if err := b.ReadRange(ctx, "a", 0, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Size(ctx, "missing"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	if err := b.List(ctx, "", func(storage.ObjectInfo) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"put": 8, "get": 7, "size_error": 0, "list": 0, "delete": 0}
	wantN := map[string]int{"put": 1, "get": 2, "size_error": 1, "list": 1, "delete": 1}
	for op, bytes := range want {
		if o.ops[op] != bytes || o.n[op] != wantN[op] {
			t.Errorf("%s: %d requests, %d bytes; want %d and %d", op, o.n[op], o.ops[op], wantN[op], bytes)
		}
	}
	if len(o.n) != len(want) {
		t.Errorf("ops reported %v, want exactly %v", o.n, wantN)
	}
}
