package kafkaproto

import (
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// streamWindow is the size of the buffer a compressed batch's records are
// read through when validated: a few records' worth, so a Read of the
// decompressor covers many fields, and small enough that validations in
// flight on every connection cost little.
const streamWindow = 16 << 10

// stream feeds a reader from a decompressor through a fixed window, so that
// records are checked as they decompress without the decompressed section
// ever being held: a validation's memory is the window plus the decoder's
// own bounded state, whatever the batch claims. Keys, values and headers
// larger than the window are skipped through it. More than limit
// decompressed bytes fail with errDecompressedTooLarge, as DecodeRecords'
// bound does.
type stream struct {
	src    io.Reader
	buf    []byte // the window; the reader's b is always a slice of it
	pulled int    // bytes read from src so far
	limit  int
	eof    bool
}

// decompressError is a failure of the decompressor itself (the payload is
// not valid data for its codec), as opposed to records that decompress but
// do not frame.
type decompressError struct{ err error }

func (e *decompressError) Error() string { return "decompress: " + e.err.Error() }
func (e *decompressError) Unwrap() error { return e.err }

// fill makes at least need bytes unread in r.b, unless the stream ends
// first. Unread bytes move to the front of the window and the rest of it is
// refilled.
func (s *stream) fill(r *reader, need int) {
	if r.err != nil || len(r.b) >= need || s.eof {
		return
	}
	n := copy(s.buf, r.b)
	for n < need && !s.eof {
		m, err := s.read(r, s.buf[n:])
		n += m
		if err != nil {
			return
		}
	}
	r.b = s.buf[:n]
}

// skip consumes n bytes, the first of them from r.b and the rest straight
// from the stream through the window, which is left holding what follows.
// A stream that ends first fails the record (Kafka: premature EOF).
func (s *stream) skip(r *reader, n int) {
	if n <= len(r.b) {
		r.b = r.b[n:]
		return
	}
	n -= len(r.b)
	r.b = nil
	for n > 0 {
		if s.eof {
			r.fail("length: records end early")
			return
		}
		m, err := s.read(r, s.buf)
		if err != nil {
			return
		}
		if m >= n {
			r.b = s.buf[n:m]
			return
		}
		n -= m
	}
}

// read reads once from src into p, counting against the bound. A
// decompressor failure, or passing the bound, fails r; the end of the
// stream only sets eof.
func (s *stream) read(r *reader, p []byte) (int, error) {
	var m int
	var err error
	// A Reader may return nothing without an error; give up on one that
	// keeps doing so rather than spin.
	for range 100 {
		if m, err = s.src.Read(p); m > 0 || err != nil {
			break
		}
	}
	s.pulled += m
	switch {
	case s.pulled > s.limit:
		err = errDecompressedTooLarge
	case err == io.EOF:
		s.eof = true
		return m, nil
	case err == nil && m == 0:
		err = io.ErrNoProgress
	case errors.Is(err, zstd.ErrDecoderSizeExceeded):
		err = errDecompressedTooLarge
	}
	if err != nil {
		if !errors.Is(err, errDecompressedTooLarge) {
			err = &decompressError{err}
		}
		r.err, r.b, r.lim = err, nil, 0
		return m, err
	}
	return m, nil
}

// streamRecords runs v's walk over the n records of a compressed records
// section (a codec open can stream) as they decompress from a pooled
// decoder through its window.
func streamRecords(codec int8, data []byte, n int32, limit int, v *validation) (err error) {
	c := codecPool.Get().(*codecs)
	defer func() {
		// The decoders are third-party code fed hostile bytes: a bug in
		// one fails this batch, not the process, and a decoder that
		// panicked is dropped with its codecs.
		if p := recover(); p != nil {
			err = &decompressError{fmt.Errorf("decoder panic: %v", p)}
			return
		}
		c.stream = stream{buf: c.stream.buf}
		c.release()
	}()
	src, err := c.open(codec, data, limit)
	if err != nil {
		return &decompressError{err}
	}
	if c.stream.buf == nil {
		c.stream.buf = make([]byte, streamWindow)
	}
	c.stream = stream{src: src, buf: c.stream.buf, limit: limit}
	return v.walk(&recordWalk{reader: reader{src: &c.stream}, n: n})
}
