package integration

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestSchemaRegistryAuth: with a SASL listener the registry takes the same
// Basic credentials as the Iceberg catalog (a SCRAM user's), and with
// --authorizer a subject is the topic resource "subject:<name>": DESCRIBE
// to read it, ALTER to register or delete, the global config needs the
// cluster's DESCRIBE_CONFIGS/ALTER_CONFIGS, and lists show only what may be
// described.
func TestSchemaRegistryAuth(t *testing.T) {
	data := t.TempDir()
	metaURL := "sqlite://" + filepath.Join(data, "meta.db")
	floeUserAdd(t, metaURL, "admin", "admin-secret")
	floeUserAdd(t, metaURL, "alice", "alice-secret")
	sasl := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startFloe(t, "dev", "--data-dir", data, "--listeners", "SASL_PLAINTEXT://"+sasl,
		"--sasl-mechanisms", "SCRAM-SHA-256", "--authorizer", "--super-users", "User:admin")
	ctx := testContext(t, 2*time.Minute)
	reg := "http://" + p.RegistryAddr

	call := func(user, pass, method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, reg+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	admin := func(method, path, body string) (int, string) {
		return call("admin", "admin-secret", method, path, body)
	}
	alice := func(method, path, body string) (int, string) {
		return call("alice", "alice-secret", method, path, body)
	}
	// expect checks a status and a body: exact, or with a leading ~ one
	// that contains the rest.
	expect := func(what string, status int, body string, wantStatus int, wantBody string) {
		t.Helper()
		if status != wantStatus || wantBody != "" && body != wantBody && !strings.HasPrefix(wantBody, "~") ||
			strings.HasPrefix(wantBody, "~") && !strings.Contains(body, wantBody[1:]) {
			t.Fatalf("%s: %d %s, want %d %s", what, status, body, wantStatus, wantBody)
		}
	}
	schema := func(name string) string {
		return fmt.Sprintf(`{"schema":"{\"type\":\"record\",\"name\":\"%s\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"}]}"}`, name)
	}

	if status, _ := call("", "", "GET", "/subjects", ""); status != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d, want 401", status)
	}
	if status, _ := call("alice", "wrong", "GET", "/subjects", ""); status != http.StatusUnauthorized {
		t.Fatalf("a wrong password: %d, want 401", status)
	}
	status, body := admin("POST", "/subjects/orders-value/versions", schema("Order"))
	expect("the super user registers", status, body, 200, `~"id":1`)
	status, body = admin("POST", "/subjects/secret-value/versions", schema("Secret"))
	expect("the super user registers", status, body, 200, `~"id":2`)

	status, body = alice("GET", "/subjects", "")
	expect("alice lists with no ACL", status, body, 200, `[]`)
	status, body = alice("GET", "/subjects/orders-value/versions", "")
	expect("alice reads with no ACL", status, body, 403, `{"error_code":40301,"message":"User alice is denied operations on this resource"}`)
	status, body = alice("GET", "/schemas/ids/1", "")
	expect("alice reads an id with no ACL", status, body, 404, `{"error_code":40403,"message":"Schema not found"}`)

	adm := kadm.NewClient(newKgo(t, kgo.SeedBrokers(sasl),
		kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha256Mechanism())))
	grant := func(b *kadm.ACLBuilder) {
		t.Helper()
		res, err := adm.CreateACLs(ctx, b)
		if err == nil {
			for _, r := range res {
				if r.Err != nil {
					err = r.Err
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	grant(kadm.NewACLs().Allow("User:alice").Topics("subject:orders-value").Operations(kadm.OpDescribe))
	time.Sleep(1500 * time.Millisecond) // agents reload ACLs every second

	status, body = alice("GET", "/subjects", "")
	expect("alice lists with DESCRIBE on one subject", status, body, 200, `["orders-value"]`)
	status, _ = alice("GET", "/subjects/orders-value/versions/latest", "")
	expect("alice reads her subject", status, "", 200, "")
	status, _ = alice("GET", "/schemas/ids/1", "")
	expect("alice reads her subject's id", status, "", 200, "")
	status, body = alice("GET", "/schemas/ids/2", "")
	expect("alice reads another subject's id", status, body, 404, `{"error_code":40403,"message":"Schema not found"}`)
	status, body = alice("GET", "/schemas", "")
	if status != 200 || strings.Contains(body, "secret-value") || !strings.Contains(body, "orders-value") {
		t.Fatalf("alice lists schemas: %d %s", status, body)
	}
	status, _ = alice("POST", "/compatibility/subjects/orders-value/versions/latest", schema("Order"))
	expect("a compatibility check is a read", status, "", 200, "")
	status, _ = alice("POST", "/subjects/orders-value/versions", schema("Order2"))
	expect("alice registers with DESCRIBE only", status, "", 403, "")
	status, _ = alice("GET", "/config", "")
	expect("alice reads the global config", status, "", 403, "")

	grant(kadm.NewACLs().Allow("User:alice").Topics("subject:orders").ResourcePatternType(kadm.ACLPatternPrefixed).
		Operations(kadm.OpAlter))
	time.Sleep(1500 * time.Millisecond)
	status, body = alice("POST", "/subjects/orders-value/versions", schema("Order"))
	expect("alice registers with ALTER on the prefix", status, body, 200, `~"id":1`)
	status, _ = alice("DELETE", "/subjects/secret-value", "")
	expect("alice deletes another subject", status, "", 403, "")
	status, _ = admin("GET", "/config", "")
	expect("the super user reads the global config", status, "", 200, "")

	// The mounted registry is guarded alike.
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+p.HTTPAddr+"/schema-registry/subjects", nil)
	req.SetBasicAuth("alice", "alice-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != `["orders-value"]` {
		t.Fatalf("the mounted registry lists for alice: %d %s", resp.StatusCode, b)
	}
}
