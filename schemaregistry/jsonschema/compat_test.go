package jsonschema

import (
	"sort"
	"strings"
	"testing"

	"floe/schemaregistry/format"
)

type confluentExample struct {
	description      string
	original, update string
	changes          []string
	compatible       bool
}

func mustParse(t testing.TB, text string, refs ...format.Reference) *Schema {
	t.Helper()
	s, err := New().Parse(text, refs)
	if err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	return s.(*Schema)
}

// changesOf lists the differences from original to update as Confluent's
// tests print them, sorted (Confluent's order follows Java hash sets).
func changesOf(original, update *Schema) []string {
	ot, ok1 := original.tree()
	ut, ok2 := update.tree()
	diffs, ok := compareSchemas(ot, ut)
	if !ok || !ok1 || !ok2 {
		return []string{"too complex"}
	}
	out := []string{}
	for _, d := range diffs {
		out = append(out, string(d.typ)+" "+d.path)
	}
	sort.Strings(out)
	return out
}

// TestConfluentExamples checks every pair of Confluent's own tables: the
// differences found and the verdict.
func TestConfluentExamples(t *testing.T) {
	for _, ex := range confluentExamples {
		t.Run(ex.description, func(t *testing.T) {
			o, u := mustParse(t, ex.original), mustParse(t, ex.update)
			want := append([]string{}, ex.changes...)
			sort.Strings(want)
			got := changesOf(o, u)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s -> %s\n got changes %q\nwant changes %q", ex.original, ex.update, got, want)
			}
			msgs := New().Compatible(u, o)
			if (len(msgs) == 0) != ex.compatible {
				t.Errorf("%s -> %s: compatible %v, want %v (%q)", ex.original, ex.update, len(msgs) == 0, ex.compatible, msgs)
			}
		})
	}
}
