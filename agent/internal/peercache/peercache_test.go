package peercache

import (
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"floe/metadata"
	"floe/storage"
	"floe/storage/storagetest"
)

// TestKeepsCapabilities: the bucket under the read cache names the
// metered bucket beneath it and keeps its capabilities (it embedded it,
// and PutSummed, PutStream and ReadRange through it fell back to Put and
// GetRange).
func TestKeepsCapabilities(t *testing.T) {
	storagetest.Capabilities(t, func(b storage.Bucket) storage.Bucket {
		return New(Config{Self: "a", Live: func() []metadata.Agent { return nil }, Log: slog.New(slog.DiscardHandler)}, b, prometheus.NewRegistry())
	})
}

// TestSigner: a request signed for its range within the skew passes; an
// unsigned one, one signed for another range or with another secret, and
// a stale one do not; an agent without a secret signs and checks nothing.
func TestSigner(t *testing.T) {
	s := &Signer{ID: "agent-1", Secret: []byte("cluster secret")}
	req := func() *http.Request {
		r, _ := http.NewRequest(http.MethodGet, "http://peer"+Path, nil)
		return r
	}
	for _, tc := range []struct {
		what string
		sign func(*http.Request)
		ok   bool
	}{
		{"unsigned", func(*http.Request) {}, false},
		{"signed", func(r *http.Request) { s.Sign(r, "k", 0, 7) }, true},
		{"another range", func(r *http.Request) { s.Sign(r, "k", 0, 6) }, false},
		{"another secret", func(r *http.Request) { (&Signer{ID: s.ID, Secret: []byte("guess")}).Sign(r, "k", 0, 7) }, false},
		{"stale", func(r *http.Request) {
			ms := time.Now().Add(-2 * peerAuthSkew).UnixMilli()
			r.Header.Set("Authorization", fmt.Sprintf("%s %s:%d:%s", peerAuthScheme, s.ID, ms, peerMAC(s.Secret, s.ID, ms, "k", 0, 7)))
		}, false},
		{"malformed", func(r *http.Request) { r.Header.Set("Authorization", peerAuthScheme+" x:y") }, false},
	} {
		r := req()
		tc.sign(r)
		if err := s.Check(r, "k", 0, 7); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.what, err)
		}
	}
	open := &Signer{ID: "agent-2"}
	r := req()
	open.Sign(r, "k", 0, 7)
	if r.Header.Get("Authorization") != "" || open.Check(req(), "k", 0, 7) != nil {
		t.Fatal("an agent without a secret signs or checks")
	}
}
