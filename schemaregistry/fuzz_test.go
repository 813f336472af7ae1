package schemaregistry_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"floe/schemaregistry"
)

// FuzzRegister sends arbitrary register bodies: the answer is always a
// Confluent body, never a panic or a 500.
func FuzzRegister(f *testing.F) {
	for _, seed := range []string{
		body(recV1),
		body(`"string"`),
		`{"schema":"{\"type\":\"record\",\"name\":\"U\",\"fields\":[{\"name\":\"a\",\"type\":\"R\"}]}","references":[{"name":"R","subject":"s","version":1}]}`,
		`{"schemaType":"JSON","schema":"{\"type\":\"object\"}"}`,
		`{"schemaType":"PROTOBUF","schema":"syntax = \"proto3\"; message M { int32 a = 1; }"}`,
		`{"schema":"\"int\"","id":5,"version":2,"metadata":{"properties":{"k":"v"}},"ruleSet":{"domainRules":[]}}`,
		`{"schema":`, `[]`, `null`, `{"schema":"[\"null\",[\"int\"]]"}`,
	} {
		f.Add(seed)
	}
	s := schemaregistry.New(schemaregistry.Config{Store: openSQLite(f)})
	// Requests get httptest's background context: a fuzz run outlives
	// any deadline a test context would set.
	// One version to refer to and check against.
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("POST", "/subjects/s/versions", strings.NewReader(body(recV1))))
	if rec.Code != http.StatusOK {
		f.Fatalf("seed register: %d %s", rec.Code, rec.Body)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, path := range []string{"/subjects/s/versions", "/subjects/s", "/compatibility/subjects/s/versions/latest?verbose=true"} {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader(in)))
			if rec.Code >= 500 {
				t.Fatalf("POST %s %q: %d %s", path, in, rec.Code, rec.Body)
			}
			if rec.Code != http.StatusOK {
				var e struct {
					Code    int    `json:"error_code"`
					Message string `json:"message"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code == 0 || e.Message == "" {
					t.Fatalf("POST %s %q: error body %s", path, in, rec.Body)
				}
			}
		}
	})
}
