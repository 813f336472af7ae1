package s3_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net/http"
	"sync"
	"testing"

	"floe/storage"
	"floe/storage/miniotest"
	"floe/storage/s3"
)

// wire is an HTTP client that records each request's payload-hash and
// checksum headers and can flip one byte of the next PUT body after the
// request was signed, as a faulty network or proxy would.
type wire struct {
	mu       sync.Mutex
	hashes   []string
	crcs     []string
	crc32cs  []string
	corrupts bool
}

func (w *wire) Do(req *http.Request) (*http.Response, error) {
	w.mu.Lock()
	w.hashes = append(w.hashes, req.Header.Get("X-Amz-Content-Sha256"))
	w.crcs = append(w.crcs, req.Header.Get("X-Amz-Checksum-Crc32"))
	w.crc32cs = append(w.crc32cs, req.Header.Get("X-Amz-Checksum-Crc32c"))
	corrupt := w.corrupts && req.Method == http.MethodPut
	w.corrupts = w.corrupts && !corrupt
	w.mu.Unlock()
	if corrupt && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body.Close()
		body[len(body)/2] ^= 0x40
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return http.DefaultTransport.RoundTrip(req)
}

func newWiredBucket(t *testing.T, srv *miniotest.Server, w *wire) *s3.Bucket {
	t.Helper()
	cfg, err := s3.ParseURL(srv.URL(srv.NewBucket(t, "unsigned")))
	if err != nil {
		t.Fatal(err)
	}
	cfg.AccessKey, cfg.SecretKey = srv.AccessKey, srv.SecretKey
	b, err := s3.NewWithHTTPClient(t.Context(), cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPutIsUnsignedButChecksummed: a PUT over http is signed with
// UNSIGNED-PAYLOAD (no SHA-256 of the body) yet still carries the body's
// CRC32, and real MinIO accepts it and returns the same bytes.
func TestPutIsUnsignedButChecksummed(t *testing.T) {
	srv := miniotest.Start(t)
	w := &wire{}
	b := newWiredBucket(t, srv, w)
	data := bytes.Repeat([]byte("floe object body "), 4096)
	if err := b.Put(t.Context(), "objects/aa/1", data); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	hash, crc := w.hashes[len(w.hashes)-1], w.crcs[len(w.crcs)-1]
	w.mu.Unlock()
	if hash != "UNSIGNED-PAYLOAD" {
		t.Errorf("PUT X-Amz-Content-Sha256 = %q, want UNSIGNED-PAYLOAD", hash)
	}
	if crc == "" {
		t.Error("PUT carries no X-Amz-Checksum-Crc32: the body's integrity is unchecked")
	}
	got, err := b.GetRange(t.Context(), "objects/aa/1", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes that differ from the %d written", len(got), len(data))
	}
}

// TestCorruptedPutBodyIsRejected: with the payload unsigned, a body
// damaged after signing must still be refused by the store (the CRC32
// header), never stored.
func TestCorruptedPutBodyIsRejected(t *testing.T) {
	srv := miniotest.Start(t)
	w := &wire{corrupts: true}
	b := newWiredBucket(t, srv, w)
	data := bytes.Repeat([]byte{0x5a}, 64<<10)
	err := b.Put(t.Context(), "objects/bb/1", data)
	if err == nil {
		// The SDK may retry a rejected PUT; the retry goes through
		// uncorrupted. Either way, what is stored must be the real body.
		got, gerr := b.GetRange(t.Context(), "objects/bb/1", 0, -1)
		if gerr != nil {
			t.Fatal(gerr)
		}
		if !bytes.Equal(got, data) {
			t.Fatal("MinIO stored a body corrupted on the wire")
		}
		w.mu.Lock()
		n := len(w.hashes)
		w.mu.Unlock()
		if n < 2 {
			t.Fatal("the corrupted PUT succeeded on its first attempt")
		}
		t.Logf("corrupted PUT refused, retried intact (%d requests)", n)
		return
	}
	t.Logf("corrupted PUT refused: %v", err)
	if _, gerr := b.GetRange(t.Context(), "objects/bb/1", 0, -1); !errors.Is(gerr, storage.ErrNotFound) {
		t.Fatalf("after a rejected PUT, GET returned %v, want not found", gerr)
	}
}

// TestPutChecksummed: a PUT with the object's CRC-32C given sends it as
// x-amz-checksum-crc32c and no checksum the SDK computed; real MinIO
// stores the body when it matches and refuses it, storing nothing, when
// the checksum is wrong or the body changed on the way.
func TestPutChecksummed(t *testing.T) {
	srv := miniotest.Start(t)
	w := &wire{}
	b := newWiredBucket(t, srv, w)
	parts := [][]byte{bytes.Repeat([]byte("batch one "), 3000), bytes.Repeat([]byte("batch two "), 5000), []byte("footer")}
	crc := crc32.Checksum(bytes.Join(parts, nil), crc32.MakeTable(crc32.Castagnoli))
	if err := b.PutChecksummed(t.Context(), "objects/cc/1", crc, parts...); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	sent, computed := w.crc32cs[len(w.crc32cs)-1], w.crcs[len(w.crcs)-1]
	w.mu.Unlock()
	if want := base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc)); sent != want || computed != "" {
		t.Fatalf("PUT sent x-amz-checksum-crc32c %q and x-amz-checksum-crc32 %q, want %q and none", sent, computed, want)
	}
	got, err := b.GetRange(t.Context(), "objects/cc/1", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.Join(parts, nil)) {
		t.Fatal("read back bytes that differ from those written")
	}

	if err := b.PutChecksummed(t.Context(), "objects/cc/2", crc^1, parts...); err == nil {
		t.Fatal("a PUT with a wrong CRC-32C was accepted")
	}
	if _, err := b.GetRange(t.Context(), "objects/cc/2", 0, -1); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("after a PUT with a wrong CRC-32C, GET returned %v, want not found", err)
	}

	w.mu.Lock()
	w.corrupts = true
	w.mu.Unlock()
	if err := b.PutChecksummed(t.Context(), "objects/cc/3", crc, parts...); err == nil {
		// A retry goes through uncorrupted; what is stored must be the real body.
		if got, err := b.GetRange(t.Context(), "objects/cc/3", 0, -1); err != nil || !bytes.Equal(got, bytes.Join(parts, nil)) {
			t.Fatalf("MinIO stored a body corrupted on the wire (%v)", err)
		}
	} else if _, err := b.GetRange(t.Context(), "objects/cc/3", 0, -1); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("after a corrupted PUT, GET returned %v, want not found", err)
	}
}
