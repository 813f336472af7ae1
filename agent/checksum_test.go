package agent

import (
	"bytes"
	"context"
	"hash/crc32"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"floe/storage"
	"floe/storage/mem"
)

// checkingBucket is a bucket that checks, as S3 does with
// x-amz-checksum-crc32c, the checksum each object is PUT with.
type checkingBucket struct {
	storage.Bucket
	mu               sync.Mutex
	summed, unsummed int
	wrong            []string
}

func (b *checkingBucket) Put(ctx context.Context, key string, parts ...[]byte) error {
	b.mu.Lock()
	b.unsummed++
	b.mu.Unlock()
	return b.Bucket.Put(ctx, key, parts...)
}

func (b *checkingBucket) PutChecksummed(ctx context.Context, key string, crc uint32, parts ...[]byte) error {
	b.mu.Lock()
	b.summed++
	if crc32.Checksum(bytes.Join(parts, nil), crc32.MakeTable(crc32.Castagnoli)) != crc {
		b.wrong = append(b.wrong, key)
	}
	b.mu.Unlock()
	return b.Bucket.Put(ctx, key, parts...)
}

// TestFlushChecksumFromBatches: every object a flush PUTs carries the
// CRC-32C of its bytes, folded from its batches' CRCs (producers' batches of
// several partitions, transaction markers), so the store can refuse bytes
// that changed after they were validated.
func TestFlushChecksumFromBatches(t *testing.T) {
	t.Parallel()
	bucket := &checkingBucket{Bucket: mem.New()}
	ta := newTestAgent(t, bucket)
	ctx := context.Background()
	admin := ta.client(t)
	ta.createTopic(t, admin, "sums", 4)
	plain := ta.client(t)
	var recs []*kgo.Record
	for i := range 200 {
		recs = append(recs, &kgo.Record{Topic: "sums", Partition: int32(i % 4), Key: []byte{byte(i)}, Value: bytes.Repeat([]byte{byte(i)}, 100+i)})
	}
	if err := plain.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	tx := ta.client(t, kgo.TransactionalID("sums-tx"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, end := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort} {
		produceInTxn(t, ctx, tx, "sums", "t", 3)
		if err := tx.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	bucket.mu.Lock()
	defer bucket.mu.Unlock()
	if bucket.summed == 0 || bucket.unsummed != 0 || len(bucket.wrong) != 0 {
		t.Fatalf("%d objects PUT with a checksum (%d of them wrong: %v), %d without", bucket.summed, len(bucket.wrong), bucket.wrong, bucket.unsummed)
	}
}
