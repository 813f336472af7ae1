package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"floe/metadata"
)

func ptr(s string) *string { return &s }

// Operation numbers of Kafka's AclOperation used below.
const (
	opAll      int8 = 2
	opRead     int8 = 3
	opWrite    int8 = 4
	opDescribe int8 = 8
)

// testACLs: ACLs come back sorted and exactly as created, a duplicate is
// stored once, filters select as Kafka's AclBindingFilter (literal,
// prefixed, MATCH with the wildcard and prefixes, ANY), delete returns
// per filter what it removed and removes only that, and every change
// moves the version.
func testACLs(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	v0, err := s.ACLVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if acls, err := s.ListACLs(ctx, metadata.AllACLs); err != nil || len(acls) != 0 {
		t.Fatalf("ListACLs on a new store = %v, %v; want none", acls, err)
	}
	topic := func(name string, pt int8, principal string, op, perm int8) metadata.ACL {
		return metadata.ACL{ResourceType: metadata.ACLResourceTopic, ResourceName: name, PatternType: pt,
			Principal: principal, Host: "*", Operation: op, Permission: perm}
	}
	lit, pre := metadata.ACLPatternLiteral, metadata.ACLPatternPrefixed
	allow, deny := metadata.ACLAllow, metadata.ACLDeny
	a1 := topic("orders", lit, "User:alice", opRead, allow)
	a2 := topic("*", lit, "User:bob", opWrite, allow)
	a3 := topic("ord", pre, "User:alice", opWrite, deny)
	a4 := topic("orders-eu", lit, "User:alice", opDescribe, allow)
	g1 := metadata.ACL{ResourceType: metadata.ACLResourceGroup, ResourceName: "orders", PatternType: lit,
		Principal: "User:alice", Host: "10.0.0.1", Operation: opAll, Permission: allow}
	if err := s.CreateACLs(ctx, []metadata.ACL{g1, a4, a3, a2, a1, a1}); err != nil {
		t.Fatal(err)
	}
	v1, err := s.ACLVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v1 == v0 {
		t.Fatalf("ACLVersion did not change with CreateACLs: %d", v1)
	}
	all := []metadata.ACL{a2, a3, a1, a4, g1} // type, name (bytewise), pattern, …
	got, err := s.ListACLs(ctx, metadata.AllACLs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, all) {
		t.Fatalf("ListACLs(all) =\n%v\nwant\n%v", got, all)
	}
	// Creating what exists changes nothing but is no error.
	if err := s.CreateACLs(ctx, []metadata.ACL{a1}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ListACLs(ctx, metadata.AllACLs); !slices.Equal(got, all) {
		t.Fatalf("after creating a1 again: %v", got)
	}

	filter := func(mod func(f *metadata.ACLFilter)) metadata.ACLFilter {
		f := metadata.AllACLs
		mod(&f)
		return f
	}
	for _, tc := range []struct {
		name string
		f    metadata.ACLFilter
		want []metadata.ACL
	}{
		{"topics", filter(func(f *metadata.ACLFilter) { f.ResourceType = metadata.ACLResourceTopic }), []metadata.ACL{a2, a3, a1, a4}},
		{"literal orders", filter(func(f *metadata.ACLFilter) {
			f.ResourceType, f.PatternType, f.ResourceName = metadata.ACLResourceTopic, lit, ptr("orders")
		}), []metadata.ACL{a1}},
		{"any orders", filter(func(f *metadata.ACLFilter) { f.ResourceName = ptr("orders") }), []metadata.ACL{a1, g1}},
		{"match orders", filter(func(f *metadata.ACLFilter) {
			f.ResourceType, f.PatternType, f.ResourceName = metadata.ACLResourceTopic, metadata.ACLPatternMatch, ptr("orders")
		}), []metadata.ACL{a2, a3, a1}},
		{"match other", filter(func(f *metadata.ACLFilter) {
			f.PatternType, f.ResourceName = metadata.ACLPatternMatch, ptr("payments")
		}), []metadata.ACL{a2}},
		{"prefixed", filter(func(f *metadata.ACLFilter) { f.PatternType = pre }), []metadata.ACL{a3}},
		{"prefixed named ord", filter(func(f *metadata.ACLFilter) { f.PatternType, f.ResourceName = pre, ptr("ord") }), []metadata.ACL{a3}},
		{"prefixed named orders", filter(func(f *metadata.ACLFilter) { f.PatternType, f.ResourceName = pre, ptr("orders") }), nil},
		{"principal", filter(func(f *metadata.ACLFilter) { f.Principal = ptr("User:bob") }), []metadata.ACL{a2}},
		{"host", filter(func(f *metadata.ACLFilter) { f.Host = ptr("10.0.0.1") }), []metadata.ACL{g1}},
		{"operation", filter(func(f *metadata.ACLFilter) { f.Operation = opWrite }), []metadata.ACL{a2, a3}},
		{"deny", filter(func(f *metadata.ACLFilter) { f.Permission = deny }), []metadata.ACL{a3}},
		{"none", filter(func(f *metadata.ACLFilter) { f.Principal = ptr("User:carol") }), nil},
	} {
		got, err := s.ListACLs(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ListACLs(%s) =\n%v\nwant\n%v", tc.name, got, tc.want)
		}
	}

	// Delete: per filter what it matched, an ACL under every filter that
	// matched it, a filter matching nothing gets nothing.
	res, err := s.DeleteACLs(ctx, []metadata.ACLFilter{
		filter(func(f *metadata.ACLFilter) {
			f.Principal = ptr("User:alice")
			f.ResourceType = metadata.ACLResourceTopic
		}),
		filter(func(f *metadata.ACLFilter) { f.ResourceName = ptr("orders") }),
		filter(func(f *metadata.ACLFilter) { f.Principal = ptr("User:carol") }),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]metadata.ACL{{a3, a1, a4}, {a1, g1}, nil}
	if len(res) != len(want) {
		t.Fatalf("DeleteACLs returned %d results, want %d", len(res), len(want))
	}
	for i := range want {
		if !slices.Equal(res[i], want[i]) {
			t.Errorf("DeleteACLs filter %d matched\n%v\nwant\n%v", i, res[i], want[i])
		}
	}
	v2, err := s.ACLVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v2 == v1 {
		t.Fatal("ACLVersion did not change with DeleteACLs")
	}
	if got, _ := s.ListACLs(ctx, metadata.AllACLs); !slices.Equal(got, []metadata.ACL{a2}) {
		t.Fatalf("after delete: %v, want only %v", got, a2)
	}
	if res, err := s.DeleteACLs(ctx, []metadata.ACLFilter{metadata.AllACLs}); err != nil || !slices.Equal(res[0], []metadata.ACL{a2}) {
		t.Fatalf("DeleteACLs(all) = %v, %v", res, err)
	}
	if got, _ := s.ListACLs(ctx, metadata.AllACLs); len(got) != 0 {
		t.Fatalf("after deleting all: %v", got)
	}
}

// testACLsConcurrent: concurrent creates and deletes from several writers
// (agents) lose none of each other's ACLs, and every change is a version
// of its own: the version moves by at least one per change.
func testACLsConcurrent(t *testing.T, s metadata.Store) {
	ctx := ctxT(t)
	v0, err := s.ACLVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := fmt.Sprintf("User:w%d", w)
			for i := range each {
				a := metadata.ACL{ResourceType: metadata.ACLResourceTopic, ResourceName: fmt.Sprintf("t%d", i),
					PatternType: metadata.ACLPatternLiteral, Principal: p, Host: "*", Operation: opRead, Permission: metadata.ACLAllow}
				if err := s.CreateACLs(ctx, []metadata.ACL{a}); err != nil {
					errs <- err
					return
				}
				if i%2 == 1 { // delete every other one again
					f := metadata.AllACLs
					f.Principal, f.ResourceName = &p, &a.ResourceName
					res, err := s.DeleteACLs(ctx, []metadata.ACLFilter{f})
					if err != nil {
						errs <- err
						return
					}
					if !slices.Equal(res[0], []metadata.ACL{a}) {
						errs <- fmt.Errorf("%s deleted %v, want %v", p, res[0], a)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := s.ListACLs(ctx, metadata.AllACLs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != writers*each/2 {
		t.Fatalf("%d ACLs left, want %d: %v", len(got), writers*each/2, got)
	}
	for _, a := range got {
		var i int
		if _, err := fmt.Sscanf(a.ResourceName, "t%d", &i); err != nil || i%2 != 0 {
			t.Fatalf("ACL left that was deleted: %v", a)
		}
	}
	v1, err := s.ACLVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if changes := int64(writers * (each + each/2)); v1-v0 < changes {
		t.Fatalf("ACLVersion moved by %d over %d changes", v1-v0, changes)
	}
}
