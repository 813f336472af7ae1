package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestSchemaCLI runs the floe binary's `floe schema` verbs against floe
// dev's registry, as a person or a script would: every verb in text and
// JSON, the registry reached through $FLOE_SCHEMA_REGISTRY, --registry and
// the HTTP port's /schema-registry mount, references, each schema type, a
// failing check exiting 1, and the registry's errors (42201, 40401) on
// standard error with a non-zero exit.
func TestSchemaCLI(t *testing.T) {
	p := startFloe(t, "dev", "--data-dir", t.TempDir())
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	type result struct {
		out, errOut string
		code        int
	}
	run := func(stdin string, args ...string) result {
		t.Helper()
		cmd := exec.Command(floeBin, append([]string{"schema"}, args...)...)
		cmd.Env = append(os.Environ(), "FLOE_SCHEMA_REGISTRY=http://"+p.RegistryAddr)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("floe schema %q: %v", args, err)
		}
		return result{out.String(), errOut.String(), cmd.ProcessState.ExitCode()}
	}
	must := func(want string, args ...string) {
		t.Helper()
		if r := run("", args...); r.code != 0 || r.out != want {
			t.Fatalf("floe schema %q: exit %d\n%s%s\nwant\n%s", args, r.code, r.out, r.errOut, want)
		}
	}
	fails := func(code int, stderr string, args ...string) {
		t.Helper()
		if r := run("", args...); r.code != code || !strings.Contains(r.errOut, stderr) {
			t.Fatalf("floe schema %q: exit %d, stderr %q; want exit %d saying %q", args, r.code, r.errOut, code, stderr)
		}
	}

	money := write("money.avsc", `{"type":"record","name":"Money","namespace":"shop","fields":[{"name":"cents","type":"long"}]}`)
	v1 := write("order.avsc", orderV1)
	v2 := write("order-v2.avsc", orderV2)
	withMoney := write("order-money.avsc", `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},{"name":"price","type":"shop.Money"}]}`)
	incompatible := write("order-bad.avsc", `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"string"}]}`)
	proto := write("event.proto", "syntax = \"proto3\";\npackage shop;\n\nmessage Event {\n  int64 id = 1;\n}\n")
	jsonSchema := write("item.json", `{"type":"object","properties":{"sku":{"type":"string"}}}`)

	must("registered orders-value version 1: id 1\n", "register", "orders-value", "--file", v1)
	// The agent's HTTP port serves the same registry under /schema-registry.
	must("registered orders-value version 2: id 2\n", "register", "--registry", "http://"+p.HTTPAddr+"/schema-registry", "orders-value", "--file", v2)
	must("registered money-value version 1: id 3\n", "register", "money-value", "--file", money)
	must("registered priced-value version 1: id 4\n", "register", "priced-value", "--file", withMoney, "--reference", "shop.Money=money-value:1")
	must("registered events-value version 1: id 5\n", "register", "events-value", "--file", proto)
	// Standard input, and --output json: the registry's answer as it came.
	r := run(`{"type":"object","properties":{"sku":{"type":"string"}}}`, "register", "items-value", "--file", "-", "--type", "JSON", "--output", "json")
	var reg struct {
		ID, Version int
		SchemaType  string
		Schema      string
	}
	if r.code != 0 || json.Unmarshal([]byte(r.out), &reg) != nil || reg.ID != 6 || reg.Version != 1 || reg.SchemaType != "JSON" ||
		strings.Count(r.out, "\n") != 1 {
		t.Fatalf("register --output json: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	// Registering the same schema again answers its version and id.
	must("registered items-value version 1: id 6\n", "register", "items-value", "--file", jsonSchema, "--type", "JSON")

	must("events-value\nitems-value\nmoney-value\norders-value\npriced-value\n", "list")
	must("money-value\n", "list", "--prefix", "mon")
	must(`["orders-value"]`+"\n", "list", "--prefix", "ord", "--output", "json")
	must("1\n2\n", "list", "orders-value")

	must(`subject    priced-value
version    1
id         4
type       AVRO
reference  shop.Money=money-value:1

{
  "type": "record",
  "name": "Order",
  "namespace": "shop",
  "fields": [
    {
      "name": "id",
      "type": "long"
    },
    {
      "name": "price",
      "type": "Money"
    }
  ]
}
`, "get", "priced-value") // Avro as Confluent prints it: names relative to the namespace
	// One JSON document on one line, every field the registry answered
	// (Confluent 8's guid, random, checked present).
	r = run("", "get", "events-value", "--version", "1", "--output", "json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.out), &doc); r.code != 0 || err != nil || strings.Count(r.out, "\n") != 1 {
		t.Fatalf("get --output json: exit %d, %v\n%s%s", r.code, err, r.out, r.errOut)
	}
	if guid, _ := doc["guid"].(string); guid == "" {
		t.Fatalf("get --output json: no guid\n%s", r.out)
	}
	delete(doc, "guid")
	want := map[string]any{"subject": "events-value", "version": 1.0, "id": 5.0, "schemaType": "PROTOBUF",
		"schema": "syntax = \"proto3\";\npackage shop;\n\nmessage Event {\n  int64 id = 1;\n}\n"}
	if !reflect.DeepEqual(doc, want) {
		t.Fatalf("get --output json: %v, want %v", doc, want)
	}
	must(`id    5
type  PROTOBUF

syntax = "proto3";
package shop;

message Event {
  int64 id = 1;
}
`, "get", "--id", "5")

	must("compatible\n", "check", "orders-value", "--file", v2)
	must(`{"is_compatible":true}`+"\n", "check", "orders-value", "--file", v1, "--version", "1", "--output", "json")
	r = run("", "check", "orders-value", "--file", incompatible, "--verbose")
	if r.code != 1 || !strings.HasPrefix(r.out, "incompatible\n  {errorType:'") || !strings.Contains(r.errOut, "schema is incompatible") {
		t.Fatalf("incompatible check: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	r = run("", "check", "orders-value", "--file", incompatible, "--output", "json")
	if r.code != 1 || r.out != `{"is_compatible":false}`+"\n" {
		t.Fatalf("incompatible check --output json: exit %d\n%s%s", r.code, r.out, r.errOut)
	}

	bad := write("bad.avsc", `{"type":"recrd","name":"X"}`)
	fails(1, "floe: error_code 42201: Invalid schema", "register", "orders-value", "--file", bad)
	fails(1, "floe: error_code 40401: Subject 'absent' not found.", "get", "absent")
	fails(1, "name a SUBJECT", "get")

	must("BACKWARD\n", "config")
	must("orders-value: FULL\n", "config", "orders-value", "--set", "FULL")
	must(`{"compatibilityLevel":"FULL"}`+"\n", "config", "orders-value", "--output", "json")
	must("BACKWARD\n", "config", "money-value") // the registry's, no level of its own
	fails(1, "error_code 42203", "config", "--set", "SIDEWAYS")
	must("orders-value: compatibility level FULL dropped\n", "config", "orders-value", "--delete")

	must("READWRITE\n", "mode")
	must("orders-value: READONLY\n", "mode", "orders-value", "--set", "READONLY")
	fails(1, "error_code 42205", "register", "orders-value", "--file", incompatible)
	must(`{"mode":"READONLY"}`+"\n", "mode", "orders-value", "--output", "json")
	must("orders-value: mode READONLY dropped\n", "mode", "orders-value", "--delete")

	fails(1, "error_code 42206", "delete", "money-value") // priced-value references it
	must("deleted orders-value version 1\n", "delete", "orders-value", "--version", "1")
	must("2\n", "list", "orders-value")
	must("1\n2\n", "list", "orders-value", "--deleted")
	must("permanently deleted orders-value version 1\n", "delete", "orders-value", "--version", "1", "--permanent")
	must("deleted items-value: versions 1\n", "delete", "items-value")
	must(`[1]`+"\n", "delete", "items-value", "--permanent", "--output", "json")
	must("[2]\n", "delete", "orders-value", "--permanent", "--output", "json")
	must("events-value\nmoney-value\npriced-value\n", "list", "--deleted")
}
