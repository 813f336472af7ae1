//go:build !(darwin || linux || openbsd)

package file

import "os"

// writeParts writes the concatenation of parts to f, one write per part.
func writeParts(f *os.File, parts [][]byte) error {
	for _, p := range parts {
		if _, err := f.Write(p); err != nil {
			return err
		}
	}
	return nil
}
