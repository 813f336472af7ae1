package peercache

// Agents prove to each other that they belong to the cluster before the
// range endpoint of the shared read cache (Bucket) hands out a
// byte: on an agent with a TLS or SASL listener, where that endpoint
// would otherwise read records around the listeners' authentication.
// Every agent of the cluster reads the same secret from the metadata store
// (ClusterSecret, made by the first to ask); a peer request carries
//
//	Authorization: Floe-Peer <agent id>:<unix ms>:<HMAC-SHA256(secret, id, ms, key, offset, length)>
//
// and the owner serves it only when the MAC matches and the time is
// within peerAuthSkew of its own clock. Whoever can read the store can
// read every record anyway, so the secret gives nobody anything new. A
// request seen on the wire may be replayed within the skew, for the same
// range only; the endpoint is read-only.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	peerAuthScheme = "Floe-Peer"
	peerAuthSkew   = time.Minute
)

// Signer signs an agent's peer requests and checks its peers'. Secret is
// the cluster's peer secret (metadata ClusterSecret SecretName), nil on an
// agent without secured listeners: it signs nothing and checks nothing.
type Signer struct {
	ID     string
	Secret []byte
}

// SecretName is the cluster secret peers sign with.
const SecretName = "shared-read-cache"

func peerMAC(secret []byte, id string, ms int64, key string, offset, length int64) string {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "%s\n%d\n%s\n%d\n%d", id, ms, key, offset, length)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Sign authenticates a peer request of this agent (when it has a
// secret: a secured agent asks secured owners).
func (s *Signer) Sign(req *http.Request, key string, offset, length int64) {
	if s == nil || s.Secret == nil {
		return
	}
	ms := time.Now().UnixMilli()
	req.Header.Set("Authorization", fmt.Sprintf("%s %s:%d:%s", peerAuthScheme, s.ID, ms,
		peerMAC(s.Secret, s.ID, ms, key, offset, length)))
}

// Check verifies a peer request's signature; nil when this agent
// needs none (no secured listener).
func (s *Signer) Check(r *http.Request, key string, offset, length int64) error {
	if s == nil || s.Secret == nil {
		return nil
	}
	scheme, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if scheme != peerAuthScheme {
		return errors.New("peer authentication required")
	}
	parts := strings.Split(cred, ":")
	if len(parts) != 3 || parts[0] == "" {
		return errors.New("malformed peer credentials")
	}
	ms, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return errors.New("malformed peer credentials")
	}
	if d := time.Since(time.UnixMilli(ms)); d > peerAuthSkew || d < -peerAuthSkew {
		return fmt.Errorf("peer request time off by %v", d.Round(time.Second))
	}
	want := peerMAC(s.Secret, parts[0], ms, key, offset, length)
	if !hmac.Equal([]byte(parts[2]), []byte(want)) {
		return errors.New("bad peer signature")
	}
	return nil
}
