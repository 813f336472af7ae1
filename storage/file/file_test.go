package file

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"floe/storage"
	"floe/storage/storagetest"
)

func TestBucket(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		b, err := New(filepath.Join(t.TempDir(), "bucket"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

func newBucket(t *testing.T) *Bucket {
	t.Helper()
	b, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBadKeys(t *testing.T) {
	b := newBucket(t)
	ctx := t.Context()
	for _, key := range []string{
		"", "/abs", "a//b", "a/", "../escape", "a/../../b", "a/./b", ".", "..",
		"a/.tmp-x", ".tmp-1", "nul\x00", `back\slash`,
	} {
		if err := b.Put(ctx, key, []byte("x")); err == nil {
			t.Errorf("Put(%q) succeeded", key)
		}
		if err := b.PutIfAbsent(ctx, key, []byte("x")); err == nil {
			t.Errorf("PutIfAbsent(%q) succeeded", key)
		}
		if _, err := b.GetRange(ctx, key, 0, -1); err == nil || errors.Is(err, storage.ErrNotFound) {
			t.Errorf("GetRange(%q) = %v, want a key error", key, err)
		}
		if _, err := b.Size(ctx, key); err == nil || errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Size(%q) = %v, want a key error", key, err)
		}
		if err := b.Delete(ctx, key); err == nil {
			t.Errorf("Delete(%q) succeeded", key)
		}
	}
	// Nothing escaped the bucket's directory.
	entries, err := os.ReadDir(filepath.Dir(b.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("parent of the bucket holds %d entries", len(entries))
	}
}

func TestLayoutAndTempFiles(t *testing.T) {
	b := newBucket(t)
	ctx := t.Context()
	if err := b.Put(ctx, "objects/ab/1-x", []byte("data")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(b.Dir(), "objects", "ab", "1-x"))
	if err != nil || string(got) != "data" {
		t.Fatalf("object file: %q, %v", got, err)
	}
	// A temp file left by a crashed put is neither listed nor counted.
	if err := os.WriteFile(filepath.Join(b.Dir(), "objects", "ab", tempPrefix+"dead"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	var keys []string
	err = b.List(ctx, "", func(info storage.ObjectInfo) error {
		keys = append(keys, info.Key)
		return nil
	})
	if err != nil || strings.Join(keys, ",") != "objects/ab/1-x" {
		t.Fatalf("List = %q, %v", keys, err)
	}
	// Successful puts leave no temp files behind.
	if err := b.PutIfAbsent(ctx, "objects/ab/1-x", []byte("other")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("PutIfAbsent over existing = %v", err)
	}
	if err := b.PutIfAbsent(ctx, "objects/ab/2-x", []byte("new")); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(b.Dir(), "objects", "ab"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != ".tmp-dead,1-x,2-x" {
		t.Fatalf("directory holds %q", names)
	}
}

func TestObjectUnderObject(t *testing.T) {
	b := newBucket(t)
	ctx := t.Context()
	if err := b.Put(ctx, "a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetRange(ctx, "a/b", 0, -1); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetRange(a/b) with object a = %v, want ErrNotFound", err)
	}
	if err := b.Delete(ctx, "a/b"); err != nil {
		t.Fatalf("Delete(a/b) with object a = %v", err)
	}
	if err := b.Put(ctx, "d/x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Size(ctx, "d"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Size of a directory = %v, want ErrNotFound", err)
	}
}

// A directory the bucket made and remembers, removed behind its back, is
// made again by the next write into it (and a streamed body is read once).
func TestPutAfterDirectoryRemoved(t *testing.T) {
	b := newBucket(t)
	ctx := t.Context()
	if err := b.Put(ctx, "objects/ab/one", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(b.Dir(), "objects")); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "objects/ab/two", []byte("2"), []byte("2")); err != nil {
		t.Fatalf("put after the directory was removed: %v", err)
	}
	if got, err := b.GetRange(ctx, "objects/ab/two", 0, -1); err != nil || string(got) != "22" {
		t.Errorf("objects/ab/two: %q, %v; want \"22\"", got, err)
	}
	if err := os.RemoveAll(filepath.Join(b.Dir(), "objects")); err != nil {
		t.Fatal(err)
	}
	if err := b.PutStream(ctx, "objects/ab/three", 3, strings.NewReader("333")); err != nil {
		t.Fatalf("stream put after the directory was removed: %v", err)
	}
	if got, err := b.GetRange(ctx, "objects/ab/three", 0, -1); err != nil || string(got) != "333" {
		t.Errorf("objects/ab/three: %q, %v; want \"333\"", got, err)
	}
	if _, err := b.GetRange(ctx, "objects/ab/two", 0, -1); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("removed object: %v, want ErrNotFound", err)
	}
}

// TestMakeDirs: the directories of object keys are made ahead, again
// without error, and objects under them are written and listed as usual;
// a bad prefix is refused.
func TestMakeDirs(t *testing.T) {
	b := newBucket(t)
	ctx := t.Context()
	prefixes := storage.ObjectKeyPrefixes()
	for range 2 {
		if err := b.MakeDirs(prefixes...); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{prefixes[0], prefixes[255]} {
		if fi, err := os.Stat(filepath.Join(b.Dir(), filepath.FromSlash(p))); err != nil || !fi.IsDir() {
			t.Fatalf("%s: %v, want a directory", p, err)
		}
	}
	key := storage.NewObjectKey()
	if err := b.Put(ctx, key, []byte("x")); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := b.List(ctx, "objects/", func(o storage.ObjectInfo) error { keys = append(keys, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != key {
		t.Fatalf("listed %v, want [%s]", keys, key)
	}
	if err := b.MakeDirs("objects/../x"); err == nil {
		t.Fatal("a prefix with a .. segment was accepted")
	}
}
