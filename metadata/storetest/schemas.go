package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"floe/metadata"
)

// The schema registry's rows: SchemaStore.

func updateSchemas(t *testing.T, s metadata.Store, fn func(ctx context.Context, w metadata.SchemaWriter) error) {
	t.Helper()
	ctx := ctxT(t)
	if err := s.UpdateSchemas(ctx, func(w metadata.SchemaWriter) error { return fn(ctx, w) }); err != nil {
		t.Fatalf("UpdateSchemas: %v", err)
	}
}

func testSchemas(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	r := s.Schemas()
	if _, err := r.SchemaByID(ctx, 1); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("SchemaByID on empty: %v", err)
	}
	if max, err := r.MaxSchemaID(ctx); err != nil || max != 0 {
		t.Fatalf("MaxSchemaID on empty: %d %v", max, err)
	}
	a := metadata.RegisteredSchema{Type: "AVRO", Schema: `"string"`, Fingerprint: "fa"}
	b := metadata.RegisteredSchema{Type: "PROTOBUF", Schema: "syntax = \"proto3\";", Metadata: `{"properties":{"k":"v"}}`,
		RuleSet: `{"domainRules":[]}`, Fingerprint: "fb",
		References: []metadata.SchemaReference{{Name: "z.proto", Subject: "z", Version: 2}, {Name: "a.proto", Subject: "a", Version: 1}}}
	updateSchemas(t, s, func(ctx context.Context, w metadata.SchemaWriter) error {
		for _, sc := range []*metadata.RegisteredSchema{&a, &b} {
			id, err := w.NextSchemaID(ctx)
			if err != nil {
				return err
			}
			sc.ID = id
			if err := w.PutSchema(ctx, *sc); err != nil {
				return err
			}
		}
		// A second PutSchema of a stored id changes nothing.
		return w.PutSchema(ctx, metadata.RegisteredSchema{ID: a.ID, Type: "JSON", Schema: "{}", Fingerprint: "x"})
	})
	if a.ID != 1 || b.ID != 2 {
		t.Fatalf("ids %d %d, want 1 2", a.ID, b.ID)
	}
	for _, want := range []metadata.RegisteredSchema{a, b} {
		got, err := r.SchemaByID(ctx, want.ID)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("SchemaByID(%d) = %+v, %v; want %+v", want.ID, got, err, want)
		}
	}
	if id, err := r.SchemaIDByFingerprint(ctx, "fb"); err != nil || id != 2 {
		t.Fatalf("SchemaIDByFingerprint(fb) = %d, %v", id, err)
	}
	if _, err := r.SchemaIDByFingerprint(ctx, "nope"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("SchemaIDByFingerprint(nope): %v", err)
	}

	// Import stores given ids; allocation continues above them, and a
	// lower imported id does not pull it back.
	updateSchemas(t, s, func(ctx context.Context, w metadata.SchemaWriter) error {
		for _, id := range []int{100, 50} {
			if err := w.PutSchema(ctx, metadata.RegisteredSchema{ID: id, Type: "AVRO", Schema: `"int"`, Fingerprint: "fi"}); err != nil {
				return err
			}
		}
		return nil
	})
	var next int
	updateSchemas(t, s, func(ctx context.Context, w metadata.SchemaWriter) (err error) {
		next, err = w.NextSchemaID(ctx)
		return err
	})
	if next != 101 {
		t.Fatalf("NextSchemaID after import of 100: %d, want 101", next)
	}
	if id, err := r.SchemaIDByFingerprint(ctx, "fi"); err != nil || id != 50 {
		t.Fatalf("SchemaIDByFingerprint(fi) = %d, %v; want the lowest, 50", id, err)
	}
	if max, err := r.MaxSchemaID(ctx); err != nil || max != 100 {
		t.Fatalf("MaxSchemaID: %d %v", max, err)
	}
	// An allocated id that was never stored is not handed out again.
	updateSchemas(t, s, func(ctx context.Context, w metadata.SchemaWriter) (err error) {
		next, err = w.NextSchemaID(ctx)
		return err
	})
	if next != 102 {
		t.Fatalf("NextSchemaID: %d, want 102", next)
	}
}

func testSchemaVersions(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	r := s.Schemas()
	if vs, err := r.SubjectVersions(ctx, "a"); err != nil || len(vs) != 0 {
		t.Fatalf("SubjectVersions on empty: %v %v", vs, err)
	}
	ref := metadata.RegisteredSchema{ID: 7, Type: "AVRO", Schema: "{}", Fingerprint: "f7",
		References: []metadata.SchemaReference{{Name: "n", Subject: "a", Version: 1}}}
	updateSchemas(t, s, func(ctx context.Context, w metadata.SchemaWriter) error {
		for _, id := range []int{5, 6} {
			if err := w.PutSchema(ctx, metadata.RegisteredSchema{ID: id, Type: "AVRO", Schema: fmt.Sprint(id), Fingerprint: fmt.Sprint(id)}); err != nil {
				return err
			}
		}
		if err := w.PutSchema(ctx, ref); err != nil {
			return err
		}
		for _, v := range []metadata.SubjectVersion{
			{Subject: "b", Version: 1, SchemaID: 5},
			{Subject: "a", Version: 2, SchemaID: 6},
			{Subject: "a", Version: 1, SchemaID: 5},
			{Subject: "ab", Version: 1, SchemaID: 7},
			{Subject: "c", Version: 1, SchemaID: 7},
		} {
			if err := w.PutSubjectVersion(ctx, v); err != nil {
				return err
			}
		}
		// Soft delete: the same row, flagged.
		return w.PutSubjectVersion(ctx, metadata.SubjectVersion{Subject: "a", Version: 2, SchemaID: 6, Deleted: true})
	})
	a1 := metadata.SubjectVersion{Subject: "a", Version: 1, SchemaID: 5}
	a2 := metadata.SubjectVersion{Subject: "a", Version: 2, SchemaID: 6, Deleted: true}
	ab1 := metadata.SubjectVersion{Subject: "ab", Version: 1, SchemaID: 7}
	b1 := metadata.SubjectVersion{Subject: "b", Version: 1, SchemaID: 5}
	c1 := metadata.SubjectVersion{Subject: "c", Version: 1, SchemaID: 7}
	check := func(what string, got []metadata.SubjectVersion, err error, want ...metadata.SubjectVersion) {
		t.Helper()
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%s = %+v, %v; want %+v", what, got, err, want)
		}
	}
	vs, err := r.SubjectVersions(ctx, "a")
	check("SubjectVersions(a)", vs, err, a1, a2)
	vs, err = r.AllSubjectVersions(ctx, "")
	check("AllSubjectVersions()", vs, err, a1, a2, ab1, b1, c1)
	vs, err = r.AllSubjectVersions(ctx, "a")
	check("AllSubjectVersions(a)", vs, err, a1, a2, ab1)
	vs, err = r.VersionsOfSchema(ctx, 5)
	check("VersionsOfSchema(5)", vs, err, a1, b1)
	ids, err := r.ReferencedBy(ctx, "a", 1)
	if err != nil || !slices.Equal(ids, []int{7}) {
		t.Fatalf("ReferencedBy(a, 1) = %v, %v", ids, err)
	}

	updateSchemas(t, s, func(ctx context.Context, w metadata.SchemaWriter) error {
		if err := w.DeleteSubjectVersion(ctx, "a", 2); err != nil {
			return err
		}
		if err := w.DeleteSubjectVersion(ctx, "a", 2); !errors.Is(err, metadata.ErrNotFound) {
			return fmt.Errorf("second delete: %v, want ErrNotFound", err)
		}
		if err := w.DeleteSubjectVersion(ctx, "ab", 1); err != nil {
			return err
		}
		return w.DeleteSubjectVersion(ctx, "c", 1)
	})
	vs, err = r.SubjectVersions(ctx, "a")
	check("SubjectVersions(a) after hard delete", vs, err, a1)
	// Schema 7 is used by no version any more: it references nothing.
	if ids, err := r.ReferencedBy(ctx, "a", 1); err != nil || len(ids) != 0 {
		t.Fatalf("ReferencedBy(a, 1) after delete = %v, %v", ids, err)
	}
	// The schema row stays: ids are never reused.
	if _, err := r.SchemaByID(ctx, 7); err != nil {
		t.Fatalf("SchemaByID(7) after its versions' delete: %v", err)
	}
}

func testSchemaSettings(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	r := s.Schemas()
	for _, subject := range []string{"", "a"} {
		if _, err := r.SchemaConfig(ctx, subject); !errors.Is(err, metadata.ErrNotFound) {
			t.Fatalf("SchemaConfig(%q) unset: %v", subject, err)
		}
		if _, err := r.SchemaMode(ctx, subject); !errors.Is(err, metadata.ErrNotFound) {
			t.Fatalf("SchemaMode(%q) unset: %v", subject, err)
		}
	}
	updateSchemas(t, s, func(ctx context.Context, w metadata.SchemaWriter) error {
		if err := w.SetSchemaConfig(ctx, "", metadata.SchemaConfig{Compatibility: "FULL"}); err != nil {
			return err
		}
		if err := w.SetSchemaConfig(ctx, "a", metadata.SchemaConfig{Compatibility: "NONE"}); err != nil {
			return err
		}
		if err := w.SetSchemaConfig(ctx, "a", metadata.SchemaConfig{Compatibility: "FORWARD", Normalize: true}); err != nil {
			return err
		}
		if err := w.SetSchemaMode(ctx, "", "READONLY"); err != nil {
			return err
		}
		return w.SetSchemaMode(ctx, "a", "IMPORT")
	})
	if c, err := r.SchemaConfig(ctx, ""); err != nil || c != (metadata.SchemaConfig{Compatibility: "FULL"}) {
		t.Fatalf("SchemaConfig() = %+v, %v", c, err)
	}
	if c, err := r.SchemaConfig(ctx, "a"); err != nil || c != (metadata.SchemaConfig{Compatibility: "FORWARD", Normalize: true}) {
		t.Fatalf("SchemaConfig(a) = %+v, %v", c, err)
	}
	if m, err := r.SchemaMode(ctx, "a"); err != nil || m != "IMPORT" {
		t.Fatalf("SchemaMode(a) = %q, %v", m, err)
	}
	updateSchemas(t, s, func(ctx context.Context, w metadata.SchemaWriter) error {
		if err := w.DeleteSchemaConfig(ctx, "a"); err != nil {
			return err
		}
		if err := w.DeleteSchemaConfig(ctx, "never"); err != nil {
			return err
		}
		return w.DeleteSchemaMode(ctx, "")
	})
	if _, err := r.SchemaConfig(ctx, "a"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("SchemaConfig(a) after delete: %v", err)
	}
	if _, err := r.SchemaMode(ctx, ""); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("SchemaMode() after delete: %v", err)
	}
	if m, err := r.SchemaMode(ctx, "a"); err != nil || m != "IMPORT" {
		t.Fatalf("SchemaMode(a) = %q, %v", m, err)
	}

	// A failed update leaves nothing behind.
	boom := errors.New("boom")
	err := s.UpdateSchemas(ctx, func(w metadata.SchemaWriter) error {
		if err := w.SetSchemaMode(ctx, "b", "READONLY"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("UpdateSchemas error %v, want boom", err)
	}
	if _, err := r.SchemaMode(ctx, "b"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("SchemaMode(b) after a failed update: %v", err)
	}
}

// testSchemasConcurrent runs read-decide-write updates from many
// goroutines, as agents registering at once do: each reads the subject's
// last version and writes the next with a fresh id. Serialized updates
// lose none and never hand out an id or a version twice.
func testSchemasConcurrent(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	const writers, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				err := s.UpdateSchemas(ctx, func(w metadata.SchemaWriter) error {
					vs, err := w.SubjectVersions(ctx, "s")
					if err != nil {
						return err
					}
					id, err := w.NextSchemaID(ctx)
					if err != nil {
						return err
					}
					f := fmt.Sprintf("%d/%d", i, j)
					if err := w.PutSchema(ctx, metadata.RegisteredSchema{ID: id, Type: "AVRO", Schema: f, Fingerprint: f}); err != nil {
						return err
					}
					return w.PutSubjectVersion(ctx, metadata.SubjectVersion{Subject: "s", Version: len(vs) + 1, SchemaID: id})
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	vs, err := s.Schemas().SubjectVersions(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != writers*each {
		t.Fatalf("%d versions, want %d", len(vs), writers*each)
	}
	seen := map[int]bool{}
	for i, v := range vs {
		if v.Version != i+1 || seen[v.SchemaID] || v.SchemaID < 1 || v.SchemaID > writers*each {
			t.Fatalf("version %d: %+v (ids seen %v)", i+1, v, seen)
		}
		seen[v.SchemaID] = true
	}
}
