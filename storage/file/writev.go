//go:build darwin || linux || openbsd

package file

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// maxIovecs is the most slices one writev(2) is given (Linux's IOV_MAX).
const maxIovecs = 1024

// writeParts writes the concatenation of parts to f, with one writev(2)
// for up to maxIovecs parts: a flushed object comes as its batches, where
// the produce requests left them, and is written without joining them.
func writeParts(f *os.File, parts [][]byte) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	iov := make([][]byte, 0, min(len(parts), maxIovecs))
	i, off := 0, 0 // the next byte to write is parts[i][off]
	for {
		for i < len(parts) && off == len(parts[i]) {
			i, off = i+1, 0
		}
		if i == len(parts) {
			return nil
		}
		iov = append(iov[:0], parts[i][off:])
		for j := i + 1; j < len(parts) && len(iov) < maxIovecs; j++ {
			iov = append(iov, parts[j])
		}
		var n int
		var werr error
		// A regular file is not polled: the function runs once.
		if err := rc.Write(func(fd uintptr) bool {
			n, werr = unix.Writev(int(fd), iov)
			return true
		}); err != nil {
			return err
		}
		switch {
		case errors.Is(werr, unix.EINTR):
			continue
		case werr != nil:
			return &os.PathError{Op: "writev", Path: f.Name(), Err: werr}
		case n == 0:
			return io.ErrShortWrite
		}
		for n > 0 {
			if rest := len(parts[i]) - off; n >= rest {
				n -= rest
				i, off = i+1, 0
			} else {
				off += n
				n = 0
			}
		}
	}
}
