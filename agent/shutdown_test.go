package agent

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
	"floe/metadata/sqlite"
	"floe/storage"
	"floe/storage/mem"
)

// hangingBucket's Puts never finish before their context ends.
type hangingBucket struct {
	storage.Bucket
	hang    atomic.Bool
	hanging atomic.Int32
}

func (b *hangingBucket) Put(ctx context.Context, key string, parts ...[]byte) error {
	if !b.hang.Load() {
		return b.Bucket.Put(ctx, key, parts...)
	}
	b.hanging.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

// hangingStore's CreateTopic, once hang is set, never finishes before its
// context ends.
type hangingStore struct {
	metadata.Store
	hang    atomic.Bool
	hanging atomic.Int32
}

func (s *hangingStore) CreateTopic(ctx context.Context, name string, partitions int32, configs map[string]string) (metadata.Topic, error) {
	if !s.hang.Load() {
		return s.Store.CreateTopic(ctx, name, partitions, configs)
	}
	s.hanging.Add(1)
	<-ctx.Done()
	return metadata.Topic{}, ctx.Err()
}

// TestShutdownBoundedByGrace: SIGTERM was not honoured within 45 s while a
// store transaction ran. Close now returns about when its context ends,
// with a PUT that never finishes and a store call that never returns in
// flight; the producer waiting on the PUT gets an error, not silence.
func TestShutdownBoundedByGrace(t *testing.T) {
	t.Parallel()
	bucket := &hangingBucket{Bucket: mem.New()}
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	hs := &hangingStore{Store: store}
	cfg := DefaultConfig()
	cfg.KafkaAddr, cfg.HTTPAddr, cfg.FlushInterval = "127.0.0.1:0", "", 5*time.Millisecond
	a := New(cfg, hs, bucket, nil)
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ta := &testAgent{Agent: a, store: hs, bucket: bucket}
	cl := ta.client(t, kgo.DefaultProduceTopic("grace"), kgo.RecordRetries(0), kgo.ProducerLinger(0))
	ta.createTopic(t, cl, "grace", 1)
	hs.hang.Store(true)

	bucket.hang.Store(true)
	produced := make(chan error, 1)
	cl.Produce(context.Background(), &kgo.Record{Value: []byte("v")}, func(_ *kgo.Record, err error) { produced <- err })
	waitFor(t, func() bool { return bucket.hanging.Load() > 0 })
	go func() {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "hangs", 1, 1
		req.Topics = append(req.Topics, rt)
		req.RequestWith(context.Background(), cl)
	}()
	waitFor(t, func() bool { return hs.hanging.Load() > 0 })

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	closed := make(chan struct{})
	go func() {
		ta.Close(ctx) // the deregistration may fail past the deadline
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10 s of a 500 ms grace")
	}
	select {
	case err := <-produced:
		if err == nil {
			t.Fatal("produce whose PUT never finished succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("producer never answered")
	}
}
