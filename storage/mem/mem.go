// Package mem is an in-memory storage.Bucket: the bucket behind `mem://` and
// the fastest backend for tests. Nothing survives the process.
package mem

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"floe/storage"
)

var (
	_ storage.Bucket       = (*Bucket)(nil)
	_ storage.StreamPutter = (*Bucket)(nil)
	_ storage.RangeReader  = (*Bucket)(nil)
)

type object struct {
	data    []byte
	modTime time.Time
}

// Bucket is an in-memory storage.Bucket, safe for concurrent use. Data is
// copied on Put and on Get, so neither side can change what the other holds.
type Bucket struct {
	mu      sync.Mutex // guards objects
	objects map[string]object
}

// New returns an empty bucket.
func New() *Bucket {
	return &Bucket{objects: make(map[string]object)}
}

// Put stores a copy of the concatenated parts under key.
func (b *Bucket) Put(ctx context.Context, key string, parts ...[]byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := object{data: slices.Concat(parts...), modTime: time.Now()}
	b.mu.Lock()
	b.objects[key] = o
	b.mu.Unlock()
	return nil
}

// PutStream stores the size bytes read from body under key.
func (b *Bucket) PutStream(ctx context.Context, key string, size int64, body io.Reader) error {
	data, err := storage.ReadStream(body, size)
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return b.Put(ctx, key, data)
}

// PutIfAbsent stores a copy of data under key unless key exists, in which
// case it returns storage.ErrExists.
func (b *Bucket) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := object{data: slices.Clone(data), modTime: time.Now()}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.objects[key]; ok {
		return fmt.Errorf("put %s: %w", key, storage.ErrExists)
	}
	b.objects[key] = o
	return nil
}

// GetRange returns a copy of length bytes of key from offset (to the end if
// length is negative).
func (b *Bucket) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, fmt.Errorf("get %s: negative offset %d", key, offset)
	}
	b.mu.Lock()
	o, ok := b.objects[key]
	b.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, storage.ErrNotFound)
	}
	// o.data is never modified after Put, so it may be read unlocked.
	size := int64(len(o.data))
	start := min(offset, size)
	end := size
	if length >= 0 && length < end-start {
		end = start + length
	}
	return slices.Clone(o.data[start:end:end]), nil
}

// ReadRange fills buf with the bytes of key from offset.
func (b *Bucket) ReadRange(ctx context.Context, key string, offset int64, buf []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("read %s: negative offset %d", key, offset)
	}
	b.mu.Lock()
	o, ok := b.objects[key]
	b.mu.Unlock()
	if !ok {
		return fmt.Errorf("read %s: %w", key, storage.ErrNotFound)
	}
	if offset+int64(len(buf)) > int64(len(o.data)) {
		return fmt.Errorf("read %s [%d,%d) of %d bytes: %w", key, offset, offset+int64(len(buf)), len(o.data), io.ErrUnexpectedEOF)
	}
	copy(buf, o.data[offset:])
	return nil
}

// Size returns the size of key.
func (b *Bucket) Size(ctx context.Context, key string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	b.mu.Lock()
	o, ok := b.objects[key]
	b.mu.Unlock()
	if !ok {
		return 0, fmt.Errorf("size %s: %w", key, storage.ErrNotFound)
	}
	return int64(len(o.data)), nil
}

// Delete removes key; a missing key is not an error.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	delete(b.objects, key)
	b.mu.Unlock()
	return nil
}

// List calls fn for each key with prefix in lexical order. It works on a
// snapshot taken at the start, and calls fn without holding the lock, so fn
// may use the bucket.
func (b *Bucket) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	b.mu.Lock()
	infos := make([]storage.ObjectInfo, 0, len(b.objects))
	for k, o := range b.objects {
		if strings.HasPrefix(k, prefix) {
			infos = append(infos, storage.ObjectInfo{Key: k, Size: int64(len(o.data)), LastModified: o.modTime})
		}
	}
	b.mu.Unlock()
	slices.SortFunc(infos, func(a, b storage.ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}
