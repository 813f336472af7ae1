package protobuf

import (
	"slices"
	"testing"

	"floe/schemaregistry/format"
)

type diffExample struct {
	name                     string
	original, update         string
	originalRefs, updateRefs []format.Reference
	changes                  []string
	compatible               bool
}

func mustParse(t *testing.T, text string, refs []format.Reference) *Schema {
	t.Helper()
	s, err := New().Parse(text, refs)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	return s.(*Schema)
}

func checkExample(t *testing.T, ex diffExample) {
	t.Helper()
	o := mustParse(t, ex.original, ex.originalRefs)
	u := mustParse(t, ex.update, ex.updateRefs)
	var got []string
	for _, d := range Diff(o, u) {
		got = append(got, d.String())
	}
	want := slices.Clone(ex.changes)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("differences:\n got %q\nwant %q", got, want)
	}
	msgs := New().Compatible(u, o)
	if compatible := len(msgs) == 0; compatible != ex.compatible {
		t.Errorf("compatible = %v, want %v: %q", compatible, ex.compatible, msgs)
	}
}

// TestConfluentDiffExamples runs Confluent's own diff examples.
func TestConfluentDiffExamples(t *testing.T) {
	for _, ex := range confluentDiffExamples {
		t.Run(ex.name, func(t *testing.T) { checkExample(t, ex) })
	}
}
