package schemaregistry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"floe/metadata"
	"floe/metadata/pgtest"
	"floe/metadata/postgres"
	"floe/metadata/sqlite"
	"floe/schemaregistry"
)

func openSQLite(t testing.TB) metadata.Store {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// forEachStore runs fn over a new SQLite store and a new PostgreSQL
// database (one throwaway PostgreSQL cluster per call; skipped without
// server binaries unless FLOE_REQUIRE_SERVERS=1). open returns a new
// handle on the subtest's one store each call: several Servers on one
// store are several agents.
func forEachStore(t *testing.T, fn func(t *testing.T, open func() metadata.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "meta.db")
		fn(t, func() metadata.Store {
			s, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
	t.Run("postgres", func(t *testing.T) {
		srv := pgtest.Start(t)
		url := srv.CreateDatabase(t, "")
		var mu sync.Mutex
		fn(t, func() metadata.Store {
			mu.Lock()
			defer mu.Unlock()
			s, err := postgres.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

type testServer struct {
	*schemaregistry.Server
	url string
	cl  *sr.Client
}

func newTestServer(t testing.TB, store metadata.Store) *testServer {
	t.Helper()
	s := schemaregistry.New(schemaregistry.Config{Store: store, SubjectTTL: time.Millisecond})
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	cl, err := sr.NewClient(sr.URLs(hs.URL))
	if err != nil {
		t.Fatal(err)
	}
	return &testServer{Server: s, url: hs.URL, cl: cl}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// do sends a raw request and returns the status and body.
func (ts *testServer) do(t testing.TB, method, path, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, ts.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.schemaregistry.v1+json" {
		t.Fatalf("%s %s: Content-Type %q", method, path, ct)
	}
	return resp.StatusCode, string(b)
}

const jsonCT = "application/vnd.schemaregistry.v1+json"

// expect sends a request and checks the exact status and body.
func (ts *testServer) expect(t testing.TB, method, path, body string, wantStatus int, wantBody string) {
	t.Helper()
	status, got := ts.do(t, method, path, jsonCT, body)
	if status != wantStatus || got != wantBody {
		t.Fatalf("%s %s %.200s\n got %d %s\nwant %d %s", method, path, body, status, got, wantStatus, wantBody)
	}
}
