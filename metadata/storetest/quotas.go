package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"floe/metadata"
)

// testClientQuotas: quotas come back exactly as set and sorted (absent,
// default, named per part), a set replaces a value, removing a key the
// entity lacks is no error, default and named parts are distinct
// entities, and every change moves the version.
func testClientQuotas(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	v0, err := s.QuotaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if qs, err := s.ClientQuotas(ctx); err != nil || len(qs) != 0 {
		t.Fatalf("ClientQuotas on a new store = %v, %v; want none", qs, err)
	}
	alice, def, abs := metadata.Named("alice"), metadata.DefaultName, metadata.QuotaName{}
	q := func(user, client, ip metadata.QuotaName, key string, v float64) metadata.ClientQuota {
		return metadata.ClientQuota{Entity: metadata.QuotaEntity{User: user, ClientID: client, IP: ip}, Key: key, Value: v}
	}
	set := func(qs ...metadata.ClientQuota) []metadata.QuotaChange {
		var cs []metadata.QuotaChange
		for _, q := range qs {
			cs = append(cs, metadata.QuotaChange{Entity: q.Entity, Key: q.Key, Value: q.Value})
		}
		return cs
	}
	uc := q(alice, metadata.Named("app"), abs, "producer_byte_rate", 1<<20)
	ud := q(alice, def, abs, "consumer_byte_rate", 2<<20)
	u := q(alice, abs, abs, "request_percentage", 12.5)
	du := q(def, abs, abs, "producer_byte_rate", 4096)
	c := q(abs, metadata.Named("app"), abs, "producer_byte_rate", 3<<20)
	dc := q(abs, def, abs, "consumer_byte_rate", 5<<20)
	ip := q(abs, abs, metadata.Named("10.0.0.1"), "connection_creation_rate", 10)
	dip := q(abs, abs, def, "connection_creation_rate", 100)
	u2 := q(alice, abs, abs, "producer_byte_rate", 7)
	if err := s.AlterClientQuotas(ctx, set(uc, ud, u, du, c, dc, ip, dip, u2)); err != nil {
		t.Fatal(err)
	}
	v1, err := s.QuotaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v1 == v0 {
		t.Fatalf("QuotaVersion did not change with AlterClientQuotas: %d", v1)
	}
	want := []metadata.ClientQuota{dip, ip, dc, c, du, u2, u, ud, uc}
	got, err := s.ClientQuotas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ClientQuotas =\n%v\nwant\n%v", got, want)
	}

	// A set replaces; a removal of what is absent is no error; both in
	// one transaction with the others.
	u.Value = 50
	changes := append(set(u), metadata.QuotaChange{Entity: c.Entity, Key: c.Key, Remove: true},
		metadata.QuotaChange{Entity: c.Entity, Key: "consumer_byte_rate", Remove: true},
		metadata.QuotaChange{Entity: metadata.QuotaEntity{User: metadata.Named("nobody")}, Key: "producer_byte_rate", Remove: true})
	if err := s.AlterClientQuotas(ctx, changes); err != nil {
		t.Fatal(err)
	}
	v2, _ := s.QuotaVersion(ctx)
	if v2 == v1 {
		t.Fatalf("QuotaVersion did not change with the second AlterClientQuotas: %d", v2)
	}
	want = []metadata.ClientQuota{dip, ip, dc, du, u2, u, ud, uc}
	if got, _ := s.ClientQuotas(ctx); !slices.Equal(got, want) {
		t.Fatalf("after replacing and removing: ClientQuotas =\n%v\nwant\n%v", got, want)
	}
	if err := s.AlterClientQuotas(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// testClientQuotasConcurrent: concurrent writers each land, and the
// version moves once per change.
func testClientQuotasConcurrent(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	v0, err := s.QuotaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := metadata.QuotaEntity{ClientID: metadata.Named(fmt.Sprintf("c%d", i))}
			errs <- s.AlterClientQuotas(ctx, []metadata.QuotaChange{{Entity: e, Key: "producer_byte_rate", Value: float64(1024 * (i + 1))}})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	qs, err := s.ClientQuotas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != n {
		t.Fatalf("%d quotas after %d concurrent writers: %v", len(qs), n, qs)
	}
	for i, q := range qs {
		if q.Entity.ClientID.Name != fmt.Sprintf("c%d", i) || q.Value != float64(1024*(i+1)) {
			t.Fatalf("quota %d = %+v", i, q)
		}
	}
	if v, _ := s.QuotaVersion(ctx); v != v0+n {
		t.Fatalf("QuotaVersion = %d after %d changes from %d", v, n, v0)
	}
}
