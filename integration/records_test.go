package integration

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// genRecords makes n records spread over partitions: random keys (some nil),
// random values (some nil), 0–3 headers, explicit non-monotonic timestamps.
func genRecords(seed uint64, topic string, partitions int32, n int) []*kgo.Record {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	base := time.UnixMilli(1_700_000_000_000)
	randBytes := func(maxLen int) []byte {
		b := make([]byte, 1+rng.IntN(maxLen))
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		r := &kgo.Record{
			Topic:     topic,
			Partition: rng.Int32N(partitions),
			// Timestamps wander: mostly increasing, sometimes back in time.
			Timestamp: base.Add(time.Duration(i)*time.Millisecond - time.Duration(rng.IntN(50))*time.Millisecond),
		}
		if rng.IntN(10) != 0 {
			r.Key = randBytes(32)
		}
		if rng.IntN(10) != 0 {
			r.Value = randBytes(200)
		}
		for h := range rng.IntN(4) {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: fmt.Sprintf("h%d-%d", h, rng.IntN(100)), Value: randBytes(16)})
		}
		recs[i] = r
	}
	return recs
}

// produceAll produces recs and fails the test on any error; on return every
// record carries the offset the broker acknowledged.
func produceAll(t testing.TB, ctx context.Context, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	wg.Add(len(recs))
	for _, r := range recs {
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
}

// consumeN reads topic from the start with a fresh client until n records
// arrived (or ctx ends) and returns them by partition in offset order.
func consumeN(t testing.TB, ctx context.Context, seeds []string, topic string, n int) map[int32][]*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := make(map[int32][]*kgo.Record)
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before timeout", got, n)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Errorf("fetch %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], r)
			got++
		})
	}
	return out
}

// verifyRecords checks that consumed holds exactly recs: offsets dense from 0
// in every partition, each record byte-identical with the one acknowledged
// at its offset.
func verifyRecords(t testing.TB, recs []*kgo.Record, consumed map[int32][]*kgo.Record) {
	t.Helper()
	want := make(map[int32]map[int64]*kgo.Record)
	for _, r := range recs {
		if want[r.Partition] == nil {
			want[r.Partition] = make(map[int64]*kgo.Record)
		}
		if _, dup := want[r.Partition][r.Offset]; dup {
			t.Fatalf("two records acknowledged at %d/%d", r.Partition, r.Offset)
		}
		want[r.Partition][r.Offset] = r
	}
	errs := 0
	for p, rs := range consumed {
		if len(rs) != len(want[p]) {
			t.Errorf("partition %d: consumed %d records, produced %d", p, len(rs), len(want[p]))
		}
		for i, r := range rs {
			if r.Offset != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d: offsets not dense from 0", p, i, r.Offset)
			}
			w := want[p][r.Offset]
			if w == nil {
				t.Fatalf("partition %d: offset %d was never acknowledged", p, r.Offset)
			}
			if msg := recordDiff(w, r); msg != "" && errs < 10 {
				errs++
				t.Errorf("partition %d offset %d: %s", p, r.Offset, msg)
			}
		}
	}
	for p, w := range want {
		if len(consumed[p]) == 0 && len(w) > 0 {
			t.Errorf("partition %d: nothing consumed, %d produced", p, len(w))
		}
	}
}

func recordDiff(want, got *kgo.Record) string {
	switch {
	case (want.Key == nil) != (got.Key == nil) || !bytes.Equal(want.Key, got.Key):
		return fmt.Sprintf("key %x, want %x", got.Key, want.Key)
	case (want.Value == nil) != (got.Value == nil) || !bytes.Equal(want.Value, got.Value):
		return fmt.Sprintf("value %x, want %x", got.Value, want.Value)
	case !want.Timestamp.Equal(got.Timestamp):
		return fmt.Sprintf("timestamp %v, want %v", got.Timestamp, want.Timestamp)
	case len(want.Headers) != len(got.Headers):
		return fmt.Sprintf("%d headers, want %d", len(got.Headers), len(want.Headers))
	}
	for i := range want.Headers {
		if want.Headers[i].Key != got.Headers[i].Key || !bytes.Equal(want.Headers[i].Value, got.Headers[i].Value) {
			return fmt.Sprintf("header %d = %v, want %v", i, got.Headers[i], want.Headers[i])
		}
	}
	return ""
}

// createTopic creates a topic through kadm and fails the test on error.
func createTopic(t testing.TB, ctx context.Context, cl *kgo.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, 1, configs, topic)
	if err != nil {
		t.Fatal(err)
	}
	if err := resp[topic].Err; err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// listOffset asks ListOffsets (v7) for one partition at timestamp ts.
func listOffset(t testing.TB, ctx context.Context, cl *kgo.Client, topic string, partition int32, ts int64) (offset, timestamp int64) {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		t.Fatalf("list offsets %s/%d at %d: error %d", topic, partition, ts, sp.ErrorCode)
	}
	return sp.Offset, sp.Timestamp
}

// checkListOffsets compares earliest, latest, max-timestamp and several
// by-timestamp lookups of every partition with the model in recs.
func checkListOffsets(t testing.TB, ctx context.Context, cl *kgo.Client, topic string, partitions int32, recs []*kgo.Record) {
	t.Helper()
	byPart := make(map[int32][]*kgo.Record)
	for _, r := range recs {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	for p := range partitions {
		rs := byPart[p]
		// Order by acknowledged offset.
		sorted := make([]*kgo.Record, len(rs))
		for _, r := range rs {
			sorted[r.Offset] = r
		}
		if off, _ := listOffset(t, ctx, cl, topic, p, -2); off != 0 {
			t.Errorf("partition %d: earliest %d, want 0", p, off)
		}
		if off, _ := listOffset(t, ctx, cl, topic, p, -1); off != int64(len(sorted)) {
			t.Errorf("partition %d: latest %d, want %d", p, off, len(sorted))
		}
		if len(sorted) == 0 {
			continue
		}
		// Max timestamp: the earliest record holding the largest timestamp.
		var maxTS, maxOff int64 = -1, -1
		for _, r := range sorted {
			if ms := r.Timestamp.UnixMilli(); ms > maxTS {
				maxTS, maxOff = ms, r.Offset
			}
		}
		if off, ts := listOffset(t, ctx, cl, topic, p, -3); off != maxOff || ts != maxTS {
			t.Errorf("partition %d: max timestamp at %d (%d), want %d (%d)", p, off, ts, maxOff, maxTS)
		}
		first, last := sorted[0].Timestamp.UnixMilli(), maxTS
		for _, target := range []int64{0, first, (first + last) / 2, first + (last-first)/3, last, last + 1} {
			wantOff, wantTS := int64(-1), int64(-1)
			for _, r := range sorted {
				if r.Timestamp.UnixMilli() >= target {
					wantOff, wantTS = r.Offset, r.Timestamp.UnixMilli()
					break
				}
			}
			if off, ts := listOffset(t, ctx, cl, topic, p, target); off != wantOff || ts != wantTS {
				t.Errorf("partition %d: offset for timestamp %d = %d (%d), want %d (%d)", p, target, off, ts, wantOff, wantTS)
			}
		}
	}
}
