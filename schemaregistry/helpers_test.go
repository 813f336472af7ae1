package schemaregistry_test

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
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

var guidField = regexp.MustCompile(`"guid":"[0-9a-f-]{36}",`)

// checkGUIDs checks the guid of every schema in an answer: Confluent's
// MD5 of the schema's text and references (4-byte big-endian versions),
// as a UUID. Schemas with metadata or a rule set are left out.
func checkGUIDs(t testing.TB, body string) {
	t.Helper()
	var v any
	if json.Unmarshal([]byte(body), &v) != nil {
		return
	}
	objs, _ := v.([]any)
	if o, ok := v.(map[string]any); ok {
		objs = []any{o}
	}
	for _, o := range objs {
		m, ok := o.(map[string]any)
		if !ok || m["schema"] == nil || m["metadata"] != nil || m["ruleSet"] != nil {
			continue
		}
		h := md5.New()
		h.Write([]byte(m["schema"].(string)))
		refs, _ := m["references"].([]any)
		for _, r := range refs {
			ref := r.(map[string]any)
			h.Write([]byte(ref["name"].(string)))
			h.Write([]byte(ref["subject"].(string)))
			h.Write(binary.BigEndian.AppendUint32(nil, uint32(ref["version"].(float64))))
		}
		x := hex.EncodeToString(h.Sum(nil))
		want := x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
		if m["guid"] != want {
			t.Fatalf("guid %v, want %s in %s", m["guid"], want, body)
		}
	}
}

// expect sends a request and checks the exact status and body. The guids
// of schemas are checked by checkGUIDs and left out of wantBody.
func (ts *testServer) expect(t testing.TB, method, path, body string, wantStatus int, wantBody string) {
	t.Helper()
	status, got := ts.do(t, method, path, jsonCT, body)
	if !strings.HasSuffix(path, "/schema") && !strings.Contains(path, "/schema?") {
		// A formatted schema keeps the guid of its stored text.
		if !strings.Contains(path, "format=") {
			checkGUIDs(t, got)
		}
		got = guidField.ReplaceAllString(got, "")
	}
	if status != wantStatus || got != wantBody {
		t.Fatalf("%s %s %.200s\n got %d %s\nwant %d %s", method, path, body, status, got, wantStatus, wantBody)
	}
}
