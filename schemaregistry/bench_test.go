package schemaregistry_test

import (
	"io"
	"net/http"
	"strconv"
	"testing"

	"floe/schemaregistry"
)

// BenchmarkSchemaByIDWarm is the broker's look-up of a record's schema
// once cached: no store read.
func BenchmarkSchemaByIDWarm(b *testing.B) {
	store := openSQLite(b)
	ts := newTestServer(b, store)
	ctx := ctxT(b)
	created, err := ts.cl.CreateSchema(ctx, "s", avroSchema(recV2))
	if err != nil {
		b.Fatal(err)
	}
	s := schemaregistry.New(schemaregistry.Config{Store: store})
	if _, err := s.SchemaByID(ctx, created.ID); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.SchemaByID(ctx, created.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHTTPSchemaByID is a client's GET /schemas/ids/{id} over HTTP:
// what a deserializer asks once per id.
func BenchmarkHTTPSchemaByID(b *testing.B) {
	ts := newTestServer(b, openSQLite(b))
	ctx := ctxT(b)
	created, err := ts.cl.CreateSchema(ctx, "s", avroSchema(recV2))
	if err != nil {
		b.Fatal(err)
	}
	url := ts.url + "/schemas/ids/" + strconv.Itoa(created.ID)
	for b.Loop() {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatal(resp.Status)
		}
	}
}
