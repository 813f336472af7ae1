package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"floe/agent"
	"floe/metadata"
	"floe/metadata/sqlite"
	"floe/storage/mem"
)

// TestAuthzFlags: --authorizer, --super-users (Kafka's ;-separated list)
// and --allow-everyone-if-no-acl-found reach the agent's config.
func TestAuthzFlags(t *testing.T) {
	f := agentFlags{cfg: agent.DefaultConfig()}
	fs := newFlagSet("agent", "test")
	f.register(fs)
	if err := parse(fs, []string{"--authorizer", "--super-users", "User:admin; User:ops", "--allow-everyone-if-no-acl-found"}); err != nil {
		t.Fatal(err)
	}
	want := agent.AuthzConfig{Enabled: true, SuperUsers: []string{"User:admin", "User:ops"}, AllowEveryoneIfNoACL: true}
	if got := f.cfg.Authz; got.Enabled != want.Enabled || !slices.Equal(got.SuperUsers, want.SuperUsers) || got.AllowEveryoneIfNoACL != want.AllowEveryoneIfNoACL {
		t.Fatalf("authz config %+v, want %+v", got, want)
	}
	f = agentFlags{cfg: agent.DefaultConfig()}
	fs = newFlagSet("agent", "test")
	f.register(fs)
	if err := parse(fs, []string{"--super-users", "admin"}); err == nil {
		t.Fatal("a super user without a principal type was accepted")
	}
	if f.cfg.Authz.Enabled {
		t.Fatal("authorization on by default")
	}
}

// TestACLCommand: floe acl add, list and remove against a running agent
// with authorization on, the anonymous principal a super user.
func TestACLCommand(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := agent.DevConfig()
	cfg.KafkaAddr, cfg.HTTPAddr = "127.0.0.1:0", ""
	cfg.Authz = agent.AuthzConfig{Enabled: true, SuperUsers: []string{"User:ANONYMOUS"}}
	a := agent.New(cfg, store, mem.New(), nil)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a.Close(cctx)
	}()
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runACLTo(append(args, "--bootstrap", a.KafkaAddr()), &out, &errOut)
		return out.String(), err
	}
	fields := func(out string) [][]string {
		var rows [][]string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l != "" {
				rows = append(rows, strings.Fields(l))
			}
		}
		return rows
	}
	if _, err := run("add", "--allow-principal", "User:alice", "--operation", "read,describe", "--topic", "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := run("add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.9", "--operation", "write",
		"--topic", "pay-", "--resource-pattern-type", "prefixed"); err != nil {
		t.Fatal(err)
	}
	if _, err := run("add", "--allow-principal", "User:ops", "--operation", "alter", "--cluster"); err != nil {
		t.Fatal(err)
	}
	out, err := run("list")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"RESOURCE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION"},
		{"TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"},
		{"TOPIC", "orders", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW"},
		{"TOPIC", "pay-", "PREFIXED", "User:bob", "10.0.0.9", "WRITE", "DENY"},
		{"CLUSTER", "kafka-cluster", "LITERAL", "User:ops", "*", "ALTER", "ALLOW"},
	}
	sortRows := func(rows [][]string) {
		slices.SortFunc(rows[1:], func(x, y []string) int { return strings.Compare(strings.Join(x, " "), strings.Join(y, " ")) })
	}
	got := fields(out)
	sortRows(got)
	sortRows(want)
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("list:\n%s\nwant %q", out, want)
	}
	out, err = run("list", "--topic", "pay-invoices", "--resource-pattern-type", "match")
	if err != nil {
		t.Fatal(err)
	}
	if got := fields(out); len(got) != 2 || !slices.Equal(got[1], []string{"TOPIC", "pay-", "PREFIXED", "User:bob", "10.0.0.9", "WRITE", "DENY"}) {
		t.Fatalf("list MATCH pay-invoices:\n%s", out)
	}
	out, err = run("remove", "--allow-principal", "User:alice", "--operation", "read", "--topic", "orders", "--resource-pattern-type", "literal")
	if err != nil {
		t.Fatal(err)
	}
	if got := fields(out); len(got) != 1 || !slices.Equal(got[0][:7], []string{"TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"}) {
		t.Fatalf("remove:\n%s", out)
	}
	left, err := store.ListACLs(ctx, metadata.AllACLs)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 3 || slices.ContainsFunc(left, func(x metadata.ACL) bool { return x.Principal == "User:alice" && x.Operation == 3 }) {
		t.Fatalf("left after remove: %+v", left)
	}
	if _, err := run("add", "--allow-principal", "User:alice", "--topic", "orders"); err == nil {
		t.Fatal("add without --operation was accepted")
	}
	if _, err := run("remove"); err == nil {
		t.Fatal("a remove of everything was accepted")
	}
	if _, err := run("add", "--allow-principal", "alice", "--operation", "read", "--topic", "orders"); err == nil {
		t.Fatal("a principal without a type was accepted")
	}
}
