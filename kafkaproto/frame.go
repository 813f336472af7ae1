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

// ErrFrameTooLarge is returned (wrapped) by FrameSize, so by ReadFrame and
// the agent's request reader, when a frame's declared size is negative or
// above the limit. The connection cannot be resynchronised after it, so
// callers close it.
var ErrFrameTooLarge = errors.New("kafkaproto: frame exceeds maximum request size")

// ErrMalformed is returned (wrapped with detail) for requests, headers and
// record batches that cannot be parsed.
var ErrMalformed = errors.New("kafkaproto: malformed request")

// FrameSize returns the body length that a frame's 4-byte size prefix
// (int32 big-endian) announces. A negative length or one above max returns
// an error wrapping ErrFrameTooLarge.
func FrameSize(prefix [4]byte, max int32) (int, error) {
	n := int32(binary.BigEndian.Uint32(prefix[:]))
	if n < 0 || n > max {
		return 0, fmt.Errorf("%w: %d bytes (max %d)", ErrFrameTooLarge, n, max)
	}
	return int(n), nil
}

// ReadFrame reads one size-prefixed frame (int32 big-endian length, then
// body) from r and returns the body. A negative length or one above max
// returns ErrFrameTooLarge without reading the body. A stream that ends
// inside the frame returns io.ErrUnexpectedEOF; one that ends cleanly before
// the length returns io.EOF. The returned slice is freshly allocated, so
// callers may keep it.
//
// ReadFrame is the plain reader, for the client side of a connection (the
// tests' hand-written clients read answers with it). The agent reads
// requests with its own reader (agent/conn.go), which charges each frame to
// its request budget as the bytes arrive, bounds how long a frame may take
// and recycles produce frames: concerns of a broker's connection that
// kafkaproto, which does no I/O of its own beyond this function, does not
// hold. Both take the size from FrameSize.
func ReadFrame(r io.Reader, max int32) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n, err := FrameSize(size, max)
	if err != nil {
		return nil, err
	}
	// The size is the peer's claim: above frameChunk, grow the buffer (by
	// doubling) only as bytes actually arrive, so a 4-byte lie cannot make
	// us hold max bytes per connection. Frames up to frameChunk — nearly
	// all of them — are read into one exact allocation.
	body := make([]byte, min(n, frameChunk))
	read := 0
	for read < n {
		if read == len(body) {
			grown := make([]byte, min(2*len(body), n))
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
