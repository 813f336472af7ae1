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

func TestMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		sum, cgroup int64
		want        int64
		from        string
	}{
		{200 << 20, 0, 200<<20 + memoryHeadroom, "budgets"},
		{200 << 20, 1 << 30, 200<<20 + memoryHeadroom, "budgets"},
		// Budgets over the container's nine tenths: the container wins.
		{1 << 30, 1 << 30, 1 << 30 / 10 * 9, "cgroup"},
		{0, 1 << 30, 1 << 30 / 10 * 9, "cgroup"},
		{0, 0, 0, ""},
	} {
		got, from := memoryLimit(tc.sum, tc.cgroup)
		if got != tc.want || from != tc.from {
			t.Errorf("memoryLimit(%d, %d) = %d, %q; want %d, %q", tc.sum, tc.cgroup, got, from, tc.want, tc.from)
		}
	}
}
