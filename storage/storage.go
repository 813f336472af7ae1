// Package storage owns floe's access to object storage: the small Bucket
// interface and its implementations (file, memory, S3 in subpackages), the
// immutable object format (v1) that holds flushed record batches, and the read
// cache that serves fetches.
//
// storage never imports metadata or kafkaproto: it knows bytes, keys and
// byte ranges, not offsets or Kafka requests.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// ErrNotFound is returned (possibly wrapped) when a key does not exist.
var ErrNotFound = errors.New("storage: object not found")

// ErrExists is returned by PutIfAbsent when the key already exists.
var ErrExists = errors.New("storage: object already exists")

// ObjectInfo describes one stored object as listed.
type ObjectInfo struct {
	Key          string
	Size         int64
	LastModified time.Time
}

// Bucket is the whole of what floe asks of an object store. Objects are
// immutable once written: floe never overwrites a key it has written.
type Bucket interface {
	// Put stores the concatenation of parts under key, replacing nothing
	// floe relies on: keys are unique per flush. It returns only once the
	// object is durable. An object given as several parts (a flush's
	// batches where the requests left them, then its footer) is stored
	// without first being copied into one buffer. Put may still be reading
	// the parts after it returned an error (an HTTP transport finishing a
	// body), so a caller must not reuse them then.
	Put(ctx context.Context, key string, parts ...[]byte) error
	// PutIfAbsent stores data under key only if no object exists there yet
	// (If-None-Match: *); otherwise it returns ErrExists.
	PutIfAbsent(ctx context.Context, key string, data []byte) error
	// GetRange returns length bytes of the object starting at offset. A
	// negative length reads to the end of the object. Reading past the end
	// returns the bytes that exist; a missing key returns ErrNotFound.
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)
	// Size returns the size of the object, or ErrNotFound.
	Size(ctx context.Context, key string) (int64, error)
	// Delete removes key. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List calls fn for every object whose key starts with prefix, in
	// lexical key order. An error from fn stops the listing and is returned.
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
}

// StreamPutter is a Bucket that stores an object read from a stream of
// known size without holding it whole: the compactor's merges, up to
// hundreds of megabytes each, go through it in a few megabytes of memory.
// Every Bucket floe opens implements it.
type StreamPutter interface {
	// PutStream stores the size bytes read from body under key, as Put
	// stores its parts. An error reading body, or a body of another size,
	// fails the put and stores nothing.
	PutStream(ctx context.Context, key string, size int64, body io.Reader) error
}

// PutStream stores size bytes of body under key through b's PutStream, or,
// for a Bucket without one, by reading body into memory and calling Put.
func PutStream(ctx context.Context, b Bucket, key string, size int64, body io.Reader) error {
	if sp, ok := b.(StreamPutter); ok {
		return sp.PutStream(ctx, key, size, body)
	}
	data, err := ReadStream(body, size)
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return b.Put(ctx, key, data)
}

// Checksum is the CRC-32C of a whole object, when its writer knows it
// (ObjectWriter.FinishParts).
type Checksum struct {
	CRC32C uint32
	Known  bool
}

// ChecksumPutter is a Bucket that stores an object with the CRC-32C its
// writer gave (S3's x-amz-checksum-crc32c): the store checks the bytes it
// received against it and stores nothing if they differ. floe folds that
// checksum from the batch CRCs its producers sent (storage.ObjectWriter),
// so a byte that changed in the agent's memory after the batch was
// validated fails the PUT instead of being stored, and no second pass over
// the bytes computes a checksum of what memory holds.
type ChecksumPutter interface {
	// PutChecksummed stores the concatenation of parts under key, as Put,
	// if its CRC-32C is crc32c; otherwise it fails and stores nothing.
	PutChecksummed(ctx context.Context, key string, crc32c uint32, parts ...[]byte) error
}

// PutSummed stores parts under key through b's PutChecksummed when sum is
// known and b has one, else through Put.
func PutSummed(ctx context.Context, b Bucket, key string, sum Checksum, parts ...[]byte) error {
	if cp, ok := b.(ChecksumPutter); ok && sum.Known {
		return cp.PutChecksummed(ctx, key, sum.CRC32C, parts...)
	}
	return b.Put(ctx, key, parts...)
}

// RangeReader is a Bucket that reads a byte range into a buffer its caller
// owns: a merge reads its sources through one window each, reused, where
// GetRange allocated every window afresh (in floe dev at 10,000 records/s,
// as much garbage as produce itself made).
type RangeReader interface {
	// ReadRange fills buf with the len(buf) bytes of key from offset. A
	// range past the object's end is an error wrapping
	// io.ErrUnexpectedEOF; a missing key, ErrNotFound.
	ReadRange(ctx context.Context, key string, offset int64, buf []byte) error
}

// ReadRange fills buf from key at offset through b's ReadRange, or, for a
// Bucket without one, through GetRange and a copy.
func ReadRange(ctx context.Context, b Bucket, key string, offset int64, buf []byte) error {
	if rr, ok := b.(RangeReader); ok {
		return rr.ReadRange(ctx, key, offset, buf)
	}
	data, err := b.GetRange(ctx, key, offset, int64(len(buf)))
	if err != nil {
		return err
	}
	return FillRange(buf, data, key, offset)
}

// FillRange copies data, what a GetRange of len(buf) bytes of key from
// offset returned, into buf: a short answer (a range past the object's end)
// is an error wrapping io.ErrUnexpectedEOF, as ReadRange's.
func FillRange(buf, data []byte, key string, offset int64) error {
	if len(data) != len(buf) {
		return fmt.Errorf("read %s [%d,%d): %d bytes: %w", key, offset, offset+int64(len(buf)), len(data), io.ErrUnexpectedEOF)
	}
	copy(buf, data)
	return nil
}

// ReadStream reads exactly size bytes from body and checks that it ends
// there.
func ReadStream(body io.Reader, size int64) ([]byte, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(body, data); err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return data, CheckStreamEnd(body)
}

// CheckStreamEnd fails unless body has nothing left: a stream longer than
// the size it was announced with.
func CheckStreamEnd(body io.Reader) error {
	var one [1]byte
	if n, err := io.ReadFull(body, one[:]); n > 0 {
		return errors.New("body longer than its size")
	} else if err != io.EOF {
		return fmt.Errorf("read body: %w", err)
	}
	return nil
}
