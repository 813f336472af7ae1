package compactor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"floe/kafkaproto"
	"floe/metadata"
	"floe/metadata/sqlite"
	"floe/storage"
	"floe/storage/mem"
)

type env struct {
	t      *testing.T
	ctx    context.Context
	store  metadata.Store
	bucket storage.Bucket
	c      *Compactor
}

func newEnv(t *testing.T, mod func(*Config)) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cfg := DefaultConfig()
	cfg.Plan.FanIn = 4
	cfg.Plan.MaxWait = time.Hour
	cfg.Grace = time.Hour
	if mod != nil {
		mod(&cfg)
	}
	b := mem.New()
	return &env{t: t, ctx: ctx, store: s, bucket: b,
		c: New(cfg, s, b, slog.New(slog.NewTextHandler(io.Discard, nil)))}
}

// rec is one record as a test writes and reads it.
type rec struct {
	offset int64
	key    string // "" is a null key
	value  string // "<nil>" is a null value (tombstone)
	ts     int64
}

func (r rec) String() string { return fmt.Sprintf("%d:%s=%s@%d", r.offset, r.key, r.value, r.ts) }

func orNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// producerBatch builds a batch as a producer sends it: base offset 0,
// dense offset deltas.
func producerBatch(recs ...rec) []byte {
	ks := make([]keptRecord, len(recs))
	for i, r := range recs {
		v := []byte(r.value)
		if r.value == "<nil>" {
			v = nil
		}
		ks[i] = keptRecord{offset: int64(i), timestamp: r.ts, rec: kafkaproto.Record{
			Key: orNil(r.key), Value: v,
			Headers: []kafkaproto.RecordHeader{{Key: "h", Value: []byte(r.key)}},
		}}
	}
	return encodeBatch(0, int64(len(recs)), ks)
}

// flush writes one object holding batches (per partition, in order) and
// commits it, as an agent's flush does.
func (e *env) flush(topic metadata.TopicID, batches map[int32][][]byte) string {
	e.t.Helper()
	w := storage.NewObjectWriter()
	for p, bs := range batches {
		for _, b := range bs {
			_, err := kafkaproto.WalkBatches(b, 0, func(h kafkaproto.BatchHeader, batch []byte, _ int64) error {
				w.Add(storage.TopicID(topic), p, batch, int64(h.LastOffsetDelta)+1, h.FirstTimestamp, h.MaxTimestamp)
				return nil
			})
			if err != nil {
				e.t.Fatal(err)
			}
		}
	}
	obj, runs := w.Finish()
	key := storage.NewObjectKey()
	if err := e.bucket.Put(e.ctx, key, obj); err != nil {
		e.t.Fatal(err)
	}
	commit := metadata.ObjectCommit{Key: key, Size: int64(len(obj)), AgentID: "test"}
	for _, r := range runs {
		commit.Runs = append(commit.Runs, metadata.RunCommit{
			TopicID: metadata.TopicID(r.TopicID), Partition: r.Partition,
			ByteOffset: r.Offset, ByteLength: r.Length, Batches: r.Batches, Records: r.Records,
			MinTimestamp: r.MinTimestamp, MaxTimestamp: r.MaxTimestamp,
		})
	}
	if _, err := e.store.CommitObject(e.ctx, commit); err != nil {
		e.t.Fatal(err)
	}
	return key
}

// fetchAll reads a partition from its log start the way the agent's fetch
// path does (index rows, ranged GETs, base offsets rewritten by walking
// lastOffsetDelta+1 from each row's base) and returns the batches as a
// client receives them and the records decoded from them.
func (e *env) fetchAll(topic metadata.TopicID, p int32) ([]byte, []rec) {
	e.t.Helper()
	st, err := e.store.Partition(e.ctx, topic, p)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []byte
	var recs []rec
	offset := st.LogStartOffset
	for offset < st.NextOffset {
		rows, err := e.store.Lookup(e.ctx, topic, p, offset, 1<<40, 0)
		if err != nil {
			e.t.Fatalf("Lookup(%d): %v", offset, err)
		}
		if len(rows) == 0 {
			e.t.Fatalf("no rows at offset %d below high watermark %d", offset, st.NextOffset)
		}
		for _, r := range rows {
			data, err := e.bucket.GetRange(e.ctx, r.ObjectKey, r.ByteOffset, r.ByteLength)
			if err != nil {
				e.t.Fatalf("GET %s: %v", r.ObjectKey, err)
			}
			end, err := kafkaproto.WalkBatches(data, r.BaseOffset, func(h kafkaproto.BatchHeader, batch []byte, base int64) error {
				next := base + int64(h.LastOffsetDelta) + 1
				if next <= offset {
					return nil
				}
				b := bytes.Clone(batch)
				kafkaproto.SetBaseOffset(b, base)
				out = append(out, b...)
				h2, rs, err := kafkaproto.DecodeRecords(b)
				if err != nil {
					return err
				}
				for _, r := range rs {
					v := string(r.Value)
					if r.Value == nil {
						v = "<nil>"
					}
					if len(r.Headers) != 1 || r.Headers[0].Key != "h" || string(r.Headers[0].Value) != string(r.Key) {
						return fmt.Errorf("record %d: headers %+v", h2.BaseOffset+int64(r.OffsetDelta), r.Headers)
					}
					recs = append(recs, rec{offset: h2.BaseOffset + int64(r.OffsetDelta), key: string(r.Key), value: v,
						ts: h2.RecordTimestamp(r)})
				}
				offset = next
				return nil
			})
			if err != nil {
				e.t.Fatalf("row [%d,%d) in %s: %v", r.BaseOffset, r.EndOffset, r.ObjectKey, err)
			}
			if end != r.EndOffset {
				e.t.Fatalf("row [%d,%d) in %s: batches end at %d", r.BaseOffset, r.EndOffset, r.ObjectKey, end)
			}
		}
	}
	return out, recs
}

func (e *env) count() (objects, rows int) {
	e.t.Helper()
	objs, err := e.store.Objects(e.ctx, metadata.ObjectLive)
	if err != nil {
		e.t.Fatal(err)
	}
	n, err := e.store.CountIndexRows(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(objs), int(n)
}

func (e *env) runOnce() {
	e.t.Helper()
	if err := e.c.RunOnce(e.ctx); err != nil {
		e.t.Fatalf("RunOnce: %v", err)
	}
}

func (e *env) bucketKeys() map[string]bool {
	e.t.Helper()
	keys := map[string]bool{}
	if err := e.bucket.List(e.ctx, "", func(o storage.ObjectInfo) error {
		keys[o.Key] = true
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	return keys
}

// lease takes the job lease name for e's compactor, as RunOnce would, for
// tests that run one job directly.
func (e *env) lease(name string) *metadata.JobLease {
	e.t.Helper()
	l, err := metadata.AcquireJobLease(e.ctx, e.store, name, e.c.cfg.ID, e.c.cfg.LeaseTTL)
	if err != nil || l == nil {
		e.t.Fatalf("lease %s: %v (held: %v)", name, err, l == nil)
	}
	return l
}
