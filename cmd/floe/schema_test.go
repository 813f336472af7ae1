package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"floe/metadata/sqlite"
	"floe/schemaregistry"
)

// TestSchemaArgs: the SUBJECT before, between or after the flags, and
// the arguments each verb refuses before it sends anything.
func TestSchemaArgs(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		subject string
		version string
		refs    []sr.SchemaReference
		typ     string
		err     string
	}{
		{args: []string{"get", "orders-value"}, subject: "orders-value", version: "latest"},
		{args: []string{"get", "--version", "3", "orders-value", "-o", "json"}, subject: "orders-value", version: "3"},
		{args: []string{"get", "--version=latest", "--", "-odd"}, subject: "-odd", version: "latest"},
		{args: []string{"get", "--id", "7"}, version: "latest"},
		{args: []string{"check", "s", "--file", "x.proto"}, subject: "s", version: "all", typ: "PROTOBUF"},
		{args: []string{"check", "s", "--file", "-", "--type", "json", "--version", "latest"}, subject: "s", version: "latest", typ: "JSON"},
		{args: []string{"register", "s", "--file", "a.avsc", "--reference", "shop.Money=money-value:2", "--reference", "b.proto=:.ctx:b:1"},
			subject: "s", refs: []sr.SchemaReference{{Name: "shop.Money", Subject: "money-value", Version: 2}, {Name: "b.proto", Subject: ":.ctx:b", Version: 1}}},
		{args: []string{"get"}, err: "name a SUBJECT"},
		{args: []string{"get", "a", "b"}, err: "unexpected arguments: b"},
		{args: []string{"get", "a", "--version", "0"}, err: `--version "0"`},
		{args: []string{"get", "a", "--id", "3", "--version", "2"}, err: "not both"},
		{args: []string{"register", "s"}, err: "--file"},
		{args: []string{"register", "s", "--file", "f", "--type", "xml"}, err: `--type "xml"`},
		{args: []string{"register", "s", "--file", "f", "--reference", "name=subject"}, err: "want name=subject:version"},
		{args: []string{"register", "s", "--file", "f", "--reference", "n=s:latest"}, err: "positive number"},
		{args: []string{"check", "s", "--file", "f", "--version", "newest"}, err: "latest or all"},
		{args: []string{"delete"}, err: "name a SUBJECT"},
		{args: []string{"delete", "s", "--version", "all"}, err: "number or latest"},
		{args: []string{"config", "--set", "FULL", "--delete"}, err: "not both"},
		{args: []string{"mode", "--force"}, err: "--force goes with --set"},
		{args: []string{"list", "--output", "yaml"}, err: "text or json"},
		{args: []string{"list", "--version", "1"}, err: "not defined"},
		{args: []string{"grep"}, err: "unknown verb"},
	} {
		c := &schemaCmd{verb: tc.args[0], errOut: &bytes.Buffer{}}
		fs, err := c.flags()
		if err == nil {
			err = c.parse(fs, tc.args[1:])
		}
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one saying %q", tc.args, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case c.subject != tc.subject || c.version != tc.version || c.typ != tc.typ || !slices.Equal(c.refs, tc.refs):
			t.Errorf("%q: subject %q version %q type %q refs %v, want %q %q %q %v",
				tc.args, c.subject, c.version, c.typ, c.refs, tc.subject, tc.version, tc.typ, tc.refs)
		}
	}
}

// TestSchemaEnvironment: the connection flags fall back to their
// variables, the command line wins, and no verb flag is read from one.
func TestSchemaEnvironment(t *testing.T) {
	t.Setenv("FLOE_SCHEMA_REGISTRY", "http://reg:8081")
	t.Setenv("FLOE_SCHEMA_REGISTRY_USER", "alice")
	t.Setenv("FLOE_SCHEMA_REGISTRY_PASSWORD", "secret")
	t.Setenv("FLOE_PERMANENT", "true")
	c := &schemaCmd{verb: "delete", errOut: &bytes.Buffer{}}
	fs, err := c.flags()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.parse(fs, []string{"s", "--user", "bob"}); err != nil {
		t.Fatal(err)
	}
	if c.registry != "http://reg:8081" || c.user != "bob" || c.password != "secret" || c.permanent {
		t.Fatalf("registry %q user %q password %q permanent %v", c.registry, c.user, c.password, c.permanent)
	}
}

// TestSchemaCommand runs the verbs against a registry on SQLite behind a
// handler that demands Basic auth, as an agent with SASL does: the exact
// text and JSON printed, standard input as the file, and the registry's
// errors as its error_code and message.
func TestSchemaCommand(t *testing.T) {
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	reg := schemaregistry.New(schemaregistry.Config{Store: store})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "alice" || p != "secret" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error_code":401,"message":"Unauthorized"}`))
			return
		}
		if strings.HasPrefix(r.URL.Path, "/proxy-down/") {
			http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	run := func(stdin string, args ...string) (string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append(args, "--registry", srv.URL, "--user", "alice", "--password", "secret")
		err := runSchemaTo(args, strings.NewReader(stdin), &out, &errOut)
		return out.String(), err
	}
	must := func(want, stdin string, args ...string) {
		t.Helper()
		got, err := run(stdin, args...)
		if err != nil || got != want {
			t.Fatalf("%q: %v\n%s\nwant\n%s", args, err, got, want)
		}
	}
	const v1 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`
	const v2 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"note","type":"string","default":""}]}`
	must("registered orders-value version 1: id 1\n", v1, "register", "orders-value", "--file", "-")
	// The registry's answer as it came, its guid too.
	got, err := run(v2, "register", "orders-value", "--file", "-", "-o", "json")
	if err != nil || !strings.HasPrefix(got, `{"version":2,"id":2,"guid":"`) || !strings.HasSuffix(got, `,"schemaType":"AVRO","schema":`+quoteJSON(v2)+"}\n") {
		t.Fatalf("register --output json: %v\n%s", err, got)
	}
	must("orders-value\n", "", "list")
	must("1\n2\n", "", "list", "orders-value")
	must("[1,2]\n", "", "list", "orders-value", "--output", "json")
	must(`subject  orders-value
version  1
id       1
type     AVRO

{
  "type": "record",
  "name": "Order",
  "fields": [
    {
      "name": "id",
      "type": "long"
    }
  ]
}
`, "", "get", "orders-value", "--version", "1")
	must("compatible\n", v1, "check", "orders-value", "--file", "-")

	got, err = run(`{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}`, "check", "orders-value", "--file", "-", "--verbose")
	if !errors.Is(err, errIncompatible) || !strings.HasPrefix(got, "incompatible\n  {errorType:'TYPE_MISMATCH'") {
		t.Fatalf("incompatible check: %v\n%s", err, got)
	}
	if _, err := run(`{"type":"recrd"}`, "register", "orders-value", "--file", "-"); err == nil ||
		!strings.HasPrefix(err.Error(), "error_code 42201: Invalid schema") {
		t.Fatalf("bad schema: %v", err)
	}
	if _, err := run("", "get", "absent"); err == nil || err.Error() != "error_code 40401: Subject 'absent' not found." {
		t.Fatalf("absent subject: %v", err)
	}
	var out bytes.Buffer
	err = runSchemaTo([]string{"list", "--registry", srv.URL}, nil, &out, &out)
	if err == nil || err.Error() != "error_code 401: Unauthorized" {
		t.Fatalf("no credentials: %v", err)
	}
	err = runSchemaTo([]string{"list", "--registry", srv.URL + "/proxy-down", "--user", "alice", "--password", "secret"}, nil, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "HTTP 502: <html>bad gateway</html>") {
		t.Fatalf("a proxy's error page: %v", err)
	}

	must("orders-value: FULL_TRANSITIVE\n", "", "config", "orders-value", "--set", "FULL_TRANSITIVE")
	must(`{"compatibilityLevel":"FULL_TRANSITIVE"}`+"\n", "", "config", "orders-value", "-o", "json")
	must("BACKWARD\n", "", "config")
	must("orders-value: compatibility level FULL_TRANSITIVE dropped\n", "", "config", "orders-value", "--delete")
	must("BACKWARD\n", "", "config", "orders-value")
	must("orders-value: READONLY\n", "", "mode", "orders-value", "--set", "READONLY")
	if _, err := run(v1, "delete", "orders-value"); err == nil || !strings.HasPrefix(err.Error(), "error_code 42205:") {
		t.Fatalf("delete in READONLY: %v", err)
	}
	must(`{"mode":"READONLY"}`+"\n", "", "mode", "orders-value", "-o", "json")
	must("orders-value: mode READONLY dropped\n", "", "mode", "orders-value", "--delete")
	must("deleted orders-value version 1\n", "", "delete", "orders-value", "--version", "1")
	must("permanently deleted orders-value version 1\n", "", "delete", "orders-value", "--version", "1", "--permanent")
	must("[2]\n", "", "delete", "orders-value", "--permanent", "-o", "json")
	must("", "", "list", "--deleted")
}

func quoteJSON(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}
