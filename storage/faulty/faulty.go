// Package faulty wraps a storage.Bucket to inject faults in tests: errors
// before (or after) a call reaches the real bucket, and added latency. It is
// the object-store fault hook the agent and compactor tests use to check
// that a failed PUT is never acknowledged and a slow GET does not stall
// unrelated work.
package faulty

import (
	"context"
	"io"
	"time"

	"floe/storage"
)

var (
	_ storage.Bucket         = (*Bucket)(nil)
	_ storage.StreamPutter   = (*Bucket)(nil)
	_ storage.ChecksumPutter = (*Bucket)(nil)
	_ storage.RangeReader    = (*Bucket)(nil)
)

// Bucket passes every call to Bucket after the configured faults. Set the
// fields before the Bucket is shared; to change faults while it is in use,
// have the functions consult state of their own (an atomic, a locked
// field), since the fields themselves are read without synchronization.
type Bucket struct {
	// Bucket is the real bucket calls go to.
	Bucket storage.Bucket
	// BeforePut, if set, runs before Put and PutIfAbsent; an error is
	// returned instead of writing.
	BeforePut func(key string) error
	// AfterPut, if set, runs after a successful Put or PutIfAbsent; an
	// error is returned although the object was written, as when a PUT
	// succeeds but its response is lost.
	AfterPut func(key string) error
	// BeforeGet, if set, runs before GetRange and Size; an error is
	// returned instead of reading.
	BeforeGet func(key string) error
	// Latency is added to every call, before it proceeds; a ctx that ends
	// meanwhile ends the call with ctx.Err().
	Latency time.Duration
}

// New wraps b with no faults configured.
func New(b storage.Bucket) *Bucket {
	return &Bucket{Bucket: b}
}

func (b *Bucket) delay(ctx context.Context) error {
	if b.Latency <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(b.Latency)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (b *Bucket) beforePut(ctx context.Context, key string) error {
	if err := b.delay(ctx); err != nil {
		return err
	}
	if b.BeforePut != nil {
		return b.BeforePut(key)
	}
	return nil
}

func (b *Bucket) afterPut(key string) error {
	if b.AfterPut != nil {
		return b.AfterPut(key)
	}
	return nil
}

func (b *Bucket) beforeGet(ctx context.Context, key string) error {
	if err := b.delay(ctx); err != nil {
		return err
	}
	if b.BeforeGet != nil {
		return b.BeforeGet(key)
	}
	return nil
}

// Put applies the put faults around the real Put.
func (b *Bucket) Put(ctx context.Context, key string, parts ...[]byte) error {
	if err := b.beforePut(ctx, key); err != nil {
		return err
	}
	if err := b.Bucket.Put(ctx, key, parts...); err != nil {
		return err
	}
	return b.afterPut(key)
}

// PutStream applies the put faults around the real PutStream (or Put, for
// a bucket without one, as storage.PutStream does).
func (b *Bucket) PutStream(ctx context.Context, key string, size int64, body io.Reader) error {
	if err := b.beforePut(ctx, key); err != nil {
		return err
	}
	if err := storage.PutStream(ctx, b.Bucket, key, size, body); err != nil {
		return err
	}
	return b.afterPut(key)
}

// PutChecksummed applies the put faults around the real PutChecksummed
// (or Put, for a bucket without one, as storage.PutSummed does): the
// latency scenarios of make bench wrap production buckets with Bucket, and
// must take the path production takes.
func (b *Bucket) PutChecksummed(ctx context.Context, key string, crc32c uint32, parts ...[]byte) error {
	if err := b.beforePut(ctx, key); err != nil {
		return err
	}
	if err := storage.PutSummed(ctx, b.Bucket, key, storage.Checksum{CRC32C: crc32c, Known: true}, parts...); err != nil {
		return err
	}
	return b.afterPut(key)
}

// PutIfAbsent applies the put faults around the real PutIfAbsent.
func (b *Bucket) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := b.beforePut(ctx, key); err != nil {
		return err
	}
	if err := b.Bucket.PutIfAbsent(ctx, key, data); err != nil {
		return err
	}
	return b.afterPut(key)
}

// GetRange applies the get faults before the real GetRange.
func (b *Bucket) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := b.beforeGet(ctx, key); err != nil {
		return nil, err
	}
	return b.Bucket.GetRange(ctx, key, offset, length)
}

// ReadRange applies the get faults before the real ReadRange (or
// GetRange and a copy, as storage.ReadRange does).
func (b *Bucket) ReadRange(ctx context.Context, key string, offset int64, buf []byte) error {
	if err := b.beforeGet(ctx, key); err != nil {
		return err
	}
	return storage.ReadRange(ctx, b.Bucket, key, offset, buf)
}

// Size applies the get faults before the real Size.
func (b *Bucket) Size(ctx context.Context, key string) (int64, error) {
	if err := b.beforeGet(ctx, key); err != nil {
		return 0, err
	}
	return b.Bucket.Size(ctx, key)
}

// Delete adds the latency before the real Delete.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := b.delay(ctx); err != nil {
		return err
	}
	return b.Bucket.Delete(ctx, key)
}

// List adds the latency before the real List.
func (b *Bucket) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	if err := b.delay(ctx); err != nil {
		return err
	}
	return b.Bucket.List(ctx, prefix, fn)
}
