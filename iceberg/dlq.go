package iceberg

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// A typed table's records that cannot become rows go to its dead-letter
// table, <table>__dlq: the binary table's columns and error, why. Every
// committed record of the topic is in exactly one of the two tables.
//
// Exactly once over two tables: a cycle commits the dead-letter table
// first, then the typed table, each with the floe.next-offsets the cycle
// reached. Cycles resume from the typed table's offsets; a dead-letter
// table ahead of them (a crash between the two commits) holds some of the
// records about to be read again, and the cycle reads which (dlqHeld) and
// does not write them twice. Records that went to the typed table in the
// lost cycle were not committed anywhere and are written again.
const (
	// ColError says why a record is in the dead-letter table: its reason
	// (the metric's label), a colon, the detail.
	ColError = "error"
	// dlqSuffix names a typed table's dead-letter table.
	dlqSuffix = "__dlq"
	layoutDLQ = "dlq"
)

// Reasons a record goes to the dead-letter table, the label of
// floe_iceberg_dlq_records_total.
const (
	reasonUnframed     = "unframed"           // no magic byte and schema id
	reasonUnknown      = "unknown_schema"     // the id is not registered
	reasonFormat       = "unsupported_format" // a schema type not converted yet
	reasonUnmappable   = "unmappable"         // the schema has no Iceberg form
	reasonIncompatible = "incompatible_schema"
	reasonDecode       = "does_not_decode"
	// The schema would give the table columns its pending partition spec
	// cannot bind to (typed_spec.go).
	reasonPartitionSpec = "partition_spec"
)

// DLQTableName is the dead-letter table of a topic's typed table.
func DLQTableName(topic string) string { return TableName(topic) + dlqSuffix }

// DLQSchema is the schema of dead-letter tables: Schema's columns, then
// error.
func DLQSchema() *iceberg.Schema {
	fields := append(Schema().Fields(), iceberg.NestedField{ID: lastFieldID + 1, Name: ColError,
		Type: iceberg.PrimitiveTypes.String, Required: true, Doc: "why the record is not in the typed table: reason: detail"})
	return iceberg.NewSchemaWithIdentifiers(0, []int{idPartition, idOffset}, fields...)
}

// dlqBuilder lays dead-letter records out as DLQSchema's batches.
type dlqBuilder struct {
	*batchBuilder
	why *array.StringBuilder
}

func newDLQBuilder(as *arrow.Schema) *dlqBuilder {
	b := newBatchBuilderFor(as)
	return &dlqBuilder{batchBuilder: b, why: b.b.Field(as.NumFields() - 1).(*array.StringBuilder)}
}

// dlqBatchBytes cuts dead-letter batches small: they are held beside the
// typed table's (ConverterConfig.MemoryBytes).
const dlqBatchBytes = batchBytes / 8

func (b *dlqBuilder) full() bool { return b.n >= batchRows || b.bytes >= dlqBatchBytes }

// dlqFileSize is the part of the target file size a typed cycle gives its
// dead-letter writer, which writes a row group while the table's writer
// writes one: the two row groups together are a quarter of
// TargetFileSize, as a binary table's is (ConverterConfig.MemoryBytes).
func dlqFileSize(target int64) int64 { return max(target/8, 1) }

func (b *dlqBuilder) addDLQ(r *rawRecord, reason, detail string) {
	b.add(r.partition, r.offset, r.ts, r.tsType, r.r)
	b.why.Append(reason + ": " + detail)
	b.bytes += len(detail)
}

// dlqWriter writes a cycle's dead-letter batches as Parquet while the
// typed table's are written: iceberg-go's writer takes an iterator, and
// dead-letter records come interleaved with good ones. Its goroutine is
// started by the first batch and ended by finish, which the cycle always
// calls.
type dlqWriter struct {
	tbl   *table.Table
	ch    chan arrow.RecordBatch
	done  chan struct{}
	files []iceberg.DataFile
	err   error
}

func startDLQWriter(ctx context.Context, tbl *table.Table, as *arrow.Schema, fileSize int64) *dlqWriter {
	w := &dlqWriter{tbl: tbl, ch: make(chan arrow.RecordBatch), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		batches := func(yield func(arrow.RecordBatch, error) bool) {
			for b := range w.ch {
				if !yield(b, nil) {
					for b := range w.ch {
						b.Release()
					}
					return
				}
			}
		}
		for df, err := range writeRecords(ctx, tbl, as, batches, fileSize) {
			if err != nil {
				if w.err == nil {
					w.err = err
				}
				continue
			}
			w.files = append(w.files, df)
		}
		// The writer may stop early on an error: take what is still sent.
		for b := range w.ch {
			b.Release()
		}
	}()
	return w
}

// send hands a batch to the writer.
func (w *dlqWriter) send(b arrow.RecordBatch) { w.ch <- b }

// finish ends the writer and returns its files.
func (w *dlqWriter) finish() ([]iceberg.DataFile, error) {
	close(w.ch)
	<-w.done
	return w.files, w.err
}

// dlqHeld returns, per partition whose dead-letter table is ahead of
// from (its floe.next-offsets above the typed table's), the offsets the
// dead-letter table holds from there on: the records a cycle that did not
// commit the typed table put there.
func dlqHeld(ctx context.Context, dlq *table.Table, from map[int32]int64) (map[int32]map[int64]bool, error) {
	if dlq == nil {
		return nil, nil
	}
	dlqNext, err := NextOffsets(dlq)
	if err != nil {
		return nil, err
	}
	low := int64(-1)
	for p, n := range dlqNext {
		if f := from[p]; n > f && (low < 0 || f < low) {
			low = f
		}
	}
	if low < 0 {
		return nil, nil
	}
	_, batches, err := dlq.Scan(
		table.WithRowFilter(iceberg.GreaterThanEqual(iceberg.Reference(ColOffset), low)),
		table.WithSelectedFields(ColPartition, ColOffset),
	).ToArrowRecords(ctx)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", dlq.Identifier(), err)
	}
	held := map[int32]map[int64]bool{}
	for b, err := range batches {
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", dlq.Identifier(), err)
		}
		parts := b.Column(int(b.Schema().FieldIndices(ColPartition)[0])).(*array.Int32)
		offs := b.Column(int(b.Schema().FieldIndices(ColOffset)[0])).(*array.Int64)
		for i := 0; i < int(b.NumRows()); i++ {
			p, off := parts.Value(i), offs.Value(i)
			if off >= from[p] && off < dlqNext[p] {
				if held[p] == nil {
					held[p] = map[int64]bool{}
				}
				held[p][off] = true
			}
		}
		b.Release()
	}
	return held, nil
}
