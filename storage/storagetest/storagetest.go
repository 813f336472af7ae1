// Package storagetest is the one acceptance suite every storage.Bucket
// implementation must pass (memory, file, S3 against a real MinIO). A new
// backend is done when Run passes against it.
package storagetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"floe/storage"
)

// Run runs the suite. newBucket must return an empty bucket for each call;
// every subtest asks for its own.
func Run(t *testing.T, newBucket func(t *testing.T) storage.Bucket) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b storage.Bucket)
	}{
		{"PutGet", testPutGet},
		{"GetRange", testGetRange},
		{"ReadRange", testReadRange},
		{"EmptyObject", testEmptyObject},
		{"Size", testSize},
		{"NotFound", testNotFound},
		{"Delete", testDelete},
		{"PutParts", testPutParts},
		{"PutIfAbsent", testPutIfAbsent},
		{"PutIfAbsentRace", testPutIfAbsentRace},
		{"List", testList},
		{"ListStops", testListStops},
		{"LargeObject", testLargeObject},
		{"ConcurrentPuts", testConcurrentPuts},
		{"SlashKeys", testSlashKeys},
		{"PutStream", testPutStream},
		{"PutStreamFails", testPutStreamFails},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newBucket(t))
		})
	}
}

func pattern(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func mustPut(t *testing.T, b storage.Bucket, key string, data []byte) {
	t.Helper()
	if err := b.Put(t.Context(), key, data); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func mustGet(t *testing.T, b storage.Bucket, key string, offset, length int64) []byte {
	t.Helper()
	got, err := b.GetRange(t.Context(), key, offset, length)
	if err != nil {
		t.Fatalf("GetRange(%q, %d, %d): %v", key, offset, length, err)
	}
	return got
}

func checkGet(t *testing.T, b storage.Bucket, key string, offset, length int64, want []byte) {
	t.Helper()
	got := mustGet(t, b, key, offset, length)
	if !bytes.Equal(got, want) {
		t.Fatalf("GetRange(%q, %d, %d) = %d bytes %.32x…, want %d bytes %.32x…",
			key, offset, length, len(got), got, len(want), want)
	}
}

func testPutGet(t *testing.T, b storage.Bucket) {
	data := []byte("hello, object storage")
	mustPut(t, b, "k", data)
	data[0] = 'J' // the bucket must have kept its own copy
	checkGet(t, b, "k", 0, -1, []byte("hello, object storage"))

	got := mustGet(t, b, "k", 0, -1)
	got[0] = 'X' // and must hand out copies
	checkGet(t, b, "k", 0, -1, []byte("hello, object storage"))
}

// testPutParts: an object given as parts (empty ones, and more of them
// than one writev takes) is stored as their concatenation.
func testPutParts(t *testing.T, b storage.Bucket) {
	var parts [][]byte
	var want []byte
	for i := range 1500 {
		p := pattern(i%7, uint64(i)) // every seventh part is empty
		parts = append(parts, p)
		want = append(want, p...)
	}
	if err := b.Put(t.Context(), "parts", parts...); err != nil {
		t.Fatalf("Put of %d parts: %v", len(parts), err)
	}
	checkGet(t, b, "parts", 0, -1, want)
	if err := b.Put(t.Context(), "no-parts"); err != nil {
		t.Fatalf("Put of no parts: %v", err)
	}
	checkGet(t, b, "no-parts", 0, -1, []byte{})
}

// testReadRange reads ranges into buffers through storage.ReadRange (the
// bucket's own ReadRange, or GetRange and a copy): exact bytes, and an
// error for a range past the end or a missing key.
func testReadRange(t *testing.T, b storage.Bucket) {
	ctx := t.Context()
	data := pattern(1000, 3)
	mustPut(t, b, "rr", data)
	for _, r := range [][2]int64{{0, 1000}, {0, 1}, {123, 456}, {999, 1}, {500, 0}} {
		buf := make([]byte, r[1])
		if err := storage.ReadRange(ctx, b, "rr", r[0], buf); err != nil {
			t.Fatalf("ReadRange(%d, %d): %v", r[0], r[1], err)
		}
		if !bytes.Equal(buf, data[r[0]:r[0]+r[1]]) {
			t.Fatalf("ReadRange(%d, %d) read other bytes", r[0], r[1])
		}
	}
	for _, r := range [][2]int64{{990, 20}, {1000, 1}, {5000, 10}} {
		if err := storage.ReadRange(ctx, b, "rr", r[0], make([]byte, r[1])); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("ReadRange(%d, %d) past the end of 1000 bytes: %v, want io.ErrUnexpectedEOF", r[0], r[1], err)
		}
	}
	if err := storage.ReadRange(ctx, b, "missing", 0, make([]byte, 10)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("ReadRange of a missing key: %v, want ErrNotFound", err)
	}
	if err := storage.ReadRange(ctx, b, "rr", -1, make([]byte, 10)); err == nil {
		t.Fatal("ReadRange with a negative offset succeeded")
	}
}

func testGetRange(t *testing.T, b storage.Bucket) {
	data := pattern(1000, 1)
	mustPut(t, b, "r", data)
	for _, c := range []struct {
		offset, length int64
		want           []byte
	}{
		{0, -1, data},
		{0, 1000, data},
		{0, 10, data[:10]},
		{123, 456, data[123:579]},
		{500, -1, data[500:]},
		{999, 1, data[999:]},
		{950, 50, data[950:]},          // ends exactly at the end
		{990, 100, data[990:]},         // past the end: what exists
		{0, 5000, data},                // longer than the object
		{5, 1<<63 - 1, data[5:]},       // maximal length must not overflow
		{100, 1<<63 - 100, data[100:]}, // end at MaxInt64
		{1000, -1, []byte{}},           // offset at the end
		{1000, 10, []byte{}},           // offset at the end, with a length
		{1500, 10, []byte{}},           // offset past the end
		{1500, -1, []byte{}},           // offset past the end, to the end
		{1 << 62, 1 << 40, []byte{}},   // far past the end
		{10, 0, []byte{}},              // zero length
		{1000, 0, []byte{}},            // zero length at the end
	} {
		checkGet(t, b, "r", c.offset, c.length, c.want)
	}
	if _, err := b.GetRange(t.Context(), "r", -1, 10); err == nil {
		t.Fatal("GetRange with a negative offset succeeded")
	}
}

func testEmptyObject(t *testing.T, b storage.Bucket) {
	mustPut(t, b, "empty", nil)
	checkGet(t, b, "empty", 0, -1, []byte{})
	checkGet(t, b, "empty", 0, 10, []byte{})
	checkGet(t, b, "empty", 5, -1, []byte{})
	if n, err := b.Size(t.Context(), "empty"); err != nil || n != 0 {
		t.Fatalf("Size(empty) = %d, %v", n, err)
	}
}

func testSize(t *testing.T, b storage.Bucket) {
	for i, n := range []int{1, 7, 4096, 100_000} {
		key := fmt.Sprintf("size/%d", i)
		mustPut(t, b, key, pattern(n, uint64(n)))
		got, err := b.Size(t.Context(), key)
		if err != nil || got != int64(n) {
			t.Fatalf("Size(%q) = %d, %v; want %d", key, got, err, n)
		}
	}
}

func testNotFound(t *testing.T, b storage.Bucket) {
	mustPut(t, b, "present", []byte("x"))
	for _, key := range []string{"missing", "present/below", "presen", "dir/missing"} {
		for _, r := range [][2]int64{{0, -1}, {0, 10}, {5, 0}, {3, -1}} {
			if _, err := b.GetRange(t.Context(), key, r[0], r[1]); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("GetRange(%q, %d, %d) err = %v, want ErrNotFound", key, r[0], r[1], err)
			}
		}
		if _, err := b.Size(t.Context(), key); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("Size(%q) err = %v, want ErrNotFound", key, err)
		}
	}
}

func testDelete(t *testing.T, b storage.Bucket) {
	if err := b.Delete(t.Context(), "never/was"); err != nil {
		t.Fatalf("Delete(missing) = %v, want nil", err)
	}
	mustPut(t, b, "d/1", []byte("one"))
	mustPut(t, b, "d/2", []byte("two"))
	if err := b.Delete(t.Context(), "d/1"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetRange(t.Context(), "d/1", 0, -1); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetRange after Delete: %v, want ErrNotFound", err)
	}
	if err := b.Delete(t.Context(), "d/1"); err != nil {
		t.Fatalf("second Delete = %v, want nil", err)
	}
	checkGet(t, b, "d/2", 0, -1, []byte("two"))
	// A deleted key can be written again, also conditionally.
	if err := b.PutIfAbsent(t.Context(), "d/1", []byte("uno")); err != nil {
		t.Fatalf("PutIfAbsent after Delete: %v", err)
	}
	checkGet(t, b, "d/1", 0, -1, []byte("uno"))
}

func testPutIfAbsent(t *testing.T, b storage.Bucket) {
	if err := b.PutIfAbsent(t.Context(), "lease/a", []byte("first")); err != nil {
		t.Fatalf("first PutIfAbsent: %v", err)
	}
	err := b.PutIfAbsent(t.Context(), "lease/a", []byte("second"))
	if !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second PutIfAbsent = %v, want ErrExists", err)
	}
	checkGet(t, b, "lease/a", 0, -1, []byte("first"))

	// A key written by plain Put counts as present too.
	mustPut(t, b, "lease/b", []byte("plain"))
	if err := b.PutIfAbsent(t.Context(), "lease/b", []byte("cond")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("PutIfAbsent over Put = %v, want ErrExists", err)
	}
	checkGet(t, b, "lease/b", 0, -1, []byte("plain"))
}

// testPutIfAbsentRace checks the condition is atomic: of many concurrent
// writers exactly one wins, and its content is what stays.
func testPutIfAbsentRace(t *testing.T, b storage.Bucket) {
	const writers = 8
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			errs[i] = b.PutIfAbsent(t.Context(), "race", fmt.Appendf(nil, "writer-%d", i))
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("writers %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, storage.ErrExists):
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer won")
	}
	checkGet(t, b, "race", 0, -1, fmt.Appendf(nil, "writer-%d", winner))
}

func listKeys(t *testing.T, b storage.Bucket, prefix string) []storage.ObjectInfo {
	t.Helper()
	var infos []storage.ObjectInfo
	err := b.List(t.Context(), prefix, func(info storage.ObjectInfo) error {
		infos = append(infos, info)
		return nil
	})
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return infos
}

func testList(t *testing.T, b storage.Bucket) {
	// Chosen so that directory-order walks and lexical order differ:
	// '-' < '/' < '0' < 'b'.
	keys := []string{"b/x", "a0", "a/c/d", "ab", "a-c", "a/b", "a/c/e", "c"}
	sorted := []string{"a-c", "a/b", "a/c/d", "a/c/e", "a0", "ab", "b/x", "c"}
	before := time.Now().Add(-time.Hour)
	for i, k := range keys {
		mustPut(t, b, k, pattern(10+i, uint64(i)))
	}
	size := map[string]int64{}
	for i, k := range keys {
		size[k] = int64(10 + i)
	}
	for _, c := range []struct {
		prefix string
		want   []string
	}{
		{"", sorted},
		{"a", sorted[:6]},
		{"a/", sorted[1:4]},
		{"a/c", sorted[2:4]},
		{"a/c/", sorted[2:4]},
		{"a/c/d", sorted[2:3]},
		{"a/b", sorted[1:2]},
		{"a-", sorted[:1]},
		{"b", sorted[6:7]},
		{"c", sorted[7:]},
		{"zzz", nil},
		{"a/x", nil},
		{"a/c/d/", nil},
	} {
		infos := listKeys(t, b, c.prefix)
		var got []string
		for _, info := range infos {
			got = append(got, info.Key)
			if info.Size != size[info.Key] {
				t.Errorf("List: %q has size %d, want %d", info.Key, info.Size, size[info.Key])
			}
			if info.LastModified.Before(before) || info.LastModified.After(time.Now().Add(time.Hour)) {
				t.Errorf("List: %q last modified %v", info.Key, info.LastModified)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Fatalf("List(%q) = %q, want %q", c.prefix, got, c.want)
		}
	}
}

func testListStops(t *testing.T, b storage.Bucket) {
	for i := range 5 {
		mustPut(t, b, fmt.Sprintf("s/%d", i), []byte{byte(i)})
	}
	stop := errors.New("enough")
	var seen []string
	err := b.List(t.Context(), "s/", func(info storage.ObjectInfo) error {
		seen = append(seen, info.Key)
		if len(seen) == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("List returned %v, want the callback's error", err)
	}
	if fmt.Sprint(seen) != "[s/0 s/1]" {
		t.Fatalf("List called fn for %q after it failed", seen)
	}
}

func testLargeObject(t *testing.T, b storage.Bucket) {
	const size = 9 << 20
	data := pattern(size, 9)
	mustPut(t, b, "large", data)
	checkGet(t, b, "large", 0, -1, data)
	checkGet(t, b, "large", 8<<20-3, 1<<20+100, data[8<<20-3:])
	checkGet(t, b, "large", 4<<20+1, 12345, data[4<<20+1:4<<20+1+12345])
	if n, err := b.Size(t.Context(), "large"); err != nil || n != size {
		t.Fatalf("Size(large) = %d, %v", n, err)
	}
}

func testConcurrentPuts(t *testing.T, b storage.Bucket) {
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = b.Put(t.Context(), fmt.Sprintf("c/%02d", i), pattern(1000+i, uint64(i)))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Put %d: %v", i, err)
		}
	}
	infos := listKeys(t, b, "c/")
	if len(infos) != n {
		t.Fatalf("List found %d objects, want %d", len(infos), n)
	}
	for i, info := range infos {
		if want := fmt.Sprintf("c/%02d", i); info.Key != want {
			t.Fatalf("List[%d] = %q, want %q", i, info.Key, want)
		}
		checkGet(t, b, info.Key, 0, -1, pattern(1000+i, uint64(i)))
	}
}

func testSlashKeys(t *testing.T, b storage.Bucket) {
	keys := []string{"objects/ab/123-xyz", "objects/ab/124-xyz", "objects/cd/1-a", "objects/ab-c"}
	for i, k := range keys {
		mustPut(t, b, k, []byte(k))
		checkGet(t, b, k, 0, -1, []byte(keys[i]))
	}
	checkGet(t, b, "objects/ab/123-xyz", 8, 3, []byte("ab/"))
	infos := listKeys(t, b, "objects/ab/")
	if len(infos) != 2 || infos[0].Key != keys[0] || infos[1].Key != keys[1] {
		t.Fatalf("List(objects/ab/) = %v", infos)
	}
	if infos := listKeys(t, b, "objects/"); len(infos) != 4 || infos[0].Key != "objects/ab-c" {
		t.Fatalf("List(objects/) = %v", infos)
	}
}

// testPutStream stores objects from a stream: empty, small, and larger
// than the S3 bucket's 8 MiB parts (a multipart upload of three parts).
// Every implementation is a StreamPutter.
func testPutStream(t *testing.T, b storage.Bucket) {
	if _, ok := b.(storage.StreamPutter); !ok {
		t.Fatalf("%T is not a storage.StreamPutter", b)
	}
	for i, n := range []int{0, 1000, 17<<20 + 123} {
		key := fmt.Sprintf("stream/%d", i)
		data := pattern(n, uint64(i))
		// A reader that hands out little at a time, as a pipe does.
		if err := storage.PutStream(t.Context(), b, key, int64(n), io.LimitReader(&trickle{r: bytes.NewReader(data)}, int64(n))); err != nil {
			t.Fatalf("PutStream(%q, %d bytes): %v", key, n, err)
		}
		checkGet(t, b, key, 0, -1, data)
	}
}

// testPutStreamFails: a body that fails, or ends short or long of its
// size, stores nothing.
func testPutStreamFails(t *testing.T, b storage.Bucket) {
	boom := errors.New("boom")
	const n = 9<<20 + 5 // past one S3 part
	data := pattern(n, 7)
	for name, body := range map[string]io.Reader{
		"error":  io.MultiReader(bytes.NewReader(data[:n-10]), &failing{err: boom}),
		"short":  bytes.NewReader(data[:n-1]),
		"long":   bytes.NewReader(append(data[:n:n], 1)),
		"early":  &failing{err: boom},
		"little": bytes.NewReader(data[:10]),
	} {
		key := "fails/" + name
		if err := storage.PutStream(t.Context(), b, key, n, body); err == nil {
			t.Errorf("%s: PutStream succeeded", name)
		}
		if _, err := b.Size(t.Context(), key); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s: after a failed PutStream, Size: %v, want ErrNotFound", name, err)
		}
	}
}

type trickle struct{ r io.Reader }

func (t *trickle) Read(p []byte) (int, error) { return t.r.Read(p[:min(len(p), 4093)]) }

type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }
