package agent

import (
	"testing"

	"floe/storage"
	"floe/storage/storagetest"
)

// TestPeerBucketKeepsCapabilities: the bucket under the read cache names
// the metered bucket beneath it and keeps its capabilities (it embedded
// it, and PutSummed, PutStream and ReadRange through it fell back to Put
// and GetRange).
func TestPeerBucketKeepsCapabilities(t *testing.T) {
	ta := newTestAgent(t, nil)
	storagetest.Capabilities(t, func(b storage.Bucket) storage.Bucket { return &peerBucket{bkt: b, a: ta.Agent} })
}
