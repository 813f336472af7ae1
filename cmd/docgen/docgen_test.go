package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"floe/kafkaproto"
)

// TestDocsUpToDate fails when a generated table of the docs differs from
// what docgen writes: a package, an import or an API version changed without
// the docs.
func TestDocsUpToDate(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	docs, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range docs {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s is out of date: run `go run ./cmd/docgen` at the module root and commit it\n%s", name, firstDifference(string(got), string(want)))
		}
	}
}

// firstDifference shows the first line that differs.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  have: %s\n  want: %s", i+1, gl, wl)
		}
	}
	return ""
}

// TestAPITableKeepsNotes: names and notes are kept by key, a row whose APIs
// no longer share versions is split, a new API gets kmsg's name, a gone one
// its row removed, and rows are sorted by key.
func TestAPITableKeepsNotes(t *testing.T) {
	old := []string{
		"| API (key) | versions | notes |",
		"|---|---|---|",
		"| SaslHandshake (17) | 0–1 | PLAIN, SCRAM |",
		"| OffsetCommit (8), OffsetFetch (9) | 0–9 | shared note |",
		"| ElectLeaders (43) | 0–2 | gone |",
	}
	served := []kafkaproto.Versions{
		{Key: 0, AdvertisedMin: 0, HandledMin: 3, Max: 11},
		{Key: 8, Max: 9},
		{Key: 9, Max: 8},
		{Key: 17, Max: 1},
		{Key: 47, Max: 0},
	}
	got, err := apiTableFrom(served, old)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"| API (key) | versions | notes |",
		"|---|---|---|",
		"| Produce (0) | 3–11 served, 0–11 advertised | |",
		"| OffsetCommit (8) | 0–9 | shared note |",
		"| OffsetFetch (9) | 0–8 | shared note |",
		"| SaslHandshake (17) | 0–1 | PLAIN, SCRAM |",
		"| OffsetDelete (47) | 0 | |",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPackageTableKeepsOwns: rows, grouping and prose are kept; imports are
// rewritten (per package when a row's packages differ); a new package goes
// after its top directory's last row with its synopsis; a gone one leaves.
func TestPackageTableKeepsOwns(t *testing.T) {
	old := []string{
		"| package | imports (floe only) | owns |",
		"|---|---|---|",
		"| `storage` | — | buckets |",
		"| `storage/file`, `storage/mem` | `storage` | two buckets |",
		"| `gone` | — | nothing |",
		"| `integration` | — | black-box tests |",
	}
	pkgs := []goPackage{
		{ImportPath: "floe/integration", TestImports: []string{"floe/storage", "testing"}},
		{ImportPath: "floe/storage", GoFiles: []string{"a.go"}, Imports: []string{"floe/internal/crc32c", "io"}},
		{ImportPath: "floe/storage/file", GoFiles: []string{"a.go"}, Imports: []string{"floe/storage"}},
		{ImportPath: "floe/storage/mem", GoFiles: []string{"a.go"}},
		{ImportPath: "floe/storage/new", Name: "new", Doc: "Package new owns something new.", GoFiles: []string{"a.go"}, Imports: []string{"floe/storage"}},
	}
	got, err := packageTableFrom(pkgs, old)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"| package | imports (floe only) | owns |",
		"|---|---|---|",
		"| `storage` | `internal/crc32c` | buckets |",
		"| `storage/file`, `storage/mem` | `storage/file`: `storage`; `storage/mem`: — | two buckets |",
		"| `storage/new` | `storage` | Package new owns something new |",
		"| `integration` | — (tests import `storage`) | black-box tests |",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
