package schemaregistry_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	havro "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"floe/metadata"
	"floe/schemaregistry"
)

// franz-go's pkg/sr client against the registry on SQLite and PostgreSQL.

func wantCode(t *testing.T, what string, err error, code int) {
	t.Helper()
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.ErrorCode != code {
		t.Fatalf("%s: error %v, want error_code %d", what, err, code)
	}
}

func avroSchema(s string) sr.Schema { return sr.Schema{Schema: s} }

func TestClient(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() metadata.Store) {
		ts := newTestServer(t, open())
		ctx, cl := ctxT(t), ts.cl

		types, err := cl.SupportedTypes(ctx)
		if err != nil || len(types) != 3 || !slices.Contains(types, sr.TypeAvro) || !slices.Contains(types, sr.TypeJSON) || !slices.Contains(types, sr.TypeProtobuf) {
			t.Fatalf("SupportedTypes: %v %v", types, err)
		}
		v1, err := cl.CreateSchema(ctx, "rec-value", avroSchema(recV1))
		if err != nil {
			t.Fatal(err)
		}
		if v1.Subject != "rec-value" || v1.Version != 1 || v1.ID != 1 || v1.Schema.Schema != recV1 || v1.Type != sr.TypeAvro {
			t.Fatalf("CreateSchema: %+v", v1)
		}
		if v1.GUID == "" {
			t.Fatalf("no guid: %+v", v1)
		}
		byGUID, err := cl.SchemaByGUID(ctx, v1.GUID)
		if err != nil || byGUID.Schema.Schema != recV1 {
			t.Fatalf("SchemaByGUID: %+v %v", byGUID, err)
		}
		v2, err := cl.CreateSchema(ctx, "rec-value", avroSchema(recV2))
		if err != nil || v2.Version != 2 || v2.ID != 2 {
			t.Fatalf("evolve: %+v %v", v2, err)
		}
		_, err = cl.CreateSchema(ctx, "rec-value", avroSchema(recV3))
		wantCode(t, "incompatible", err, 40901)

		got, err := cl.SchemaByID(ctx, 2)
		if err != nil || got.Schema != recV2 {
			t.Fatalf("SchemaByID: %+v %v", got, err)
		}
		text, err := cl.SchemaTextByID(ctx, 1)
		if err != nil || text != recV1 {
			t.Fatalf("SchemaTextByID: %q %v", text, err)
		}
		versions, err := cl.SubjectVersions(ctx, "rec-value")
		if err != nil || !slices.Equal(versions, []int{1, 2}) {
			t.Fatalf("SubjectVersions: %v %v", versions, err)
		}
		latest, err := cl.SchemaByVersion(ctx, "rec-value", -1)
		if err != nil || latest.Version != 2 || latest.ID != 2 {
			t.Fatalf("latest: %+v %v", latest, err)
		}
		found, err := cl.LookupSchema(ctx, "rec-value", avroSchema(recV1))
		if err != nil || found.Version != 1 || found.ID != 1 {
			t.Fatalf("LookupSchema: %+v %v", found, err)
		}
		_, err = cl.LookupSchema(ctx, "rec-value", avroSchema(recV3))
		wantCode(t, "lookup of an unregistered schema", err, 40403)
		all, err := cl.AllSchemas(ctx)
		if err != nil || len(all) != 2 {
			t.Fatalf("AllSchemas: %+v %v", all, err)
		}
		check, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), "rec-value", -1, avroSchema(recV3))
		if err != nil || check.Is || len(check.Messages) != 4 {
			t.Fatalf("CheckCompatibility: %+v %v", check, err)
		}
		_, err = cl.SchemaByID(ctx, 99)
		wantCode(t, "unknown id", err, 40403)
		_, err = cl.SchemaByVersion(ctx, "nosuch", 1)
		wantCode(t, "unknown subject", err, 40401)
		_, err = cl.SchemaByVersion(ctx, "rec-value", 9)
		wantCode(t, "unknown version", err, 40402)

		// Config and mode.
		res := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "rec-value")
		if res[0].Err != nil {
			t.Fatal(res[0].Err)
		}
		comp := cl.Compatibility(ctx, "rec-value")
		if comp[0].Err != nil || comp[0].Level != sr.CompatNone {
			t.Fatalf("Compatibility: %+v", comp)
		}
		if _, err := cl.CreateSchema(ctx, "rec-value", avroSchema(recV3)); err != nil {
			t.Fatalf("NONE takes anything: %v", err)
		}
		modes := cl.SetMode(ctx, sr.ModeReadOnly)
		if modes[0].Err != nil {
			t.Fatal(modes[0].Err)
		}
		_, err = cl.CreateSchema(ctx, "other", avroSchema(`"int"`))
		wantCode(t, "read-only", err, 42205)
		if modes := cl.ResetMode(ctx); modes[0].Err != nil {
			t.Fatal(modes[0].Err)
		}
		if m := cl.Mode(ctx); m[0].Err != nil || m[0].Mode != sr.ModeReadWrite {
			t.Fatalf("Mode after reset: %+v", m)
		}

		// Soft and hard delete.
		wantCode(t, "hard before soft", cl.DeleteSchema(ctx, "rec-value", 1, sr.HardDelete), 40407)
		if err := cl.DeleteSchema(ctx, "rec-value", 1, sr.SoftDelete); err != nil {
			t.Fatal(err)
		}
		if err := cl.DeleteSchema(ctx, "rec-value", 1, sr.HardDelete); err != nil {
			t.Fatal(err)
		}
		deleted, err := cl.DeleteSubject(ctx, "rec-value", sr.SoftDelete)
		if err != nil || !slices.Equal(deleted, []int{2, 3}) {
			t.Fatalf("DeleteSubject soft: %v %v", deleted, err)
		}
		subjects, err := cl.Subjects(sr.WithParams(ctx, sr.ShowDeleted))
		if err != nil || !slices.Equal(subjects, []string{"rec-value"}) {
			t.Fatalf("Subjects(deleted): %v %v", subjects, err)
		}
		deleted, err = cl.DeleteSubject(ctx, "rec-value", sr.HardDelete)
		if err != nil || !slices.Equal(deleted, []int{2, 3}) {
			t.Fatalf("DeleteSubject hard: %v %v", deleted, err)
		}
		// Ids stay resolvable after their subject is gone.
		if got, err := cl.SchemaByID(ctx, 1); err != nil || got.Schema != recV1 {
			t.Fatalf("SchemaByID after delete: %+v %v", got, err)
		}

		// Import with given ids and versions into an empty registry.
		if m := cl.SetMode(ctx, sr.ModeImport); m[0].Err != nil {
			t.Fatal(m[0].Err)
		}
		imp, err := cl.CreateSchemaWithIDAndVersion(ctx, "imported", avroSchema(`"long"`), 500, 4)
		if err != nil || imp.ID != 500 || imp.Version != 4 {
			t.Fatalf("import: %+v %v", imp, err)
		}
		if m := cl.SetMode(ctx, sr.ModeReadWrite); m[0].Err != nil {
			t.Fatal(m[0].Err)
		}
		next, err := cl.CreateSchema(ctx, "imported", avroSchema(`"long"`))
		if err != nil || next.ID != 500 || next.Version != 4 {
			t.Fatalf("re-register of an imported schema: %+v %v", next, err)
		}
		fresh, err := cl.CreateSchema(ctx, "fresh", avroSchema(`"bytes"`))
		if err != nil || fresh.ID != 501 {
			t.Fatalf("id after import: %+v %v", fresh, err)
		}
	})
}

func TestClientReferences(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() metadata.Store) {
		ts := newTestServer(t, open())
		ctx, cl := ctxT(t), ts.cl
		addr := `{"type":"record","name":"Addr","namespace":"com.ex","fields":[{"name":"city","type":"string"}]}`
		user := `{"type":"record","name":"User","namespace":"com.ex","fields":[{"name":"addr","type":"Addr"}]}`
		a, err := cl.CreateSchema(ctx, "addr", avroSchema(addr))
		if err != nil {
			t.Fatal(err)
		}
		u, err := cl.CreateSchema(ctx, "user", sr.Schema{Schema: user,
			References: []sr.SchemaReference{{Name: "com.ex.Addr", Subject: "addr", Version: 1}}})
		if err != nil || len(u.References) != 1 {
			t.Fatalf("with reference: %+v %v", u, err)
		}
		refs, err := cl.SchemaReferences(ctx, "addr", 1)
		if err != nil || len(refs) != 1 || refs[0].ID != u.ID || refs[0].Subject != "user" {
			t.Fatalf("SchemaReferences: %+v %v", refs, err)
		}
		wantCode(t, "delete of a referenced version", cl.DeleteSchema(ctx, "addr", 1, sr.SoftDelete), 42206)
		// The broker-side look-up parses with the reference resolved.
		sc, err := ts.SchemaByID(ctx, u.ID)
		if err != nil || sc.Type != "AVRO" || !slices.Equal(sc.Subjects, []string{"user"}) {
			t.Fatalf("SchemaByID: %+v %v", sc, err)
		}
		payload, err := havro.Marshal(sc.Parsed.(interface{ Avro() havro.Schema }).Avro(), map[string]any{"addr": map[string]any{"city": "Lyon"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.Parsed.Validate(nil, payload); err != nil {
			t.Fatalf("Validate: %v", err)
		}
		if ok, err := ts.SubjectHasID(ctx, "user", u.ID); err != nil || !ok {
			t.Fatalf("SubjectHasID(user, %d): %v %v", u.ID, ok, err)
		}
		if ok, err := ts.SubjectHasID(ctx, "user", a.ID); err != nil || ok {
			t.Fatalf("SubjectHasID(user, %d): %v %v", a.ID, ok, err)
		}
		latest, version, err := ts.LatestSchema(ctx, "addr")
		if err != nil || latest.ID != a.ID || version != 1 {
			t.Fatalf("LatestSchema: %+v %d %v", latest, version, err)
		}
		if _, _, err := ts.LatestSchema(ctx, "nosuch"); !errors.Is(err, schemaregistry.ErrUnknownSubject) {
			t.Fatalf("LatestSchema(nosuch): %v", err)
		}
		if _, err := ts.SchemaByID(ctx, 1000); !errors.Is(err, schemaregistry.ErrUnknownSchema) {
			t.Fatalf("SchemaByID(1000): %v", err)
		}
	})
}

// TestCompatibilityLevels: each of the seven levels accepting and refusing.
func TestCompatibilityLevels(t *testing.T) {
	const (
		a   = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`
		a0  = `{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":0}]}`
		ab  = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string","default":"x"}]}`
		abN = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string"}]}`
		ac  = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"c","type":"string"}]}`
		e   = `{"type":"record","name":"R","fields":[]}`
	)
	ts := newTestServer(t, openSQLite(t))
	ctx, cl := ctxT(t), ts.cl
	for i, tc := range []struct {
		level     sr.CompatibilityLevel
		history   []string
		candidate string
		ok        bool
	}{
		{sr.CompatNone, []string{a}, ac, true},
		{sr.CompatNone, []string{a}, e, true},
		{sr.CompatBackward, []string{a}, ac, false},
		{sr.CompatBackward, []string{a}, e, true},
		{sr.CompatBackward, []string{a}, ab, true},
		{sr.CompatForward, []string{a}, ac, true},
		{sr.CompatForward, []string{a}, e, false},
		{sr.CompatFull, []string{a}, ab, true},
		{sr.CompatFull, []string{a}, ac, false},
		{sr.CompatFull, []string{a}, e, false},
		{sr.CompatBackward, []string{a, ab}, abN, true},
		{sr.CompatBackwardTransitive, []string{a, ab}, abN, false},
		{sr.CompatForward, []string{a, a0}, e, true},
		{sr.CompatForwardTransitive, []string{a, a0}, e, false},
		{sr.CompatFull, []string{a, ab}, abN, true},
		{sr.CompatFullTransitive, []string{a, ab}, abN, false},
		{sr.CompatFullTransitive, []string{a, ab}, ab, true},
	} {
		subject := fmt.Sprintf("s%d", i)
		if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, subject); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		for _, h := range tc.history {
			if _, err := cl.CreateSchema(ctx, subject, avroSchema(h)); err != nil {
				t.Fatal(err)
			}
		}
		if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: tc.level}, subject); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		check, err := cl.CheckCompatibility(ctx, subject, -2, avroSchema(tc.candidate))
		if err != nil || check.Is != tc.ok {
			t.Fatalf("case %d %v: CheckCompatibility %+v %v, want %v", i, tc.level, check, err, tc.ok)
		}
		_, err = cl.CreateSchema(ctx, subject, avroSchema(tc.candidate))
		if tc.ok && err != nil {
			t.Fatalf("case %d %v: refused: %v", i, tc.level, err)
		}
		if !tc.ok {
			wantCode(t, fmt.Sprintf("case %d %v", i, tc.level), err, 40901)
		}
	}
}

// TestSerde: franz-go's serde encodes with an id from the registry, the
// registry's parsed schema validates the payload, serde decodes it back.
func TestSerde(t *testing.T) {
	ts := newTestServer(t, openSQLite(t))
	ctx, cl := ctxT(t), ts.cl
	type rec struct {
		A int    `avro:"a"`
		B string `avro:"b"`
	}
	created, err := cl.CreateSchema(ctx, "t-value", avroSchema(recV2))
	if err != nil {
		t.Fatal(err)
	}
	text, err := cl.SchemaTextByID(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	schema := havro.MustParse(text)
	var serde sr.Serde
	serde.Register(created.ID, rec{},
		sr.EncodeFn(func(v any) ([]byte, error) { return havro.Marshal(schema, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return havro.Unmarshal(schema, b, v) }))
	in := rec{A: 42, B: "hello"}
	b, err := serde.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 0 || int(b[1])<<24|int(b[2])<<16|int(b[3])<<8|int(b[4]) != created.ID {
		t.Fatalf("header % x", b[:5])
	}
	sc, err := ts.SchemaByID(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Parsed.Validate(nil, b[5:]); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if err := sc.Parsed.Validate(nil, b[5:len(b)-1]); err == nil {
		t.Fatal("a truncated payload validated")
	}
	var out rec
	if err := serde.Decode(b, &out); err != nil || out != in {
		t.Fatalf("Decode: %+v %v", out, err)
	}
}

// TestOtherFormats registers JSON Schema and Protobuf schemas.
func TestOtherFormats(t *testing.T) {
	ts := newTestServer(t, openSQLite(t))
	ctx, cl := ctxT(t), ts.cl
	js, err := cl.CreateSchema(ctx, "j", sr.Schema{Type: sr.TypeJSON,
		Schema: `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`})
	if err != nil || js.Type != sr.TypeJSON {
		t.Fatalf("JSON: %+v %v", js, err)
	}
	sc, err := ts.SchemaByID(ctx, js.ID)
	if err != nil || sc.Type != "JSON" {
		t.Fatalf("SchemaByID: %+v %v", sc, err)
	}
	if err := sc.Parsed.Validate(nil, []byte(`{"a":1}`)); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if err := sc.Parsed.Validate(nil, []byte(`{"a":"x"}`)); err == nil {
		t.Fatal("a JSON payload of the wrong type validated")
	}
	pb, err := cl.CreateSchema(ctx, "p", sr.Schema{Type: sr.TypeProtobuf,
		Schema: "syntax = \"proto3\";\npackage ex;\n\nmessage M {\n  int32 a = 1;\n}\n"})
	if err != nil || pb.Type != sr.TypeProtobuf {
		t.Fatalf("Protobuf: %+v %v", pb, err)
	}
	if text, err := cl.SchemaTextByID(ctx, pb.ID); err != nil || text != pb.Schema.Schema {
		t.Fatalf("SchemaTextByID(protobuf): %q %v", text, err)
	}
	serialized, err := cl.SchemaByID(sr.WithParams(ctx, sr.Format("serialized")), pb.ID)
	if err != nil || serialized.Schema == pb.Schema.Schema || serialized.Schema == "" {
		t.Fatalf("SchemaByID(format=serialized): %q %v", serialized.Schema, err)
	}
	if found, err := cl.LookupSchema(ctx, "p", pb.Schema); err != nil || found.ID != pb.ID {
		t.Fatalf("LookupSchema(protobuf): %+v %v", found, err)
	}
	_, err = cl.CreateSchema(ctx, "p", sr.Schema{Type: sr.TypeAvro, Schema: `"int"`})
	wantCode(t, "another type under the subject", err, 40901)

	// References: a Protobuf import and a JSON Schema $ref, resolved from
	// their subjects.
	if _, err := cl.CreateSchema(ctx, "dep.proto", sr.Schema{Type: sr.TypeProtobuf,
		Schema: "syntax = \"proto3\";\npackage dep;\n\nmessage D {\n  string s = 1;\n}\n"}); err != nil {
		t.Fatal(err)
	}
	imp, err := cl.CreateSchema(ctx, "q", sr.Schema{Type: sr.TypeProtobuf,
		Schema:     "syntax = \"proto3\";\npackage ex;\n\nimport \"dep.proto\";\n\nmessage Q {\n  dep.D d = 1;\n}\n",
		References: []sr.SchemaReference{{Name: "dep.proto", Subject: "dep.proto", Version: 1}}})
	if err != nil || len(imp.References) != 1 {
		t.Fatalf("Protobuf with an import: %+v %v", imp, err)
	}
	if _, err := cl.CreateSchema(ctx, "jdep", sr.Schema{Type: sr.TypeJSON,
		Schema: `{"$id":"https://ex.com/dep.json","type":"object","properties":{"x":{"type":"string"}}}`}); err != nil {
		t.Fatal(err)
	}
	jref, err := cl.CreateSchema(ctx, "jq", sr.Schema{Type: sr.TypeJSON,
		Schema:     `{"type":"object","properties":{"d":{"$ref":"https://ex.com/dep.json"}}}`,
		References: []sr.SchemaReference{{Name: "https://ex.com/dep.json", Subject: "jdep", Version: 1}}})
	if err != nil || len(jref.References) != 1 {
		t.Fatalf("JSON Schema with a $ref: %+v %v", jref, err)
	}
	sc, err = ts.SchemaByID(ctx, jref.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Parsed.Validate(nil, []byte(`{"d":{"x":"y"}}`)); err != nil {
		t.Fatalf("Validate through the $ref: %v", err)
	}
	if err := sc.Parsed.Validate(nil, []byte(`{"d":{"x":5}}`)); err == nil {
		t.Fatal("a payload breaking the referenced schema validated")
	}
}

// TestTwoServers: two registries on one store are one registry: what one
// registers the other reads, and concurrent registrations through both
// never share an id or a version.
func TestTwoServers(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() metadata.Store) {
		a, b := newTestServer(t, open()), newTestServer(t, open())
		ctx := ctxT(t)
		created, err := a.cl.CreateSchema(ctx, "x", avroSchema(recV1))
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.cl.SchemaByVersion(ctx, "x", 1)
		if err != nil || got.ID != created.ID || got.Schema.Schema != recV1 {
			t.Fatalf("read through the other server: %+v %v", got, err)
		}
		for _, cl := range []*sr.Client{a.cl, b.cl} {
			if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}); r[0].Err != nil {
				t.Fatal(r[0].Err)
			}
		}
		const each = 10
		var wg sync.WaitGroup
		errs := make(chan error, 4*each)
		ids := make([][]int, 4)
		for w := range 4 {
			cl := []*sr.Client{a.cl, b.cl}[w%2]
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					// Workers 0 and 1 register the same schemas under
					// two subjects: they must get the same ids.
					n := w*each + i
					if w < 2 {
						n = i
					}
					s, err := cl.CreateSchema(ctx, fmt.Sprintf("c%d", w), avroSchema(fmt.Sprintf(`{"type":"fixed","name":"F","size":%d}`, n+1)))
					if err != nil {
						errs <- err
						return
					}
					ids[w] = append(ids[w], s.ID)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if !slices.Equal(ids[0], ids[1]) {
			t.Fatalf("the same schemas got different ids: %v %v", ids[0], ids[1])
		}
		seen := map[int]bool{created.ID: true}
		for _, id := range slices.Concat(ids[0], ids[2], ids[3]) {
			if seen[id] {
				t.Fatalf("id %d handed out twice: %v", id, ids)
			}
			seen[id] = true
		}
		for w := range 4 {
			versions, err := b.cl.SubjectVersions(ctx, fmt.Sprintf("c%d", w))
			if err != nil || len(versions) != each || versions[0] != 1 || versions[each-1] != each {
				t.Fatalf("versions of c%d: %v %v", w, versions, err)
			}
		}
	})
}

// TestSubjectHasIDSeesOtherAgent: an id registered through another agent
// is found by SubjectHasID a second later, though subjects are cached for
// an hour: a miss re-reads the store, at most once a second.
func TestSubjectHasIDSeesOtherAgent(t *testing.T) {
	store := openSQLite(t)
	a := schemaregistry.New(schemaregistry.Config{Store: store, SubjectTTL: time.Hour})
	b := newTestServer(t, store)
	ctx := ctxT(t)
	if ok, err := a.SubjectHasID(ctx, "s", 1); err != nil || ok {
		t.Fatalf("SubjectHasID before any schema: %v %v", ok, err)
	}
	created, err := b.cl.CreateSchema(ctx, "s", avroSchema(recV1))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if ok, err := a.SubjectHasID(ctx, "s", created.ID); err != nil || !ok {
		t.Fatalf("SubjectHasID after another agent registered: %v %v", ok, err)
	}
}
