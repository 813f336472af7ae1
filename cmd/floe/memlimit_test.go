package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCgroupMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, v string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tc := range []struct {
		files []string
		want  int64
	}{
		{[]string{write("v2", "536870912\n")}, 512 << 20},
		{[]string{write("v2max", "max\n")}, 0},
		{[]string{filepath.Join(dir, "absent"), write("v1", "1073741824\n")}, 1 << 30},
		{[]string{write("v1unlimited", "9223372036854771712\n")}, 0},
		{[]string{write("junk", "lots\n")}, 0},
		{[]string{filepath.Join(dir, "absent")}, 0},
	} {
		if got := cgroupMemoryLimit(tc.files); got != tc.want {
			t.Errorf("%v: %d, want %d", tc.files, got, tc.want)
		}
	}
}
