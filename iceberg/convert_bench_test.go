package iceberg

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	rtmetrics "runtime/metrics"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
	"floe/metadata/sqlite"
	"floe/storage"
	"floe/storage/file"
)

// benchFileSize is the conversion benchmarks' target file size, by
// default the converter's (DefaultConverterConfig), and the budget they
// report with it (ConverterConfig.MemoryBytes). Their records repeat one
// value, which Parquet compresses about 400:1, so a 64 MiB cycle writes
// one small file whatever the size: their live heap is what a cycle holds
// beside its file, and TestConvertMemoryWithinBudget, whose records vary,
// checks the budget with the file:
// `go test ./iceberg -run '^$' -bench Convert -convert-file-size 16777216`.
var benchFileSize = flag.Int64("convert-file-size", DefaultConverterConfig("").TargetFileSize,
	"the conversion benchmarks' target file size in bytes")

// benchHeapProfile, set, is where the conversion benchmarks write the heap
// profile of the GC that found a cycle's most live heap: what the live-MiB
// figure is made of (`go tool pprof -sample_index=inuse_space`).
var benchHeapProfile = flag.String("convert-heap-profile", "",
	"write the heap profile at the conversion benchmarks' peak live heap to this `file`")

// BenchmarkConvert measures conversion of 1 KiB records (8 partitions,
// batches of 100 records, 1,000 records per partition per object) from a
// directory bucket into a table on SQLite and the same directory, files
// of benchFileSize: one op is one cycle over 64 MiB of records. MB/s is the conversion
// throughput; cpu-s/GB the process CPU time (all cores) the cycles took
// per GB of records, MB/cpu-s the rate on one core; peak-MiB, live-MiB
// and budget-MiB as cycleMeter's: `go test ./iceberg -run X -bench Convert -benchtime 5x`.
func BenchmarkConvert(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "meta.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	bucket, err := file.New(filepath.Join(dir, "objects"))
	if err != nil {
		b.Fatal(err)
	}
	db, err := sqlite.OpenDB(filepath.Join(dir, "meta.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	cat, err := OpenCatalog(ctx, CatalogConfig{DB: db, Dialect: "sqlite", Namespace: "floe",
		Warehouse: "file://" + filepath.Join(dir, "objects", "iceberg")})
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConverterConfig("bench")
	cfg.Maintenance.Every = 0
	cfg.TargetFileSize = *benchFileSize
	conv := NewConverter(cfg, store, bucket, cat, slog.New(slog.NewTextHandler(io.Discard, nil)))

	const partitions, perBatch, batchesPerObject, recSize = 8, 100, 10, 1024
	perOp := int64(64 << 20)
	b.SetBytes(perOp)
	var m cycleMeter
	m.budget = cfg.MemoryBytes()
	value := make([]byte, recSize-24)
	for i := range value {
		value[i] = byte('a' + i%26) // compressible as JSON-ish payloads are
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := "bench" + string(rune('a'+i%26)) + time.Now().Format("150405.000000")
		tp, err := store.CreateTopic(ctx, name, partitions, map[string]string{ConfigEnabled: "true"})
		if err != nil {
			b.Fatal(err)
		}
		for written := int64(0); written < perOp; {
			w := storage.NewObjectWriter()
			for p := range int32(partitions) {
				for range batchesPerObject {
					batch := benchBatch(perBatch, value)
					w.Add(storage.TopicID(tp.ID), p, batch, perBatch, time.Now().UnixMilli(), time.Now().UnixMilli())
					written += int64(perBatch * recSize)
				}
			}
			obj, runs := w.Finish()
			key := storage.NewObjectKey()
			if err := bucket.Put(ctx, key, obj); err != nil {
				b.Fatal(err)
			}
			commit := metadata.ObjectCommit{Key: key, Size: int64(len(obj)), AgentID: "bench"}
			for _, r := range runs {
				commit.Runs = append(commit.Runs, metadata.RunCommit{TopicID: metadata.TopicID(r.TopicID), Partition: r.Partition,
					ByteOffset: r.Offset, ByteLength: r.Length, Batches: r.Batches, Records: r.Records,
					MinTimestamp: r.MinTimestamp, MaxTimestamp: r.MaxTimestamp})
			}
			if _, err := store.CommitObject(ctx, commit); err != nil {
				b.Fatal(err)
			}
		}
		l, err := metadata.AcquireJobLease(ctx, store, "iceberg/"+name, "bench", time.Minute)
		if err != nil || l == nil {
			b.Fatal(err)
		}
		m.measure(b, func() error { return conv.cycle(ctx, l, tp) })
	}
	m.report(b, perOp)
}

// cycleMeter sums the CPU time of the cycles a benchmark times and keeps
// the most memory one held above what was live when it began (after a
// GC), from runtime/metrics sampled every millisecond: peak, the bytes of
// heap objects, live and not yet collected (what the process's memory
// follows: up to about twice the live heap at GOGC=100), and live, the
// heap a GC found live (/gc/heap/live:bytes), what the converter's budget
// bounds.
type cycleMeter struct {
	cpu        time.Duration
	peak, live uint64
	budget     int64        // ConverterConfig.MemoryBytes
	profile    bytes.Buffer // the heap profile at live (-convert-heap-profile)
}

// measure runs run, timing it when tb is a benchmark (the timer stopped
// on entry and left stopped).
func (m *cycleMeter) measure(tb testing.TB, run func() error) {
	runtime.GC()
	samples := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	read := func() (heap, live uint64) {
		rtmetrics.Read(samples)
		return samples[0].Value.Uint64(), samples[1].Value.Uint64()
	}
	baseHeap, baseLive := read()
	stop, sampled := make(chan struct{}), make(chan [2]uint64)
	go func() {
		var peak [2]uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			heap, live := read()
			if live > baseLive && live-baseLive > m.live && live > peak[1] {
				// A heap profile is of the last GC's live heap: this one's.
				if *benchHeapProfile != "" {
					m.profile.Reset()
					_ = pprof.Lookup("heap").WriteTo(&m.profile, 0)
				}
			}
			peak = [2]uint64{max(peak[0], heap), max(peak[1], live)}
			select {
			case <-stop:
				sampled <- peak
				return
			case <-t.C:
			}
		}
	}()
	before := cpuTime()
	b, timed := tb.(*testing.B)
	if timed {
		b.StartTimer()
	}
	err := run()
	if timed {
		b.StopTimer()
	}
	m.cpu += cpuTime() - before
	close(stop)
	peak := <-sampled
	if peak[0] > baseHeap {
		m.peak = max(m.peak, peak[0]-baseHeap)
	}
	if peak[1] > baseLive {
		m.live = max(m.live, peak[1]-baseLive)
	}
	if *benchHeapProfile != "" && m.profile.Len() > 0 {
		if err := os.WriteFile(*benchHeapProfile, m.profile.Bytes(), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// report reports cpu-s/GB, MB/cpu-s, peak-MiB, live-MiB and budget-MiB
// over b.N cycles of perOp record bytes each.
func (m *cycleMeter) report(b *testing.B, perOp int64) {
	gb := float64(perOp) * float64(b.N) / 1e9
	b.ReportMetric(m.cpu.Seconds()/gb, "cpu-s/GB")
	b.ReportMetric(gb*1e3/m.cpu.Seconds(), "MB/cpu-s")
	b.ReportMetric(float64(m.peak)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(m.live)/(1<<20), "live-MiB")
	b.ReportMetric(float64(m.budget)/(1<<20), "budget-MiB")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchBatch is an uncompressed v2 batch of n records with the given value.
func benchBatch(n int, value []byte) []byte {
	var recs []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Key: []byte("key-0000"), Value: value}
		body := r.AppendTo(nil)[1:]
		r.Length = int32(len(body))
		recs = r.AppendTo(recs)
	}
	now := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{Magic: 2, PartitionLeaderEpoch: -1, LastOffsetDelta: int32(n - 1), FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(n), Records: recs}
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}
