package storetest

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"floe/metadata"
)

// testScramCredentials: credentials are stored per user and mechanism,
// replaced by an upsert, listed by user (all when none are named, sorted,
// unknown names skipped) and deleted one by one.
func testScramCredentials(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	if _, err := s.ScramCredential(ctx, "alice", "SCRAM-SHA-256"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("credential in a new store: %v, want ErrNotFound", err)
	}
	cred := func(user, mech string, n byte) metadata.ScramCredential {
		return metadata.ScramCredential{User: user, Mechanism: mech, Salt: []byte{n, 0, 1}, Iterations: 4096 + int32(n),
			StoredKey: bytes.Repeat([]byte{n}, 32), ServerKey: bytes.Repeat([]byte{n + 1}, 32)}
	}
	for _, c := range []metadata.ScramCredential{
		cred("bob", "SCRAM-SHA-512", 1), cred("alice", "SCRAM-SHA-256", 2), cred("alice", "SCRAM-SHA-512", 3),
		cred("alice", "SCRAM-SHA-256", 4), // replaces the second
	} {
		if err := s.UpsertScramCredential(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	same := func(what string, got, want []metadata.ScramCredential) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d credentials %+v, want %d", what, len(got), got, len(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.User != w.User || g.Mechanism != w.Mechanism || !bytes.Equal(g.Salt, w.Salt) || g.Iterations != w.Iterations ||
				!bytes.Equal(g.StoredKey, w.StoredKey) || !bytes.Equal(g.ServerKey, w.ServerKey) {
				t.Fatalf("%s: credential %d\ngot  %+v\nwant %+v", what, i, g, w)
			}
		}
	}
	got, err := s.ScramCredential(ctx, "alice", "SCRAM-SHA-256")
	if err != nil {
		t.Fatal(err)
	}
	same("ScramCredential", []metadata.ScramCredential{got}, []metadata.ScramCredential{cred("alice", "SCRAM-SHA-256", 4)})
	all, err := s.ScramCredentials(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	same("all", all, []metadata.ScramCredential{cred("alice", "SCRAM-SHA-256", 4), cred("alice", "SCRAM-SHA-512", 3), cred("bob", "SCRAM-SHA-512", 1)})
	some, err := s.ScramCredentials(ctx, []string{"bob", "nobody", "bob"})
	if err != nil {
		t.Fatal(err)
	}
	same("bob", some, []metadata.ScramCredential{cred("bob", "SCRAM-SHA-512", 1)})

	if err := s.DeleteScramCredential(ctx, "alice", "SCRAM-SHA-512"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteScramCredential(ctx, "alice", "SCRAM-SHA-512"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("deleting a deleted credential: %v, want ErrNotFound", err)
	}
	all, err = s.ScramCredentials(ctx, []string{"alice"})
	if err != nil {
		t.Fatal(err)
	}
	same("alice after delete", all, []metadata.ScramCredential{cred("alice", "SCRAM-SHA-256", 4)})
}

// testClusterSecret: the first call makes the secret; every call, however
// concurrent and from whichever handle, returns the same bytes; names are
// apart.
func testClusterSecret(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	var wg sync.WaitGroup
	got := make([][]byte, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = s.ClusterSecret(ctx, "peer")
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if len(got[i]) != 32 || !bytes.Equal(got[i], got[0]) {
			t.Fatalf("secret %d = %x, want the same 32 bytes as %x", i, got[i], got[0])
		}
	}
	other, err := s.ClusterSecret(ctx, "other")
	if err != nil || bytes.Equal(other, got[0]) {
		t.Fatalf("another name's secret %x (%v) equals the first", other, err)
	}
}
