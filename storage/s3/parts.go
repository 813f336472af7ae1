package s3

import (
	"errors"
	"io"
)

// partsReader reads the concatenation of parts, and seeks in it (the SDK
// reads a body once for its checksum, then again to send it, and again on
// a retry). It is the body of a PUT given as several slices, which are
// sent without being joined into one buffer.
type partsReader struct {
	parts [][]byte
	size  int64
	pos   int64
	// i and off locate pos: parts[i][off], kept so sequential reads do
	// not search from the start.
	i, off int
}

func newPartsReader(parts [][]byte) *partsReader {
	r := &partsReader{parts: parts}
	for _, p := range parts {
		r.size += int64(len(p))
	}
	return r
}

func (r *partsReader) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) && r.i < len(r.parts) {
		c := copy(b[n:], r.parts[r.i][r.off:])
		n += c
		r.off += c
		if r.off == len(r.parts[r.i]) {
			r.i, r.off = r.i+1, 0
		}
	}
	r.pos += int64(n)
	if n == 0 && len(b) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// WriteTo writes what is left to read to w, part by part, without copying
// it into a buffer first: the SDK's io.Copy of the body into its checksum
// then hashes the parts where they lie.
func (r *partsReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for r.i < len(r.parts) {
		n, err := w.Write(r.parts[r.i][r.off:])
		total += int64(n)
		r.pos += int64(n)
		r.off += n
		if r.off == len(r.parts[r.i]) {
			r.i, r.off = r.i+1, 0
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (r *partsReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.pos
	case io.SeekEnd:
		offset += r.size
	default:
		return 0, errors.New("s3: parts reader: invalid whence")
	}
	if offset < 0 {
		return 0, errors.New("s3: parts reader: negative position")
	}
	r.pos = offset
	r.i, r.off = 0, 0
	for rest := min(offset, r.size); r.i < len(r.parts); r.i++ {
		if l := int64(len(r.parts[r.i])); rest < l {
			r.off = int(rest)
			break
		} else {
			rest -= l
		}
	}
	return offset, nil
}

// Len returns the bytes left to read, as bytes.Reader's does.
func (r *partsReader) Len() int { return int(max(r.size-r.pos, 0)) }
