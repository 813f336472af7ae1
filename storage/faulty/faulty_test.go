package faulty_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"floe/storage"
	"floe/storage/faulty"
	"floe/storage/mem"
	"floe/storage/storagetest"
)

// With no faults configured the wrapper is a correct bucket.
func TestPassThrough(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Bucket { return faulty.New(mem.New()) })
}

func TestFaults(t *testing.T) {
	ctx := t.Context()
	boom := errors.New("boom")
	inner := mem.New()
	b := faulty.New(inner)
	b.BeforePut = func(key string) error {
		if key == "bad" {
			return boom
		}
		return nil
	}
	b.BeforeGet = func(key string) error {
		if key == "hidden" {
			return boom
		}
		return nil
	}
	if err := b.Put(ctx, "bad", []byte("x")); !errors.Is(err, boom) {
		t.Fatalf("Put(bad) = %v", err)
	}
	if err := b.PutIfAbsent(ctx, "bad", []byte("x")); !errors.Is(err, boom) {
		t.Fatalf("PutIfAbsent(bad) = %v", err)
	}
	if _, err := inner.Size(ctx, "bad"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a failed Put wrote: %v", err)
	}
	if err := b.Put(ctx, "hidden", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetRange(ctx, "hidden", 0, -1); !errors.Is(err, boom) {
		t.Fatalf("GetRange(hidden) = %v", err)
	}
	if _, err := b.Size(ctx, "hidden"); !errors.Is(err, boom) {
		t.Fatalf("Size(hidden) = %v", err)
	}

	lost := errors.New("response lost")
	b.AfterPut = func(string) error { return lost }
	if err := b.Put(ctx, "written", []byte("yes")); !errors.Is(err, lost) {
		t.Fatalf("Put with AfterPut = %v", err)
	}
	if got, err := inner.GetRange(ctx, "written", 0, -1); err != nil || string(got) != "yes" {
		t.Fatalf("AfterPut: object %q, %v; want it written", got, err)
	}
}

func TestLatency(t *testing.T) {
	b := faulty.New(mem.New())
	b.Latency = 50 * time.Millisecond
	start := time.Now()
	if err := b.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < b.Latency {
		t.Fatalf("Put took %v, less than the latency %v", d, b.Latency)
	}

	b.Latency = time.Hour
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := b.GetRange(ctx, "k", 0, -1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetRange under an ended ctx = %v", err)
	}
	if err := b.List(ctx, "", func(storage.ObjectInfo) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("List under an ended ctx = %v", err)
	}
}

func TestKeepsCapabilities(t *testing.T) {
	storagetest.Capabilities(t, func(b storage.Bucket) storage.Bucket { return faulty.New(b) })
}
