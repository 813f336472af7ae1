package kafkaproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxRequestSize is the largest request frame accepted by default. It
// matches Kafka's socket.request.max.bytes default (100 MiB).
const DefaultMaxRequestSize = 100 << 20

// ErrFrameTooLarge is returned by ReadFrame when a frame's declared size is
// negative or above the limit. The connection cannot be resynchronised after
// it, so callers close it.
var ErrFrameTooLarge = errors.New("kafkaproto: frame exceeds maximum request size")

// ErrMalformed is returned (wrapped with detail) for requests, headers and
// record batches that cannot be parsed.
var ErrMalformed = errors.New("kafkaproto: malformed request")

// ReadFrame reads one size-prefixed frame (int32 big-endian length, then
// body) from r and returns the body. A negative length or one above max
// returns ErrFrameTooLarge without reading the body. A stream that ends
// inside the frame returns io.ErrUnexpectedEOF; one that ends cleanly before
// the length returns io.EOF. The returned slice is freshly allocated, so
// callers may keep it.
func ReadFrame(r io.Reader, max int32) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > max {
		return nil, fmt.Errorf("%w: %d bytes (max %d)", ErrFrameTooLarge, n, max)
	}
	// The size is the peer's claim: above frameChunk, grow the buffer (by
	// doubling) only as bytes actually arrive, so a 4-byte lie cannot make
	// us hold max bytes per connection. Frames up to frameChunk — nearly
	// all of them — are read into one exact allocation.
	body := make([]byte, min(int(n), frameChunk))
	read := 0
	for read < int(n) {
		if read == len(body) {
			grown := make([]byte, min(2*len(body), int(n)))
			copy(grown, body)
			body = grown
		}
		m, err := io.ReadFull(r, body[read:])
		read += m
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return body, nil
}

// frameChunk is how much of a frame ReadFrame allocates before any of its
// body has arrived; larger frames grow by doubling as they are read.
const frameChunk = 1 << 20
