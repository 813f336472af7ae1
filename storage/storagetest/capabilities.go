package storagetest

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"sync/atomic"
	"testing"

	"floe/storage"
	"floe/storage/mem"
)

// recorder is a bucket with every capability that counts which of its
// methods were called.
type recorder struct {
	storage.Bucket
	puts, checksummed, streams, ranges atomic.Int32
}

func (r *recorder) Put(ctx context.Context, key string, parts ...[]byte) error {
	r.puts.Add(1)
	return r.Bucket.Put(ctx, key, parts...)
}

func (r *recorder) PutChecksummed(ctx context.Context, key string, _ uint32, parts ...[]byte) error {
	r.checksummed.Add(1)
	return r.Bucket.Put(ctx, key, parts...)
}

func (r *recorder) PutStream(ctx context.Context, key string, size int64, body io.Reader) error {
	r.streams.Add(1)
	return storage.PutStream(ctx, r.Bucket, key, size, body)
}

func (r *recorder) ReadRange(ctx context.Context, key string, offset int64, buf []byte) error {
	r.ranges.Add(1)
	return storage.ReadRange(ctx, r.Bucket, key, offset, buf)
}

// Capabilities checks that a wrapper keeps every optional capability of
// the bucket it wraps (storage.StreamPutter, ChecksumPutter, RangeReader):
// the package's helpers called on the wrapper reach the inner bucket's own
// methods, not their fallbacks through Put and GetRange. A wrapper that
// embeds storage.Bucket drops them silently, and callers take a path
// production never takes.
func Capabilities(t *testing.T, wrap func(storage.Bucket) storage.Bucket) {
	ctx := t.Context()
	r := &recorder{Bucket: mem.New()}
	b := wrap(r)
	data := []byte("capabilities")
	sum := storage.Checksum{CRC32C: crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)), Known: true}
	if err := storage.PutSummed(ctx, b, "summed", sum, data); err != nil {
		t.Fatal(err)
	}
	if r.checksummed.Load() != 1 || r.puts.Load() != 0 {
		t.Errorf("PutSummed through the wrapper: %d PutChecksummed, %d Put on the inner bucket; want 1 and 0",
			r.checksummed.Load(), r.puts.Load())
	}
	if err := storage.PutStream(ctx, b, "streamed", int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if r.streams.Load() != 1 {
		t.Errorf("PutStream through the wrapper: %d PutStream on the inner bucket, want 1", r.streams.Load())
	}
	buf := make([]byte, 4)
	if err := storage.ReadRange(ctx, b, "streamed", 2, buf); err != nil || string(buf) != "pabi" {
		t.Fatalf("ReadRange through the wrapper: %q, %v", buf, err)
	}
	if r.ranges.Load() != 1 {
		t.Errorf("ReadRange through the wrapper: %d ReadRange on the inner bucket, want 1", r.ranges.Load())
	}
}
