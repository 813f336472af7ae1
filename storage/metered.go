package storage

import (
	"context"
	"io"
	"time"
)

// Observer is told of every request a Metered bucket makes: its operation
// (put, put_if_absent, get, size, delete, list), the bytes it moved, how
// long it took and its error.
type Observer func(op string, bytes int64, d time.Duration, err error)

var (
	_ Bucket         = (*Metered)(nil)
	_ StreamPutter   = (*Metered)(nil)
	_ ChecksumPutter = (*Metered)(nil)
	_ RangeReader    = (*Metered)(nil)
)

// Metered reports every request to its bucket to an Observer: the agent
// counts and times them in floe_storage_*. It names its bucket in a field
// rather than embedding it, so the compiler makes it write every method,
// and it has every optional capability of a Bucket (PutStream,
// PutChecksummed, ReadRange), passed on through this package's helpers:
// a wrapper that dropped one would send callers down a slower path than
// the bucket beneath offers.
type Metered struct {
	bkt     Bucket
	observe Observer
}

// NewMetered wraps b, reporting to observe.
func NewMetered(b Bucket, observe Observer) *Metered { return &Metered{bkt: b, observe: observe} }

func (m *Metered) done(op string, n int64, start time.Time, err error) {
	m.observe(op, n, time.Since(start), err)
}

func size(parts [][]byte) int64 {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return int64(n)
}

// Put is a metered Put.
func (m *Metered) Put(ctx context.Context, key string, parts ...[]byte) error {
	start := time.Now()
	err := m.bkt.Put(ctx, key, parts...)
	m.done("put", size(parts), start, err)
	return err
}

// PutChecksummed is a metered PutSummed.
func (m *Metered) PutChecksummed(ctx context.Context, key string, crc32c uint32, parts ...[]byte) error {
	start := time.Now()
	err := PutSummed(ctx, m.bkt, key, Checksum{CRC32C: crc32c, Known: true}, parts...)
	m.done("put", size(parts), start, err)
	return err
}

// PutStream is a metered PutStream.
func (m *Metered) PutStream(ctx context.Context, key string, n int64, body io.Reader) error {
	start := time.Now()
	err := PutStream(ctx, m.bkt, key, n, body)
	m.done("put", n, start, err)
	return err
}

// PutIfAbsent is a metered PutIfAbsent.
func (m *Metered) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	start := time.Now()
	err := m.bkt.PutIfAbsent(ctx, key, data)
	m.done("put_if_absent", int64(len(data)), start, err)
	return err
}

// GetRange is a metered GetRange.
func (m *Metered) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	start := time.Now()
	data, err := m.bkt.GetRange(ctx, key, offset, length)
	m.done("get", int64(len(data)), start, err)
	return data, err
}

// ReadRange is a metered ReadRange.
func (m *Metered) ReadRange(ctx context.Context, key string, offset int64, buf []byte) error {
	start := time.Now()
	err := ReadRange(ctx, m.bkt, key, offset, buf)
	n := int64(len(buf))
	if err != nil {
		n = 0
	}
	m.done("get", n, start, err)
	return err
}

// Size is a metered Size.
func (m *Metered) Size(ctx context.Context, key string) (int64, error) {
	start := time.Now()
	n, err := m.bkt.Size(ctx, key)
	m.done("size", 0, start, err)
	return n, err
}

// Delete is a metered Delete.
func (m *Metered) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := m.bkt.Delete(ctx, key)
	m.done("delete", 0, start, err)
	return err
}

// List is a metered List: one request, however many pages the bucket reads.
func (m *Metered) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	start := time.Now()
	err := m.bkt.List(ctx, prefix, fn)
	m.done("list", 0, start, err)
	return err
}
